"""Comparing two compilations: `hloscope.diff(a, b)`, which module of one goes with which of
the other, and budgets against a baseline."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..analysis.diff import DiffResult, Side
from ..analysis.diff import diff as diff_sides
from ..speed import seam as speed
from .module import RESULT_TYPES, Module, cost_in_brief, kept

_SIDE_TYPES = (Side,) + tuple(t for types in RESULT_TYPES.values() for t in types)


def side(module: Module, label: str = "") -> Side:
    """Everything the diff reads of one module (its memory, roles at the peak, collectives,
    held gathers and cost in brief; one memory model serves the memory analyses). The cost
    first: it reads every body, each once (hloscope.speed.analyzing)."""
    cost = cost_in_brief(module)
    return Side(memory=module.memory(), roles=module.roles(), collectives=module.collectives(),
                gathers=module.held_gathers(), cost=cost, label=label)


def work_out_side(module: Module, timelines: bool = False) -> None:
    """Work out, into the cache, everything `side` reads of `module` (what a child reading B
    ahead does for the diff, `loading.reading_ahead`'s `then`), and with `timelines` its role
    timelines too (what the diff's picture draws): its memory model is then at hand."""
    if not kept(module):
        side(module)
    if timelines:
        module.role_timelines()


def sides(a: Module, b: Module, labels: tuple[str, str] = ("", "")) -> tuple[Side, Side]:
    """Both sides; B's worked out meanwhile in another process where it can be and B's
    results are not in the cache already (hloscope.speed.seam.meanwhile: errors come in the
    order they would without it)."""
    if kept(b):
        return side(a, labels[0]), side(b, labels[1])
    return speed.meanwhile(lambda: side(a, labels[0]), lambda: side(b, labels[1]), _SIDE_TYPES)


def diff(a: Module, b: Module, labels: tuple[str, str] = ("", ""),
         names: tuple[str, str] = ("A", "B")) -> DiffResult:
    """B against A: the temp-memory gap in named causes that add up to it
    (hloscope.analysis.diff). `names`: how its sentence calls the two sides."""
    return diff_sides(*sides(a, b, labels), names=names)


def diff_with_b_ahead(a: Module, b: Module, b_worked_out: Callable[[], bool],
                      labels: tuple[str, str] = ("", "")) -> DiffResult:
    """`diff`, where a child that read B's text works B's side out into the cache meanwhile
    (`work_out_side`, started by `loading.reading_ahead`, whose block keeps its CPU taken):
    it is waited for after A's side, and B's side is then read from the cache (or, if the
    child failed, done here, raising what it raises after A's)."""
    first = side(a, labels[0])
    b_worked_out()
    return diff_sides(first, side(b, labels[1]))


T = TypeVar("T")


@dataclass(frozen=True)
class Pairing(Generic[T]):
    """Which modules of A and B are compared (`pair_modules`)."""

    pairs: tuple[tuple[T, T], ...]
    only_a: tuple[str, ...]
    """Names of A's modules that B has none of."""
    only_b: tuple[str, ...]
    """Names of B's modules that A has none of."""

    def unlike(self, name: Callable[[T], str] = lambda m: m.name) -> tuple[tuple[str, str], ...]:
        """The pairs whose modules have different names (`jit__lambda` against `jit_step`):
        likely two different programs, compared because each side held one."""
        return tuple((name(x), name(y)) for x, y in self.pairs if name(x) != name(y))


def pair_modules(a: Sequence[T], b: Sequence[T], name: Callable[[T], str] = lambda m: m.name) -> Pairing[T]:
    """Modules of A and B to compare (`hloscope diff`): the one of each, or, when a side holds
    several (two dump directories, multi-module files), those of the same `name`, in A's order
    (a name twice in a side: its first module)."""
    if len(a) == 1 and len(b) == 1:
        return Pairing(((a[0], b[0]),), (), ())
    by_name: dict[str, T] = {}
    for y in b:
        by_name.setdefault(name(y), y)
    pairs = tuple((x, by_name.pop(name(x))) for x in a if name(x) in by_name)
    paired = {name(x) for x, _ in pairs}
    return Pairing(pairs, tuple(name(x) for x in a if name(x) not in paired), tuple(by_name))


def match_baselines(modules: Sequence[Module], baselines: Sequence[Module]) -> list[Module]:
    """The module of a baseline each module is checked against (`hloscope check --baseline`):
    the baseline's module of the same name, else its first."""
    by_name = {m.name: m for m in baselines}
    return [by_name.get(m.name, baselines[0]) for m in modules]
