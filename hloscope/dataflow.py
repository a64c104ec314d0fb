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

Per-opcode facts this module needs and `hloscope.opcodes` does not have yet are in the
tables below, marked `OPCODE FACTS`, to move into `opcodes.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from .ir import Computation, Instruction, Module

# ---------------------------------------------------------------------------------------------
# OPCODE FACTS (to move into opcodes.py)

PASS_THROUGH_NO_USE = frozenset({"tuple", "domain"})
"""Ops that forward every operand value without reading it (XLA's MayUseOperandValue → false)."""

TOP_LEVEL_USE_ONLY = frozenset({"get-tuple-element", "copy"})
"""Ops that read only the top-level (pointer table) value of their operand."""

ELEMENTWISE = frozenset(
    """abs add atan2 cbrt ceil clamp clz compare complex convert cosine divide erf exponential
    exponential-minus-one floor imag is-finite log log-plus-one logistic maximum minimum multiply
    negate not or popcnt power real reduce-precision remainder round-nearest-afz
    round-nearest-even rsqrt select shift-left shift-right-arithmetic shift-right-logical sign
    sine sqrt stochastic-convert subtract tan tanh xor bitcast-convert""".split()
)
"""Elementwise ops: output element i reads only element i of each operand (XLA
IsElementwise), so the output may take over an operand's buffer."""

IN_PLACE_OPERAND0 = frozenset({"dynamic-update-slice", "scatter"})
"""Ops whose output is written into operand 0's buffer (GetInPlaceInputOutputPairs)."""

DONE_FORWARDS_START_OUTPUT = frozenset(
    {"all-gather-done", "collective-permute-done", "async-done", "all-reduce-done", "copy-done"}
)
"""`-done` ops whose output is the `{1}` (copy: `{0}`) element of their start."""

# ---------------------------------------------------------------------------------------------


_SPECIAL = frozenset({"parameter", "get-tuple-element", "tuple", "bitcast", "domain", "add-dependency",
                      "opt-barrier", "while", "call", "conditional", "copy-start"}) | DONE_FORWARDS_START_OUTPUT
"""Opcodes `_Builder.run_instruction` treats apart from "defines every index"."""

_SIZE_CACHE: dict[int, tuple[object, int]] = {}


def _byte_size(shape) -> int:
    hit = _SIZE_CACHE.get(id(shape))
    if hit is not None and hit[0] is shape:
        return hit[1]
    size = shape.byte_size
    _SIZE_CACHE[id(shape)] = (shape, size)
    return size


class Value:
    """One value: defined once, at `(instruction, index)`; `size` in bytes (XLA ByteSizeOf)."""

    __slots__ = ("id", "instruction", "index", "shape", "size", "positions", "uses", "is_phi",
                 "replaced_by", "wrapped_step", "buffer")

    def __init__(self, vid: int, instruction: Instruction, index: tuple, shape, is_phi: bool = False):
        self.id = vid
        self.instruction = instruction
        self.index = index
        self.shape = shape
        self.size = _byte_size(shape)
        self.positions: list[tuple[Instruction, tuple]] = []
        self.uses: list[tuple[Instruction, int, tuple]] = []
        self.is_phi = is_phi
        self.replaced_by: Value | None = None
        self.wrapped_step: str | None = None
        """For the wrapped op of async sugar (no wrapped computation in the text): its name."""
        self.buffer: int = -1

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
    value_sets: dict[Instruction, dict[tuple, Value]]
    buffers: list[list[Value]]
    live_out: frozenset[int]
    entry_param_buffers: frozenset[int]
    constant_buffers: frozenset[int]
    analyzed: frozenset[Computation]
    async_wrapped: dict[Instruction, Computation | None] = field(default_factory=dict)
    """Each async start → its wrapped computation (None for printing sugar without one)."""

    def value_at(self, inst: Instruction, index: tuple = ()) -> Value | None:
        return self.value_sets.get(inst, {}).get(index)


def parse_input_output_alias(text: str | None) -> list[tuple[tuple, int, tuple]]:
    """`{ {0}: (0, {}, may-alias), ... }` → [(output_index, parameter, parameter_index)]."""
    import re

    if not text:
        return []
    out = []
    for m in re.finditer(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}", text):
        oi = tuple(int(x) for x in m.group(1).replace(" ", "").split(",") if x)
        pi = tuple(int(x) for x in m.group(3).replace(" ", "").split(",") if x)
        out.append((oi, int(m.group(2)), pi))
    return out


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


def _is_sugar_start(inst: Instruction) -> bool:
    op = inst.info
    return op.async_role == "start" and op.canonical == "async-start" and inst.opcode != "async-start"


class _Builder:
    def __init__(self, module: Module):
        self.module = module
        self.values: list[Value] = []
        self.sets: dict[Instruction, dict[tuple, Value]] = {}
        self.analyzed: set[Computation] = set()
        self.while_links: list[tuple[Value, ...]] = []
        self.async_wrapped: dict[Instruction, Computation | None] = {}

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

    def forward(self, inst: Instruction, src: dict[tuple, Value], prefix: tuple = (), define_top: bool = False):
        """`inst`'s output at `prefix + i` is `src[i]`."""
        out = self.sets.setdefault(inst, {})
        for idx, v in src.items():
            out[prefix + idx] = v
        if define_top:
            out[()] = self.new(inst, (), inst.shape)

    def run_computation(self, comp: Computation, params: list[dict[tuple, Value]] | None) -> None:
        self.analyzed.add(comp)
        for inst in comp.instructions:
            self.run_instruction(inst, params)

    def run_instruction(self, inst: Instruction, params) -> None:
        op = inst.opcode
        if op not in _SPECIAL and inst.info.async_role is None:
            self.define_all(inst)
            return
        ops = inst.operands
        if op == "parameter":
            if params is None:
                self.define_all(inst)
            else:
                self.forward(inst, params[inst.parameter_number or 0])
        elif op == "get-tuple-element":
            k = int(inst.attributes.get("index", "0"))
            src = self.sets[ops[0]]
            self.forward(inst, {i[1:]: v for i, v in src.items() if i and i[0] == k})
        elif op == "tuple":
            self.sets[inst] = {(): self.new(inst, (), inst.shape)}
            for n, o in enumerate(ops):
                self.forward(inst, self.sets[o], (n,))
        elif op in ("bitcast", "domain", "add-dependency") and ops:
            self.forward(inst, self.sets[ops[0]])
        elif op == "opt-barrier":
            self.forward(inst, self.sets[ops[0]])
        elif op == "while":
            self.run_while(inst)
        elif op == "call":
            callee = inst.called_computations[0]
            self.run_computation(callee, [self.sets[o] for o in ops])
            self.forward(inst, self.sets[callee.root])
        elif op == "conditional":
            branches = inst.called_computations
            for n, b in enumerate(branches):
                self.run_computation(b, [self.sets[ops[n + 1]]])
            self.define_all(inst)
            for idx, v in self.sets[inst].items():
                v.is_phi = True
                self.while_links.append((v, *[self.sets[b.root][idx] for b in branches]))
        elif inst.info.async_role == "update" and ops:
            self.forward(inst, self.sets[ops[0]])
        elif op in DONE_FORWARDS_START_OUTPUT or inst.info.canonical == "async-done":
            start = self.sets[ops[0]]
            k = 0 if op == "copy-done" else 1
            if op == "all-reduce-done":
                self.forward(inst, start)
            else:
                self.forward(inst, {i[1:]: v for i, v in start.items() if i and i[0] == k})
                if inst.shape.is_tuple and op != "copy-done":
                    self.sets[inst][()] = self.new(inst, (), inst.shape)
        elif op == "copy-start":
            self.sets[inst] = {(): self.new(inst, (), inst.shape),
                               (0,): self.new(inst, (0,), inst.shape.at((0,)))}
            self.forward(inst, self.sets[ops[0]], (1,))
            for idx, sub in _indices(inst.shape):
                if idx and idx[0] >= 2:
                    self.sets[inst][idx] = self.new(inst, idx, sub)
        elif inst.info.async_role == "start" and inst.opcode not in ("send", "recv", "all-reduce-start") \
                and inst.shape.is_tuple:
            self.run_async_start(inst)
        else:
            # Everything else writes a fresh value at every index of its output.
            self.define_all(inst)

    def run_async_start(self, inst: Instruction) -> None:
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
        wrapped = None
        if inst.opcode == "async-start":
            called = inst.called_computations
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
                if idx[0] == 1 and wrapped is None and _is_sugar_start(inst) and not sub.is_tuple:
                    v.wrapped_step = inst.info.wrapped
                out[idx] = v

    def run_while(self, inst: Instruction) -> None:
        body, cond = None, None
        names = inst.attributes
        body = self.module.computation(names.decoded("body")[0]) if "body" in names else None
        cond = self.module.computation(names.decoded("condition")[0]) if "condition" in names else None
        init = self.sets[inst.operands[0]]
        # Phi values at every index of the state, at the condition parameter, the body
        # parameter and the while itself; resolved after the body is known.
        phis = {idx: (self.new(cond.parameters[0], idx, sub, True) if cond and cond.parameters else None,
                      self.new(body.parameters[0], idx, sub, True),
                      self.new(inst, idx, sub, True))
                for idx, sub in _indices(inst.shape)}
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


def _resolve(v: Value) -> Value:
    while v.replaced_by is not None:
        v = v.replaced_by
    return v


def _fusion_in_place_operands(inst: Instruction) -> list[tuple[tuple, int, tuple]]:
    """(output_index, operand, operand_index) pairs a fusion updates in place: its root (or a
    root tuple element) is a dynamic-update-slice or scatter of one of its parameters."""
    called = inst.called_computations
    if not called:
        return []
    root = called[0].root
    roots = [((), root)]
    if root.opcode == "tuple":
        roots = [((n,), r) for n, r in enumerate(root.operands)]
    out = []
    for oi, r in roots:
        while r.opcode == "bitcast" and r.operands:
            r = r.operands[0]
        if r.opcode in IN_PLACE_OPERAND0 and r.operands:
            p = r.operands[0]
            while p.opcode == "bitcast" and p.operands:
                p = p.operands[0]
            if p.opcode == "parameter":
                out.append((oi, p.parameter_number or 0, ()))
    return out


_NEVER_IN_PLACE = ELEMENTWISE | {"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "broadcast",
                                 "reshape", "transpose", "copy", "slice", "dot", "convolution", "iota",
                                 "concatenate", "while", "call", "conditional", "partition-id", "replica-id"}


def in_place_pairs(inst: Instruction) -> list[tuple[tuple, int, tuple]]:
    """XLA GetInPlaceInputOutputPairs: (output_index, operand, operand_index) sharing memory."""
    aliasing = inst.attributes.decoded("output_to_operand_aliasing") if "output_to_operand_aliasing" in inst.attributes else None
    if aliasing:
        return [(a.output_index, a.operand, a.operand_index) for a in aliasing]
    if inst.opcode in IN_PLACE_OPERAND0:
        return [((), 0, ())]
    if inst.opcode == "fusion":
        return _fusion_in_place_operands(inst)
    return []


def analyze_dataflow(module: Module) -> Dataflow:
    """Values, positions, uses and buffers of `module` (entry and the computations it runs)."""
    import gc

    # Hundreds of thousands of small objects: the cyclic collector would rescan the parsed
    # module at every generation threshold (most of the run time on big modules).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _analyze_dataflow(module)
    finally:
        if enabled:
            gc.enable()


def _analyze_dataflow(module: Module) -> Dataflow:
    b = _Builder(module)
    b.run_computation(module.entry, None)

    # Positions: every (instruction, index) holding a value.
    for inst, vs in b.sets.items():
        for idx, v in vs.items():
            if v.replaced_by is not None:
                v = _resolve(v)
                vs[idx] = v
            v.positions.append((inst, idx))
    values = [v for v in b.values if v.replaced_by is None and v.positions]
    for v in values:
        # The defining position first, as XLA keeps it (it nearly always is already).
        first = v.positions[0]
        if first[0] is not v.instruction or first[1] != v.index:
            v.positions.sort(key=lambda p: not (p[0] is v.instruction and p[1] == v.index))

    # Uses (XLA HloValue::ComputeUses with MayUseOperandValue): `tuple` forwards without
    # reading; `get-tuple-element` and `copy` read only the operand's top-level value.
    sets = b.sets
    for user in sets:
        uop = user.opcode
        if uop in PASS_THROUGH_NO_USE:
            continue
        top_only = uop in TOP_LEVEL_USE_ONLY
        for k, o in enumerate(user.operands):
            vs = sets.get(o)
            if vs is None:
                continue
            if top_only:
                v = vs.get(())
                if v is not None:
                    v.uses.append((user, k, ()))
                continue
            for idx, v in vs.items():
                v.uses.append((user, k, idx))

    # Buffers (XLA HloAliasAnalysis): loop state, in-place updates, donated arguments.
    uf = _UnionFind()
    for v in values:
        v.buffer = uf.add()
    index_of = {id(v): v.buffer for v in values}
    for group in b.while_links:
        rs = [_resolve(x) for x in group]
        for x in rs[1:]:
            if id(x) in index_of and id(rs[0]) in index_of:
                uf.union(index_of[id(rs[0])], index_of[id(x)])
    for inst, vs in b.sets.items():
        if inst.opcode in _NEVER_IN_PLACE:
            continue
        for oi, k, pi in in_place_pairs(inst):
            if k < len(inst.operands):
                a = vs.get(oi)
                c = b.sets.get(inst.operands[k], {}).get(pi)
                if a is not None and c is not None:
                    uf.union(a.buffer, c.buffer)
    entry = module.entry
    params = {p.parameter_number: p for p in entry.parameters}
    for oi, pn, pi in parse_input_output_alias(module.attributes.get("input_output_alias")):
        a = b.sets.get(entry.root, {}).get(oi)
        p = params.get(pn)
        c = b.sets.get(p, {}).get(pi) if p is not None else None
        if a is not None and c is not None:
            uf.union(a.buffer, c.buffer)

    groups: dict[int, list[Value]] = {}
    for v in values:
        groups.setdefault(uf.find(v.buffer), []).append(v)
    buffers = list(groups.values())
    for n, vs in enumerate(buffers):
        for v in vs:
            v.buffer = n
    live_out = frozenset(v.buffer for v in b.sets.get(entry.root, {}).values())
    entry_params = frozenset(v.buffer for p in entry.parameters for v in b.sets[p].values())
    constants = frozenset(v.buffer for v in values if v.instruction.opcode == "constant")
    df = Dataflow(module, values, b.sets, buffers, live_out, entry_params, constants,
                  frozenset(b.analyzed), b.async_wrapped)
    # Number values as XLA numbers its HloValues: several of its tie-breaks depend on it.
    order = xla_value_order(df)
    for v in values:
        v.id = order[v]
    values.sort(key=lambda v: v.id)
    for vs in buffers:
        vs.sort(key=lambda v: v.id)
    return df


def _transitive_uses_elementwise(inst: Instruction) -> bool:
    """Every transitive user (inside a fused computation) reads `inst` element by element."""
    stack, seen = [inst], set()
    while stack:
        cur = stack.pop()
        for user in cur.users:
            if id(user) in seen:
                continue
            seen.add(id(user))
            if user.opcode == "tuple" or user.opcode in ELEMENTWISE or user.opcode == "copy":
                stack.append(user)
                continue
            return False
    return True


def can_share_operand_buffer(operand_value: Value, user_value: Value) -> bool:
    """XLA CanShareOperandBufferWithUser: may `user_value` be written into the buffer of
    `operand_value` (read by the same instruction) without changing results?"""
    operand, user = operand_value.instruction, user_value.instruction
    if operand_value.shape != user_value.shape:
        return False
    try:
        k = user.operands.index(operand)
    except ValueError:
        return False
    pairs = in_place_pairs(user)
    for oi, n, pi in pairs:
        if oi == user_value.index:
            return (n, pi) == (k, operand_value.index)
    if user.opcode == "fusion":
        kind = user.attributes.get("kind", "")
        if kind not in ("kLoop", "kInput"):
            return False
        called = user.called_computations
        if not called:
            return False
        params = {p.parameter_number: p for p in called[0].parameters}
        p = params.get(k)
        return p is not None and _transitive_uses_elementwise(p)
    return user.opcode in ELEMENTWISE


def xla_value_order(dataflow: Dataflow) -> dict[Value, int]:
    """The order of XLA's HloValue ids: computations callees-first, instructions in DFS
    post-order from the unused ones (operands first, in order), shape indices pre-order.
    Buffer assignment breaks ties between equal buffers by it."""
    module = dataflow.module
    comp_order: list[Computation] = []
    seen_c: set[str] = set()

    def visit_comp(c: Computation) -> None:
        if c.name in seen_c:
            return
        seen_c.add(c.name)
        for inst in c.instructions:
            if inst.opcode in ("while", "call", "conditional") or inst in dataflow.async_wrapped:
                for callee in inst.called_computations:
                    visit_comp(callee)
        comp_order.append(c)

    visit_comp(module.entry)
    rank: dict[Instruction, int] = {}
    for c in comp_order:
        if c not in dataflow.analyzed:
            continue
        on_stack: set[Instruction] = set()
        for top in c.instructions:
            if top.users or top in rank:
                continue
            stack = [[top, 0]]
            on_stack.add(top)
            while stack:
                frame = stack[-1]
                node, i = frame
                ops = node.operands
                n = len(ops)
                while i < n and (ops[i] in rank or ops[i] in on_stack):
                    i += 1
                if i < n:
                    frame[1] = i + 1
                    on_stack.add(ops[i])
                    stack.append([ops[i], 0])
                else:
                    stack.pop()
                    rank[node] = len(rank)
    order = sorted(dataflow.values, key=lambda v: (rank.get(v.instruction, 1 << 30), v.id))
    return {v: n for n, v in enumerate(order)}
