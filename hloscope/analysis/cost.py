"""What a step costs: FLOPs, transcendentals, bytes accessed and collective traffic, per
instruction and per module, and which of it recomputes the forward pass.

Counted the way XLA's HloCostAnalysis counts them (xla/service/hlo_cost_analysis.cc), so that
the figures can be checked against `compiled.cost_analysis()`:

- a dot: 2 × (elements of the result) × (product of the lhs contracting dimensions), batch
  dimensions once (they are in the result); a convolution: 2 × input features / feature groups
  × output features × batch / batch groups × the valid kernel positions of every spatial
  dimension (GetConvolutionFlops, its shortcuts included);
- an elementwise op: one flop per result element, or one transcendental for exp, log, tanh,
  logistic, sqrt, rsqrt, cbrt, power, erf, sin, cos, tan, atan2, expm1, log1p (XLA keeps those
  apart); copy, broadcast, transpose, slices, concatenate, pad, gather and the other data
  movements: none;
- reduce: the reducer's cost × (input elements − result elements); reduce-window,
  select-and-scatter, map and scatter apply their callee as many times as XLA says; sort:
  n·⌈log2 n⌉; all-reduce: one flop per result element; the other collectives: none;
- a fusion: the sum of its fused instructions (a custom fusion holding a gather or scatter: that
  op alone); call, while, conditional and async-start: their callees';
- bytes accessed: each operand at its top-level size (a tuple operand is its pointer table) and
  the result's array leaves, with XLA's exceptions (parameters, constants, get-tuple-element and bitcasts touch nothing;
  slices read what they write; a dynamic-update-slice writes its update; a fusion counts at its
  boundary: each fused parameter as its users inside read it, a dynamic-update-slice root as its
  update, and constants of more than one element);
- a custom-call is opaque: XLA marks it -1 (unknown); here it costs nothing and is counted in
  `opaque`, and the figures under XLA's convention subtract one per call as XLA's sum does;
- `scan` (an op newer than JAX's lowering, which emits while loops): its callee once per step;
  XLA's HloCostAnalysis prices it by another rule, not reproduced here.

XLA sums in float32: on the fixtures its totals differ from these exact ones by a few parts
in 10⁷.

Two totals, because XLA's HloCostAnalysis::HandleWhile prices a loop as ONE trip of its body
and condition (jax-ml/jax#18672): `flops` (and the other plain totals) is what a step runs,
every instruction × how often it runs (each enclosing loop's trip count, a condition once more
than its body); `flops_xla_convention` reproduces XLA's figure. A loop whose trip count is
unknown counts once in both (`unknown_trip_count`); a conditional's branches are each counted
as taken in the first (an upper bound) and at their maximum, as XLA does, in the second.

Collective bytes are the per-device result bytes of each collective (count-collectives'
`bytes`) × how often it runs, by kind; `collective_wire_bytes` estimates what each device sends
under ring algorithms, from the replica-group size n: all-gather and all-to-all (n−1)/n of the
result, reduce-scatter (n−1) × the result (its shard), all-reduce 2(n−1)/n, a permute or
broadcast the result itself.

Recomputation: an instruction recomputes the forward pass when JAX's metadata says its op is
the primal of a remat (`rematted_computation` in `op_name`: the forward ops `jax.checkpoint`
replays in the backward pass), or when XLA's own rematerialization cloned it (a `.remat` name).
Inside a fusion each fused instruction is judged by its own metadata, so a fusion that mixes
replayed and gradient ops counts only the replayed part; an instruction without metadata (XLA
drops it from some ops it builds) replays when everything it computes from does. A forward
`op_name` scheduled after the first backward op is no evidence: schedulers sink forward ops
next to their backward users, and on the H100 fixture without remat that rule would have
counted 8.4 MFLOP of forward dots as recomputed.

Trip counts and how often each computation runs are the call graph's (`CallGraph.runs`,
the one run counter, shared with count-collectives): a loop's `known_trip_count`, else the
count `callgraph.trip_count` infers from its counter.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from ..ir.module import Computation, Instruction, Module
from ..ir.opcodes import COLLECTIVE_KINDS, all_known, spellings
from ..ir.opcodes import info as opinfo
from ..ir.shape import UNBOUNDED, UNKNOWN, Shape
from ..ir.structure import structure
from .callgraph import CallGraph, scheduled_computations
from .collectives import CollectivesResult, analyze_collectives
from .facts import PLAIN, Facts

GROUP_KEYS = ("op_name", "source", "computation", "opcode")
"""What `CostResult.group_by` (and `hloscope cost --by`) can group instructions by."""

XLA_CONVENTION = ("XLA's HloCostAnalysis: a while loop counts one trip of its body and condition, "
                  "a conditional its costliest branch, a custom-call -1")


# ─── counts ────────────────────────────────────────────────────────────────────────────


class Counts(NamedTuple):
    """What one instruction (or computation) costs per execution (a tuple: the analysis makes
    one per instruction and callee, millions on a large module)."""

    flops: int = 0
    transcendentals: int = 0
    bytes: int = 0
    collective_bytes: int = 0
    recompute_flops: int = 0
    """Of `flops`, those of instructions that recompute the forward pass."""
    opaque: int = 0
    """Custom-calls reached (XLA counts each as -1 flop)."""

    def __add__(self, other: Counts) -> Counts:  # type: ignore[override]
        return Counts(self[0] + other[0], self[1] + other[1], self[2] + other[2], self[3] + other[3],
                      self[4] + other[4], self[5] + other[5])

    def times(self, n: int) -> Counts:
        """The cost of `n` applications (bytes are not multiplied: XLA does not copy them from a
        subcomputation applied element by element)."""
        return Counts(self[0] * n, self[1] * n, 0, self[3] * n, self[4] * n, self[5] * n)

    def with_bytes(self, n: int) -> Counts:
        return self._replace(bytes=n)

    def recomputed(self) -> Counts:
        """The same cost, all of its flops recomputing forward ops."""
        return self._replace(recompute_flops=self.flops)

    def maximum(self, other: Counts) -> Counts:
        return Counts(*(max(a, b) for a, b in zip(self, other)))


ZERO = Counts()


# ─── results ───────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class InstructionCost:
    """One instruction of a computation the schedule runs (a fusion, a dot, a collective...),
    what one execution of it costs, and how often it runs per step."""

    instruction: str
    computation: str
    opcode: str
    flops: int
    """Per execution (a fusion: its fused instructions together)."""
    transcendentals: int
    bytes_accessed: int
    collective_bytes: int
    """Result bytes of the collectives it runs (its own, or those fused into it)."""
    recompute_flops: int
    """Of `flops`, those that recompute forward ops."""
    runs: int
    """Executions per step: the product of enclosing loops' trip counts (1 for an unknown one)."""
    op_name: str | None
    source: str | None

    @property
    def total_flops(self) -> int:
        return self.flops * self.runs

    @property
    def total_bytes_accessed(self) -> int:
        return self.bytes_accessed * self.runs

    @property
    def total_collective_bytes(self) -> int:
        return self.collective_bytes * self.runs

    @property
    def total_recompute_flops(self) -> int:
        return self.recompute_flops * self.runs

    def to_dict(self) -> dict[str, Any]:
        return {
            "instruction": self.instruction,
            "flops": self.total_flops,
            "op_name": self.op_name,
            "computation": self.computation,
            "opcode": self.opcode,
            "runs": self.runs,
            "flops_per_run": self.flops,
            "transcendentals": self.transcendentals * self.runs,
            "bytes_accessed": self.total_bytes_accessed,
            "collective_bytes": self.total_collective_bytes,
            "recompute_flops": self.total_recompute_flops,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class LoopCost:
    """A while loop: how often it runs, its trip count, and one trip's cost."""

    instruction: str
    computation: str
    trip_count: int | None
    """None when unknown (then counted as one trip)."""
    runs: int
    """How often the loop itself starts per step."""
    trip_flops: int
    """One trip of its body and condition (XLA's convention: what XLA counts for the loop)."""

    def to_dict(self) -> dict[str, Any]:
        return {"instruction": self.instruction, "computation": self.computation, "trip_count": self.trip_count,
                "runs": self.runs, "trip_flops": self.trip_flops}


@dataclass(frozen=True, slots=True)
class CostGroup:
    """Instructions sharing an op_name, source, computation or opcode, their costs summed per step."""

    key: str | None
    instructions: int
    flops: int
    transcendentals: int
    bytes_accessed: int
    collective_bytes: int
    recompute_flops: int

    def to_dict(self, by: str) -> dict[str, Any]:
        return {by: self.key, "instructions": self.instructions, "flops": self.flops,
                "transcendentals": self.transcendentals, "bytes_accessed": self.bytes_accessed,
                "collective_bytes": self.collective_bytes, "recompute_flops": self.recompute_flops}


@dataclass(frozen=True, slots=True)
class CostResult:
    """The cost of one step of a module (per device)."""

    module: str
    flops: int
    """Every instruction × how often it runs (loop trip counts applied)."""
    transcendentals: int
    bytes_accessed: int
    collective_bytes: int
    """Collective result bytes × how often each collective runs."""
    collective_bytes_by_kind: dict[str, int] = field(hash=False)
    """Every kind of COLLECTIVE_KINDS, in that order."""
    collective_wire_bytes: int
    """Ring-algorithm estimate of the bytes each device sends."""
    collective_wire_bytes_by_kind: dict[str, int] = field(hash=False)
    recompute_flops: int
    """FLOPs of instructions that recompute forward ops (× how often they run)."""
    flops_xla_convention: int
    """The FLOPs XLA's HloCostAnalysis reports: each loop one trip (see XLA_CONVENTION)."""
    transcendentals_xla_convention: int
    bytes_accessed_xla_convention: int
    unknown_trip_count: bool
    """Some loop has no known trip count: the plain totals count it as one trip."""
    opaque: int
    """Custom-calls the step runs, whose cost is unknown (not counted)."""
    loops: tuple[LoopCost, ...]
    instructions: tuple[InstructionCost, ...]
    """Every instruction with a cost, of the computations the schedule runs, in their order."""

    @property
    def recomputed(self) -> tuple[InstructionCost, ...]:
        """The instructions that recompute forward ops, costliest first."""
        found = [i for i in self.instructions if i.recompute_flops]
        return tuple(sorted(found, key=lambda i: -i.total_recompute_flops))

    def in_brief(self, n: int = 10) -> CostResult:
        """The totals, with only the `n` instructions that recompute the most (what a diff
        shows of a side's cost; a step's every instruction is tens of thousands)."""
        return replace(self, instructions=self.recomputed[:n])

    def top(self, n: int = 10) -> tuple[InstructionCost, ...]:
        """The `n` instructions with the most FLOPs per step."""
        ranked = sorted(self.instructions, key=lambda i: (-i.total_flops, -i.total_bytes_accessed))
        return tuple(ranked[:n])

    def group_by(self, key: str) -> list[CostGroup]:
        """Costs per step grouped by one of GROUP_KEYS, costliest first."""
        if key not in GROUP_KEYS:
            raise ValueError(f"cannot group by {key!r}; choose one of {', '.join(GROUP_KEYS)}")
        groups: dict[str | None, list[InstructionCost]] = defaultdict(list)
        for i in self.instructions:
            groups[getattr(i, key)].append(i)
        rows = [CostGroup(k, len(items), sum(i.total_flops for i in items),
                          sum(i.transcendentals * i.runs for i in items),
                          sum(i.total_bytes_accessed for i in items),
                          sum(i.total_collective_bytes for i in items),
                          sum(i.total_recompute_flops for i in items))
                for k, items in groups.items()]
        rows.sort(key=lambda g: (-g.flops, -g.bytes_accessed, str(g.key)))
        return rows

    def to_dict(self, by: str | None = None, top: int = 10) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.module,
            "flops": self.flops,
            "bytes_accessed": self.bytes_accessed,
            "collective_bytes": self.collective_bytes,
            "recompute_flops": self.recompute_flops,
            "transcendentals": self.transcendentals,
            "collective_bytes_by_kind": dict(self.collective_bytes_by_kind),
            "collective_wire_bytes": self.collective_wire_bytes,
            "collective_wire_bytes_by_kind": dict(self.collective_wire_bytes_by_kind),
            "flops_xla_convention": self.flops_xla_convention,
            "transcendentals_xla_convention": self.transcendentals_xla_convention,
            "bytes_accessed_xla_convention": self.bytes_accessed_xla_convention,
            "xla_convention": XLA_CONVENTION,
            "unknown_trip_count": self.unknown_trip_count,
            "opaque_custom_calls": self.opaque,
            "loops": [loop.to_dict() for loop in self.loops],
            "top": [i.to_dict() for i in self.top(top)],
            "recomputed": [{"instruction": i.instruction, "flops": i.total_recompute_flops, "op_name": i.op_name,
                            "computation": i.computation} for i in self.recomputed],
        }
        if by is not None:
            out["by"] = by
            out["groups"] = [g.to_dict(by) for g in self.group_by(by)]
        return out


