"""The one byte formatter and its options."""

from __future__ import annotations

from hloscope.units import human_bytes


def test_binary_units_with_digits_above_bytes():
    assert human_bytes(0) == "0 B" and human_bytes(1023) == "1023 B"
    assert human_bytes(1536) == "1.50 KiB" and human_bytes(1536, digits=1) == "1.5 KiB"
    assert human_bytes(3 * 2**20) == "3.00 MiB" and human_bytes(-3 * 2**20) == "-3.00 MiB"
    assert human_bytes(5 * 2**50) == "5120.00 TiB"  # TiB is the largest unit
    assert human_bytes(None) == "-"


def test_a_mapping_gives_digits_per_unit_and_the_units_used():
    roughly = {"KiB": 0, "MiB": 0, "GiB": 1}
    assert human_bytes(1000, roughly) == "1000 B" and human_bytes(1536, roughly) == "2 KiB"
    assert human_bytes(3 * 2**30 // 2, roughly) == "1.5 GiB" and human_bytes(2**41, roughly) == "2048.0 GiB"


def test_a_change_is_signed_and_an_exact_count_comes_first():
    assert human_bytes(1536, sign=True) == "+1.50 KiB" and human_bytes(-1536, sign=True) == "−1.50 KiB"
    assert human_bytes(0, sign=True) == "±0 B"
    assert human_bytes(512, exact=True) == "512 bytes"
    assert human_bytes(40 * 2**30, exact=True) == "42949672960 bytes (40.00 GiB)"
    assert human_bytes(-2048, {"KiB": 2}, sign=True, exact=True) == "−2048 bytes (2.00 KiB)"
