"""Everything hloscope knows about individual opcodes, in one table.

Analyses ask this table (`info(opcode)`) instead of testing opcode names themselves, the way
XLA keeps its facts in HLO_OPCODE_LIST. The text spelling is the key: `all-gather-start` is
native in XLA, while `reduce-scatter-start` is printing sugar for an `async-start` that wraps
a `reduce-scatter`; `info()` resolves both.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

COLLECTIVE_KINDS = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "all-to-all",
    "ragged-all-to-all",
    "collective-permute",
    "collective-broadcast",
)
"""Kinds of collective, in report order."""

POINT_TO_POINT_KINDS = ("send", "recv")
"""Host/device transfers and pipeline sends, reported apart from collectives."""

VALUE_RULES = ("define", "parameter", "forward", "element", "tuple", "done", "copy-start", "async-start",
               "permute-start", "while", "call", "conditional")
"""Every `OpInfo.value_rule` (`hloscope.analysis.dataflow` has one builder step per rule)."""

CALLS_KINDS = ("loop", "call", "branches", "async", "fused", "applied")
"""Every `OpInfo.calls_kind`; the first four run their callees as steps of the schedule."""

_SCHEDULED_CALLS = frozenset(CALLS_KINDS[:4])

COSTS_PER_ELEMENT = ("flop", "transcendental")
"""Every `OpInfo.cost_per_element`."""

REDUCTION_KINDS = ("reduce-scatter", "all-reduce")
"""Collective kinds that sum across devices (what reduces gradients), reduce-scatter first:
a step that shards its gradients reduce-scatters them and all-reduces the rest."""


@dataclass(frozen=True, slots=True)
class OpInfo:
    """Facts about one opcode spelling."""

    name: str
    """The opcode as written in the text."""
    canonical: str
    """XLA's opcode for it: `async-start` for `reduce-scatter-start`, else the name itself."""
    collective: str | None = None
    """The collective kind this op performs (or starts, or wraps), if any."""
    async_role: str | None = None
    """`start`, `update` or `done` for one half of an asynchronous pair, else None."""
    wrapped: str | None = None
    """For an async op, the opcode it runs asynchronously (`all-gather` for `all-gather-start`)."""
    known: bool = True
    """False for an opcode this table has never heard of (kept, as newer XLA may print it)."""

    # Dataflow and buffer facts (XLA_MEMORY.md). The defaults are those of a plain op, and the
    # conservative answers for an unknown opcode: a fresh value at every index, reading every
    # operand, sharing no operand's buffer unless `output_to_operand_aliasing` says so.
    value_rule: str = "define"
    """How its output gets its values (one of `VALUE_RULES`; the dataflow builder has one step
    per rule, `hloscope.analysis.dataflow._VALUE_RULES`): `define`
    (a new value at every index), `parameter` (the caller's values), `forward` (operand 0's
    values), `element` (element `{start_element}` of operand 0, or `{index=}` for
    get-tuple-element), `tuple` (a new top-level value, operand n at `{n}`), `done` (element
    `{start_element}` of its start, plus a new top-level value when a tuple), `copy-start`
    (new `{}`, `{0}` and context; `{1}` is the operand), `async-start` (`{0}` the operands, `{1}`
    the wrapped computation's result or new, the rest new context), `permute-start` (XLA's
    native collective-permute-start: as `async-start`, but of several operands `{0,i}` is
    operand i and `{0}` no value at all, no tuple table; see `sliced_in_place_output` for its
    in-place form), `while`, `call`, `conditional` (the callee's values, flattened into the
    module's timeline)."""
    start_element: int | None = None
    """For a `-done` (and copy-done): the element of its start's output tuple it returns."""
    uses_operand_values: bool = True
    """False when it forwards its operands' values without reading them (tuple, domain)."""
    uses_only_top_level: bool = False
    """Reads only its operand's top-level value, the tuple's pointer table (get-tuple-element, copy)."""
    elementwise: bool = False
    """Output element i reads only element i of each operand (XLA IsElementwise), so the output
    may be written over a dying operand's buffer."""
    in_place_operand: int | None = None
    """The operand whose buffer the output is written into (XLA GetInPlaceInputOutputPairs)."""
    in_place_each_operand: bool = False
    """Output element i is written into operand i's buffer (the whole output into operand 0's
    when there is one operand): all-reduce-start, which runs in place (NCCL) in every GPU dump."""
    sliced_in_place_output: tuple | None = None
    """For XLA's in-place collective-permute (`slice_sizes` given: operands input, output
    buffer, input offsets, output offsets): the output index written into operand 1's buffer,
    each element `i` into operand 1's element `i` when that is a tuple (XLA
    GetInPlaceInputOutputPairs)."""
    may_update_in_place: bool = True
    """False when XLA never pairs its output with an operand's buffer, whatever its attributes:
    the alias analysis does not look for `output_to_operand_aliasing` or a fused in-place root."""
    shares_operand_buffer: bool = True
    """The heap simulator may put its output in the slot of an operand that dies at this step,
    when the op allows it (False for copy, whose point is a fresh buffer)."""
    calls_kind: str | None = None
    """How it runs the computations it calls (XLA's call contexts): `loop` (a while: its
    condition and body once per trip, the condition once more), `call` (its callee once, in
    line), `branches` (a conditional: one of its branches), `async` (an async start: its
    wrapped computation, `calls=`, whose values live until the matching done), `fused` (a
    fusion: its computation is the op's own code, never a step of the schedule), `applied`
    (a reducer, comparator or scatter combiner applied element by element, thread-local);
    None when it calls nothing, or hloscope does not know what its callees do (custom-call)."""
    moves_data: bool = False
    """Its output is (part of) its operands' bytes as they are, nothing computed: bitcast,
    copy, reshape, transpose, slices, concatenate, an update of a slice (a scan stacking its
    outputs), and the asynchronous forms of these (the moves between memory spaces XLA adds,
    often without metadata)."""
    keeps_elements: bool = False
    """Every element of its output is an element of operand 0, as it is or converted to another
    element type: bitcast, copy, convert, reshape, transpose, broadcast, slices, and the
    asynchronous forms of these. What an element is (an entry parameter's, a zero, a loop
    counter's value), the output's are too. Unlike `moves_data`, a conversion keeps elements,
    and a concatenation of several operands does not."""
    carries_role: bool = False
    """Its output is its operands' values converted, rearranged, combined element by element
    or summed (a reduce): what an operand is to a training step, the output is too (a sum
    of gradients is a gradient; roles). The elementwise ops and the moves among others."""
    in_place_on: frozenset[str] = frozenset()
    """The backends whose collective library writes its result over its operand (element i
    over operand i): GPU's NCCL for all-reduce and collective-broadcast (XLA's
    NVPTXAliasInfo::MayAlias), TPU for all-reduce (what its dumps show)."""

    # XLA's HloCostAnalysis (hloscope.analysis.cost prices each op by its handler).
    cost_per_element: str | None = None
    """What the cost analysis counts per result element of an elementwise op
    (HandleElementwiseOp): `flop`, or `transcendental` (exp, log, tanh, ...: XLA counts those
    apart). None for every other op, copy included (HandleCopy counts its bytes alone)."""
    costs_nothing: bool = False
    """It forwards a pointer or only orders others: no flops and no bytes accessed
    (HandleParameter, HandleConstant, HandleGetTupleElement, HandleBitcast, HandleDomain,
    HandleAfterAll, HandleAddDependency)."""
    priced_by_callees: bool = False
    """Its cost is that of the computations it calls (a fusion's fused ops, a loop's body and
    condition, a reducer × its applications): whether it recomputes forward ops is judged
    there, instruction by instruction."""
    sugar: bool = False
    """Printing sugar for an async-start/-update/-done wrapping `wrapped` (`reduce-scatter-start`):
    the text has no wrapped computation."""
    arity: int | None = None
    """XLA's HloOpcodeArity: how many operands an op of a fixed arity takes; None for a
    variadic opcode (and an unknown one). XLA's parser gives the computation it wraps async
    sugar in at least that many parameters (hloscope.text.names)."""
    runs_callees: bool = field(init=False, default=False)
    """Its called computations run as steps of the schedule (`calls_kind` loop, call,
    branches or async), not fused or applied. Derived from `calls_kind`, kept as a field:
    the schedule walks ask it of every instruction."""

    def __post_init__(self) -> None:
        if self.value_rule not in VALUE_RULES:
            raise ValueError(f"{self.name}: unknown value rule {self.value_rule!r}")
        if self.calls_kind is not None and self.calls_kind not in CALLS_KINDS:
            raise ValueError(f"{self.name}: unknown calls kind {self.calls_kind!r}")
        if self.cost_per_element not in (None, *COSTS_PER_ELEMENT):
            raise ValueError(f"{self.name}: unknown cost per element {self.cost_per_element!r}")
        object.__setattr__(self, "runs_callees", self.calls_kind in _SCHEDULED_CALLS)

    @property
    def is_loop(self) -> bool:
        """A loop (`calls_kind` loop): runs its body per trip, under its trip count."""
        return self.calls_kind == "loop"