# ─── XLA's rules, per opcode ──────────────────────────────────────────────────────────

_FMA_FLOPS = 2

# What each device sends per result byte under ring algorithms, as a function of the group
# size n (when the groups are not known: the result itself).
_WIRE: dict[str, Callable[[int], float]] = {
    "all-gather": lambda n: (n - 1) / n,
    "all-to-all": lambda n: (n - 1) / n,
    "ragged-all-to-all": lambda n: (n - 1) / n,
    "reduce-scatter": lambda n: n - 1,
    "all-reduce": lambda n: 2 * (n - 1) / n,
    "collective-permute": lambda n: 1,
    "collective-broadcast": lambda n: 1,
}


_SIZES: dict[str, int] = {}


def _size(shape: Shape) -> int:
    """XLA's GetShapeSize: the top-level buffer (a tuple's pointer table)."""
    size = _SIZES.get(shape.text)  # by text: a str keeps its hash, a Shape computes it
    if size is None:
        size = _SIZES[shape.text] = shape.byte_size
    return size


def _count(shape: Shape) -> int:
    """ShapeUtil::ElementsIn of an array (of the array a buffer holds); 0 for an unbounded one."""
    if shape.element_type == "buffer" and shape.tuple_shapes:
        shape = shape.tuple_shapes[0]
    if not shape.is_array or UNBOUNDED in shape.dimensions:
        return 0
    return shape.element_count


