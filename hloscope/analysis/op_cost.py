"""What one execution of an op costs, by the handler XLA's HloCostAnalysis has for its
opcode (xla/service/hlo_cost_analysis.cc), so that the figures check against XLA's own.

What depends on the opcode alone is a fact of the opcode table (`cost_per_element`,
`costs_nothing`, `priced_by_callees`); docs/cost.md lists the rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import NamedTuple, Protocol

from ..ir.attributes import decode_json
from ..ir.module import Computation, Instruction
from ..ir.opcodes import all_known, spellings
from ..ir.opcodes import info as opinfo
from ..ir.shape import UNBOUNDED, UNKNOWN, Shape
from .facts import Facts


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


class Pricer(Protocol):
    """What a rule asks of the walk that prices a module: its callees' costs, each priced
    once, and what the walk knows of an instruction."""

    facts: Facts
    """What may be asked of a body before walking it."""

    def computation(self, comp: Computation, marked: bool = False) -> Counts:
        """One run of `comp`; `marked`: its caller recomputes forward ops."""

    def instruction(self, inst: Instruction) -> Counts:
        """One execution of `inst` (an async start's wrapped op, seen as that op)."""

    def marked(self, inst: Instruction) -> bool:
        """Whether `inst` recomputes forward ops."""

    def collective(self, inst: Instruction) -> int:
        """The result bytes of `inst` if it is a collective, else 0."""

    def fusion_bytes(self, shape: Shape, comp: Computation) -> int:
        """The bytes a fusion of result `shape` calling `comp` accesses (`fusion_bytes`)."""


# ─── sizes, as XLA's cost analysis takes them ─────────────────────────────────────────

_SIZES: dict[str, int] = {}


def shape_size(shape: Shape) -> int:
    """XLA's GetShapeSize: the top-level buffer (a tuple's pointer table)."""
    size = _SIZES.get(shape.text)  # by text: a str keeps its hash, a Shape computes it
    if size is None:
        size = _SIZES[shape.text] = shape.byte_size
    return size


def elements_in(shape: Shape) -> int:
    """ShapeUtil::ElementsIn of an array (of the array a buffer holds); 0 for an unbounded one."""
    if shape.element_type == "buffer" and shape.tuple_shapes:
        shape = shape.tuple_shapes[0]
    if not shape.is_array or UNBOUNDED in shape.dimensions:
        return 0
    return shape.element_count


def first_elements_in(shape: Shape) -> int:
    """ElementsIn of an array, or of the first element of a tuple (variadic ops)."""
    while shape.is_tuple and shape.tuple_shapes:
        shape = shape.tuple_shapes[0]
    return elements_in(shape)


def _array_subshapes(shape: Shape):
    return [s for _, s in shape.subshapes() if s.is_array]


def _output_bytes(shape: Shape) -> int:
    """What XLA counts for writing a result: every array leaf (a tuple result is its elements)."""
    if not shape.is_tuple:
        return shape_size(shape)
    return sum(shape_size(leaf) for _, leaf in shape.leaves())


def _shaped(inst: Instruction) -> bool:
    return inst.shape is not UNKNOWN and all(o.shape is not UNKNOWN for o in inst.operands)


def _default_bytes(inst: Instruction) -> int:
    """HloCostAnalysis::Preprocess: the result's leaves and every operand at its top-level size
    (an operand tuple is its pointer table)."""
    return _output_bytes(inst.shape) + sum(shape_size(o.shape) for o in inst.operands)


# ─── XLA's rules, per opcode ──────────────────────────────────────────────────────────

_FMA_FLOPS = 2
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


def _dot(inst: Instruction, _: Pricer) -> Counts:
    return Counts(flops=_FMA_FLOPS * elements_in(inst.shape) * _contracted(inst), bytes=_default_bytes(inst))


def matmul_flops(inst: Instruction) -> int:
    """The FLOPs of one dot, ragged dot or convolution (0 for other ops), as their rules count them."""
    rule = _MATMULS.get(inst.opcode)
    return rule(inst, None).flops if rule is not None and inst.operands else 0  # type: ignore[arg-type]


def matmul_arithmetic(inst: Instruction) -> str:
    """What a matmul computes in, which sets its peak on a target (`hardware.Target.matmul_peak`):
    its `algorithm=` when the text names one (`dot_bf16_bf16_f32_x6`), else its lhs element type,
    for f32 with the precision asked (`f32`, `f32/high`, `f32/highest`)."""
    algorithm = (inst.attributes.get("algorithm") or "").strip()
    if algorithm.startswith("dot_"):
        return algorithm
    element = inst.operands[0].shape.element_type if inst.operands else "unknown"
    if element != "f32":
        return element
    precision = (inst.attributes.get("operand_precision") or "").lower()
    return "f32/highest" if "highest" in precision else "f32/high" if "high" in precision else "f32"


def _ragged_dot(inst: Instruction, _: Pricer) -> Counts:
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


def _convolution(inst: Instruction, _: Pricer) -> Counts:
    return Counts(flops=convolution_flops(inst), bytes=_default_bytes(inst))


_MATMULS = {"dot": _dot, "ragged-dot": _ragged_dot, "convolution": _convolution}
MATMUL_OPCODES = frozenset(_MATMULS)
"""The opcodes `matmul_flops` counts: what runs on a target's matrix units."""


def _fft(inst: Instruction, _: Pricer) -> Counts:
    operand = inst.operands[0].shape
    if operand.is_tuple:
        operand = operand.tuple_shapes[0]
    log_factors = 1
    for n in inst.attributes.decoded("fft_length") or ():
        log_factors *= int(n).bit_length() - 1  # Log2Floor, -1 for a length of 0 as in XLA
    return Counts(flops=_FMA_FLOPS * 4 * log_factors * elements_in(operand), bytes=_default_bytes(inst))


def _triangular_solve(inst: Instruction, _: Pricer) -> Counts:
    a, b = inst.operands[0].shape, inst.operands[1].shape
    read = shape_size(inst.shape) + shape_size(a) // 2 + shape_size(b)
    return Counts(flops=_FMA_FLOPS * (a.dimensions[-1] if a.dimensions else 1) * elements_in(b), bytes=read)


def _cholesky(inst: Instruction, _: Pricer) -> Counts:
    a = inst.operands[0].shape
    return Counts(flops=(a.dimensions[-1] if a.dimensions else 1) * elements_in(a) // 3, bytes=shape_size(a))


def _elementwise(inst: Instruction, _: Pricer) -> Counts:
    n = first_elements_in(inst.shape)
    if opinfo(inst.opcode).cost_per_element == "transcendental":
        return Counts(transcendentals=n, bytes=_default_bytes(inst))
    return Counts(flops=n, bytes=_default_bytes(inst))


def _applied(inst: Instruction, c: Pricer, key: str = "to_apply") -> Counts:
    """The cost of one application of the callee named by attribute `key`."""
    names = inst.attributes.decoded(key) or ()
    module = inst.computation.module if inst.computation is not None else None
    comp = module.callee(names[0]) if names and module is not None else None
    return c.computation(comp, c.marked(inst)) if comp is not None else ZERO


def _reduce(inst: Instruction, c: Pricer) -> Counts:
    count = first_elements_in(inst.operands[0].shape) - first_elements_in(inst.shape)
    return _applied(inst, c).times(count).with_bytes(_default_bytes(inst))


def _map(inst: Instruction, c: Pricer) -> Counts:
    return _applied(inst, c).times(first_elements_in(inst.shape)).with_bytes(_default_bytes(inst))


def _scan(inst: Instruction, c: Pricer) -> Counts:
    # Its callee once per step along the scanned dimension. (XLA's own figure for this new op
    # follows another rule, which hloscope does not reproduce.)
    dims = inst.attributes.decoded("dimensions") or (0,)
    operand = inst.operands[0].shape if inst.operands else inst.shape
    steps = operand.dimensions[dims[0]] if operand.is_array and 0 <= dims[0] < operand.rank else 1
    return _applied(inst, c).times(max(steps, 0)).with_bytes(_default_bytes(inst))


def _reduce_window(inst: Instruction, c: Pricer) -> Counts:
    window = _window(inst)
    window_elements = math.prod(d["size"] for d in window) if window else 1
    output_elements = first_elements_in(inst.shape)
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


def _select_and_scatter(inst: Instruction, c: Pricer) -> Counts:
    source = first_elements_in(inst.operands[1].shape)
    window = _window(inst)
    window_elements = math.prod(d["size"] for d in window) if window else 1
    select = _applied(inst, c, "select").times(source * (window_elements - 1))
    scatter = _applied(inst, c, "scatter").times(source)
    return (select + scatter).with_bytes(_default_bytes(inst))


def _scatter(scatter: Instruction, c: Pricer) -> Counts:
    """Three update-sized accesses (input, output, updates) and the indices; the combiner once
    per update element."""
    n = (len(scatter.operands) - 1) // 2
    updates = scatter.operands[n + 1:]
    indices = scatter.operands[n] if n < len(scatter.operands) else None
    update_size = sum(shape_size(u.shape) for u in updates)
    nbytes = 3 * update_size + (shape_size(indices.shape) if indices is not None else 0)
    elements = first_elements_in(updates[0].shape) if updates else 0
    return _applied(scatter, c).times(elements).with_bytes(nbytes)


def _gather_bytes(gather: Instruction) -> int:
    return 2 * shape_size(gather.shape) + shape_size(gather.operands[1].shape)


def _gather(inst: Instruction, _: Pricer) -> Counts:
    return Counts(bytes=_gather_bytes(inst))


def _sort(inst: Instruction, _: Pricer) -> Counts:
    n = first_elements_in(inst.operands[0].shape)
    log = (n - 1).bit_length() if n > 1 else 0
    return Counts(flops=n * log, bytes=_default_bytes(inst))


def _all_reduce(inst: Instruction, c: Pricer) -> Counts:
    arrays = _array_subshapes(inst.shape)
    out = sum(shape_size(s) for s in arrays)
    return Counts(flops=sum(elements_in(s) for s in arrays), bytes=out + sum(shape_size(o.shape) for o in inst.operands),
                  collective_bytes=c.collective(inst))


def _rng(inst: Instruction, _: Pricer) -> Counts:
    return Counts(transcendentals=first_elements_in(inst.shape), bytes=_default_bytes(inst))


def _rng_bit_generator(inst: Instruction, _: Pricer) -> Counts:
    return Counts(transcendentals=sum(elements_in(s) for s in _array_subshapes(inst.shape)),
                  bytes=_default_bytes(inst))


def _slice(inst: Instruction, _: Pricer) -> Counts:
    return Counts(bytes=2 * shape_size(inst.shape))


def _dynamic_slice(inst: Instruction, _: Pricer) -> Counts:
    index = shape_size(inst.operands[1].shape) if len(inst.operands) > 1 else 0
    return Counts(bytes=2 * shape_size(inst.shape) + index)


def _dynamic_update_slice(inst: Instruction, _: Pricer) -> Counts:
    update = shape_size(inst.operands[1].shape) if len(inst.operands) > 1 else 0
    index = shape_size(inst.operands[2].shape) if len(inst.operands) > 2 else 0
    return Counts(bytes=2 * update + index)


def _tuple(inst: Instruction, _: Pricer) -> Counts:
    return Counts(bytes=shape_size(inst.shape))


def _no_bytes(inst: Instruction, _: Pricer) -> Counts:
    return ZERO


def _transpose(inst: Instruction, _: Pricer) -> Counts:
    # A transpose that only relabels dimensions of the same physical layout is a bitcast.
    operand = inst.operands[0].shape
    dims = inst.attributes.decoded("dimensions") or ()
    out_layout, in_layout = inst.shape.layout, operand.layout
    if (out_layout is not None and in_layout is not None and operand.element_type == inst.shape.element_type
            and len(out_layout.minor_to_major) == len(dims) == len(in_layout.minor_to_major)
            and tuple(dims[d] for d in out_layout.minor_to_major) == in_layout.minor_to_major):
        return ZERO
    return Counts(bytes=_default_bytes(inst))


def _infeed(inst: Instruction, _: Pricer) -> Counts:
    return Counts(bytes=sum(shape_size(s) for _, s in inst.shape.leaves()))


def _outfeed(inst: Instruction, _: Pricer) -> Counts:
    return Counts(bytes=sum(shape_size(s) for o in inst.operands for _, s in o.shape.leaves()))


def _custom_call(inst: Instruction, _: Pricer) -> Counts:
    # A kernel that states its own cost (below) costs that; what any other runs is unknown:
    # XLA's -1 marker is kept apart, in `opaque`.
    estimate = _stated_cost(inst)
    return Counts(opaque=1) if estimate is None else estimate


def _stated_cost(inst: Instruction) -> Counts | None:
    """The cost a custom call's `backend_config` states for its kernel, or None: Pallas's
    `CostEstimate`, which JAX writes into a TPU kernel's config (`custom_call_config`
    `cost_estimate`: flops, transcendentals, bytes_accessed) and which libtpu's cost
    analysis adds as it stands (a kernel without one costs nothing there)."""
    if not inst.attributes.mentions("cost_estimate"):
        return None  # most custom calls: no config is decoded
    text = inst.attributes.uncached("backend_config")  # a kernel's config is large: not kept
    config = decode_json(text) if text is not None else None
    kernel = config.get("custom_call_config") if isinstance(config, dict) else None
    estimate = kernel.get("cost_estimate") if isinstance(kernel, dict) else None
    if not isinstance(estimate, dict):
        return None
    try:  # int64 fields, which the proto's JSON writes as strings
        flops, transcendentals, bytes_accessed = (int(estimate.get(key, 0)) for key in
                                                  ("flops", "transcendentals", "bytes_accessed"))
    except (TypeError, ValueError):
        return None
    return Counts(flops=flops, transcendentals=transcendentals, bytes=bytes_accessed)


def _fusion(inst: Instruction, c: Pricer) -> Counts:
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


def _call(inst: Instruction, c: Pricer) -> Counts:
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


def _sugar(inst: Instruction, c: Pricer) -> Counts:
    """An async start printed as sugar (`reduce-scatter-start`, `call-start`, `dot-start`) has
    no wrapped computation in the text: XLA's parser builds one holding the wrapped op, whose
    cost the start takes. Priced as that op: the start's operands, the result in its `{1}`."""
    wrapped = opinfo(inst.opcode).wrapped or inst.opcode
    shape = inst.shape
    result = shape.tuple_shapes[1] if shape.is_tuple and len(shape.tuple_shapes) > 1 else shape
    return c.instruction(_AsWrapped(inst, wrapped, result))  # type: ignore[arg-type]


def _while(inst: Instruction, c: Pricer) -> Counts:
    total = ZERO
    module = inst.computation.module if inst.computation is not None else None
    for key in ("body", "condition"):
        names = inst.attributes.decoded(key) or ()
        comp = module.callee(names[0]) if names and module is not None else None
        if comp is not None:
            total = total + c.computation(comp, c.marked(inst))
    return total


def _conditional(inst: Instruction, c: Pricer) -> Counts:
    best = None
    for comp in inst.called_computations:
        cost = c.computation(comp, c.marked(inst))
        best = cost if best is None else best.maximum(cost)
    return best or ZERO


_RULES: dict[str, Callable[[Instruction, Pricer], Counts]] = {
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


def price(inst: Instruction, pricer: Pricer) -> Counts:
    """What one execution of `inst` costs, by XLA's handler for its opcode (its callees priced
    by `pricer`); an op written without shapes, which XLA infers and hloscope does not, is not
    priced."""
    if not _shaped(inst):
        return ZERO
    rule = _RULES.get(inst.opcode)
    if rule is not None:
        return rule(inst, pricer)
    op = opinfo(inst.opcode)
    if op.sugar and op.async_role == "start":
        return _sugar(inst, pricer)
    return Counts(bytes=_default_bytes(inst), collective_bytes=pricer.collective(inst))


__all__ = ["ZERO", "Counts", "Pricer", "convolution_flops", "elements_in", "first_elements_in", "MATMUL_OPCODES",
           "matmul_arithmetic", "matmul_flops", "price", "shape_size"]