def _op(name, **kw) -> dict:
    """An opcode's facts so far (each made into one `OpInfo` at the end: `_TABLE`)."""
    return {"name": name, "canonical": kw.pop("canonical", name), **kw}


def _add(names, **facts) -> None:
    """These facts for each of `names`."""
    for name in names:
        _FACTS[name].update(facts)


_PLAIN = """
abs add after-all and atan2 batch-norm-grad batch-norm-inference batch-norm-training
bitcast-convert broadcast cbrt ceil cholesky clamp count-leading-zeros compare complex concatenate constant
convert convolution copy cosine divide dot dynamic-reshape dynamic-slice dynamic-update-slice
erf exponential exponential-minus-one fft floor gather get-dimension-size imag infeed iota
is-finite log log-plus-one logistic maximum minimum multiply negate not or outfeed pad
parameter partition-id popcnt power ragged-dot real reduce-precision remainder replica-id
reshape reverse rng rng-bit-generator rng-get-and-update-state round-nearest-afz
round-nearest-even rsqrt select set-dimension-size shift-left shift-right-arithmetic
shift-right-logical sign sine slice sqrt stochastic-convert subtract tan tanh topk transpose
triangular-solve tuple xor scaled-dot composite-call
fusion reduce reduce-window map sort select-and-scatter custom-call
""".split()