def _elements(shape: Shape) -> int:
    """ElementsIn of an array, or of the first element of a tuple (variadic ops)."""
    while shape.is_tuple and shape.tuple_shapes:
        shape = shape.tuple_shapes[0]
    return _count(shape)


def _array_subshapes(shape: Shape):
    return [s for _, s in shape.subshapes() if s.is_array]


def _output_bytes(shape: Shape) -> int:
    """What XLA counts for writing a result: every array leaf (a tuple result is its elements)."""
    if not shape.is_tuple:
        return _size(shape)
    return sum(_size(leaf) for _, leaf in shape.leaves())


def _shaped(inst: Instruction) -> bool:
    return inst.shape is not UNKNOWN and all(o.shape is not UNKNOWN for o in inst.operands)


def _default_bytes(inst: Instruction) -> int:
    """HloCostAnalysis::Preprocess: the result's leaves and every operand at its top-level size
    (an operand tuple is its pointer table)."""
    return _output_bytes(inst.shape) + sum(_size(o.shape) for o in inst.operands)


_WINDOW_FIELD = re.compile(r"(\w+)=([^\s}]+)")


def _window(inst: Instruction) -> list[dict[str, int]]:
    """`window={size=3x3 stride=2x2 pad=0_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1}` → one dict per
    dimension (size, stride, pad_low, pad_high, lhs_dilate, rhs_dilate); [] without a window."""
    text = inst.attributes.get("window")
    if not text:
        return []
    fields = dict(_WINDOW_FIELD.findall(text))
    sizes = fields.get("size", "")
    dims = [{"size": int(s), "stride": 1, "pad_low": 0, "pad_high": 0, "lhs_dilate": 1, "rhs_dilate": 1}
            for s in sizes.split("x") if s]
    for key in ("stride", "lhs_dilate", "rhs_dilate"):
        if key in fields:
            for d, v in zip(dims, fields[key].split("x")):
                d[key] = int(v)
    if "pad" in fields:
        for d, v in zip(dims, fields["pad"].split("x")):
            low, _, high = v.partition("_")
            d["pad_low"], d["pad_high"] = int(low), int(high or 0)
    return dims


def _dim_labels(inst: Instruction) -> tuple[str, str, str]:
    """`dim_labels=b01f_01io->b01f` → ('b01f', '01io', 'b01f')."""
    text = (inst.attributes.get("dim_labels") or "").strip()
    lhs_rhs, _, out = text.partition("->")
    lhs, _, rhs = lhs_rhs.partition("_")
    return lhs, rhs, out


def _contracted(inst: Instruction) -> int:
    """How many products each result element of a dot sums: the lhs contracting dimensions."""
    lhs = inst.operands[0].shape
    width = 1
    for d in inst.attributes.decoded("lhs_contracting_dims") or ():
        width *= lhs.dimensions[d] if 0 <= d < lhs.rank else 1
    return width


def _dot(inst: Instruction, _: _Coster) -> Counts:
    return Counts(flops=_FMA_FLOPS * _count(inst.shape) * _contracted(inst), bytes=_default_bytes(inst))


def _ragged_dot(inst: Instruction, _: _Coster) -> Counts:
    # HloCostAnalysis::HandleRaggedDot removes one result dimension per rhs group dimension,
    # dimensions 0, 1, ... (not the group dimensions themselves): its count, reproduced.
    groups = len(_int_list(inst.attributes.get("rhs_group_dims")))
    dims = list(inst.shape.dimensions)
    for i in range(groups):
        if i < len(dims):
            del dims[i]
    elements = 0 if UNBOUNDED in dims else math.prod(dims)
    return Counts(flops=_FMA_FLOPS * elements * _contracted(inst), bytes=_default_bytes(inst))


def _int_list(text: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"-?\d+", text or ""))


