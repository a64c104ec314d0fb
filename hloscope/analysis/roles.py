"""What each buffer is, in the terms people who train with ZeRO/FSDP think in.

A role says what a buffer *holds*: `parameters`, `gathered_parameters`, `gradients`,
`optimizer_state`, `activations`, `inputs`, `temporaries`, and `unknown` only where neither
the dataflow nor JAX's metadata tells (each unknown value carries why, `Roles.why`). A loop,
a collective, a copy, a memory-space move or a combiner's concatenation is a *place*, not a
role: the data is followed through it.

Entry parameters:
  - `parameters`: donated state (`input_output_alias`) that the forward pass reads (weights);
  - `optimizer_state`: donated state the forward pass does not read (Adam moments, step);
  - `inputs`: parameters that are not donated and that the forward pass reads (the batch, RNG);
  - `unknown`: the rest (without donation or metadata nothing tells state from inputs).

Values the step computes, first rule that applies:
  - `gathered_parameters`: all-gathered weights and their copies (analysis.gathers); an
    all-gather of inputs, activations or gradients holds what it gathers;
  - a loop's state (XLA's phi values: the element a loop body changes) holds what flows into
    it: its initial value and what the body writes back (an accumulator: the gradients added
    into it); zeros, loop counters and other values made from nothing take no part; a state
    the forward pass writes and the backward pass reads is activations (a scan's stacked
    residuals);
  - a place (`ir.opcodes.moves_data`: copies, slices, concatenations, updates of a slice, moves
    between memory spaces, and fusions of nothing else), a conversion (`keeps_elements`: a
    weight cast to bfloat16) and a collective hold what their data operands hold, when that
    is state, gradients or activations: a combined all-reduce of the concatenated gradients
    of every layer holds gradients; an element of a multi-output fusion (TPU's async
    collective fusions) is what its own fused chain makes. Copies of the data: one the
    backward pass makes for one op is its temporary, one the schedule holds through the
    forward pass's computation is a residual, and a converted copy of the batch that the
    backward pass reads is an activation (JAX saves it);
  - `gradients`: backward values there to become a gradient: every reader is a gradient sink
    (a reduction, the optimizer, an accumulator, the outputs), the accumulation step itself,
    or an op that keeps a gradient a gradient (conversions, moves, sums, elementwise
    arithmetic); a reduction of backward values; a sum of gradients;
  - `activations`: forward values the backward pass reads, directly or through places;
  - `temporaries`: other values (and scalars, and values made from nothing);
  - the side (forward, backward, other) is JAX's metadata (analysis.sides); an op without
    metadata takes the side of the values it is computed from.

`roles_at_peak` sums the bytes the device holds at the peak step by role: the arguments, the
outputs not aliased to them, and the temp values live at the peak (each slot of the heap once),
so the roles add up to `argument_bytes + output_bytes - alias_bytes + temp_max_live_bytes`.
"""

from __future__ import annotations

import bisect
import collections
import functools
import itertools
from dataclasses import dataclass, field

from ..encode import Encoded, as_json
from ..ir.attributes import unquote
from ..ir.module import Computation, Instruction
from ..ir.opcodes import REDUCTION_KINDS, fusion_kinds
from ..ir.opcodes import info as opinfo
from ..ir.opcodes import moves_data as opcode_moves_data
from .callgraph import loop_parts
from .dataflow import Value
from .facts import Alike, Facts
from .gathers import carried_values, gathered_values
from .sides import BACKWARD, FORWARD, OTHER, recomputes, side_of
from .memory import MemoryModel

ROLES = ("parameters", "optimizer_state", "inputs", "gathered_parameters", "gradients", "activations",
         "temporaries", "unknown")
"""Every role, in report order."""

_HOLDING = frozenset(ROLES[:6])
"""Roles a place passes on: what is held, not how it was made."""

