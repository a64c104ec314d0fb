"""Comparing two compilations: `hloscope.diff(a, b)` and budgets against a baseline."""

from __future__ import annotations

from ..analysis.diff import DiffResult, Side
from ..analysis.diff import diff as diff_sides
from . import plain, runtime
from .module import RESULT_TYPES, Module, cost_in_brief, kept

_SIDE_TYPES = plain.allowing((Side,) + tuple(t for types in RESULT_TYPES.values() for t in types))


def side(module: Module, label: str = "") -> Side:
    """Everything the diff reads of one module (its memory, roles at the peak, collectives,
    held gathers and cost in brief; one memory model serves the memory analyses). The cost
    first: it reads every body, each once (`Module.read_all`)."""
    cost = cost_in_brief(module)
    return Side(memory=module.memory(), roles=module.roles(), collectives=module.collectives(),
                gathers=module.held_gathers(), cost=cost, label=label)


def _side_as_plain(module: Module, label: str):
    with runtime.taking_cpus(1):  # the other side's, in the parent
        return plain.encode(side(module, label), _SIDE_TYPES)


def sides(a: Module, b: Module, labels: tuple[str, str] = ("", "")) -> tuple[Side, Side]:
    """Both sides; B's in a forked child while this process does A's, where it can fork
    (hloscope.api.runtime) and B's results are not in the cache already. A child that fails
    (B's text holds an error a read finds) sends nothing, and B's side is then done here,
    raising what it raises, after A's: the errors come in the order they would without it."""
    job = None if kept(b) else runtime.FORKING.submit(_side_as_plain, b, labels[1])
    # The two sides keep two CPUs busy: helpers inside either would only compete with them.
    with runtime.taking_cpus(1 if job is not None else 0):
        try:
            first = side(a, labels[0])
        except BaseException:
            if job is not None:
                job.cancel()
            raise
    answer = job.result() if job is not None else None
    if answer is None:
        return first, side(b, labels[1])
    with runtime.no_cyclic_gc():
        return first, plain.decode(answer, _SIDE_TYPES)


def diff(a: Module, b: Module, labels: tuple[str, str] = ("", ""),
         names: tuple[str, str] = ("A", "B")) -> DiffResult:
    """B against A: the temp-memory gap in named causes that add up to it
    (hloscope.analysis.diff). `names`: how its sentence calls the two sides."""
    return diff_sides(*sides(a, b, labels), names=names)