def convolution_flops(inst: Instruction) -> int:
    """HloCostAnalysis::GetConvolutionFlops: 2 × the multiply-adds of the valid kernel
    positions, from the shapes, `window` and `dim_labels`."""
    lhs, rhs, out = inst.operands[0].shape, inst.operands[1].shape, inst.shape
    lhs_labels, rhs_labels, out_labels = _dim_labels(inst)
    input_feature = _labelled(lhs, lhs_labels, "f")
    batch = _labelled(lhs, lhs_labels, "b")
    output_feature = _labelled(out, out_labels, "f")
    window = _window(inst)
    if window:
        limits = [(_labelled(lhs, lhs_labels, str(k)), _labelled(rhs, rhs_labels, str(k)),
                   _labelled(out, out_labels, str(k))) for k in range(len(window))]
    else:
        window = [{"size": 1, "stride": 1, "pad_low": 0, "pad_high": 0, "lhs_dilate": 1, "rhs_dilate": 1}]
        limits = [(1, 1, 1)]
    positions = 1
    for w, (input_limit, kernel_limit, output_limit) in zip(window, limits):
        positions *= _valid_positions(w, input_limit, kernel_limit, output_limit)
    feature_groups = inst.attributes.decoded("feature_group_count") or 1
    batch_groups = inst.attributes.decoded("batch_group_count") or 1
    fma = (input_feature // feature_groups) * output_feature * (batch // batch_groups) * positions
    return fma * _FMA_FLOPS


def _labelled(shape: Shape, labels: str, label: str) -> int:
    """The size of the dimension `dim_labels` gives `label` (1 when it names none)."""
    k = labels.find(label)
    return shape.dimensions[k] if 0 <= k < shape.rank else 1


def _valid_positions(w: dict[str, int], input_limit: int, kernel_limit: int, output_limit: int) -> int:
    """Kernel positions that fall on an input element, over one spatial dimension."""
    stride, base, dilation = w["stride"], w["lhs_dilate"], w["rhs_dilate"]
    low, high = w["pad_low"], w["pad_high"]
    # XLA's two shortcuts for the N² patterns with N valid positions (batch-like dimensions).
    if (input_limit == output_limit and kernel_limit == output_limit and input_limit == base and dilation == 1
            and max(1, input_limit - 1) == stride and low == 0 and high == 0):
        return input_limit
    if (input_limit == 1 and kernel_limit == output_limit and dilation == 1 and base == 1 and stride == 1
            and high == output_limit - 1 and low == output_limit - 1):
        return output_limit
    count = 0
    for k in range(kernel_limit):
        if stride == 1 and base == 1:
            undilated_base = low - k * dilation
            count += max(min(input_limit + undilated_base, output_limit) - max(undilated_base, 0), 0)
            continue
        for o in range(output_limit):
            undilated = o * stride - low + k * dilation
            index = undilated // base if base > 1 else undilated
            if undilated != index * base:
                continue
            if 0 <= index < input_limit:
                count += 1
    return count


def _convolution(inst: Instruction, _: _Coster) -> Counts:
    return Counts(flops=convolution_flops(inst), bytes=_default_bytes(inst))


def _fft(inst: Instruction, _: _Coster) -> Counts:
    operand = inst.operands[0].shape
    if operand.is_tuple:
        operand = operand.tuple_shapes[0]
    log_factors = 1
    for n in inst.attributes.decoded("fft_length") or ():
        log_factors *= int(n).bit_length() - 1  # Log2Floor, -1 for a length of 0 as in XLA
    return Counts(flops=_FMA_FLOPS * 4 * log_factors * _count(operand), bytes=_default_bytes(inst))


def _triangular_solve(inst: Instruction, _: _Coster) -> Counts:
    a, b = inst.operands[0].shape, inst.operands[1].shape
    read = _size(inst.shape) + _size(a) // 2 + _size(b)
    return Counts(flops=_FMA_FLOPS * (a.dimensions[-1] if a.dimensions else 1) * _count(b), bytes=read)


def _cholesky(inst: Instruction, _: _Coster) -> Counts:
    a = inst.operands[0].shape
    return Counts(flops=(a.dimensions[-1] if a.dimensions else 1) * _count(a) // 3, bytes=_size(a))


def _elementwise(inst: Instruction, _: _Coster) -> Counts:
    n = _elements(inst.shape)
    if opinfo(inst.opcode).cost_per_element == "transcendental":
        return Counts(transcendentals=n, bytes=_default_bytes(inst))
    return Counts(flops=n, bytes=_default_bytes(inst))


def _applied(inst: Instruction, c: _Coster, key: str = "to_apply") -> Counts:
    """The cost of one application of the callee named by attribute `key`."""
    names = inst.attributes.decoded(key) or ()
    module = inst.computation.module if inst.computation is not None else None
    comp = module.callee(names[0]) if names and module is not None else None
    return c.computation(comp, c.marked(inst)) if comp is not None else ZERO


def _reduce(inst: Instruction, c: _Coster) -> Counts:
    count = _elements(inst.operands[0].shape) - _elements(inst.shape)
    return _applied(inst, c).times(count).with_bytes(_default_bytes(inst))


def _map(inst: Instruction, c: _Coster) -> Counts:
    return _applied(inst, c).times(_elements(inst.shape)).with_bytes(_default_bytes(inst))


def _scan(inst: Instruction, c: _Coster) -> Counts:
    # Its callee once per step along the scanned dimension. (XLA's own figure for this new op
    # follows another rule, which hloscope does not reproduce.)
    dims = inst.attributes.decoded("dimensions") or (0,)
    operand = inst.operands[0].shape if inst.operands else inst.shape
    steps = operand.dimensions[dims[0]] if operand.is_array and 0 <= dims[0] < operand.rank else 1
    return _applied(inst, c).times(max(steps, 0)).with_bytes(_default_bytes(inst))


def _reduce_window(inst: Instruction, c: _Coster) -> Counts:
    window = _window(inst)
    window_elements = math.prod(d["size"] for d in window) if window else 1
    output_elements = _elements(inst.shape)
    count = (window_elements - 1) * output_elements
    # XLA recognises a reduce followed by a broadcast along one dimension, written as a
    # padded window as wide as twice the dimension.
    reduced = [d for d in window if d["size"] != 1]
    padded = [d for d in window if d["pad_low"] or d["pad_high"]]
    if len(reduced) == 1 and len(padded) == 1 and inst.shape.is_array:
        for k, d in enumerate(window):
            if (d["size"] != 1 and d["pad_low"] and d["pad_high"] and d["pad_low"] == d["pad_high"]
                    and d["size"] == 2 * d["pad_low"] + 1):
                if d["pad_low"] == inst.shape.dimensions[k] - 1:
                    width = inst.shape.dimensions[k]
                    count = output_elements // width + width - 1
                break
    return _applied(inst, c).times(count).with_bytes(_default_bytes(inst))


def _select_and_scatter(inst: Instruction, c: _Coster) -> Counts:
    source = _elements(inst.operands[1].shape)
    window = _window(inst)
    window_elements = math.prod(d["size"] for d in window) if window else 1
    select = _applied(inst, c, "select").times(source * (window_elements - 1))
    scatter = _applied(inst, c, "scatter").times(source)
    return (select + scatter).with_bytes(_default_bytes(inst))


def _scatter(scatter: Instruction, c: _Coster) -> Counts:
    """Three update-sized accesses (input, output, updates) and the indices; the combiner once
    per update element."""
    n = (len(scatter.operands) - 1) // 2
    updates = scatter.operands[n + 1:]
    indices = scatter.operands[n] if n < len(scatter.operands) else None
    update_size = sum(_size(u.shape) for u in updates)
    nbytes = 3 * update_size + (_size(indices.shape) if indices is not None else 0)
    elements = _elements(updates[0].shape) if updates else 0
    return _applied(scatter, c).times(elements).with_bytes(nbytes)


def _gather_bytes(gather: Instruction) -> int:
    return 2 * _size(gather.shape) + _size(gather.operands[1].shape)


def _gather(inst: Instruction, _: _Coster) -> Counts:
    return Counts(bytes=_gather_bytes(inst))


def _sort(inst: Instruction, _: _Coster) -> Counts:
    n = _elements(inst.operands[0].shape)
    log = (n - 1).bit_length() if n > 1 else 0
    return Counts(flops=n * log, bytes=_default_bytes(inst))


def _all_reduce(inst: Instruction, c: _Coster) -> Counts:
    arrays = _array_subshapes(inst.shape)
    out = sum(_size(s) for s in arrays)
    return Counts(flops=sum(_count(s) for s in arrays), bytes=out + sum(_size(o.shape) for o in inst.operands),
                  collective_bytes=c.collective(inst))


def _rng(inst: Instruction, _: _Coster) -> Counts:
    return Counts(transcendentals=_elements(inst.shape), bytes=_default_bytes(inst))


def _rng_bit_generator(inst: Instruction, _: _Coster) -> Counts:
    return Counts(transcendentals=sum(_count(s) for s in _array_subshapes(inst.shape)),
                  bytes=_default_bytes(inst))


def _slice(inst: Instruction, _: _Coster) -> Counts:
    return Counts(bytes=2 * _size(inst.shape))


def _dynamic_slice(inst: Instruction, _: _Coster) -> Counts:
    index = _size(inst.operands[1].shape) if len(inst.operands) > 1 else 0
    return Counts(bytes=2 * _size(inst.shape) + index)


def _dynamic_update_slice(inst: Instruction, _: _Coster) -> Counts:
    update = _size(inst.operands[1].shape) if len(inst.operands) > 1 else 0
    index = _size(inst.operands[2].shape) if len(inst.operands) > 2 else 0
    return Counts(bytes=2 * update + index)


def _tuple(inst: Instruction, _: _Coster) -> Counts:
    return Counts(bytes=_size(inst.shape))


def _no_bytes(inst: Instruction, _: _Coster) -> Counts:
    return ZERO


def _transpose(inst: Instruction, _: _Coster) -> Counts:
    # A transpose that only relabels dimensions of the same physical layout is a bitcast.
    operand = inst.operands[0].shape
    dims = inst.attributes.decoded("dimensions") or ()
    out_layout, in_layout = inst.shape.layout, operand.layout
    if (out_layout is not None and in_layout is not None and operand.element_type == inst.shape.element_type
            and len(out_layout.minor_to_major) == len(dims) == len(in_layout.minor_to_major)
            and tuple(dims[d] for d in out_layout.minor_to_major) == in_layout.minor_to_major):
        return ZERO
    return Counts(bytes=_default_bytes(inst))


def _infeed(inst: Instruction, _: _Coster) -> Counts:
    return Counts(bytes=sum(_size(s) for _, s in inst.shape.leaves()))


def _outfeed(inst: Instruction, _: _Coster) -> Counts:
    return Counts(bytes=sum(_size(s) for o in inst.operands for _, s in o.shape.leaves()))


def _custom_call(inst: Instruction, _: _Coster) -> Counts:
    # What it runs is unknown: XLA's -1 marker is kept apart, in `opaque`.
    return Counts(opaque=1)


def _fusion(inst: Instruction, c: _Coster) -> Counts:
    comp = _callee(inst)
    if comp is None:
        return Counts(bytes=_default_bytes(inst))
    if inst.attributes.mentions("kCustom") and (inst.attributes.get("kind") or "").strip() == "kCustom":
        # HloCostAnalysis::HandleFusion prices a custom fusion holding a gather or scatter as that op.
        for fused in comp.instructions if c.facts.holds_any(comp, ("gather", "scatter")) else ():
            if fused.opcode == "gather":
                return Counts(bytes=_gather_bytes(fused))
            if fused.opcode == "scatter":
                return _scatter(fused, c)
    inner = c.computation(comp, c.marked(inst))
    return inner.with_bytes(c.fusion_bytes(inst.shape, comp))


def _callee(inst: Instruction) -> Computation | None:
    called = inst.called_computations
    return called[0] if called else None


def _call(inst: Instruction, c: _Coster) -> Counts:
    """call and async-start: their callee's cost, bytes included (HandleCall, HandleAsyncStart)."""
    comp = _callee(inst)
    if comp is None:
        return Counts(bytes=_default_bytes(inst))
    return c.computation(comp, c.marked(inst))


class _AsWrapped:
    """An async start seen as the op it runs: the start's operands, attributes and callees,
    the wrapped op's opcode and result."""

    __slots__ = ("_start", "opcode", "shape")

    def __init__(self, start: Instruction, opcode: str, shape: Shape):
        self._start, self.opcode, self.shape = start, opcode, shape

    def __getattr__(self, name: str):
        return getattr(self._start, name)


def _sugar(inst: Instruction, c: _Coster) -> Counts:
    """An async start printed as sugar (`reduce-scatter-start`, `call-start`, `dot-start`) has
    no wrapped computation in the text: XLA's parser builds one holding the wrapped op, whose
    cost the start takes. Priced as that op: the start's operands, the result in its `{1}`."""
    wrapped = opinfo(inst.opcode).wrapped or inst.opcode
    shape = inst.shape
    result = shape.tuple_shapes[1] if shape.is_tuple and len(shape.tuple_shapes) > 1 else shape
    return c.instruction(_AsWrapped(inst, wrapped, result))  # type: ignore[arg-type]


def _while(inst: Instruction, c: _Coster) -> Counts:
    total = ZERO
    module = inst.computation.module if inst.computation is not None else None
    for key in ("body", "condition"):
        names = inst.attributes.decoded(key) or ()
        comp = module.callee(names[0]) if names and module is not None else None
        if comp is not None:
            total = total + c.computation(comp, c.marked(inst))
    return total


def _conditional(inst: Instruction, c: _Coster) -> Counts:
    best = None
    for comp in inst.called_computations:
        cost = c.computation(comp, c.marked(inst))
        best = cost if best is None else best.maximum(cost)
    return best or ZERO


_RULES: dict[str, Callable[[Instruction, _Coster], Counts]] = {
    "dot": _dot,
    "scaled-dot": _dot,
    "ragged-dot": _ragged_dot,
    "convolution": _convolution,
    "fft": _fft,
    "triangular-solve": _triangular_solve,
    "cholesky": _cholesky,
    "reduce": _reduce,
    "map": _map,
    "reduce-window": _reduce_window,
    "select-and-scatter": _select_and_scatter,
    "scatter": _scatter,
    "gather": _gather,
    "sort": _sort,
    "all-reduce": _all_reduce,
    "all-reduce-start": _all_reduce,
    "rng": _rng,
    "rng-bit-generator": _rng_bit_generator,
    "slice": _slice,
    "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice,
    "tuple": _tuple,
    "transpose": _transpose,
    "infeed": _infeed,
    "outfeed": _outfeed,
    "custom-call": _custom_call,
    "fusion": _fusion,
    "call": _call,
    "async-start": _call,
    "scan": _scan,
    "while": _while,
    "conditional": _conditional,
    **{op: _elementwise for op in all_known() if opinfo(op).cost_per_element is not None},
    **{op: _no_bytes for op in spellings(costs_nothing=True)},
}
"""XLA's handler for each opcode; any other op costs no flops and its operands and result in
bytes (HloCostAnalysis::Preprocess)."""


# ─── a fusion's bytes, at its boundary ────────────────────────────────────────────────


def _users(inst: Instruction) -> list[Instruction]:
    """Users without repeats, as XLA keeps them (an operand used twice has its user once)."""
    seen: dict[int, Instruction] = {}
    for u in inst.users:
        seen.setdefault(id(u), u)
    return list(seen.values())


def _fused_parameters(comp: Computation) -> dict[int, Instruction]:
    return {p.parameter_number: p for p in comp.instructions if p.opcode == "parameter"}


def _parameter_read_bytes(param: Instruction) -> int:
    """HloCostAnalysis::FusionParameterReadBytes: what a fused parameter's users read of it."""
    size = 0
    seen = False

    def dynamic_slice(hlo: Instruction, user: Instruction) -> int:
        nonlocal seen
        if user.operands and user.operands[0] is hlo:
            return _size(user.shape)
        if not seen:
            seen = True
            return _size(hlo.shape)
        return 0

    def dynamic_update_slice(hlo: Instruction, user: Instruction) -> int:
        nonlocal seen
        if not (user.operands and user.operands[0] is hlo) and not seen:
            seen = True
            return _size(hlo.shape)
        return 0

    for user in _users(param):
        op = user.opcode
        if op == "fusion":
            nested = _callee(user)
            if nested is None:
                continue
            root = nested.root
            params = _fused_parameters(nested)
            for idx, operand in enumerate(user.operands):
                if operand is not param:
                    continue
                simple = not root.operands or params.get(idx) is root.operands[0]
                nested_seen = False
                for fusion_user in _users(user):
                    fop = fusion_user.opcode
                    if simple and fop == "slice":
                        size += _size(fusion_user.shape)
                    elif simple and fop == "dynamic-slice":
                        if fusion_user.operands and fusion_user.operands[0] is user:
                            size += _size(fusion_user.shape)
                        elif not nested_seen:
                            nested_seen = True
                            size += _size(user.shape)
                    elif simple and fop == "dynamic-update-slice":
                        if not (fusion_user.operands and fusion_user.operands[0] is user) and not nested_seen:
                            nested_seen = True
                            size += _size(user.shape)
                    elif not nested_seen:
                        nested_seen = True
                        inner = params.get(idx)
                        size += _parameter_read_bytes(inner) if inner is not None else 0
        elif op == "slice":
            size += _size(user.shape)
        elif op == "dynamic-slice":
            size += dynamic_slice(param, user)
        elif op == "dynamic-update-slice":
            size += dynamic_update_slice(param, user)
        elif op in ("broadcast", "reshape"):
            size += _size(param.shape)
        elif not seen:
            seen = True
            size += _size(param.shape)
    return size


def _fusion_bytes(shape: Shape, comp: Computation) -> int:
    """HandleFusion's bytes, for a fusion of result `shape` calling `comp`: the outputs (a
    dynamic-update-slice root writes its update), the fused parameters as read inside, and the
    fused constants of more than one element."""
    root = comp.root
    nbytes = 0
    for index, sub in shape.subshapes():
        if not sub.is_array:
            continue
        out = root
        if len(index) == 1 and root.opcode == "tuple" and index[0] < len(root.operands):
            out = root.operands[index[0]]
        if out.opcode == "dynamic-update-slice" and len(out.operands) > 1:
            nbytes += _size(out.operands[1].shape)
        else:
            nbytes += _size(sub)
    for inst in comp.instructions:
        if inst.opcode == "constant" and _elements(inst.shape) > 1:
            nbytes += _size(inst.shape)
    for number, param in sorted(_fused_parameters(comp).items()):
        if not param.shape.is_tuple:
            nbytes += _parameter_read_bytes(param)
            continue
        for index, _leaf in param.shape.leaves():
            node = param
            for sub_index in index:
                for user in _users(node):
                    if user.opcode == "get-tuple-element" and user.attributes.decoded("index") == sub_index:
                        node = user
                        break
            nbytes += _parameter_read_bytes(node)
    return nbytes


# ─── the analysis ─────────────────────────────────────────────────────────────────────

_REMAT_SEGMENT = "rematted_computation"
_XLA_REMAT_NAME = re.compile(r"\.remat\d*(?:\.|$)")


def recomputes(inst: Instruction) -> bool:
    """Whether an instruction recomputes a forward op: JAX's remat primal in its op_name, or a
    clone made by XLA's rematerialization pass."""
    if _XLA_REMAT_NAME.search(inst.name):
        return True
    if not inst.attributes.mentions(_REMAT_SEGMENT):
        return False  # most instructions: their metadata need not be decoded to know
    op_name = inst.op_name
    return bool(op_name and _REMAT_SEGMENT in op_name.split("/"))


def _replays(comp: Computation) -> dict[int, bool | None]:
    """Per instruction (by id): whether it recomputes forward ops, None when nothing says.

    XLA drops the metadata of some ops it builds (on CPU the attention's batched dots, fused,
    carry none): such an op is judged by what it computes from. It replays the forward pass
    when every operand that has a verdict replays it, and at least one has; parameters and
    constants have none. The text order of a computation puts operands first."""
    verdicts: dict[int, bool | None] = {}
    instructions = comp.instructions
    if not any(_XLA_REMAT_NAME.search(inst.name) or inst.attributes.mentions(_REMAT_SEGMENT)
               for inst in instructions):
        # Nothing here can recompute (`recomputes` is False for all), so no verdict is true:
        # known without decoding the metadata of every op, what the loop below would do.
        return verdicts
    for inst in instructions:
        if inst.op_name or _XLA_REMAT_NAME.search(inst.name):
            verdicts[id(inst)] = recomputes(inst)
            continue
        known = [v for v in (verdicts.get(id(o)) for o in inst.operands) if v is not None]
        verdicts[id(inst)] = all(known) if known else None
    return verdicts


class _Coster:
    """XLA's properties of instructions and computations, each priced once."""

    def __init__(self, collective_bytes: dict[tuple[str, str], int], facts: Facts = PLAIN):
        self._collective_bytes = collective_bytes
        self.facts = facts
        self._with_collectives = {comp for comp, _ in collective_bytes}
        self._computations: dict[tuple[str, bool], Counts] = {}
        self._alike: dict[tuple[Hashable, bool], Counts] = {}
        """Computations priced, by what they compute (`structure`): alike ones cost the same."""
        self._structures: dict[int, Hashable] = {}
        """`structure` of each computation asked about, by id (they live as long as the module)."""
        self._calling: dict[int, bool] = {}
        """Whether a computation calls any, by id."""
        self._fusion_bytes: dict[tuple[str, int], int] = {}
        """`_fusion_bytes` by result shape and fused computation's id (`fusion_bytes`)."""
        self._instructions: dict[int, Counts] = {}
        """Instructions priced outside any marked callee (by id: they live as long as the module)."""
        self._recomputes: dict[int, bool] = {}
        self._marks: list[bool] = [False]

    def collective(self, inst: Instruction) -> int:
        comp = inst.computation
        return self._collective_bytes.get((comp.name if comp is not None else "", inst.name), 0)

    def marked(self, inst: Instruction) -> bool:
        """Whether `inst` recomputes forward ops: by its own metadata, else (silent) as its caller."""
        verdict = self._recomputes.get(id(inst)) if type(inst) is Instruction else None
        if verdict is None:
            verdict = recomputes(inst)
            if type(inst) is Instruction:
                self._recomputes[id(inst)] = verdict
        return verdict or (self._marks[-1] and not inst.op_name)

    def computation(self, comp: Computation, marked: bool = False) -> Counts:
        """One run of `comp` (loops one trip: XLA's convention)."""
        key = (comp.name, marked)
        cost = self._computations.get(key)
        if cost is None:
            alike = (self._what_is_priced(comp), marked)
            cost = self._alike.get(alike)
            if cost is None:
                self._marks.append(marked)
                try:
                    parts = [self.instruction(inst) for inst in comp.instructions]
                finally:
                    self._marks.pop()
                cost = Counts(*map(sum, zip(*parts))) if parts else ZERO
                self._alike[alike] = cost
            self._computations[key] = cost
        return cost

    def fusion_bytes(self, shape: Shape, comp: Computation) -> int:
        """`_fusion_bytes`, once per result shape and fused computation (alike ones, once)."""
        key = (shape.text, id(self.facts.same_as(comp)))
        found = self._fusion_bytes.get(key)
        if found is None:
            found = self._fusion_bytes[key] = _fusion_bytes(shape, comp)
        return found

    def _what_is_priced(self, comp: Computation) -> Hashable:
        """What decides the price of `comp`: its structure, unless names are priced too (a
        collective's bytes are found by name, XLA's remat clones are known by theirs)."""
        if comp.name in self._with_collectives or (
                self.facts.writes_any(comp, (".remat",)) and any(".remat" in inst.name for inst in comp.instructions)):
            return comp
        # One alike (`Facts.same_as`) holds what it does, but calls callees of its own: one
        # whose alike calls any is looked at itself.
        original = self.facts.same_as(comp)
        if original is not comp and self._calls(original):
            original = comp
        found = self._structures.get(id(original))
        if found is None:
            # Callees by what decides their price in turn: alike ones priced alike.
            found = self._structures[id(original)] = structure(original, self._what_is_priced)
        return found

    def _calls(self, comp: Computation) -> bool:
        found = self._calling.get(id(comp))
        if found is None:
            found = self._calling[id(comp)] = any(inst.called_computation_names for inst in comp.instructions)
        return found

    def instruction(self, inst: Instruction) -> Counts:
        """XLA's properties of one execution of `inst`, its callees included."""
        memo = not self._marks[-1] and type(inst) is Instruction
        if memo:
            cost = self._instructions.get(id(inst))
            if cost is not None:
                return cost
        rule = _RULES.get(inst.opcode)
        if not _shaped(inst):
            cost = ZERO  # written without shapes (XLA infers them; hloscope does not): not priced
        elif rule is not None:
            cost = rule(inst, self)
        elif opinfo(inst.opcode).sugar and opinfo(inst.opcode).async_role == "start":
            cost = _sugar(inst, self)
        else:
            cost = Counts(bytes=_default_bytes(inst), collective_bytes=self.collective(inst))
        # An op priced by its callees is judged there, instruction by instruction (a callee's
        # instruction without metadata takes its caller's verdict).
        if cost[0] and not opinfo(inst.opcode).priced_by_callees and self.marked(inst):
            cost = cost.recomputed()
        if memo:
            self._instructions[id(inst)] = cost
        return cost

    def own(self, inst: Instruction) -> Counts:
        """What `inst` costs itself, as one step of the schedule: an op that runs its callees as
        steps of the schedule (loop, call, conditional, async wrapper) costs nothing itself:
        its callees' instructions are steps of their own."""
        if opinfo(inst.opcode).runs_callees and inst.called_computations:
            return ZERO
        return self.instruction(inst)


def analyze_cost(module: Module, collectives: CollectivesResult | None = None,
                 recomputing_only: bool = False, facts: Facts = PLAIN) -> CostResult:
    """FLOPs, transcendentals, bytes accessed and collective bytes of one step of `module`
    (see this module's docstring for what is counted, and how). `collectives`: the module's
    collectives, when already found. `recomputing_only`: list only the instructions that
    recompute forward ops (all `CostResult.in_brief` keeps; the totals are the same), whose
    metadata is then read for hundreds of instructions, not tens of thousands."""
    graph = CallGraph(module, facts=facts)
    unknown = False

    def runs(comp: Computation) -> int:
        """How often `comp` runs per step, a loop of unknown trip count counted once."""
        nonlocal unknown
        count = graph.runs(comp)
        unknown = unknown or not count.known
        return count.times

    if collectives is None:
        collectives = analyze_collectives(module, facts)
    collective_bytes: dict[tuple[str, str], int] = {}
    by_kind = {kind: 0 for kind in COLLECTIVE_KINDS}
    wire_by_kind = {kind: 0 for kind in COLLECTIVE_KINDS}
    for c in collectives.collectives:
        collective_bytes[(c.computation, c.instruction)] = c.bytes
        comp = module.computation(c.computation)
        n = runs(comp) if comp is not None else 0
        by_kind[c.kind] += c.bytes * n
        factor = _WIRE.get(c.kind)
        size = c.group_size
        share = factor(size) if factor is not None and size else 1.0
        wire_by_kind[c.kind] += round(c.bytes * share) * n

    coster = _Coster(collective_bytes, facts)
    units: list[InstructionCost] = []
    total = ZERO
    loops: list[LoopCost] = []
    for comp in scheduled_computations(module):
        n = runs(comp)
        replays = _replays(comp)
        for inst in comp.instructions:
            if opinfo(inst.opcode).is_loop:
                loops.append(LoopCost(inst.name, comp.name, graph.trip_count(inst), n,
                                      coster.instruction(inst).flops))
            cost = coster.own(inst)
            if replays.get(id(inst)) and not inst.op_name:
                cost = cost.recomputed()
            total = total + cost.times(n).with_bytes(cost.bytes * n)
            if cost == ZERO or cost == Counts(opaque=cost.opaque) or (recomputing_only and not cost.recompute_flops):
                continue
            units.append(InstructionCost(
                instruction=inst.name, computation=comp.name, opcode=inst.opcode, flops=cost.flops,
                transcendentals=cost.transcendentals, bytes_accessed=cost.bytes,
                collective_bytes=cost.collective_bytes, recompute_flops=cost.recompute_flops, runs=n,
                op_name=inst.op_name, source=inst.source))
    xla = coster.computation(module.entry) if module.entry is not None else ZERO
    return CostResult(
        module=module.name,
        flops=total.flops,
        transcendentals=total.transcendentals,
        bytes_accessed=total.bytes,
        collective_bytes=sum(by_kind.values()),
        collective_bytes_by_kind=by_kind,
        collective_wire_bytes=sum(wire_by_kind.values()),
        collective_wire_bytes_by_kind=wire_by_kind,
        recompute_flops=total.recompute_flops,
        flops_xla_convention=xla.flops - xla.opaque,
        transcendentals_xla_convention=xla.transcendentals,
        bytes_accessed_xla_convention=xla.bytes,
        unknown_trip_count=unknown,
        opaque=total.opaque,
        loops=tuple(loops),
        instructions=tuple(units),
    )


# ─── roofline estimate ────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class Target:
    """Published peak figures of one accelerator (per chip or GPU)."""

    name: str
    description: str
    peak_flops: float
    """Dense bf16 matrix FLOP/s."""
    hbm_bytes_per_second: float
    interconnect_bytes_per_second: float
    """Chip-to-chip bandwidth, bidirectional, as published."""
    source: str


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("h100", "NVIDIA H100 SXM5 80GB", 989.4e12, 3.35e12, 900e9,
               "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100): BF16 Tensor Core "
               "1,979 TFLOPS with sparsity (989.4 dense), HBM3 3.35 TB/s, NVLink 900 GB/s"),
        Target("a100", "NVIDIA A100 SXM4 80GB", 312e12, 2.039e12, 600e9,
               "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100): BF16 Tensor Core "
               "312 TFLOPS dense, HBM2e 2,039 GB/s, NVLink 600 GB/s"),
        Target("tpu-v5e", "Google Cloud TPU v5e", 197e12, 819e9, 400e9,
               "cloud.google.com/tpu/docs/v5e: 197 TFLOPs bf16 per chip, HBM2 819 GBps, "
               "bidirectional ICI 400 GBps per chip"),
        Target("tpu-v5p", "Google Cloud TPU v5p", 459e12, 2765e9, 1200e9,
               "cloud.google.com/tpu/docs/v5p: 459 TFLOPs bf16 per chip, HBM2e 2765 GBps, "
               "bidirectional ICI 1200 GBps per chip"),
        Target("tpu-v6e", "Google Cloud TPU v6e (Trillium)", 918e12, 1638e9, 800e9,
               "cloud.google.com/tpu/docs/v6e: 918 TFLOPs bf16 per chip, HBM 1638 GBps, "
               "bidirectional ICI 800 GBps per chip"),
    )
}
"""Published peak figures, the one table of them (sources in each entry)."""

