"""The knobs of a sweep: `--grid NAME=V1,V2` read as values, their product as variants, and
which variants are neighbours (one knob apart)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from ..errors import HloscopeError


class GridError(HloscopeError):
    """A `--grid` that says no knob or no value."""


def knob_value(text: str) -> int | float | str:
    """`4` → 4, `0.5` → 0.5, anything else the string itself (DESIGN.md: int, float or string)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_grid(items: Iterable[str]) -> dict[str, list]:
    """`["remat=none,full", "accum=1,2"]` → `{"remat": ["none", "full"], "accum": [1, 2]}`, in
    the order given; a knob given twice has its values joined."""
    grid: dict[str, list] = {}
    for item in items:
        name, eq, values = item.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise GridError(f"--grid {item!r}: expected NAME=V1,V2,... with NAME a Python identifier")
        parsed = [knob_value(v.strip()) for v in values.split(",") if v.strip()]
        if not parsed:
            raise GridError(f"--grid {item!r}: no values")
        grid.setdefault(name, []).extend(v for v in parsed if v not in grid.get(name, []))
    if not grid:
        raise GridError("a sweep needs at least one --grid NAME=V1,V2,...")
    return grid


def variants(grid: Mapping[str, Sequence]) -> list[dict]:
    """Every combination of the knobs' values, the last knob changing fastest."""
    names = list(grid)
    return [dict(zip(names, values)) for values in itertools.product(*(list(grid[n]) for n in names))]


def one_apart(a: Mapping, b: Mapping) -> str | None:
    """The one knob `a` and `b` differ in, or None (none, or several)."""
    differ = [k for k in a if a[k] != b.get(k)]
    return differ[0] if len(differ) == 1 else None


def label(knobs: Mapping, only: Iterable[str] | None = None) -> str:
    """`remat=full accum=2`: a variant as the table and the sentences name it; with `only`,
    by those knobs alone (the ones that vary; all of them when none is left)."""
    shown = [k for k in knobs if only is None or k in set(only)] or list(knobs)
    return " ".join(f"{k}={knobs[k]}" for k in shown)


def varying(grid: Mapping[str, Sequence]) -> list[str]:
    """The knobs with more than one value: what tells a grid's variants apart."""
    return [k for k, values in grid.items() if len(values) > 1]


def apart(a: Mapping, b: Mapping) -> list[str]:
    """The knobs `a` and `b` differ in."""
    return [k for k in a if a[k] != b.get(k)]


__all__ = ["GridError", "apart", "knob_value", "label", "one_apart", "parse_grid", "variants", "varying"]