_ELEMENTWISE = """
abs add and atan2 bitcast-convert cbrt ceil clamp count-leading-zeros compare complex convert copy cosine divide
erf exponential exponential-minus-one floor imag is-finite log log-plus-one logistic maximum
minimum multiply negate not or popcnt power real reduce-precision remainder round-nearest-afz
round-nearest-even rsqrt select shift-left shift-right-arithmetic shift-right-logical sign
sine sqrt stochastic-convert subtract tan tanh xor
""".split()

# Ops whose output XLA never writes into an operand's buffer (besides the elementwise ones,
# which may only take over a dying operand's slot in the heap).
_NEVER_IN_PLACE = """
parameter constant tuple get-tuple-element bitcast broadcast reshape transpose copy slice dot
convolution iota concatenate while call conditional partition-id replica-id
""".split()

# HloCostAnalysis::HandleElementwiseOp counts these as transcendentals, not flops.
_TRANSCENDENTAL = """
erf exponential log logistic power sqrt cbrt rsqrt tanh sine cosine exponential-minus-one log-plus-one
atan2 tan
""".split()

# HloCostAnalysis counts nothing for these (see `OpInfo.costs_nothing`).
_COSTS_NOTHING = "parameter constant get-tuple-element bitcast domain after-all add-dependency".split()

# HloCostAnalysis prices these by their callees (see `OpInfo.priced_by_callees`).
_PRICED_BY_CALLEES = """
fusion call async-start while conditional reduce map reduce-window select-and-scatter scatter
""".split()

# Ops whose callee (`to_apply`, `select`, `scatter`) is applied element by element.
_APPLIES = ("reduce", "reduce-window", "map", "sort", "select-and-scatter", "scatter", "all-reduce", "reduce-scatter",
            "all-reduce-start")

_FACTS: dict[str, dict] = {name: _op(name) for name in _PLAIN}
_FACTS.update(
    {
        # Ops whose result is an operand's or a callee's buffer (XLA_MEMORY.md, "Values").
        "parameter": _op("parameter", value_rule="parameter"),
        "bitcast": _op("bitcast", value_rule="forward"),
        "get-tuple-element": _op("get-tuple-element", value_rule="element",
                                 uses_only_top_level=True),
        "tuple": _op("tuple", value_rule="tuple", uses_operand_values=False),
        "while": _op("while", value_rule="while", calls_kind="loop"),
        "call": _op("call", value_rule="call", calls_kind="call"),
        "conditional": _op("conditional", value_rule="conditional", calls_kind="branches"),
        "fusion": _op("fusion", calls_kind="fused"),
        "domain": _op("domain", value_rule="forward", uses_operand_values=False),
        "add-dependency": _op("add-dependency", value_rule="forward"),
        "opt-barrier": _op("opt-barrier", value_rule="forward"),
        "copy": _op("copy", uses_only_top_level=True, shares_operand_buffer=False),
        # In-place updates: the output is written into operand 0's buffer.
        "dynamic-update-slice": _op("dynamic-update-slice", in_place_operand=0),
        "scatter": _op("scatter", in_place_operand=0),
        # Async machinery.
        "async-start": _op("async-start", async_role="start", value_rule="async-start", calls_kind="async"),
        "async-update": _op("async-update", async_role="update", value_rule="forward"),
        "async-done": _op("async-done", async_role="done", value_rule="done", start_element=1),
        "copy-start": _op("copy-start", async_role="start", wrapped="copy", value_rule="copy-start"),
        "copy-done": _op("copy-done", async_role="done", wrapped="copy",
                         value_rule="element", start_element=0),
        "send": _op("send", collective="send", async_role="start", wrapped="send"),
        "send-done": _op("send-done", collective="send", async_role="done", wrapped="send"),
        "recv": _op("recv", collective="recv", async_role="start", wrapped="recv"),
        "recv-done": _op("recv-done", collective="recv", async_role="done", wrapped="recv"),
    }
)
for _kind in COLLECTIVE_KINDS:
    _FACTS[_kind] = _op(_kind, collective=_kind)
