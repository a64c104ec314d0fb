"""What each buffer is, in the terms people who train with ZeRO/FSDP think in.

Every value of the memory model gets one role, decided from the module's structure and JAX's
metadata (`op_name`: `jvp(` marks the forward pass, `transpose(` the backward pass), never from
names a user chose:

- entry parameters:
  - `parameters`: donated state (`input_output_alias`) that the forward pass reads (weights);
  - `optimizer_state`: donated state the forward pass does not read (Adam moments, step);
  - `inputs`: parameters that are not donated and that the forward pass reads (the batch, RNG);
  - `unknown`: the rest (without donation or metadata nothing tells state from inputs);
- values the step computes (temp and outputs), first rule that applies:
  - `gathered_parameters`: all-gathered weights and their copies (analysis.gathers);
  - `loop_state`: values carried by a while loop (gradient accumulators, loop counters);
  - `gradients`: backward values that reach a gradient reduction (reduce-scatter, all-reduce),
    the optimizer update, or the outputs, and the reductions' results;
  - `collective_buffers`: results of collectives not classified above;
  - `activations`: forward values the backward pass reads (saved residuals), itself or moved;
  - `temporaries`: any other value whose defining op carries metadata;
  - a move without metadata (XLA's copies, slices and concatenations between memory spaces
    and layouts, `ir.opcodes.moves_data`) plays the part of what it moves, when all it
    moves plays one;
  - `unknown`: values whose defining op has no metadata.

`roles_at_peak` sums the bytes the device holds at the peak step by role: the arguments, the
outputs not aliased to them, and the temp values live at the peak (each slot of the heap once),
so the roles add up to `argument_bytes + output_bytes - alias_bytes + temp_max_live_bytes`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ..encode import Encoded, as_json
from ..ir.attributes import unquote
from ..ir.module import Instruction
from ..ir.opcodes import REDUCTION_KINDS, fusion_kinds
from ..ir.opcodes import info as opinfo
from ..ir.opcodes import moves_data as opcode_moves_data
from .callgraph import loop_parts
from .dataflow import Value
from .gathers import BACKWARD, FORWARD, OTHER, carried_values, gathered_values, side_of
from .memory import MemoryModel

ROLES = ("parameters", "optimizer_state", "inputs", "gathered_parameters", "gradients", "activations",
         "collective_buffers", "loop_state", "temporaries", "unknown")
"""Every role, in report order."""

_GRADIENT_REDUCTIONS = frozenset(REDUCTION_KINDS)
_LOOP_OR_INPUT = fusion_kinds(loop_or_input=True)


@dataclass(frozen=True)
class RoleBuffer(Encoded):
    """One buffer live at the peak, with its role."""

    instruction: str
    role: str
    bytes: int
    shape: str
    op_name: str | None
    source: str | None
    where: str
    """`argument`, `output` or `temp`."""


@dataclass(frozen=True)
class RolesAtPeak(Encoded):
    """Bytes the device holds at the peak step, by role."""

    name: str
    peak_step: int
    by_role: dict[str, int]
    """Role → bytes (every role present, zeros included), summing to `total`."""
    temp_by_role: dict[str, int]
    """The temp values live at the peak alone, by role (sums to the heap's most live bytes)."""
    buffers: tuple[RoleBuffer, ...]
    """Everything held at the peak, largest first: arguments, outputs and temp values."""
    total: int = field(metadata=as_json(after="temp_by_role"))


class Roles:
    """The role of every value of a memory model (`assign_roles`)."""

    def __init__(self, module, model: MemoryModel):
        self.module, self.model = module, model
        self._role: dict[Value, str] = {}
        self._parameter_roles = _entry_parameter_roles(module, model)
        self._gathered = {v for _, _, g in gathered_values(model) for v in carried_values(g, model.dataflow)}
        self._carried = _loop_carried(model)
        self._sink: dict[Value, bool] = {}

    def of(self, value: Value) -> str:
        role = self._role.get(value)
        if role is None:
            role = self._role[value] = self._decide(value)
        return role

    def _decide(self, v: Value) -> str:
        inst = v.instruction
        if inst.opcode == "parameter" and inst.computation is self.module.entry:
            return self._parameter_roles.get(inst, "unknown")
        if v in self._gathered:
            return "gathered_parameters"
        if v in self._carried:
            return "loop_state"
        side = side_of(inst.op_name)
        collective = _collective(inst)
        if collective in _GRADIENT_REDUCTIONS and (side == BACKWARD or _reduces_backward(inst)):
            return "gradients"
        if side == BACKWARD and self._feeds_gradient_sink(v):
            return "gradients"
        if collective is not None:
            return "collective_buffers"
        if side == FORWARD and self._read_backward(v):
            return "activations"
        if side is None:
            sources = self._moved(v)
            roles = {self.of(s) for s in sources} if sources else set()
            return roles.pop() if len(roles) == 1 else "unknown"
        return "temporaries"

    def _read_backward(self, v: Value, depth: int = 0) -> bool:
        """Whether the backward pass reads `v`, or a move of it without metadata (on TPU a
        saved activation is evicted to HBM, fetched back in slices and concatenated again,
        by ops that carry none)."""
        if any(side_of(u.op_name) == BACKWARD for u, _, _ in v.uses):
            return True
        if depth >= 32:
            return False
        df = self.model.dataflow
        for user, _, _ in v.uses:
            if user.op_name is None and _moves_data(user):
                for w in df.value_sets.get(user, {}).values():
                    if w.instruction is user and w is not v and self._read_backward(w, depth + 1):
                        return True
        return False

    def _moved(self, v: Value) -> list[Value] | None:
        """What `v` holds the bytes of, when a move without metadata defines it: its operands'
        arrays (a copy-start's or slice-start's data, not its context scalar). None for any
        other value."""
        inst = v.instruction
        if inst.op_name is not None or not inst.operands or not _moves_data(inst) or v.shape.is_tuple:
            return None
        if inst.info.async_role == "start" and not v.shape.dimensions:
            return None  # the start's context (a sync flag), not the data
        values = self.model.dataflow.value_sets
        sources = [values.get(o, {}).get(()) for o in inst.operands if o.shape.is_array]
        return [s for s in sources if s is not None] or None

    def _feeds_gradient_sink(self, v: Value, depth: int = 0) -> bool:
        """Whether `v` reaches a gradient sink (a gradient reduction, the optimizer update, a
        loop's accumulator, the outputs) through ops that keep it a gradient: conversions,
        moves, sums and elementwise arithmetic, not a matrix product with another operand,
        which makes an activation's gradient into the next layer's (those are temporaries)."""
        known = self._sink.get(v)
        if known is not None:
            return known
        df = self.model.dataflow
        found = v.buffer in df.live_out or v in self._carried
        if not found and depth < 64:
            for user, _, _ in v.uses:
                if _collective(user) in _GRADIENT_REDUCTIONS or side_of(user.op_name) == OTHER:
                    found = True
                elif _keeps_gradient(user):
                    found = any(self._feeds_gradient_sink(u, depth + 1) for u in df.value_sets.get(user, {}).values()
                                if u.instruction is user)
                if found:
                    break
        self._sink[v] = found
        return found


def _collective(inst: Instruction) -> str | None:
    """The collective `inst` performs: its opcode's, or for a fusion or an async start of
    one, the one its fused computation runs (XLA's GPU collective fusions, a Triton kernel
    around an all-reduce: `fusion-start(...), calls=%fused_all-reduce...`)."""
    op = opinfo(inst.opcode)
    if op.collective is not None or (op.calls_kind != "fused" and op.wrapped != "fusion"):
        return op.collective
    for comp in inst.called_computations[:1]:
        for i in comp.instructions:
            if i.info.collective is not None:
                return i.info.collective
    return None


def _moves_data(inst: Instruction) -> bool:
    target = inst.attributes.get("custom_call_target") if inst.opcode == "custom-call" else None
    return opcode_moves_data(inst.opcode, unquote(target) if target else None)


def _keeps_gradient(inst: Instruction) -> bool:
    if inst.opcode == "fusion":
        # Loop and input (reduction) fusions compute elementwise or reduce; custom and output
        # fusions hold matrix products.
        return inst.attributes.get("kind") in _LOOP_OR_INPUT
    return opinfo(inst.opcode).carries_role


def assign_roles(module, model: MemoryModel) -> Roles:
    return Roles(module, model)


def _reduces_backward(inst: Instruction) -> bool:
    return any(side_of(o.op_name) == BACKWARD for o in inst.operands)


def _loop_carried(model: MemoryModel) -> set[Value]:
    """Values at a while loop's positions: its output, its body's or condition's parameter."""
    holders = []
    for inst in model.dataflow.value_sets:
        if opinfo(inst.opcode).is_loop:
            holders.append(inst)
            holders += [p for comp in loop_parts(inst) if comp is not None for p in comp.parameters]
    carried = set()
    for h in holders:
        carried.update(v for v in model.dataflow.value_sets.get(h, {}).values() if not v.shape.is_tuple)
    return carried


def _entry_parameter_roles(module, model: MemoryModel) -> dict[Instruction, str]:
    """Donated and forward-read entry parameters: parameters (weights), optimizer_state,
    inputs or unknown (see the module docstring)."""
    entry = module.entry
    donated = {a.parameter for a in module.attributes.decoded("input_output_alias", ())}
    read_forward = _read_by_forward(model)
    roles = {}
    for p in entry.parameters:
        forward = p in read_forward
        if p.parameter_number in donated:
            roles[p] = "parameters" if forward else "optimizer_state"
        elif forward:
            roles[p] = "inputs"
        else:
            roles[p] = "unknown"
    return roles


def _read_by_forward(model: MemoryModel) -> set[Instruction]:
    """Entry parameters whose values reach an op of the forward pass, through the positions
    XLA's dataflow gives them (tuples, loop carries, calls) and any computation on the way."""
    df = model.dataflow
    entry_params = {p for p in model.module.entry.parameters}
    found: set[Instruction] = set()
    for p in entry_params:
        work = [v for v in df.value_sets.get(p, {}).values()]
        seen: set[int] = set()
        while work and p not in found:
            v = work.pop()
            if v.id in seen:
                continue
            seen.add(v.id)
            for user, _, _ in v.uses:
                if side_of(user.op_name) == FORWARD:
                    found.add(p)
                    break
                # Conversions and moves on the way (f32 weights cast to bf16, gathered, copied).
                work.extend(df.value_sets.get(user, {}).values())
    return found


def roles_at_peak(module, model: MemoryModel, roles: Roles | None = None) -> RolesAtPeak:
    """Bytes held at the peak step by role (see the module docstring)."""
    roles = roles or assign_roles(module, model)
    df = model.dataflow
    peak = model.peak_step
    by_role = dict.fromkeys(ROLES, 0)
    temp_by_role = dict.fromkeys(ROLES, 0)
    buffers: list[RoleBuffer] = []

    def add(v: Value, size: int, into: dict[str, int], where: str) -> None:
        role = roles.of(v)
        into[role] += size
        if into is not by_role:
            by_role[role] += size
        inst = v.instruction
        name = inst.name if not v.index else f"{inst.name}{{{','.join(map(str, v.index))}}}"
        buffers.append(RoleBuffer(name, role, size, v.shape.text, inst.op_name, inst.source, where))

    # Arguments: each entry parameter's values (its allocations live for the whole step).
    for p in module.entry.parameters:
        for v in df.value_sets.get(p, {}).values():
            if v.instruction is p and not v.shape.is_tuple:
                add(v, v.size, by_role, "argument")
    # Outputs not aliased to an argument: the largest value of each live-out buffer.
    aliased = {b for p in module.entry.parameters for v in df.value_sets.get(p, {}).values()
               for b in (v.buffer,) if b in df.live_out}
    for b in sorted(df.live_out - aliased - df.entry_param_buffers - df.constant_buffers):
        values = df.buffers[b]
        if values:
            v = max(values, key=lambda v: (v.size, -v.id))  # the tuple's pointer table counts too
            add(v, v.size, by_role, "output")
    # Temp values live at the peak: each heap slot once, as the heap's timeline counts it.
    heap = model.heaps.get(0)
    if heap is not None:
        by_slot: dict[int, Value] = {}
        for v in model.live_at(peak):
            off = heap.offsets[v]
            if off not in by_slot or v.size > by_slot[off].size:
                by_slot[off] = v
        for v in by_slot.values():
            add(v, v.size, temp_by_role, "temp")
    buffers.sort(key=lambda b: (-b.bytes, b.instruction))
    return RolesAtPeak(module.name, peak, by_role, temp_by_role, tuple(buffers), sum(by_role.values()))


def role_timelines(model: MemoryModel, roles: Roles) -> dict[str, list[int]]:
    """Temp bytes live at each step of the flattened schedule, by role (roles that are never
    live left out), adding up to the heap's own timeline: each slot of the default heap counts
    once per step, as the heap counts it. Values that overlap in time in one slot (a value
    written over its operand) count as the largest of them, under its role."""
    heap = model.heaps.get(0)
    if heap is None:
        return {}
    end = model.live.schedule.end
    ranges = model.live.ranges
    by_slot: dict[int, list[tuple[int, int, Value]]] = {}
    for v, offset in heap.offsets.items():
        r = ranges.get(v)
        if r is not None:
            by_slot.setdefault(offset, []).append((r[0], r[1], v))
    deltas: dict[str, list[int]] = {}

    def add(s: int, e: int, v: Value) -> None:
        role = roles.of(v)
        delta = deltas.get(role)
        if delta is None:  # not `setdefault`: it would build a whole timeline per slot
            delta = deltas[role] = [0] * (end + 2)
        delta[s] += v.size
        delta[e + 1] -= v.size

    for spans in by_slot.values():
        spans.sort(key=lambda t: (t[0], -t[2].size))
        cur_s, cur_e, cur_v = spans[0]
        for s, e, v in spans[1:]:
            if s <= cur_e:  # overlapping in the slot: one run, the largest value's bytes
                cur_e = max(cur_e, e)
                if (v.size, -v.id) > (cur_v.size, -cur_v.id):
                    cur_v = v
            else:
                add(cur_s, cur_e, cur_v)
                cur_s, cur_e, cur_v = s, e, v
        add(cur_s, cur_e, cur_v)
    return {role: list(itertools.accumulate(d[:end + 1])) for role, d in deltas.items() if any(d)}
