"""The module's one timeline: every computation the schedule runs, inlined where it runs.

This is the flattening of XLA's HloLiveRange (module-scoped). A computation a `call` or
`conditional` runs is inlined just before the calling instruction; a `while` gets its
condition, then its body, inlined before it; an async start gets its wrapped computation
before it. A loop body appears once, so trip counts never multiply memory::

    entry:   a   while(a)   b            time:  0:a  1:cond.p  2:lt  3:body.p  4:add  5:tuple
    cond:    p   lt(p)                          6:while  7:b
    body:    p   add(p)   tuple(add)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.module import Computation, Instruction
from ..ir.opcodes import info as opinfo
from .callgraph import scheduled_callees
from .dataflow import Dataflow


@dataclass(frozen=True)
class Schedule:
    """The flattened schedule: `steps[t]` is the name of what runs at step t."""

    steps: list[str]
    time: dict[Instruction, int]
    """Step of each instruction of every flattened computation."""
    span: dict[Computation, tuple[int, int]]
    """`[start, end)` steps of each flattened computation; end is the step after its last."""
    wrapped_time: dict[Instruction, int]
    """For async printing sugar (no wrapped computation in the text): the step of the wrapped op."""
    async_context: dict[Computation, Instruction]
    """Computations run by an async start → that start."""

    @property
    def end(self) -> int:
        """XLA's schedule_end_time: one past the last step."""
        return len(self.steps)


def flatten_schedule(dataflow: Dataflow) -> Schedule:
    """The module's one timeline: each computation the schedule runs inlined where it runs
    (`callgraph.scheduled_callees`), async printing sugar given its wrapped op's steps."""
    module = dataflow.module
    steps: list[str] = []
    time: dict[Instruction, int] = {}
    span: dict[Computation, tuple[int, int]] = {}
    wrapped_time: dict[Instruction, int] = {}
    async_context: dict[Computation, Instruction] = {}

    async_wrapped = dataflow.async_wrapped
    wrappers = dataflow.wrappers

    def visit(comp: Computation) -> None:
        if comp in span:
            return
        start = len(steps)
        span[comp] = (start, start)  # entered: a computation that calls itself is not entered again
        for inst in comp.instructions:
            info = wrappers.get(inst) or opinfo(inst.opcode)
            if info.runs_callees:
                # Condition first, then body: their order on the timeline is XLA's.
                for c in scheduled_callees(inst):
                    if info.calls_kind == "async":
                        async_context[c] = inst
                    visit(c)
            elif info.sugar and inst in async_wrapped:
                # Printing sugar: XLA's wrapped computation holds one parameter per operand
                # and the wrapped op; they take steps of their own before the start.
                for n in range(len(inst.operands)):
                    steps.append(f"{inst.name}/param_{n}")
                wrapped_time[inst] = len(steps)
                steps.append(f"{inst.name}/{info.wrapped}")
            time[inst] = len(steps)
            steps.append(inst.name)
        span[comp] = (start, len(steps))

    visit(module.entry)
    return Schedule(steps, time, span, wrapped_time, async_context)

