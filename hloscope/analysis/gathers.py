"""All-gathers whose gathered value is held: used on both sides of the forward→backward
boundary, or hoisted out of a loop so the full value lives across its iterations.

The classic FSDP/HSDP memory blow-up (jax-ml/jax#24208): XLA's CSE merges the forward pass's
all-gather of a parameter with the backward pass's re-gather of the same parameter, so the
gathered, full-size weight stays alive from its first forward use to its last backward use::

    step:   0 ........ forward ........ | ........ backward ........ end
    gather  [=========================================]                 held: one value,
    uses       fwd dot          fwd dot      bwd dot   bwd dot          uses on both sides

    re-gathered (e.g. under jax.checkpoint):
    gather  [=======]                     [========]
    uses       fwd dot                       bwd dot                    two values, not held

The gathered value is followed the way XLA's dataflow follows values: through
get-tuple-element, tuple, bitcast, while-loop carries and calls (positions of one value),
and through copies (a new value holding the same bytes). Its uses are then sorted by side:

- **the boundary** comes from JAX's metadata: backward ops carry `transpose(` in `op_name`,
  forward ops `jvp(`. A module without such metadata falls back to the schedule: the first
  gradient reduction (a reduce-scatter, else an all-reduce, whose operand comes from a
  computation of the backward pass) starts the backward pass. The result says which it used.
- **hoisted**: the gather runs outside a while loop and its value is read inside the loop's
  body through the loop's carry: the whole gathered value stays live for every iteration.

What it costs comes from the memory model (analysis.memory): the value's live range on the
flattened schedule, whether it is live at the peak step, and its bytes there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..encode import Encoded, as_json, extra
from ..ir.module import Instruction
from ..ir.opcodes import REDUCTION_KINDS
from ..ir.opcodes import info as opinfo
from .callgraph import scheduled_callees
from .dataflow import Value
from .facts import Alike, Facts
from .memory import MemoryModel
from .sides import BACKWARD, FORWARD, OTHER, backward_start_step, side_of



@dataclass(frozen=True)
class GatherUse(Encoded):
    """One instruction reading a gathered value."""

    instruction: str
    side: str
    """`forward`, `backward` or `other` (neither: an optimizer update, a loss, no metadata)."""
    step: int | None
    """Its step in the flattened schedule (None inside a fusion or applied computation)."""


@dataclass(frozen=True)
class HeldGather(Encoded):
    """A gathered value that stays live across the forward→backward boundary or a loop."""

    instruction: str
    """The all-gather (its start, or the fusion running it), with `{index}` for one element of
    a combined gather."""
    bytes: int
    reasons: tuple[str, ...]
    """`forward_and_backward` (used by both passes, by JAX's metadata), `spans_backward_start`
    (live from before the backward pass starts, by the schedule, into it) and/or
    `hoisted_out_of_loop`."""
    first_use: dict[str, Any]
    """`{"step", "instruction"}` of the first use on the flattened schedule."""
    last_use: dict[str, Any]
    live: tuple[int, int]
    """`[start, end]` steps the gathered bytes are live (the value and its copies)."""
    spans_peak: bool
    """Whether the peak step lies inside `live`."""
    bytes_at_peak: int
    """Gathered bytes live at the peak step of their memory space's temp heap."""
    users: tuple[GatherUse, ...]
    op_name: str | None
    source: str | None
    parameter: str | None
    """The entry parameter it gathers (instruction name), when the operand leads to one."""
    parameter_path: str | None
    """That parameter's JAX pytree path (its `op_name` metadata), when recorded."""
    origin: str
    """`explicit` (an `all_gather` the program asked for), `partitioner` (inserted by the SPMD
    partitioner for another op), or `unknown` (no metadata)."""


@dataclass(frozen=True)
class GatherAsAllReduce(Encoded):
    """An all-gather implemented as an all-reduce (pytorch/xla#6528): each device writes its
    shard into a zero-padded full-size buffer, all-reduces it and slices its part out: the
    full size travels and lives, and an all-gather would move the same result."""

    instruction: str
    bytes: int
    op_name: str | None


@dataclass(frozen=True)
class GathersResult(Encoded):
    name: str
    held: tuple[HeldGather, ...] = field(metadata=as_json(key="held_all_gathers"))
    gathers: int = field(metadata=as_json(key="all_gathers"))
    """All-gathered values examined (one per element of a combined gather)."""
    boundary: str
    """How forward and backward were told apart: `metadata` (JAX op_name) or `schedule`."""
    boundary_step: int | None
    """With `schedule`: the step taken as the start of the backward pass."""
    peak_step: int
    as_all_reduce: tuple[GatherAsAllReduce, ...] = field(default=(), metadata=as_json(key="all_gathers_as_all_reduce"))
    json_extra = (extra("held_bytes", after="held_all_gathers"), extra("held_bytes_at_peak", after="held_all_gathers"))

    @property
    def held_bytes(self) -> int:
        return sum(h.bytes for h in self.held)

    @property
    def held_bytes_at_peak(self) -> int:
        return sum(h.bytes_at_peak for h in self.held)


# ─── sides of the boundary ────────────────────────────────────────────────────────────


def _has_side_metadata(model: MemoryModel) -> bool:
    """Whether any op on the schedule carries JAX's forward or backward metadata."""
    return any(side_of(inst.op_name) in (FORWARD, BACKWARD) for inst in model.live.schedule.time)


def _schedule_boundary(model: MemoryModel) -> int | None:
    """Without metadata: the step of the first gradient reduction, the first reduce-scatter
    (else all-reduce) of the schedule; None when there is none."""
    time = model.live.schedule.time
    for kind in REDUCTION_KINDS:
        steps = [t for inst, t in time.items() if opinfo(inst.opcode).collective == kind
                 and opinfo(inst.opcode).async_role in (None, "start")]
        if steps:
            return min(steps)
    return None


# ─── gathered values ──────────────────────────────────────────────────────────────────


def gathered_values(model: MemoryModel) -> list[tuple[Instruction, tuple, Value]]:
    """Every value an all-gather produces, as `(instruction, index, value)`: a sync
    all-gather's output, an async start's `{1}` elements (the done forwards them; also an
    async-start wrapping an all-gather), and for a fusion running an all-gather inside (TPU's
    async collective fusions), the outputs shaped like the gathered array."""
    df = model.dataflow
    out = []
    for inst, values in df.value_sets.items():
        op = opinfo(inst.opcode)
        if op.collective == "all-gather":
            if op.async_role is None:
                out += [(inst, idx, v) for idx, v in values.items() if v.instruction is inst and not v.shape.is_tuple]
            elif op.async_role == "start":
                out += [(inst, idx, v) for idx, v in values.items()
                        if idx[:1] == (1,) and v.instruction is inst and not v.shape.is_tuple]
        elif op.calls_kind == "async" and op.async_role == "start" and any(
                opinfo(c.root.opcode).collective == "all-gather" for c in inst.called_computations[:1]):
            # An async-start wrapping an all-gather: its `{1}` is the gather's result (a value
            # of the wrapped computation's own, where that runs on the same thread, is found
            # there as a sync all-gather).
            out += [(inst, idx, v) for idx, v in values.items()
                    if idx[:1] == (1,) and v.instruction is inst and not v.shape.is_tuple]
        elif op.calls_kind == "fused":
            gathered = _fused_gathers(inst, model.facts)
            if gathered:
                dims = {(s.element_type, s.dimensions) for s in gathered}
                out += [(inst, idx, v) for idx, v in values.items() if v.instruction is inst
                        and not v.shape.is_tuple and (v.shape.element_type, v.shape.dimensions) in dims]
    return out


def _fused_gathers(fusion: Instruction, facts: Facts) -> list:
    """The shapes of the all-gathers a fusion runs inside (bodies that certainly hold none
    are not walked)."""
    return [i.shape for c in fusion.called_computations if facts.holds_any(c, ("all-gather",))
            for i in c.instructions if opinfo(i.opcode).collective == "all-gather" and opinfo(i.opcode).async_role is None]


def carried_values(value: Value, df) -> list[Value]:
    """The value and the copies made of it (copies hold the same bytes in a new buffer)."""
    found, stack = [], [value]
    seen: set[int] = set()
    while stack:
        v = stack.pop()
        if v.id in seen:
            continue
        seen.add(v.id)
        found.append(v)
        for user, _, idx in v.uses:
            if idx:
                continue
            if user.opcode == "copy":
                holder = user
            elif user.opcode == "copy-start":  # an async copy: the done holds the new copy
                holder = next((u for u in user.users if opinfo(u.opcode).async_role == "done"), None)
            else:
                continue
            copied = df.value_sets.get(holder, {}).get(()) if holder is not None else None
            if copied is not None:
                stack.append(copied)
    return found


def _real_uses(values: list[Value]) -> list[Instruction]:
    """The instructions that compute with the values: not the ones that only carry them on
    (control flow, async pairs, copies)."""
    users: dict[Instruction, None] = {}
    for v in values:
        for user, _, _ in v.uses:
            op = opinfo(user.opcode)
            if op.runs_callees or op.async_role is not None or user.opcode == "copy":
                continue
            users[user] = None
    return list(users)


def _gathered_operand(inst: Instruction, index: tuple) -> Instruction | None:
    """What an all-gather gathers: its operand; element k of a combined start's `{1,k}`, its
    operand k; for a fusion running the gather, the fusion's operand feeding it."""
    op = opinfo(inst.opcode)
    if op.calls_kind == "fused":
        for comp in inst.called_computations:
            for i in comp.instructions:
                if opinfo(i.opcode).collective == "all-gather" and i.operands and i.operands[0].opcode == "parameter":
                    n = i.operands[0].parameter_number or 0
                    return inst.operands[n] if n < len(inst.operands) else None
        return None
    k = index[1] if op.async_role == "start" and len(index) > 1 else 0
    return inst.operands[k] if k < len(inst.operands) else None


def _before_gather(operand: Instruction | None, facts: Facts) -> Instruction | None:
    """Through an element of another gather's output (TPU's done fusion reads the start
    fusion's elements): what that gather gathers."""
    seen = 0
    while operand is not None and operand.opcode == "get-tuple-element" and operand.operands and seen < 8:
        seen += 1
        src = operand.operands[0]
        if opinfo(src.opcode).calls_kind != "fused" or not _fused_gathers(src, facts):
            break
        operand = _gathered_operand(src, ())
    return operand


def _entry_parameter(operand: Instruction | None, callers: dict) -> Instruction | None:
    """The entry parameter `operand` comes from, through ops that keep its elements (moves
    and conversions: f32 weights cast to bf16, TPU's copies into another memory space),
    tuples and loop carries; None when it is computed."""
    cur, steps = operand, 0
    while cur is not None and steps < 256:
        steps += 1
        if cur.opcode == "parameter":
            if cur.computation.is_entry:
                return cur
            cur = _caller_operand(cur, None, callers)
        elif cur.opcode == "get-tuple-element" and cur.operands:
            index = cur.attributes.decoded("index")
            src = cur.operands[0]
            if not isinstance(index, int):
                return None
            if src.opcode == "tuple":
                cur = src.operands[index] if index < len(src.operands) else None
            elif src.opcode == "parameter" and src.computation.is_entry:
                return src
            elif src.opcode == "parameter":
                cur = _caller_operand(src, index, callers)
            else:
                return None
        elif (opinfo(cur.opcode).keeps_elements or opinfo(cur.opcode).async_role is not None) and cur.operands:
            cur = cur.operands[0]  # an async pair (copy-start/done) moves it too
        elif cur.opcode == "fusion" and len(cur.operands) == 1:
            cur = cur.operands[0]  # a fused conversion of one input
        else:
            return None
    return None


def _caller_operand(param: Instruction, element: int | None, callers: dict) -> Instruction | None:
    """What a called computation's parameter (element `element` of it, for a tuple) is bound
    to by its one caller; None for several callers."""
    found = callers.get(param.computation, ())
    if len(found) != 1:
        return None
    caller = found[0]
    number = 0 if caller.opcode == "while" else (param.parameter_number or 0)
    if number >= len(caller.operands):
        return None
    bound = caller.operands[number]
    if element is None:
        return bound
    if bound.opcode == "tuple" and element < len(bound.operands):
        return bound.operands[element]
    return None


def _inside_loop_of(user: Instruction, home, callers: dict) -> bool:
    """Whether `user` runs inside a while loop's body or condition that `home` (the gather's
    computation) runs: the gathered value then lives across the loop's iterations."""
    comp, seen = user.computation, 0
    through_loop = False
    while comp is not None and comp is not home and seen < 64:
        seen += 1
        found = callers.get(comp, ())
        if not found:
            return False
        through_loop |= opinfo(found[0].opcode).is_loop
        comp = found[0].computation
    return comp is home and through_loop


def schedule_callers(model: MemoryModel) -> dict:
    """Each computation the schedule runs → the instructions that run it (loops, calls,
    branches, async starts), from the flattened schedule alone: fused bodies stay unread."""
    callers: dict = {}
    for inst in model.live.schedule.time:
        if opinfo(inst.opcode).runs_callees:
            for comp in scheduled_callees(inst):
                callers.setdefault(comp, []).append(inst)
    return callers


def _origin(op_name: str | None) -> str:
    if not op_name:
        return "unknown"
    return "explicit" if op_name.rsplit("/", 1)[-1].startswith("all_gather") else "partitioner"


def _name(inst: Instruction, index: tuple) -> str:
    return inst.name if not index else f"{inst.name}{{{','.join(map(str, index))}}}"


# ─── the analysis ─────────────────────────────────────────────────────────────────────


def analyze_held_gathers(module, model: MemoryModel, gathered: list | None = None) -> GathersResult:
    """The held all-gathers of `module` (see this module's docstring); `model` is its
    `build_memory_model`, `gathered` its `gathered_values` when already found."""
    df, live = model.dataflow, model.live
    schedule = live.schedule
    callers = schedule_callers(model)
    by_metadata = _has_side_metadata(model)
    boundary_step = None if by_metadata else _schedule_boundary(model)
    peak = model.peak_step
    # A value counts at the peak of its own memory space's heap (TPU keeps gathered
    # weights in S(1), a heap of its own).
    peak_of = {}
    for heap in model.heaps.values():
        for v in heap.offsets:
            peak_of[v] = heap.max_live_at

    def side(user: Instruction) -> str:
        if by_metadata:
            return side_of(user.op_name) or OTHER
        t = schedule.time.get(user)
        if t is None or boundary_step is None:
            return OTHER
        return BACKWARD if t >= boundary_step else FORWARD

    backward_start = backward_start_step(model.live.schedule.time) if by_metadata else None
    held = []
    if gathered is None:
        gathered = gathered_values(model)
    for inst, index, value in gathered:
        values = carried_values(value, df)
        users = _real_uses(values)
        uses = tuple(GatherUse(u.name, side(u), schedule.time.get(u)) for u in users)
        sides = {u.side for u in uses}
        reasons = []
        if FORWARD in sides and BACKWARD in sides:
            reasons.append("forward_and_backward")
        elif backward_start is not None and any(u.step is not None and u.step > backward_start for u in uses) and any(
                live.ranges[v][0] < backward_start for v in values if v in live.ranges):
            # Gathered in the forward pass by time (a remat's recomputation, or a backward
            # gather, that XLA scheduled early) and held into the backward pass.
            reasons.append("spans_backward_start")
        if any(_inside_loop_of(u, inst.computation, callers) for u in users):
            reasons.append("hoisted_out_of_loop")
        if not reasons:
            continue
        ranges = [live.ranges[v] for v in values if v in live.ranges]
        start = min((r[0] for r in ranges), default=0)
        end = max((r[1] for r in ranges), default=0)
        at_peak = sum(v.size for v in values if v in peak_of and v in live.ranges
                      and live.ranges[v][0] <= peak_of[v] <= live.ranges[v][1])
        own_peak = peak_of.get(value, peak)
        timed = sorted((u for u in uses if u.step is not None), key=lambda u: u.step)
        parameter = _entry_parameter(_before_gather(_gathered_operand(inst, index), model.facts), callers)
        held.append(HeldGather(
            instruction=_name(inst, index),
            bytes=value.size,
            reasons=tuple(reasons),
            first_use={"step": timed[0].step, "instruction": timed[0].instruction} if timed else {},
            last_use={"step": timed[-1].step, "instruction": timed[-1].instruction} if timed else {},
            live=(start, end),
            spans_peak=start <= own_peak <= end,
            bytes_at_peak=at_peak,
            users=uses,
            op_name=inst.op_name,
            source=inst.source,
            parameter=parameter.name if parameter is not None else None,
            parameter_path=parameter.op_name if parameter is not None else None,
            origin=_origin(inst.op_name),
        ))
    held.sort(key=lambda h: (-h.bytes_at_peak, -h.bytes, h.instruction))
    return GathersResult(
        name=module.name,
        held=tuple(held),
        gathers=len(gathered),
        boundary="metadata" if by_metadata else "schedule",
        boundary_step=boundary_step,
        peak_step=peak,
        as_all_reduce=tuple(_gathers_as_all_reduce(model)),
    )


def _gathers_as_all_reduce(model: MemoryModel) -> list[GatherAsAllReduce]:
    """All-reduces whose operand is a shard written into zeros (a dynamic-update-slice into a
    broadcast zero, or a pad with zeros) and whose result is then sliced."""
    found = []
    alike = Alike(model.facts, but_metadata=True)  # a root's opcode and operands
    for inst in model.dataflow.value_sets:
        op = opinfo(inst.opcode)
        if op.collective != "all-reduce" or op.async_role not in (None, "start") or not inst.operands:
            continue
        if not _zero_padded(inst.operands[0], alike):
            continue
        result = inst
        if op.async_role == "start":
            done = [u for u in inst.users if opinfo(u.opcode).async_role == "done"]
            result = done[0] if done else inst
        if any(u.opcode in ("slice", "dynamic-slice") for u in result.users):
            found.append(GatherAsAllReduce(inst.name, inst.shape.byte_size, inst.op_name))
    return found


def _zero_padded(inst: Instruction, alike: Alike) -> bool:
    """Whether `inst` pads zeros around its data (a fusion: its fused computation's root, read
    in the one `alike` names)."""
    if inst.opcode == "pad":
        return _is_zero(inst.operands[1]) if len(inst.operands) > 1 else False
    if inst.opcode == "dynamic-update-slice" and inst.operands:
        return _is_zero(inst.operands[0])
    if inst.opcode == "fusion":
        for comp in inst.called_computations:
            root = alike(comp).root
            if root.opcode in ("pad", "dynamic-update-slice"):
                base = root.operands[1] if root.opcode == "pad" else root.operands[0]
                return _is_zero(base)
    return False


def _is_zero(inst: Instruction) -> bool:
    while opinfo(inst.opcode).keeps_elements and inst.operands:
        inst = inst.operands[0]
    return inst.opcode == "constant" and (inst.literal or "").strip() in ("0", "0.0", "-0", "false", "0.")
