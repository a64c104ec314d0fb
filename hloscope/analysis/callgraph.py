"""The call graph: which computations run, in what order, how often, and under what.

XLA runs a called computation in one of two ways (its call contexts, from the opcode table's
`OpInfo.calls_kind`): as steps of the schedule (`runs_callees`: a while's condition and body,
a call's callee, a conditional's branches, an async start's wrapped computation), or inside
the op that calls it (a fusion's computation, a reducer). The memory analyses follow the first
kind only (`scheduled_computations`, `scheduled_callees`, `callees_first`); counting
collectives follows every call (`CallGraph`), since TPU puts collectives inside fusions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from ..ir.module import Computation, Instruction, Module
from ..ir.opcodes import info as opinfo


def loop_parts(inst: Instruction) -> tuple[Computation | None, Computation | None]:
    """A loop's (condition, body), None for one the module does not have."""
    module = inst.computation.module if inst.computation is not None else None
    if module is None:
        return None, None
    attributes = inst.attributes
    parts = []
    for key in ("condition", "body"):
        names = attributes.decoded(key)
        parts.append(module.callee(names[0]) if names else None)
    return parts[0], parts[1]


def scheduled_callees(inst: Instruction, xla_order: bool = False) -> list[Computation]:
    """The computations `inst` runs as steps of the schedule ([] for most instructions): a
    call's callee, a conditional's branches, an async start's wrapped computation, a loop's
    condition then body. That is the order of XLA's flattened timeline (HloLiveRange); with
    `xla_order`, a loop's body comes first, as in XLA's `called_computations()`, which
    numbers values (the two orders are both XLA's, for different things)."""
    op = opinfo(inst.opcode)
    if not op.runs_callees:
        return []
    kind = op.calls_kind
    if kind == "loop" and not xla_order:
        return [c for c in loop_parts(inst) if c is not None]
    called = inst.called_computations
    return called[:1] if kind == "async" else called


def scheduled_computations(module: Module) -> Iterator[Computation]:
    """The computations the schedule runs, each once, in the order the flattened timeline
    first enters them: the entry, then depth first through control flow and async starts
    (`scheduled_callees`); not fused or applied computations, which stay unread. Each is
    yielded before it is read: a caller may look at its unread text first."""
    seen: set[str] = set()
    stack: list[Iterator[Computation]] = [iter((module.entry,))]
    while stack:
        for comp in stack[-1]:
            if comp.name not in seen:
                seen.add(comp.name)
                yield comp
                stack.append(_scheduled_callees_of(comp))
                break
        else:
            stack.pop()


def _scheduled_callees_of(comp: Computation) -> Iterator[Computation]:
    for inst in comp.instructions:
        if opinfo(inst.opcode).runs_callees:
            yield from scheduled_callees(inst)


def scheduled_instructions(module: Module) -> Iterator[Instruction]:
    """The instructions of `scheduled_computations`, computation by computation."""
    for comp in scheduled_computations(module):
        yield from comp.instructions


def callees_first(module: Module) -> list[Computation]:
    """The computations the schedule runs, each after every one it runs (XLA's
    MakeComputationPostOrder over control flow, callees in `xla_order`)."""
    order: list[Computation] = []
    seen: set[str] = set()

    def visit(comp: Computation) -> None:
        if comp.name in seen:
            return
        seen.add(comp.name)
        for inst in comp.instructions:
            if opinfo(inst.opcode).runs_callees:
                for callee in scheduled_callees(inst, xla_order=True):
                    visit(callee)
        order.append(comp)

    visit(module.entry)
    return order


class CallGraph:
    """Every call of a module, of every kind, and how often each computation runs per run of
    the entry; None = unknown (a loop without `known_trip_count` on the way).

    Keyed by computation names as the text's attributes write them. `reads(comp)` False says
    a computation's calls need not be known (its unread body is then not read): counting
    collectives skips bodies that call nothing a collective can be in. None reads all."""

    def __init__(self, module: Module, reads: Callable[[Computation], bool] | None = None):
        self.module = module
        # callee name → [(calling instruction, times the instruction runs the callee)]
        self._callers: dict[str, list[tuple[Any, int | None]]] = defaultdict(list)
        for comp in module.computations:
            if reads is not None and not reads(comp):
                continue
            for inst in comp.instructions:
                names = inst.called_computation_names
                if not names:
                    continue
                # A loop runs its body once per trip and its condition once more; every
                # other callee runs once per call.
                per_call: dict[str, int | None] = {}
                if opinfo(inst.opcode).is_loop:
                    trips = inst.known_trip_count
                    for n in inst.attributes.decoded("body") or ():
                        per_call[n] = trips
                    for n in inst.attributes.decoded("condition") or ():
                        per_call[n] = None if trips is None else trips + 1
                for name in dict.fromkeys(names):
                    self._callers[name].append((inst, per_call.get(name, 1)))
        self._runs: dict[str, int | None] = {}
        self._loops: dict[str, tuple[str, ...]] = {}
        self._reachable: dict[str, bool] = {}

    def callers(self, comp_name: str) -> list[tuple[Instruction, int | None]]:
        """(calling instruction, times one run of it runs `comp_name`) for every call."""
        return self._callers.get(comp_name, [])

    def runs(self, comp_name: str, _stack: tuple[str, ...] = ()) -> int | None:
        if comp_name in self._runs:
            return self._runs[comp_name]
        entry = self.module.entry
        if entry is not None and comp_name == entry.name:
            total: int | None = 1
        elif comp_name in _stack:  # recursion does not occur in valid HLO; do not loop forever
            return None
        else:
            total = 0
            for inst, times in self._callers.get(comp_name, ()):
                caller = inst.computation.name
                r = self.runs(caller, _stack + (comp_name,))
                if r == 0 and total is not None:
                    continue
                if r is None or times is None or total is None:
                    total = None
                else:
                    total += r * times
        self._runs[comp_name] = total
        return total

    def reachable(self, comp_name: str, _stack: tuple[str, ...] = ()) -> bool:
        """Some chain of calls from the entry reaches `comp_name`."""
        if comp_name in self._reachable:
            return self._reachable[comp_name]
        entry = self.module.entry
        if entry is not None and comp_name == entry.name:
            ok = True
        elif comp_name in _stack:
            return False
        else:
            ok = any(self.reachable(inst.computation.name, _stack + (comp_name,))
                     for inst, _ in self._callers.get(comp_name, ()))
        self._reachable[comp_name] = ok
        return ok

    def loops(self, comp_name: str, _stack: tuple[str, ...] = ()) -> tuple[str, ...]:
        """Loop instructions on any call path from the entry, outermost first."""
        if comp_name in self._loops:
            return self._loops[comp_name]
        if comp_name in _stack:
            return ()
        out: dict[str, None] = {}
        for inst, _ in self._callers.get(comp_name, ()):
            for name in self.loops(inst.computation.name, _stack + (comp_name,)):
                out[name] = None
            if opinfo(inst.opcode).is_loop:
                out[inst.name] = None
        self._loops[comp_name] = tuple(out)
        return self._loops[comp_name]

    def async_callers(self, comp_name: str) -> list[Instruction]:
        """The async starts that call `comp_name`: it runs inside their async wrapper
        (printing sugar with its callee printed included)."""
        return [inst for inst, _ in self._callers.get(comp_name, ()) if inst.info.async_role == "start"]