_DATA = frozenset({"inputs", "activations"})
"""What the batch becomes: a copy the backward pass makes of it is that pass's temporary."""
_NOT_WEIGHTS = frozenset({"inputs", "activations", "gradients", "optimizer_state"})
_GRADIENT_REDUCTIONS = frozenset(REDUCTION_KINDS)
_LOOP_OR_INPUT = fusion_kinds(loop_or_input=True)
_DEEPEST = 400
"""How many values a decision may wait on at once; past it a value counts as neutral
(Python's recursion stays far from its limit)."""


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
    why: str | None = field(default=None, metadata=as_json(omit_none=True))
    """For an `unknown` buffer: why neither dataflow nor metadata tells."""
    held_in: str | None = field(default=None, metadata=as_json(omit_none=True))
    """The place that holds it: a collective's kind (`all-reduce`: a gradient in flight in a
    reduction), `for all-reduce` (waiting for one, as a combiner's concatenation and what it
    concatenates do), or `loop` (a loop's state); None for any other value."""


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

    def __init__(self, module, model: MemoryModel, gathered: list | None = None):
        self.module, self.model = module, model
        self._ops = _Ops(model.facts)
        self._role: dict[Value, str] = {}
        self.why: dict[Value, str] = {}
        """Each `unknown` value → why."""
        self._parameter_roles = _entry_parameter_roles(module, model)
        if gathered is None:
            gathered = gathered_values(model)
        self._gathered = {v for _, _, g in gathered for v in carried_values(g, model.dataflow)}
        self._loop_sources, self._flows_into, self._loop_group = _loop_links(model)
        self._busy: set[Value] = set()
        self._sides: dict[Value, str | None] = {}
        self._sink: dict[Value, bool] = {}
        self._backward: dict[Value, bool] = {}

    def of(self, value: Value) -> str:
        return self._of(value) or "temporaries"

    def _of(self, v: Value) -> str | None:
        """v's role; None while it is being decided (a loop's state waiting on itself) or
        when too many decisions wait: such a value takes no part in a merge."""
        role = self._role.get(v)
        if role is not None:
            return role
        if v in self._busy or len(self._busy) > _DEEPEST:
            return None
        self._busy.add(v)
        try:
            role = self._decide(v)
        finally:
            self._busy.discard(v)
        self._role[v] = role
        return role

    def _decide(self, v: Value) -> str:
        inst = v.instruction
        if inst.opcode == "parameter" and inst.computation is self.module.entry:
            return self._parameter_roles.get(inst, "unknown")
        if v in self._gathered:
            # All-gathered weights; an all-gather of something else (a micro-batch of the
            # inputs resharded, activations under sequence parallelism) holds what it gathers.
            held = self._merge(self._sources(v, _origin(v)))
            return held if held in _NOT_WEIGHTS else "gathered_parameters"
        loop_sources = self._loop_sources.get(v)
        if loop_sources is not None:
            role = self._merge(loop_sources)
            if role in (None, "temporaries", *_DATA) and any(self._side(s) == FORWARD for s in loop_sources) \
                    and any(self._read_backward(p) for p in self._loop_group[v]):
                return "activations"  # what the forward pass stacks for the backward pass (a scan's residuals)
            return role or "temporaries"
        if not v.shape.dimensions or v.shape.is_tuple:
            return "temporaries"  # scalars (counters, flags, a loss) and pointer tables
        origin = _origin(v)
        if origin is not inst and origin.opcode == "parameter":
            # A fusion's output that is one of its operands, passed through.
            passed = self._operand_value(inst, origin.parameter_number)
            return (self._of(passed) if passed is not None else None) or "temporaries"
        chain = _element_chain(origin, self._ops) if origin is not inst else None
        sources = self._sources(v, origin, chain)
        collective = self._ops.collective(origin)
        side = self._side(v)
        if origin is inst:
            moves, keeps = self._ops.moves(inst), self._ops.keeps_elements(inst)
        else:  # an element of a multi-output fusion: a place only when its whole chain is one
            moves, keeps = (chain[1], True) if chain is not None else (False, False)
        if collective is not None or moves or keeps:
            held = self._merge(sources)
            if held == "inputs" and collective is None and not moves:
                # A converted copy of the batch is what it is made for: a residual when the
                # backward pass reads it and the forward pass makes or holds it.
                held = "activations" if (side in (FORWARD, OTHER) or self._held_across_forward(v)) \
                    and self._read_backward(v) else None
            if held in _HOLDING and not (held in _DATA and side == BACKWARD and not self._held_across_forward(v)):
                return held  # (a copy the backward pass makes of the data for one op: its temporary)
            if collective in _GRADIENT_REDUCTIONS and (
                    side == BACKWARD or any(self._side(s) == BACKWARD for s in sources)):
                return "gradients"
        if side == BACKWARD and self._feeds_gradient_sink(v):
            return "gradients"
        if side in (FORWARD, OTHER) and self._read_backward(v):
            return "activations"
        if side == OTHER and _keeps_gradient(origin) and self._merge(sources) == "gradients":
            return "gradients"  # a sum of gradients (accumulation outside the differentiated code)
        if side is None and not _made_from_nothing(origin):
            self.why[v] = ("no metadata, and it is computed from no value whose side (forward, backward, "
                           "optimizer) is known" if sources else "no metadata and no operands to follow")
            return "unknown"
        return "temporaries"

    def place(self, v: Value) -> str | None:
        """Where `v` is held: the kind of the collective that makes it, `loop` for a loop's
        state, `for KIND` when it waits for a reduction that reads it as it is (directly, or
        through moves: XLA's combiner concatenates gradients into one all-reduce), None
        otherwise."""
        if v in self._loop_sources:
            return "loop"
        made_by = self._ops.collective(_origin(v))
        if made_by is not None:
            return made_by
        waits = self._reduced_by(v)
        return f"for {waits}" if waits else None

    def _reduced_by(self, v: Value, depth: int = 0) -> str | None:
        """The reduction collective that reads `v`, or a move of it, as it is."""
        df = self.model.dataflow
        for user, _, _ in v.uses:
            kind = self._ops.collective(user)
            if kind in _GRADIENT_REDUCTIONS:
                return kind
            if depth < 8 and kind is None and self._ops.moves(user):
                for w in df.value_sets.get(user, {}).values():
                    if w.instruction is user and w is not v:
                        found = self._reduced_by(w, depth + 1)
                        if found:
                            return found
        return None

    # ─── what a value is made of ──────────────────────────────────────────────────────

    def _operand_value(self, inst: Instruction, number: int | None) -> Value | None:
        if number is None or number >= len(inst.operands):
            return None
        return self.model.dataflow.value_sets.get(inst.operands[number], {}).get(())

    @functools.cached_property
    def _forward_steps(self) -> list[int]:
        """The steps where the forward pass computes something, in order (found when first
        asked: it decodes every scheduled op's metadata, and most modules' roles never ask)."""
        return sorted(t for inst, t in self.model.live.schedule.time.items()
                      if inst.info.value_rule == "define" and side_of(inst.op_name) == FORWARD
                      and not recomputes(inst) and not self._ops.moves(inst))

    def _held_across_forward(self, v: Value) -> bool:
        """Whether forward ops run while `v` is live, by the schedule: it is held through the
        forward pass, not made for one op of the backward pass (XLA may fuse a residual's
        rounding into the backward pass's conversion and run it in the forward)."""
        r = self.model.live.ranges.get(v)
        if r is None:
            return False
        k = bisect.bisect_right(self._forward_steps, r[0])
        return k < len(self._forward_steps) and self._forward_steps[k] < r[1]

    def _sources(self, v: Value, origin: Instruction, chain=None) -> list[Value]:
        """The arrays `v` is made from: the operands (the fusion's, for the fused parameters
        its own fused instruction reads; for a tuple of one element per operand, a variadic
        collective's, that element's operand), scalars (indices, flags) left out."""
        inst = v.instruction
        if origin is not inst:
            params = chain[0] if chain is not None else _fused_parameters(origin)
            numbers = [p.parameter_number for p in params]
            operands = [inst.operands[n] for n in numbers if n is not None and n < len(inst.operands)]
        else:
            operands = list(inst.operands)
            # A tuple with one element per operand (a combined all-reduce), or a start's
            # `(operands, results)` of such tuples: an element comes from its own operand.
            shape = inst.shape
            for k in v.index[:2] if len(operands) > 1 else ():
                if len(shape.tuple_shapes) == len(operands):
                    operands = [operands[k]] if k < len(operands) else operands
                    break
                shape = shape.tuple_shapes[k] if k < len(shape.tuple_shapes) else shape
        df = self.model.dataflow
        out = []
        for o in operands:
            if o.shape.is_tuple or not o.shape.dimensions:
                continue
            s = df.value_sets.get(o, {}).get(())
            if s is not None and s is not v:
                out.append(s)
        return out

    def _merge(self, sources: list[Value]) -> str | None:
        """What a place holds, from what flows into it: the one role of its sources, or of
        mixed ones the held role with the most bytes. None when nothing but zeros, counters
        and values still being decided flows in."""
        weights: dict[str, int] = {}
        for s in sources:
            if _made_from_nothing(_origin(s)):
                continue
            role = self._of(s)
            if role is not None:
                weights[role] = weights.get(role, 0) + s.size
        if not weights:
            return None
        pool = {r: w for r, w in weights.items() if r in _HOLDING} or weights
        return max(pool, key=lambda r: (pool[r], -ROLES.index(r)))

    # ─── sides ────────────────────────────────────────────────────────────────────────

    def _side(self, v: Value) -> str | None:
        """The side JAX's metadata puts `v`'s op on; without metadata, the side of the values
        it is computed from (backward over forward over other), None when none has one."""
        if v in self._sides:
            return self._sides[v]
        origin = _origin(v)
        side = side_of(origin.op_name or v.instruction.op_name)
        if side is None and len(self._busy) <= _DEEPEST:
            self._sides[v] = None  # while deciding: a cycle says nothing
            self._busy.add(v)
            try:
                found = {self._side(s) for s in self._sources(v, origin) + self._loop_sources.get(v, [])}
            finally:
                self._busy.discard(v)
            side = next((s for s in (BACKWARD, FORWARD, OTHER) if s in found), None)
        self._sides[v] = side
        return side

    def _holders(self, v: Value) -> list[Value]:
        """The loop states `v` flows into (as a loop's initial value or what its body writes)."""
        return self._flows_into.get(v, [])

    def _read_backward(self, v: Value, depth: int = 0) -> bool:
        """Whether the backward pass reads `v`, or a place holding it: a move without metadata
        (on TPU a saved activation is evicted to HBM, fetched back in slices and concatenated
        again, by ops that carry none) or a loop's state (a scan's stacked residuals)."""
        known = self._backward.get(v)
        if known is not None:
            return known
        self._backward[v] = False  # a cycle through a loop says nothing
        found = any(side_of(u.op_name) == BACKWARD for u, _, _ in v.uses)
        if not found and depth < 64:
            df = self.model.dataflow
            later = [w for user, _, _ in v.uses if user.op_name is None and self._ops.moves(user)
                     for w in df.value_sets.get(user, {}).values() if w.instruction is user and w is not v]
            found = any(self._read_backward(w, depth + 1) for w in later + self._holders(v))
        self._backward[v] = found
        return found

    def _feeds_gradient_sink(self, v: Value, depth: int = 0) -> bool:
        """Whether `v` is there to become a parameter's gradient: it is returned, or every
        reader of it (and every loop state it flows into that is read) is a gradient sink (a
        gradient reduction, the optimizer update, an accumulator) or an op that keeps it a
        gradient (conversions, moves, sums, elementwise arithmetic, a reduction of split
        partial sums) whose result is one in turn. The op that adds into a loop's state the
        value it reads (an accumulation fused into a matmul) is the accumulation itself. An
        activation's gradient is read by matrix products too (the next layer's gradients are
        made from it): a temporary."""
        known = self._sink.get(v)
        if known is not None:
            return known
        self._sink[v] = False  # a cycle through a loop says nothing
        df = self.model.dataflow
        found = v.buffer in df.live_out
        if not found and depth < 64:
            state = self._loop_group.get(v, ())
            written = {w for p in state for w in self._loop_sources.get(p, ())}
            readers = v.uses
            holders = [h for h in self._holders(v) if h.uses or h.buffer in df.live_out]
            found = bool(readers) or bool(holders)
            for user, _, _ in readers:
                made = [u for u in df.value_sets.get(user, {}).values() if u.instruction is user]
                if not made or self._ops.collective(user) in _GRADIENT_REDUCTIONS or side_of(user.op_name) == OTHER:
                    continue  # a position of `v` (a bitcast forwards it; its readers are v's), or a sink
                if any(u in written for u in made):
                    continue  # the accumulation step: what it makes goes back into this state
                if not (_keeps_gradient(user) or self._ops.moves(user)) or not all(
                        self._feeds_gradient_sink(u, depth + 1) for u in made if not u.shape.is_tuple):
                    found = False
                    break
            if found:
                found = all(self._feeds_gradient_sink(h, depth + 1) for h in holders)
        self._sink[v] = found
        return found