_add(["collective-permute"], sliced_in_place_output=())
# Collectives XLA has native start/done opcodes for (the rest use async-start sugar).
for _kind in ("all-gather", "all-reduce", "collective-permute"):
    # all-reduce-start returns its result as an array: the done only forwards it.
    tuple_output = _kind != "all-reduce"
    permute = _kind == "collective-permute"
    _FACTS[f"{_kind}-start"] = _op(
        f"{_kind}-start", collective=_kind, async_role="start", wrapped=_kind,
        value_rule="permute-start" if permute else "async-start" if tuple_output else "define",
        in_place_each_operand=_kind == "all-reduce",
        sliced_in_place_output=(1,) if permute else None,
    )
    _FACTS[f"{_kind}-done"] = _op(
        f"{_kind}-done", collective=_kind, async_role="done", wrapped=_kind,
        value_rule="done" if tuple_output else "forward", start_element=1 if tuple_output else None,
    )
_add(_APPLIES, calls_kind="applied")
_add(("bitcast", "copy", "copy-start", "copy-done", "reshape", "transpose", "slice", "dynamic-slice",
      "concatenate", "dynamic-update-slice"), moves_data=True)
_add(("bitcast", "copy", "copy-start", "copy-done", "convert", "reshape", "transpose", "broadcast", "slice",
      "dynamic-slice"), keeps_elements=True)
_add(_ELEMENTWISE, elementwise=True, cost_per_element="flop")
_add(["copy"], cost_per_element=None)  # elementwise, but no cost per element
_add(_TRANSCENDENTAL, cost_per_element="transcendental")
_add(_COSTS_NOTHING, costs_nothing=True)
_add(_PRICED_BY_CALLEES, priced_by_callees=True)
_add(["all-reduce"], in_place_on=frozenset({"gpu", "tpu"}))
_add(["collective-broadcast"], in_place_on=frozenset({"gpu"}))
_add(set(_ELEMENTWISE) | {"convert", "bitcast", "reshape", "copy", "transpose", "reduce", "select",
                          "concatenate", "slice", "dynamic-slice", "dynamic-update-slice", "broadcast"},
     carries_role=True)
_add(set(_ELEMENTWISE) | set(_NEVER_IN_PLACE), may_update_in_place=False)

# XLA's HLO_OPCODE_LIST arities (xla/hlo/ir/hlo_opcode.h) of the table's fixed-arity opcodes.
_ARITIES = {
    0: "constant iota parameter partition-id replica-id rng-get-and-update-state",
    1: """abs bitcast bitcast-convert broadcast cbrt ceil cholesky count-leading-zeros convert copy copy-done
          copy-start cosine domain erf exponential exponential-minus-one fft floor get-dimension-size
          get-tuple-element imag infeed is-finite log log-plus-one logistic negate not opt-barrier popcnt real
          reduce-precision reshape reverse rng-bit-generator round-nearest-afz round-nearest-even rsqrt sign sine
          slice sqrt tan tanh topk transpose while all-gather-done all-reduce-done async-done
          collective-permute-done recv recv-done send-done""",
    2: """add add-dependency and atan2 compare complex divide dot gather maximum minimum multiply or outfeed pad
          power remainder send set-dimension-size shift-left shift-right-arithmetic shift-right-logical
          stochastic-convert subtract triangular-solve xor""",
    3: "batch-norm-training clamp ragged-dot select select-and-scatter",
    4: "scaled-dot",
    5: "batch-norm-grad batch-norm-inference",
    6: "ragged-all-to-all",
}
for _arity, _names in _ARITIES.items():
    _add(_names.split(), arity=_arity)

