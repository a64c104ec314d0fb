"""The Module users get: the IR's Module, with its analyses one call away.

`module.memory()`, `module.collectives()`, `module.stats()` run the analyses (hloscope.analysis)
through hloscope.speed: its cache of results by the text's hash, and what it answers from the
text (`speed.analyzing`). The IR itself knows no analysis, so a parsed IR module becomes one of these
(`adopt`): same object, same slots, one class more.
"""

from __future__ import annotations

import functools

from ..analysis.callgraph import running_graph
from ..analysis.collectives import (
    Collective,
    CollectivesResult,
    Tally,
    analyze_collectives,
)
from ..analysis.cost import CostResult, InstructionCost, LoopCost, analyze_cost
from ..analysis.gathers import (
    GatherAsAllReduce,
    GathersResult,
    GatherUse,
    HeldGather,
    analyze_held_gathers,
    gathered_values,
)
from ..analysis.memory import (
    LiveBuffer,
    MemoryAnalysis,
    MemoryModel,
    analyze_memory,
    build_memory_model,
)
from ..analysis.roles import (
    RoleBuffer,
    RolesAtPeak,
    assign_roles,
    role_timelines,
    roles_at_peak,
)
from ..analysis.stats import module_stats
from ..ir import module as ir
from ..text.printer import module_to_text
from ..speed import seam as speed

_last_model: list = [None, None, None]
"""[key, model, gathered values once asked] of the last module's memory model: `memory()`
then `held_gathers()` on one module (what `hloscope gathers` and the diff do) builds it
once, and its roles and held gathers find what all-gathers make once."""


def _model(module, platform: str | None, alignment: int | None, facts) -> MemoryModel:
    key = (platform, alignment)
    last = _last_model[1]
    if last is None or last.module is not module or _last_model[0] != key:
        _last_model[:] = [None, None, None]  # the old model is let go before the new one is built
        model = build_memory_model(module, platform, alignment, facts)
        _last_model[:] = [key, model, None]
    return _last_model[1]


def _gathered(model: MemoryModel) -> list:
    """`gathered_values(model)`, kept with the last model built."""
    if _last_model[1] is not model:
        return gathered_values(model)
    if _last_model[2] is None:
        _last_model[2] = gathered_values(model)
    return _last_model[2]


def _memory(module, platform: str | None = None, alignment: int | None = None) -> MemoryAnalysis:
    with speed.analyzing(module) as facts:
        return analyze_memory(module, model=_model(module, platform, alignment, facts))


def _held_gathers(module, platform: str | None = None, alignment: int | None = None) -> GathersResult:
    with speed.analyzing(module) as facts:
        model = _model(module, platform, alignment, facts)
        return analyze_held_gathers(module, model, _gathered(model))


def _roles(module, platform: str | None = None, alignment: int | None = None) -> RolesAtPeak:
    with speed.analyzing(module) as facts:
        model = _model(module, platform, alignment, facts)
        return roles_at_peak(module, model, assign_roles(module, model, _gathered(model)))


def _role_timelines(module, platform: str | None = None, alignment: int | None = None) -> dict[str, tuple[int, ...]]:
    with speed.analyzing(module) as facts:
        model = _model(module, platform, alignment, facts)
        # Tuples: plain data the cache keeps without a call per step.
        roles = assign_roles(module, model, _gathered(model))
        return {role: tuple(t) for role, t in role_timelines(model, roles).items()}


_cost_graph: list = []
"""While a cost runs: its module's `running_graph`, which the collectives it asks for walk
too (their result may come from the cache, which keeps no graph)."""


def _collectives(module) -> CollectivesResult:
    with speed.analyzing(module) as facts:
        graph = _cost_graph[0] if _cost_graph and _cost_graph[0].module is module else None
        return analyze_collectives(module, facts, graph)


def _cost(module, recomputing_only: bool = False) -> CostResult:
    # The cost reads every body: each once, before the collectives read some.
    with speed.analyzing(module, reads_all=True) as facts:
        _cost_graph[:] = [running_graph(module, facts)]
        try:
            return analyze_cost(module, _collectives(module), recomputing_only, facts, _cost_graph[0])
        finally:
            _cost_graph.clear()


def _cost_in_brief(module) -> CostResult:
    """`CostResult.in_brief`: from the cost kept in the cache if it is, else worked out
    listing only what the brief keeps (what a diff needs of a side's cost, a few KB against MB)."""
    # `__wrapped__`: the analysis itself, under the memo that would keep the whole result.
    return (_cost(module) if _cost.kept(module) else _cost.__wrapped__(module, recomputing_only=True)).in_brief()


