"""Sizes as people read them, for every layer that writes a sentence or a table."""

from __future__ import annotations

from collections.abc import Mapping

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(n: int | float | None, digits: int | Mapping[str, int] = 2, *, sign: bool = False,
                exact: bool = False) -> str:
    """The one byte formatter: 1536 → '1.50 KiB' (binary units; None → '-').

    `digits`: places after the point above bytes, or a mapping of unit → places whose units
    alone are used (its last for anything larger). `sign`: a change, '+', '−' or '±' first.
    `exact`: the count of bytes first, the unit's figure after it: '1536 bytes (1.50 KiB)'."""
    if n is None:
        return "-"
    if sign:
        return ("+" if n > 0 else "−" if n < 0 else "±") + human_bytes(abs(n), digits, exact=exact)
    if exact:
        return f"{n} bytes" if abs(n) < 1024 else f"{n} bytes ({human_bytes(n, digits)})"
    units = tuple(digits) if isinstance(digits, Mapping) else _UNITS[1:]
    places = digits if isinstance(digits, Mapping) else dict.fromkeys(units, digits)
    x = float(n)
    negative, x = x < 0, abs(x)
    unit = "B"
    for larger in units:
        if x < 1024:
            break
        x /= 1024
        unit = larger
    figure = f"{x:.0f} B" if unit == "B" else f"{x:.{places[unit]}f} {unit}"
    return "-" + figure if negative else figure


def human_flops(n: float) -> str:
    """194238080 → '194.24 MFLOP' (decimal prefixes, as FLOP/s figures are published)."""
    n = float(n)
    for unit in ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"):
        if abs(n) < 1000 or unit == "PFLOP":
            return f"{n:.0f} {unit}" if unit == "FLOP" else f"{n:.2f} {unit}"
        n /= 1000
    return f"{n:.2f} PFLOP"