def _origin(v: Value) -> Instruction:
    """The instruction that makes `v`: its defining one, or for an element of a fusion whose
    root is a tuple, the fused instruction at that element (a TPU async collective fusion's
    outputs: a gathered weight beside the logits of a matmul)."""
    inst = v.instruction
    if not v.index or opinfo(inst.opcode).calls_kind != "fused" or not inst.called_computations:
        return inst
    node = inst.called_computations[0].root
    for k in v.index:
        if node.opcode != "tuple" or k >= len(node.operands):
            return inst
        node = node.operands[k]
    return node


def _element_chain(origin: Instruction, ops: _Ops) -> tuple[list[Instruction], bool] | None:
    """For a fused instruction making an element of a multi-output fusion: when it only
    converts or moves what the fusion reads (`keeps_elements`, `moves_data`, all the way to
    the fused parameters), those parameters and whether it only moves them; None when it
    computes (a conversion of a tanh of a matmul is the matmul's result, not its operands)."""
    moves = True
    for i in _fused_walk(origin):
        if i.opcode in ("parameter", "tuple", "get-tuple-element") or _made_from_nothing(i) or ops.moves(i):
            continue
        if not opinfo(i.opcode).keeps_elements:
            return None
        moves = False
    return _fused_parameters(origin), moves