RESULT_TYPES = {
    "memory": (MemoryAnalysis, LiveBuffer),
    "roles": (RolesAtPeak, RoleBuffer),
    "gathers": (GathersResult, HeldGather, GatherUse, GatherAsAllReduce),
    "collectives": (CollectivesResult, Collective, Tally),
    "cost": (CostResult, InstructionCost, LoopCost),
}
"""The frozen dataclasses each analysis's result is made of: what may be rebuilt from plain
data (the cache's files, a forked child's answer)."""

_memory = speed.memoized("memory", RESULT_TYPES["memory"])(_memory)
_roles = speed.memoized("roles", RESULT_TYPES["roles"])(_roles)
_held_gathers = speed.memoized("gathers", RESULT_TYPES["gathers"])(_held_gathers)
_role_timelines = speed.memoized("role_timelines", ())(_role_timelines)
_collectives = speed.memoized("collectives", RESULT_TYPES["collectives"])(_collectives)
_cost = speed.memoized("cost", RESULT_TYPES["cost"])(_cost)
cost_in_brief = speed.memoized("cost_in_brief", RESULT_TYPES["cost"])(_cost_in_brief)


def kept(module, platform: str | None = None, alignment: int | None = None) -> bool:
    """Whether the results of every analysis a diff asks of `module` (the memory ones at
    these arguments, the cost in brief) are in the cache: asking for them then reads files
    and computes nothing."""
    return (all(f.kept(module, platform, alignment) for f in (_memory, _roles, _held_gathers))
            and _collectives.kept(module) and cost_in_brief.kept(module))


class Module(ir.Module):
    """One HloModule (see hloscope.ir.Module), with its analyses."""

    __slots__ = ()

    def collectives(self) -> CollectivesResult:
        """Every collective: kind, bytes, groups, loop trip counts (hloscope.analysis.collectives)."""
        return _collectives(self)

    def cost(self) -> CostResult:
        """FLOPs, bytes accessed and collective bytes of one step, × loop trip counts, and under
        XLA's convention; the FLOPs that recompute forward ops (hloscope.analysis.cost)."""
        return _cost(self)

    def memory(self, platform: str | None = None, alignment: int | None = None) -> MemoryAnalysis:
        """XLA's memory figures, the peak and what is live at it (hloscope.analysis.memory)."""
        return _memory(self, platform, alignment)

    def held_gathers(self, platform: str | None = None, alignment: int | None = None) -> GathersResult:
        """All-gathers whose gathered value is held across forward→backward or hoisted out of
        a loop, with their bytes at the peak (hloscope.analysis.gathers)."""
        return _held_gathers(self, platform, alignment)

    def roles(self, platform: str | None = None, alignment: int | None = None) -> RolesAtPeak:
        """What the device holds at the memory peak, by role: parameters, optimizer state,
        inputs, gathered parameters, gradients, activations, temporaries, unknown
        (hloscope.analysis.roles)."""
        return _roles(self, platform, alignment)

    def role_timelines(self, platform: str | None = None, alignment: int | None = None) -> dict[str, list[int]]:
        """Temp bytes live at each schedule step, by role; they add up to
        `memory().timeline` (hloscope.analysis.roles)."""
        return {role: list(t) for role, t in _role_timelines(self, platform, alignment).items()}

    def stats(self):
        with speed.analyzing(self):
            return module_stats(self)

    def to_text(self) -> str:
        """This module as HLO text (hloscope.text.printer)."""
        return module_to_text(self)


def adopt(modules: list[ir.Module]) -> list[Module]:
    """The same modules, as this layer's Module (no copy: the classes share their slots)."""
    for m in modules:
        m.__class__ = _adopted(type(m))
    return modules  # type: ignore[return-value]


@functools.cache
def _adopted(cls: type) -> type:
    """This layer's Module for an IR module of class `cls`: Module itself, or for a subclass
    (hloscope.speed's, whose computations are made when first asked for) the two in one."""
    if issubclass(cls, Module):
        return cls
    if cls is ir.Module:
        return Module
    return type(Module.__name__, (Module, cls), {"__slots__": (), "__module__": __name__, "__doc__": Module.__doc__,
                                                 "__qualname__": Module.__qualname__})
