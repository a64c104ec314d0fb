"""Comparing two compilations: `hloscope.diff(a, b)` and budgets against a baseline."""

from __future__ import annotations

from ..analysis.diff import DiffResult, Side
from ..analysis.diff import diff as diff_sides
from .module import Module


def side(module: Module, label: str = "") -> Side:
    """Everything the diff reads of one module (its memory, roles at the peak, collectives,
    held gathers and cost; one memory model serves the memory analyses)."""
    return Side(memory=module.memory(), roles=module.roles(), collectives=module.collectives(),
                gathers=module.held_gathers(), cost=module.cost(), label=label)


def diff(a: Module, b: Module, labels: tuple[str, str] = ("", ""),
         names: tuple[str, str] = ("A", "B")) -> DiffResult:
    """B against A: the temp-memory gap in named causes that add up to it
    (hloscope.analysis.diff). `names`: how its sentence calls the two sides."""
    return diff_sides(side(a, labels[0]), side(b, labels[1]), names=names)
