"""Values and buffers of a scheduled module: XLA's dataflow and alias analyses, in small.

A *value* is one array (or tuple pointer table) that some instruction writes: it has one
defining instruction and shape index, the *positions* where it appears (every instruction
output that forwards it: `get-tuple-element`, `tuple`, `bitcast`, a `while`, a callee's
parameter, ...) and the *uses* that read it. A *buffer* is a set of values that must share
memory (a loop's state, an in-place update, a donated argument).

The model is XLA's SSA form (`HloDataflowAnalysis` with `ssa_form=true`, as buffer assignment
runs it): a `while` makes *phi* values at its condition parameter, its body parameter and
its own output, at every shape index where the body changes the state; where the body
passes an element through unchanged, all of them carry the init value.

Values of thread-local computations (fusion bodies, reducers, sort comparators, ...) are
never materialized and get no values here.

Per-opcode facts (which ops forward values, read operands, update in place, ...) come from
the opcode table, `hloscope.ir.opcodes.info(opcode)`.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from ..ir import opcodes
from ..ir.module import Computation, Instruction, Module
from .facts import PLAIN, Facts
from .callgraph import callees_first, loop_parts, scheduled_callees, scheduled_instructions

_SIZE_CACHE: dict[int, tuple[object, int]] = {}


def _byte_size(shape) -> int:
    hit = _SIZE_CACHE.get(id(shape))
    if hit is not None and hit[0] is shape:
        return hit[1]
    size = shape.padded_byte_size  # what buffer assignment allocates: tiled layouts pad
    _SIZE_CACHE[id(shape)] = (shape, size)
    return size


class _OneValue:
    """The value set of an output holding one array value, defined there (most outputs):
    read as the dict `{(): value}` is, at a fraction of its size."""

    __slots__ = ("value",)

    def __init__(self, value: Value):
        self.value = value

    def get(self, index: tuple, default=None):
        return self.value if index == () else default

    def __getitem__(self, index: tuple) -> Value:
        if index == ():
            return self.value
        raise KeyError(index)

    def __contains__(self, index: object) -> bool:
        return index == ()

    def __iter__(self):
        return iter(((),))

    def __len__(self) -> int:
        return 1

    def keys(self):
        return ((),)

    def values(self):
        return (self.value,)

    def items(self):
        return (((), self.value),)

    def __eq__(self, other: object) -> bool:
        return dict(self.items()) == other if isinstance(other, (dict, _OneValue)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like the dict it stands for

    def __repr__(self) -> str:
        return repr({(): self.value})


AT_DEFINITION = ("at-definition",)
"""`Value._positions` of a value whose only position is its defining one."""


class Value:
    """One value: defined once, at `(instruction, index)`; `size` in bytes (XLA ByteSizeOf, a
    tiled layout's padding included; the memory analysis adjusts it to its backend's rule)."""

    __slots__ = ("id", "instruction", "index", "shape", "size", "_positions", "is_phi",
                 "replaced_by", "wrapped_step", "buffer")

    def __init__(self, vid: int, instruction: Instruction, index: tuple, shape, is_phi: bool = False):
        self.id = vid
        self.instruction = instruction
        self.index = index
        self.shape = shape
        self.size = _byte_size(shape)
        # None until placed; AT_DEFINITION when its only position is where it is defined (most
        # values: no list to allocate); else the list of positions.
        self._positions: list[tuple[Instruction, tuple]] | tuple | None = None
        self.is_phi = is_phi
        self.replaced_by: Value | None = None
        self.wrapped_step: str | None = None
        """For the wrapped op of async sugar (no wrapped computation in the text): its name."""
        self.buffer: int = -1

    @property
    def positions(self) -> list[tuple[Instruction, tuple]]:
        """Every `(instruction, index)` output holding this value, the defining one first."""
        p = self._positions
        if p is AT_DEFINITION:
            return [(self.instruction, self.index)]
        return [] if p is None else p

    @property
    def uses(self) -> list[tuple[Instruction, int, tuple]]:
        """`(user, operand_number, index)` for every instruction that reads this value (XLA
        HloValue::ComputeUses with MayUseOperandValue): a user of one of its positions, unless
        it only forwards the operand (`tuple`) or reads only its top-level value (`get-tuple-
        element`, `copy`) and the position is a tuple element. Computed on request: the
        liveness analysis reads the same facts without building these lists."""
        out = []
        for inst, idx in self.positions:
            for user in dict.fromkeys(inst.users):
                uinfo = opcodes.info(user.opcode)
                if not uinfo.uses_operand_values or (idx and uinfo.uses_only_top_level):
                    continue
                for k, o in enumerate(user.operands):
                    if o is inst:
                        out.append((user, k, idx))
        return out

    @property
    def name(self) -> str:
        """`NAME{i,j}` as XLA's dumps spell a value."""
        return f"{self.instruction.name}{{{','.join(map(str, self.index))}}}"

    def __repr__(self) -> str:
        return f"<Value {self.id} {self.name} {self.size}B>"