_TABLE: dict[str, OpInfo] = {name: OpInfo(**facts) for name, facts in _FACTS.items()}
del _FACTS

_SUGAR_SUFFIXES = {"-start": "start", "-update": "update", "-done": "done"}
# `X-update` exists only as sugar; natively-async ops have no update form, send/recv no -start.
_SUGAR_VALUE_RULES = {"start": "async-start", "update": "forward", "done": "done"}
_NOT_SUGAR_BASES = frozenset({"all-gather", "all-reduce", "collective-permute", "copy", "send", "recv"})


@functools.lru_cache(maxsize=None)
def info(opcode: str) -> OpInfo:
    """What the table knows about an opcode spelling; unknown opcodes get `known=False`."""
    op = _TABLE.get(opcode)
    if op is not None:
        return op
    sugar = _sugar(opcode)
    if sugar is not None and sugar.wrapped not in _NOT_SUGAR_BASES:
        return sugar
    return OpInfo(name=opcode, canonical=opcode, known=False)


def _sugar(opcode: str) -> OpInfo | None:
    """The async-start/-update/-done wrapping `X` that XLA prints as `X-start`/... , if `X`
    is an opcode of the table that is not itself asynchronous."""
    for suffix, role in _SUGAR_SUFFIXES.items():
        if opcode.endswith(suffix):
            base = opcode[: -len(suffix)]
            wrapped = _TABLE.get(base)
            if wrapped is not None and not wrapped.async_role:
                return OpInfo(
                    name=opcode,
                    canonical=f"async-{role}",
                    collective=wrapped.collective,
                    async_role=role,
                    wrapped=base,
                    value_rule=_SUGAR_VALUE_RULES[role],
                    start_element=1 if role == "done" else None,
                    moves_data=wrapped.moves_data,
                    keeps_elements=wrapped.keeps_elements,
                    sugar=True,
                )
    return None


NATIVE_OR_WRAPPED = frozenset(f"{base}-{role}" for base in ("all-gather", "all-reduce", "collective-permute")
                              for role in ("start", "done"))
"""Spellings that name either XLA's native asynchronous collective or an `async-start`/
`-done` wrapping that collective: XLA prints the wrapper as sugar under the native op's
name (and its parser reads that text back as the native op). XLA's GPU pipeline wraps every
collective so since jax 0.11 (AsyncCollectiveCreator with `use_generic_async_start_done`);
jax 0.10's made the native ops. Which one an instruction is decides its values: the
wrapper's result `{1}` is the wrapped op's, an all-reduce's written in place of its operand
by `output_to_operand_aliasing`, and a tuple result has one more tuple table, the wrapped
op's own."""


@functools.lru_cache(maxsize=None)
def wrapper_info(opcode: str) -> OpInfo:
    """For a spelling of `NATIVE_OR_WRAPPED`: the facts of the async wrapper printed under it
    (`all-reduce-start` as an async-start wrapping an all-reduce)."""
    sugar = _sugar(opcode)
    if opcode not in NATIVE_OR_WRAPPED or sugar is None:
        raise ValueError(f"{opcode} names no async wrapper of a native collective")
    return sugar


def start_is_wrapper(opcode: str, shape, operand_count: int) -> bool | None:
    """Whether a start of `NATIVE_OR_WRAPPED` is the async wrapper, from its result shape:
    the wrapper's is `((operands...), result, context...)`, element 0 the tuple of its
    operands' shapes, even of one. The native ops' element 0 is the operand itself (one
    operand), or the result is an array or a tuple of arrays (all-reduce-start). None where
    the two are spelled alike: a native all-gather-start or collective-permute-start of
    several operands holds them as a tuple at element 0 too."""
    if not shape.is_tuple or not shape.tuple_shapes:
        return False
    head = shape.tuple_shapes[0]
    if not head.is_tuple:
        return False
    if opcode == "all-reduce-start" or operand_count == 1:
        return True
    return None