ESTIMATE_NOTE = ("roofline ESTIMATE from published peak figures, not a measurement: FLOPs at the dense bf16 "
                 "peak, bytes accessed at the HBM bandwidth, collective wire bytes at half the published "
                 "bidirectional interconnect bandwidth; the step takes at least the largest of the three")


@dataclass(frozen=True, slots=True)
class Roofline:
    """A lower bound on one step's time on a target, from its published peaks."""

    target: str
    compute_seconds: float
    memory_seconds: float
    collective_seconds: float
    seconds: float
    """The largest of the three: the step cannot be faster, whatever overlaps."""
    bound: str
    """`compute`, `memory` or `collective`: which term sets `seconds`."""
    serial_seconds: float
    """The three added: the time with no overlap at all."""
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "estimate": True, "note": ESTIMATE_NOTE,
                "compute_seconds": self.compute_seconds, "memory_seconds": self.memory_seconds,
                "collective_seconds": self.collective_seconds, "seconds": self.seconds, "bound": self.bound,
                "serial_seconds": self.serial_seconds, "source": self.source}


def roofline(cost: CostResult, target: str) -> Roofline:
    """The roofline estimate of `cost` on one of TARGETS."""
    t = TARGETS.get(target)
    if t is None:
        raise ValueError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")
    terms = {
        "compute": cost.flops / t.peak_flops,
        "memory": cost.bytes_accessed / t.hbm_bytes_per_second,
        "collective": cost.collective_wire_bytes / (t.interconnect_bytes_per_second / 2),
    }
    bound = max(terms, key=lambda k: terms[k])
    return Roofline(target=t.name, compute_seconds=terms["compute"], memory_seconds=terms["memory"],
                    collective_seconds=terms["collective"], seconds=terms[bound], bound=bound,
                    serial_seconds=sum(terms.values()), source=t.source)


__all__ = [
    "ESTIMATE_NOTE",
    "GROUP_KEYS",
    "TARGETS",
    "XLA_CONVENTION",
    "CostGroup",
    "CostResult",
    "Counts",
    "InstructionCost",
    "LoopCost",
    "Roofline",
    "Target",
    "analyze_cost",
    "convolution_flops",
    "recomputes",
    "roofline",
]
