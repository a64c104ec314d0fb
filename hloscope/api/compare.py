"""Comparing two compilations: `hloscope.diff(a, b)`, which module of one goes with which of
the other, and budgets against a baseline."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..analysis.diff import DiffResult, Side
from ..analysis.diff import diff as diff_sides
from ..speed import plain, runtime
from .module import RESULT_TYPES, Module, cost_in_brief, kept

_SIDE_TYPES = plain.allowing((Side,) + tuple(t for types in RESULT_TYPES.values() for t in types))


def side(module: Module, label: str = "") -> Side:
    """Everything the diff reads of one module (its memory, roles at the peak, collectives,
    held gathers and cost in brief; one memory model serves the memory analyses). The cost
    first: it reads every body, each once (hloscope.speed.analyzing)."""
    cost = cost_in_brief(module)
    return Side(memory=module.memory(), roles=module.roles(), collectives=module.collectives(),
                gathers=module.held_gathers(), cost=cost, label=label)


def _side_as_plain(module: Module, label: str):
    with runtime.taking_cpus(1):  # the other side's, in the parent
        return plain.encode(side(module, label), _SIDE_TYPES)


def work_out_side(module: Module, timelines: bool = False) -> None:
    """Work out, into the cache, everything `side` reads of `module` (what a child reading B
    ahead does for the diff, `loading.reading_ahead`'s `then`), and with `timelines` its role
    timelines too (what the diff's picture draws): its memory model is then at hand."""
    if not kept(module):
        side(module)
    if timelines:
        module.role_timelines()


def sides(a: Module, b: Module, labels: tuple[str, str] = ("", "")) -> tuple[Side, Side]:
    """Both sides; B's in a forked child while this process does A's, where it can fork
    (hloscope.speed.runtime) and B's results are not in the cache already. A child that fails
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
