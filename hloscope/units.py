"""Sizes as people read them, for every layer that writes a sentence or a table."""

from __future__ import annotations


def human_bytes(n: int | float | None, digits: int = 2) -> str:
    """1536 → '1.50 KiB' (binary units; `digits` after the point above bytes)."""
    if n is None:
        return "-"
    n = float(n)
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{sign}{n:.0f} {unit}" if unit == "B" else f"{sign}{n:.{digits}f} {unit}"
        n /= 1024
    return f"{sign}{n:.{digits}f} TiB"