def _fused_parameters(origin: Instruction) -> list[Instruction]:
    """The parameters of a fused computation that `origin`, an instruction in it, reads."""
    return sorted((i for i in _fused_walk(origin) if i.opcode == "parameter"), key=lambda p: p.parameter_number or 0)


def _fused_walk(origin: Instruction):
    """`origin` and every instruction of its fused computation it reads, once each."""
    stack, seen = [origin], set()
    while stack:
        i = stack.pop()
        if id(i) in seen:
            continue
        seen.add(id(i))
        yield i
        stack.extend(i.operands)


def _made_from_nothing(inst: Instruction) -> bool:
    """A value no array flows into: a constant, an iota, zeros broadcast from a scalar, an
    allocation (TPU's `AllocateBuffer` under a scan's stacked outputs)."""
    info = opinfo(inst.opcode)
    if info.value_rule != "define" or inst.opcode in ("recv", "infeed", "rng-bit-generator"):
        return False
    return not any(o.shape.is_tuple or o.shape.dimensions for o in inst.operands)


class _Ops:
    """What an op does that roles ask of thousands of values: the collective it performs,
    whether it only moves data or keeps its operands' elements. A fusion's answer is its
    fused computation's, found once per computation, and for one alike another from that
    one (`facts.Alike`)."""

    def __init__(self, facts: Facts):
        self._alike = Alike(facts, but_metadata=True)  # opcodes and shapes alone
        self._fused: dict[int, Computation | None] = {}
        self._collective: dict[int, str | None] = {}
        self._moves_only: dict[int, bool] = {}
        self._keeps_only: dict[int, bool] = {}

    def fused(self, inst: Instruction) -> Computation | None:
        """The computation `inst` calls first (a fusion's fused computation), or one alike it
        to read instead; None when it calls none. Found once per instruction."""
        key = id(inst)
        if key in self._fused:
            return self._fused[key]
        called = inst.called_computations
        comp = self._fused[key] = self._alike(called[0]) if called else None
        return comp

    def collective(self, inst: Instruction) -> str | None:
        """The collective `inst` performs: its opcode's, or for a fusion or an async start of
        one, the one its fused computation runs (XLA's GPU collective fusions, a Triton kernel
        around an all-reduce: `fusion-start(...), calls=%fused_all-reduce...`)."""
        op = opinfo(inst.opcode)
        if op.collective is not None or (op.calls_kind != "fused" and op.wrapped != "fusion"):
            return op.collective
        comp = self.fused(inst)
        if comp is None:
            return None
        key = id(comp)
        if key not in self._collective:
            self._collective[key] = next(
                (i.info.collective for i in comp.instructions if i.info.collective is not None), None)
        return self._collective[key]

    def moves(self, inst: Instruction) -> bool:
        """Whether `inst` only moves data: a move of the opcode table, or a fusion of moves
        alone (XLA's `wrapped_concatenate` of a combined all-reduce, a hoisted
        `bitcast_dynamic-slice`)."""
        if inst.opcode == "custom-call":
            target = inst.attributes.get("custom_call_target")
            return opcode_moves_data(inst.opcode, unquote(target) if target else None)
        comp = self.fused(inst) if opinfo(inst.opcode).calls_kind == "fused" else None
        if comp is not None:
            found = self._moves_only.get(id(comp))
            if found is None:
                found = self._moves_only[id(comp)] = all(
                    i.opcode in ("parameter", "tuple", "get-tuple-element") or _made_from_nothing(i) or self.moves(i)
                    for i in comp.instructions)
            return found
        return opcode_moves_data(inst.opcode)

    def keeps_elements(self, inst: Instruction) -> bool:
        """Whether every element `inst` makes is one of its operand's, converted or not (a
        weight cast to bfloat16 is still the weight): the opcode table's `keeps_elements`, or
        a fusion of such ops alone."""
        comp = self.fused(inst) if opinfo(inst.opcode).calls_kind == "fused" else None
        if comp is not None:
            found = self._keeps_only.get(id(comp))
            if found is None:
                found = self._keeps_only[id(comp)] = all(
                    i.opcode in ("parameter", "tuple", "get-tuple-element") or opinfo(i.opcode).keeps_elements
                    or _made_from_nothing(i) for i in comp.instructions)
            return found
        return opinfo(inst.opcode).keeps_elements