@dataclass(frozen=True)
class Dataflow:
    """The values of a module and the buffers they form.

    `value_sets[inst][index]` is the value at an instruction's output position;
    `buffers[b]` lists the values of buffer b; `live_out` the buffers the entry returns.
    """

    module: Module
    values: list[Value]
    value_sets: dict[Instruction, Mapping[tuple, Value]]
    buffers: list[list[Value]]
    live_out: frozenset[int]
    entry_param_buffers: frozenset[int]
    constant_buffers: frozenset[int]
    analyzed: frozenset[Computation]
    async_wrapped: dict[Instruction, Computation | None] = field(default_factory=dict)
    """Each async start → its wrapped computation (None for printing sugar without one)."""
    in_place: dict[Instruction, list[tuple[tuple, int, tuple]]] = field(default_factory=dict)
    """`in_place_pairs` of every instruction that may write an operand's buffer."""
    wrappers: dict[Instruction, opcodes.OpInfo] = field(default_factory=dict)
    """Starts and dones spelled as XLA's native asynchronous collectives that are read as
    async wrappers of them (`opcodes.NATIVE_OR_WRAPPED`) → the wrapper's facts."""
    undecided: tuple[Instruction, ...] = ()
    """Starts whose text does not tell the native op from the wrapper, read as native
    (`opcodes.start_is_wrapper` None, and nothing else in the module says)."""