@dataclass(frozen=True, slots=True)
class CustomCallTarget:
    """Facts about the custom-calls of one `custom_call_target`, or of a family of targets
    that all hold `name` (every cuBLAS target holds `__cublas`)."""

    name: str
    family: bool = False
    """`name` is a part every target of the family holds, not a whole target."""
    moves_data: bool = False
    """It only moves data (`OpInfo.moves_data`)."""
    view_of_operands: bool = False
    """Its result is no buffer of its own but a view of its operands' buffers, which TPU's
    memory-space assignment lays end to end."""
    marks_gpu: bool = False
    """Only a GPU backend emits it."""
    workspace_output: tuple[int, ...] | None = None
    """The output index that is its scratch workspace, never written over an operand (XLA's
    GPU AliasInfo)."""


CUSTOM_CALL_TARGETS = (
    # TPU's concatenation of the slices its memory-space assignment fetches back (in every TPU
    # dump, fed by `slice-done`s): at the offset of its first operand's buffer.
    CustomCallTarget("ConcatBitcast", moves_data=True, view_of_operands=True),
    CustomCallTarget("__cublas", family=True, marks_gpu=True),
    CustomCallTarget("__cublas$lt$matmul", family=True, workspace_output=(1,)),
)
"""The custom-call targets hloscope knows facts about; any other is opaque."""

_NO_TARGET = CustomCallTarget("")


@functools.lru_cache(maxsize=1024)
def custom_call(target: str) -> CustomCallTarget:
    """The facts about custom-calls of `target` (unquoted): its own entry's, or those of every
    family it belongs to, together."""
    found = [t for t in CUSTOM_CALL_TARGETS if (t.name in target if t.family else t.name == target)]
    if not found:
        return _NO_TARGET
    if len(found) == 1:
        return found[0]
    workspaces = [t.workspace_output for t in found if t.workspace_output is not None]
    return CustomCallTarget(target, moves_data=any(t.moves_data for t in found),
                            view_of_operands=any(t.view_of_operands for t in found),
                            marks_gpu=any(t.marks_gpu for t in found),
                            workspace_output=workspaces[0] if workspaces else None)


def custom_call_names(**facts) -> tuple[str, ...]:
    """The names of `CUSTOM_CALL_TARGETS` with every given fact (`custom_call_names(marks_gpu=True)`)."""
    return tuple(t.name for t in CUSTOM_CALL_TARGETS if all(getattr(t, k) == v for k, v in facts.items()))


def moves_data(opcode: str, custom_call_target: str | None = None) -> bool:
    """Whether an op of this opcode (a custom-call: of this target) only moves data."""
    if opcode == "custom-call":
        return custom_call(custom_call_target).moves_data if custom_call_target is not None else False
    return info(opcode).moves_data


@dataclass(frozen=True, slots=True)
class FusionKind:
    """Facts about one fusion kind (`kind=kLoop`)."""

    name: str
    loop_or_input: bool = False
    """A loop fusion (elementwise) or an input fusion (a reduction emitter): it computes
    element by element or reduces, so an operand it reads element by element may give its
    buffer to the output (XLA's generic CanShareOperandBufferWithUser allows these two)."""
    tpu_shares_elementwise_operands: bool = False
    """TPU lets its output be written over an operand every fused user reads element by
    element: loop and input fusions, and output fusions too (its dumps:
    `convolution_add_fusion.1 = fusion(fusion.483, ...), kind=kOutput`, whose ROOT converts
    the sum of its converted parameter 0 and a convolution, takes fusion.483's offset as that
    dies, as do the 3 more such fusions of a pure-DP step at batch 512)."""


FUSION_KINDS = {k.name: k for k in (
    FusionKind("kLoop", loop_or_input=True, tpu_shares_elementwise_operands=True),
    FusionKind("kInput", loop_or_input=True, tpu_shares_elementwise_operands=True),
    FusionKind("kOutput", tpu_shares_elementwise_operands=True),
    FusionKind("kCustom"),
)}
"""XLA's fusion kinds, by the name the text writes."""


def fusion_kinds(**facts) -> tuple[str, ...]:
    """The names of `FUSION_KINDS` with every given fact (`fusion_kinds(loop_or_input=True)`)."""
    return tuple(k.name for k in FUSION_KINDS.values() if all(getattr(k, f) == v for f, v in facts.items()))


def all_known() -> list[str]:
    """Every opcode spelling in the table (sugar forms excluded)."""
    return sorted(_TABLE)


def spellings(**facts) -> frozenset[str]:
    """The table's spellings (sugar excluded) whose OpInfo has every given fact
    (`spellings(calls_kind="fused")`): a set an instruction's opcode is looked up in, where
    asking `info()` of each of a module's instructions would cost more."""
    return frozenset(name for name, op in _TABLE.items()
                     if all(getattr(op, key) == value for key, value in facts.items()))