def _keeps_gradient(inst: Instruction) -> bool:
    if inst.opcode == "fusion":
        # Loop and input (reduction) fusions compute elementwise or reduce; custom and output
        # fusions hold matrix products.
        return inst.attributes.get("kind") in _LOOP_OR_INPUT
    return opinfo(inst.opcode).carries_role


def assign_roles(module, model: MemoryModel, gathered: list | None = None) -> Roles:
    """`gathered`: the model's `gathered_values`, when already found (the held gathers read
    them too)."""
    return Roles(module, model, gathered)


def _loop_links(model: MemoryModel):
    """For each loop state a body changes (XLA's phi values at the loop, its body's and its
    condition's parameter): what flows into it (the initial value, what the body writes
    back); the inverse, each such value → the loop states it flows into; and each phi → the
    phis of its state (one element at the loop, its body and its condition)."""
    df = model.dataflow
    sources: dict[Value, list[Value]] = {}
    into: dict[Value, list[Value]] = {}
    group: dict[Value, tuple[Value, ...]] = {}
    for inst, values in df.value_sets.items():
        if not opinfo(inst.opcode).is_loop or not inst.operands:
            continue
        cond, body = loop_parts(inst)
        if body is None:
            continue
        init = df.value_sets.get(inst.operands[0], {})
        written = df.value_sets.get(body.root, {})
        places = [values] + [df.value_sets.get(c.parameters[0], {}) for c in (cond, body)
                             if c is not None and c.parameters]
        for idx, state in values.items():
            if not state.is_phi or state.instruction is not inst or state.shape.is_tuple:
                continue
            flowing = [s for s in (init.get(idx), written.get(idx)) if s is not None]
            phis = [p for p in (place.get(idx) for place in places) if p is not None and p.is_phi]
            for p in phis:
                sources[p] = flowing
                group[p] = tuple(phis)
            for s in flowing:
                into.setdefault(s, []).extend(phis)
    return sources, into, group


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
    XLA's dataflow gives them (tuples, loop carries, calls) and any computation on the way.
    Breadth first: a weight's forward reader is a few ops away, past others that lead far
    (its optimizer update). A search that reaches none has seen values that reach none: later
    searches stop at them (an optimizer's states all flow into the step's outputs)."""
    df = model.dataflow
    found: set[Instruction] = set()
    reach_none: set[int] = set()
    for p in model.module.entry.parameters:
        work = collections.deque(df.value_sets.get(p, {}).values())
        seen: set[int] = set()
        while work and p not in found:
            v = work.popleft()
            if v.id in seen or v.id in reach_none:
                continue
            seen.add(v.id)
            for user, _, _ in v.uses:
                if side_of(user.op_name) == FORWARD:
                    found.add(p)
                    break
                # Conversions and moves on the way (f32 weights cast to bf16, gathered, copied).
                work.extend(df.value_sets.get(user, {}).values())
        if p not in found:
            reach_none |= seen
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
        buffers.append(RoleBuffer(name, role, size, v.shape.text, inst.op_name, inst.source, where,
                                  roles.why.get(v) if role == "unknown" else None, roles.place(v)))

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