class _UnionFind:
    def __init__(self) -> None:
        self.parent: list[int] = []

    def add(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, x: int) -> int:
        p = self.parent
        while p[x] != x:
            p[x] = p[p[x]]
            x = p[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _indices(shape) -> Iterator[tuple[tuple, object]]:
    return shape.subshapes()


class _Builder:
    def __init__(self, module: Module):
        self.module = module
        self.values: list[Value] = []
        self.sets: dict[Instruction, dict[tuple, Value]] = {}
        self.analyzed: set[Computation] = set()
        self.while_links: list[tuple[Value, ...]] = []
        self.async_wrapped: dict[Instruction, Computation | None] = {}
        self.forwarding: list[Instruction] = []
        """Instructions whose outputs may hold values defined elsewhere (all but the inlined
        common case, whose one value sits where it is defined)."""
        self.in_place: list[Instruction] = []
        """Instructions that may write an operand's buffer (`OpInfo.may_update_in_place`)."""
        self.elements: dict[Instruction, tuple[dict, int, dict[int, dict[tuple, Value]]]] = {}
        """Per tuple-valued instruction: its value set, that set's size, the set by element."""
        self.wrappers: dict[Instruction, opcodes.OpInfo] = {}
        """`Dataflow.wrappers`, as the schedule meets them."""
        self.undecided: list[Instruction] = []
        self.module_wraps: bool | None | object = _UNKNOWN
        """`wraps_collectives(module)`, worked out on the first start that needs it."""

    def new(self, inst: Instruction, index: tuple, shape, is_phi: bool = False) -> Value:
        v = Value(len(self.values), inst, index, shape, is_phi)
        self.values.append(v)
        return v

    def define_all(self, inst: Instruction) -> None:
        shape = inst.shape
        if not shape.tuple_shapes:
            self.sets[inst] = {(): self.new(inst, (), shape)}
        else:
            self.sets[inst] = {idx: self.new(inst, idx, sub) for idx, sub in _indices(shape)}

    def element(self, tuple_inst: Instruction, k: int) -> dict[tuple, Value]:
        """The values of `tuple_inst`'s output under element `k`, re-indexed from there. The
        set is split by first index once: a while body reads each of its state's N elements
        (N get-tuple-elements of an N-tuple), which scanning the set each time makes N²."""
        src = self.sets[tuple_inst]
        cached = self.elements.get(tuple_inst)
        if cached is None or cached[0] is not src or cached[1] != len(src):
            split: dict[int, dict[tuple, Value]] = {}
            for i, v in src.items():
                if i:
                    sub = split.get(i[0])
                    if sub is None:
                        sub = split[i[0]] = {}
                    sub[i[1:]] = v
            cached = self.elements[tuple_inst] = (src, len(src), split)
        return cached[2].get(k, {})

    def forward(self, inst: Instruction, src: dict[tuple, Value], prefix: tuple = (), define_top: bool = False):
        """`inst`'s output at `prefix + i` is `src[i]`."""
        out = self.sets.setdefault(inst, {})
        for idx, v in src.items():
            out[prefix + idx] = v
        if define_top:
            out[()] = self.new(inst, (), inst.shape)

    def run_computation(self, comp: Computation, params: list[dict[tuple, Value]] | None) -> None:
        self.analyzed.add(comp)
        info = opcodes.info
        sets, values = self.sets, self.values
        for inst in comp.instructions:
            shape = inst.shape
            op = info(inst.opcode)
            if inst.opcode in opcodes.NATIVE_OR_WRAPPED:
                op = self.resolve(inst, op)
            if op.may_update_in_place:
                self.in_place.append(inst)
            if not shape.tuple_shapes and op.value_rule == "define":
                # The common case, inlined: one new array value, at its one position.
                v = Value(len(values), inst, (), shape)
                v._positions = AT_DEFINITION
                values.append(v)
                sets[inst] = _OneValue(v)
            else:
                self.forwarding.append(inst)
                _VALUE_RULES[op.value_rule](self, inst, op, params)

    def resolve(self, inst: Instruction, op: opcodes.OpInfo) -> opcodes.OpInfo:
        """The facts of a start or done spelled as a native asynchronous collective: the
        native op's, or those of the async wrapper XLA prints under the same name. A start's
        result shape tells which (`opcodes.start_is_wrapper`); where it cannot, the module's
        other starts do; a done is what its start is."""
        if op.async_role == "start":
            wrapper = opcodes.start_is_wrapper(inst.opcode, inst.shape, len(inst.operands))
            if wrapper is None:
                if self.module_wraps is _UNKNOWN:
                    self.module_wraps = wraps_collectives(self.module)
                wrapper = self.module_wraps
                if wrapper is None:
                    self.undecided.append(inst)
        else:
            wrapper = bool(inst.operands) and inst.operands[0] in self.wrappers
        if wrapper:
            op = self.wrappers[inst] = opcodes.wrapper_info(inst.opcode)
        return op

    # One step per `OpInfo.value_rule` (`_VALUE_RULES`), each as the table describes the rule.
    # An op missing the operands its rule reads gets fresh values, as a plain op does.

    def rule_define(self, inst: Instruction, info: opcodes.OpInfo, params) -> None:
        self.define_all(inst)

    def rule_parameter(self, inst: Instruction, info: opcodes.OpInfo, params) -> None:
        if params is None or (inst.parameter_number or 0) >= len(params):  # a caller passing fewer
            self.define_all(inst)
        else:
            self.forward(inst, params[inst.parameter_number or 0])

    def rule_forward(self, inst: Instruction, info: opcodes.OpInfo, params) -> None:
        if inst.operands:
            self.forward(inst, self.sets[inst.operands[0]])
        else:
            self.define_all(inst)

    def rule_element(self, inst: Instruction, info: opcodes.OpInfo, params) -> None:
        if not inst.operands:
            self.define_all(inst)
            return
        k = info.start_element
        if k is None:
            k = int(inst.attributes.get("index", "0"))
        self.forward(inst, self.element(inst.operands[0], k))

    def rule_tuple(self, inst: Instruction, info: opcodes.OpInfo, params) -> None:
        self.sets[inst] = {(): self.new(inst, (), inst.shape)}
        for n, o in enumerate(inst.operands):
            self.forward(inst, self.sets[o], (n,))

    def rule_while(self, inst: Instruction, info: opcodes.OpInfo, params) -> None:
        self.run_while(inst)

    def rule_call(self, inst: Instruction, info: opcodes.OpInfo, params) -> None:
        called = scheduled_callees(inst)
        if not called:
            self.define_all(inst)
            return
        callee = called[0]
        self.run_computation(callee, [self.sets[o] for o in inst.operands])
        self.forward(inst, self.sets[callee.root])

    def rule_conditional(self, inst: Instruction, info: opcodes.OpInfo, params) -> None:
        ops = inst.operands
        branches = scheduled_callees(inst)
        for n, b in enumerate(branches):
            self.run_computation(b, [self.sets[ops[n + 1]]])
        self.define_all(inst)
        for idx, v in self.sets[inst].items():
            v.is_phi = True
            self.while_links.append((v, *[r for b in branches if (r := self.sets[b.root].get(idx)) is not None]))

    def rule_done(self, inst: Instruction, info: opcodes.OpInfo, params) -> None:
        if not inst.operands:
            self.define_all(inst)
            return
        k = info.start_element
        start = self.sets[inst.operands[0]]
        self.forward(inst, {i[1:]: v for i, v in start.items() if i and i[0] == k})
        if inst.shape.is_tuple:
            self.sets[inst][()] = self.new(inst, (), inst.shape)

    def rule_copy_start(self, inst: Instruction, info: opcodes.OpInfo, params) -> None:
        if not inst.shape.tuple_shapes or not inst.operands:  # not (destination, source, ...)
            self.define_all(inst)
            return
        self.sets[inst] = {(): self.new(inst, (), inst.shape),
                           (0,): self.new(inst, (0,), inst.shape.at((0,)))}
        self.forward(inst, self.sets[inst.operands[0]], (1,))
        for idx, sub in _indices(inst.shape):
            if idx and idx[0] >= 2:
                self.sets[inst][idx] = self.new(inst, idx, sub)

    def rule_async_start(self, inst: Instruction, info: opcodes.OpInfo, params) -> None:
        if inst.shape.tuple_shapes:
            self.run_async_start(inst, info)
        else:
            self.define_all(inst)

    def run_async_start(self, inst: Instruction, info: opcodes.OpInfo) -> None:
        """`((operands...), output, context...)`: {0,i} are the operands, the rest is new."""
        ops = inst.operands
        out: dict[tuple, Value] = {(): self.new(inst, (), inst.shape)}
        self.sets[inst] = out
        op0 = inst.shape.at((0,))
        if op0.is_tuple and not (len(ops) == 1 and ops[0].shape == op0):
            out[(0,)] = self.new(inst, (0,), op0)
            for n, o in enumerate(ops):
                self.forward(inst, self.sets[o], (0, n))
        elif ops:
            self.forward(inst, self.sets[ops[0]], (0,))
        called = scheduled_callees(inst)  # [] but for an async start with its computation
        wrapped = called[0] if called else None
        self.async_wrapped[inst] = wrapped
        root_vals: dict[tuple, Value] | None = None
        if wrapped is not None and wrapped.execution_thread == "main":
            self.run_computation(wrapped, [self.sets[o] for o in ops])
            root_vals = self.sets[wrapped.root]
        for idx, sub in _indices(inst.shape):
            if idx in out or (idx and idx[0] == 0):
                continue
            if idx[0] == 1 and root_vals is not None and idx[1:] in root_vals and not sub.is_tuple:
                out[idx] = root_vals[idx[1:]]
            else:
                v = self.new(inst, idx, sub)
                if idx[0] == 1 and wrapped is None and info.sugar and not sub.is_tuple:
                    v.wrapped_step = info.wrapped
                out[idx] = v

    def rule_permute_start(self, inst: Instruction, info: opcodes.OpInfo, params) -> None:
        """XLA's native collective-permute-start, `(operands, results, context...)`: new
        `{}`, `{1}` and context elements, then `{1,i}` where there are several results (in
        XLA's order: it numbers values by it). `{0}` forwards the one operand; of several,
        `{0,i}` is operand i and `{0}` holds no value: XLA defines none there, so no tuple
        table (unlike an all-gather-start's or an async wrapper's). In the in-place form
        (`permute_in_place`) `{0}` forwards the input (its elements, of a tuple), and
        `{1,i}` are new where the output buffer, operand 1, is a tuple."""
        ops, shape = inst.operands, inst.shape
        if not shape.tuple_shapes or not ops:
            self.define_all(inst)
            return
        indices = dict(_indices(shape))
        out: dict[tuple, Value] = {}
        self.sets[inst] = out
        in_place = permute_in_place(inst)
        fresh = [(), (1,), *((k,) for k in range(2, len(shape.tuple_shapes)))]
        if in_place:
            results = ops[1].shape.tuple_shapes if ops[1].shape.is_tuple else ()
        else:
            results = ops if len(ops) > 1 else ()
        fresh += [(1, i) for i in range(len(results))]
        for idx in fresh:
            if idx in indices:
                out[idx] = self.new(inst, idx, indices[idx])
        if not in_place and len(ops) > 1:
            sources = [((0, i), self.sets[o].get(())) for i, o in enumerate(ops)]
        elif ops[0].shape.is_tuple:
            sources = [((0, i), self.sets[ops[0]].get((i,))) for i in range(len(ops[0].shape.tuple_shapes))]
        else:
            sources = [((0,), self.sets[ops[0]].get(()))]
        for idx, v in sources:
            if idx in indices and v is not None:
                out[idx] = v
        self.async_wrapped[inst] = None

    def run_while(self, inst: Instruction) -> None:
        cond, body = loop_parts(inst)
        if body is None or not inst.operands:
            self.define_all(inst)
            return
        init = self.sets[inst.operands[0]]
        # Phi values at every index of the state, at the condition parameter, the body
        # parameter and the while itself; resolved after the body is known.
        cond_param = cond.parameters[0] if cond and cond.parameters else None
        body_param = body.parameters[0] if body.parameters else None
        phis = {idx: (self.new(cond_param, idx, sub, True) if cond_param is not None else None,
                      self.new(body_param, idx, sub, True) if body_param is not None else None,
                      self.new(inst, idx, sub, True))
                for idx, sub in _indices(inst.shape)}
        if any(idx not in init for idx in phis):
            # A state whose shape is not the loop's (XLA's verifier refuses it): what it lacks
            # is taken as defined by the loop.
            init = {idx: init.get(idx) or self.new(inst, idx, inst.shape.at(idx)) for idx in phis}
        self.run_computation(cond, [{i: p[0] for i, p in phis.items()}]) if cond else None
        self.run_computation(body, [{i: p[1] for i, p in phis.items()}])
        root = self.sets[body.root]
        out = {}
        for idx, (pc, pb, pw) in phis.items():
            rv = root.get(idx)
            if rv is pb or rv is None:
                # The body passes this element through: no phi, the init value flows on.
                for p in (pc, pb, pw):
                    if p is not None:
                        p.replaced_by = init[idx]
                out[idx] = init[idx]
            else:
                out[idx] = pw
                self.while_links.append(tuple(x for x in (pw, pb, pc, init[idx], rv) if x is not None))
        self.sets[inst] = out


_VALUE_RULES = {
    "define": _Builder.rule_define,
    "parameter": _Builder.rule_parameter,
    "forward": _Builder.rule_forward,
    "element": _Builder.rule_element,
    "tuple": _Builder.rule_tuple,
    "done": _Builder.rule_done,
    "copy-start": _Builder.rule_copy_start,
    "async-start": _Builder.rule_async_start,
    "permute-start": _Builder.rule_permute_start,
    "while": _Builder.rule_while,
    "call": _Builder.rule_call,
    "conditional": _Builder.rule_conditional,
}
"""The builder's step for each value rule of the opcode table."""
assert _VALUE_RULES.keys() == set(opcodes.VALUE_RULES), "every value rule of the table needs a step"


_UNKNOWN = object()


def permute_in_place(inst: Instruction) -> bool:
    """XLA's in-place collective-permute (`HloCollectivePermuteInstruction::inplace`): one
    with `slice_sizes` of at least one list (its parser then asks for four operands: input,
    output buffer, input and output offsets)."""
    sizes = inst.attributes.get("slice_sizes")
    return sizes is not None and "".join(sizes.split()) != "{}" and len(inst.operands) == 4


def wraps_collectives(module: Module) -> bool | None:
    """Whether the natively asynchronous collectives of `module` are async wrappers, as its
    starts whose shape tells show (`opcodes.start_is_wrapper`); None when none tells, or
    they disagree. XLA's AsyncCollectiveCreator makes all of a module's alike: the native
    ops, or (`use_generic_async_start_done`, XLA's GPU pipeline since jax 0.11) an
    async-start wrapping each collective."""
    seen = set()
    for inst in scheduled_instructions(module):
        if inst.opcode in opcodes.NATIVE_OR_WRAPPED and inst.info.async_role == "start":
            seen.add(opcodes.start_is_wrapper(inst.opcode, inst.shape, len(inst.operands)))
    seen.discard(None)
    return seen.pop() if len(seen) == 1 else None


def _resolve(v: Value) -> Value:
    while v.replaced_by is not None:
        v = v.replaced_by
    return v


# In-place ops (dynamic-update-slice, scatter) and fusions, from the opcode table: sets an
# opcode is looked up in, as cheap as comparing it with one name.
_IN_PLACE_OPS = tuple(sorted(op for op in opcodes.all_known() if opcodes.info(op).in_place_operand is not None))
_FUSIONS = opcodes.spellings(calls_kind="fused")


def _fusion_in_place_operands(inst: Instruction, facts: Facts = PLAIN) -> list[tuple[tuple, int, tuple]]:
    """(output_index, operand, operand_index) pairs a fusion updates in place: its root (or a
    root tuple element) is a dynamic-update-slice or scatter of one of its parameters."""
    called = inst.called_computations
    if not called:
        return []
    fused = facts.same_but_metadata(called[0])  # the same pairs
    if not facts.holds_any(fused, _IN_PLACE_OPS):
        return []
    found = facts.fusion_in_place_operands(fused)
    if found is not None:
        return found
    return in_place_operands_from(fused.root, lambda i, k: i.operands[k])


def in_place_operands_from(root, operand) -> list[tuple[tuple, int, tuple]] | None:
    """The pairs of `_fusion_in_place_operands` from a fused computation's `root`, following
    `operand(instruction, k)`; None if that (or the root) is None: it cannot say."""
    if root is None:
        return None
    roots = [((), root)]
    if root.opcode == "tuple":
        roots = [((n,), operand(root, n)) for n in range(len(root.operands))]
    out = []
    for oi, r in roots:
        r = _through_bitcasts(r, operand)
        if r is None:
            return None
        k = r.info.in_place_operand
        if k is not None and k < len(r.operands):
            p = _through_bitcasts(operand(r, k), operand)
            if p is None:
                return None
            if p.opcode == "parameter":
                out.append((oi, p.parameter_number or 0, ()))
    return out


def _through_bitcasts(inst, operand):
    """The first non-bitcast down a chain of bitcasts' operands; None when `operand` cannot
    say, or the chain does not end (a bitcast of itself: text a read would refuse)."""
    for _ in range(1 << 16):
        if inst is None or inst.opcode != "bitcast" or not inst.operands:
            return inst
        inst = operand(inst, 0)
    return None


def in_place_pairs(inst: Instruction, facts: Facts = PLAIN,
                   op: opcodes.OpInfo | None = None) -> list[tuple[tuple, int, tuple]]:
    """XLA GetInPlaceInputOutputPairs: (output_index, operand, operand_index) sharing memory.
    `facts`: answers about fused computations (hloscope.analysis.facts); `op`: the
    instruction's facts where they are not its opcode's (`Dataflow.wrappers`)."""
    aliasing = inst.attributes.decoded("output_to_operand_aliasing") if "output_to_operand_aliasing" in inst.attributes else None
    if aliasing:
        return [(a.output_index, a.operand, a.operand_index) for a in aliasing]
    op = op or inst.info
    k = op.in_place_operand
    if k is not None:
        return [((), k, ())]
    out = op.sliced_in_place_output
    if out is not None and permute_in_place(inst):
        buffer = inst.operands[1].shape
        return [(out, 1, ())] + [(out + (i,), 1, (i,)) for i in range(len(buffer.tuple_shapes))]
    if op.in_place_each_operand:
        # The result shares its operand's buffer and allocation, the operand's live range
        # handing over to it at the start: one buffer, not a heap share.
        n = len(inst.operands)
        return [((), 0, ())] if n == 1 else [((i,), i, ()) for i in range(n)]
    if inst.opcode in _FUSIONS:
        return _fusion_in_place_operands(inst, facts)
    return []


def analyze_dataflow(module: Module, facts: Facts = PLAIN) -> Dataflow:
    """Values, positions, uses and buffers of `module` (entry and the computations it runs)."""
    return _analyze_dataflow(module, facts)


def _analyze_dataflow(module: Module, facts: Facts) -> Dataflow:
    b = _Builder(module)
    b.run_computation(module.entry, None)

    # Positions: every (instruction, index) holding a value (the inlined common case has
    # its one already), in the order their outputs were first written.
    sets = b.sets
    forwarding = set(b.forwarding)
    for inst, vs in sets.items():
        if inst not in forwarding:
            continue
        for idx, v in vs.items():
            if v.replaced_by is not None:
                v = _resolve(v)
                vs[idx] = v
            p = v._positions
            if p is None:
                v._positions = AT_DEFINITION if inst is v.instruction and idx == v.index else [(inst, idx)]
            elif p is AT_DEFINITION:
                v._positions = [(v.instruction, v.index), (inst, idx)]
            else:
                p.append((inst, idx))
    values = [v for v in b.values if v.replaced_by is None and v._positions is not None]
    for v in values:
        p = v._positions
        if p is AT_DEFINITION:
            continue
        # The defining position first, as XLA keeps it (it nearly always is already).
        first = p[0]
        if first[0] is not v.instruction or first[1] != v.index:
            p.sort(key=lambda q: not (q[0] is v.instruction and q[1] == v.index))

    # Buffers (XLA HloAliasAnalysis): loop state, in-place updates, donated arguments.
    uf = _UnionFind()
    uf.parent = list(range(len(values)))
    for n, v in enumerate(values):
        v.buffer = n
    for group in b.while_links:
        rs = [_resolve(x) for x in group]
        if rs[0].buffer < 0:
            continue
        for x in rs[1:]:
            if x.buffer >= 0:
                uf.union(rs[0].buffer, x.buffer)
    in_place = {}
    for inst in b.in_place:
        vs = sets[inst]
        pairs = in_place[inst] = in_place_pairs(inst, facts, b.wrappers.get(inst))
        for oi, k, pi in pairs:
            if k < len(inst.operands):
                a = vs.get(oi)
                c = b.sets.get(inst.operands[k], {}).get(pi)
                if a is not None and c is not None:
                    uf.union(a.buffer, c.buffer)
    entry = module.entry
    params = {p.parameter_number: p for p in entry.parameters}
    for alias in module.attributes.decoded("input_output_alias", ()):
        a = b.sets.get(entry.root, {}).get(alias.output_index)
        p = params.get(alias.parameter)
        c = b.sets.get(p, {}).get(alias.parameter_index) if p is not None else None
        if a is not None and c is not None:
            uf.union(a.buffer, c.buffer)

    # Buffers numbered by their first value; most are a single value.
    buffers: list[list[Value]] = []
    parent, find = uf.parent, uf.find
    number: dict[int, int] = {}
    for n, v in enumerate(values):
        root = n if parent[n] == n else find(n)
        bn = number.get(root)
        if bn is None:
            bn = number[root] = len(buffers)
            buffers.append([v])
        else:
            buffers[bn].append(v)
        v.buffer = bn
    live_out = frozenset(v.buffer for v in b.sets.get(entry.root, {}).values())
    entry_params = frozenset(v.buffer for p in entry.parameters for v in b.sets[p].values())
    constants = frozenset(v.buffer for v in values if v.instruction.opcode == "constant")
    df = Dataflow(module, values, b.sets, buffers, live_out, entry_params, constants,
                  frozenset(b.analyzed), b.async_wrapped, in_place, b.wrappers, tuple(b.undecided))
    # Number values as XLA numbers its HloValues: several of its tie-breaks depend on it.
    order = xla_value_order(df)
    for v in values:
        v.id = order[v]
    values.sort(key=_value_id)
    for vs in buffers:
        if len(vs) > 1:
            vs.sort(key=_value_id)
    return df


_value_id = operator.attrgetter("id")
_instruction_of = operator.attrgetter("instruction")


def post_order_ranks(computations, analyzed) -> dict[Instruction, int]:
    """Each instruction's place in XLA's post order: `computations` in the order given (those
    the dataflow analyzed), each in DFS post-order from the instructions nothing uses
    (operands first, in order)."""
    rank: dict[Instruction, int] = {}
    pushed: set[Instruction] = set()
    push = pushed.add
    n = 0
    for c in computations:
        if c not in analyzed:
            continue
        for top in c.instructions:
            if top.users or top in pushed:
                continue
            push(top)
            stack = [(top, iter(top.operands))]
            append, pop = stack.append, stack.pop
            while stack:
                node, it = stack[-1]
                for o in it:
                    if o not in pushed:
                        push(o)
                        append((o, iter(o.operands)))
                        break
                else:
                    pop()
                    rank[node] = n
                    n += 1
    return rank


def xla_value_order(dataflow: Dataflow) -> dict[Value, int]:
    """The order of XLA's HloValue ids: computations callees-first, instructions in DFS
    post-order from the unused ones (operands first, in order), shape indices pre-order.
    Buffer assignment breaks ties between equal buffers by it."""
    rank = post_order_ranks(callees_first(dataflow.module), dataflow.analyzed)
    late = 1 << 30
    values = dataflow.values
    keys = [rank.get(i, late) for i in map(_instruction_of, values)]
    # `values` is in id order and the sort is stable: ties keep it.
    order = [values[i] for i in sorted(range(len(values)), key=keys.__getitem__)]
    return {v: n for n, v in enumerate(order)}
