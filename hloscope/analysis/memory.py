"""Memory of a scheduled module: XLA's `memory_analysis()` figures, the peak and what is live.

`analyze_memory(module)` runs dataflow (values, buffers), liveness (live ranges over the
flattened schedule), buffer assignment and XLA's heap simulation of the temp buffers, each
as the module's backend (hloscope.analysis.backends) has it run.
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..encode import Encoded, as_json, by_key
from ..errors import NotScheduledError
from ..ir.module import Instruction
from . import backends
from .backends.base import Backend, round_up
from .backends.cpu import Cpu
from .callgraph import callees_first
from .dataflow import Dataflow, Value, analyze_dataflow, post_order_ranks
from .facts import PLAIN, Facts
from .heap.algorithm import HeapAlgorithm
from .heap.best_fit import BEST_OF_TWO
from .heap.simulator import Heap, simulate_heap
from .liveness import LiveRanges, compute_live_ranges
from .sharing import can_share_operand_buffer, may_share_any_operand_buffer

HOST_MEMORY_SPACE = 5
"""`S(5)`: XLA's memory space for host memory (reported as `host_*` by `memory_analysis()`)."""


@dataclass(frozen=True)
class LiveBuffer(Encoded):
    """A temp value live at the peak."""

    instruction: str
    """Name of the instruction that defines it (with `{index}` for a tuple element)."""
    bytes: int
    shape: str
    op_name: str | None
    source: str | None


@dataclass(frozen=True)
class MemoryAnalysis(Encoded):
    """Memory figures of one module, in bytes.

    `temp_bytes` estimates XLA's `temp_size_in_bytes` (the packed temp allocation of the
    default memory space); `argument_bytes`, `output_bytes`, `alias_bytes` are XLA's figures of
    the same names; `total_bytes` = arguments + outputs − aliased + temp, what the device holds
    for the step; `peak_bytes` is XLA's `peak_memory_in_bytes` by XLA's definition (the largest
    buffer of every argument, constant and output allocation, plus the most heap bytes live at
    one step of any memory space, no packing; CPU records no heap trace, so there it is the
    first part only). `peak_at` is the schedule step where the most default-space temp bytes
    are live. `notes` says where a figure is only what the text determines (TPU's temp).
    """

    name: str
    temp_bytes: int
    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    peak_bytes: int
    peak_at: dict[str, Any]
    live_at_peak: tuple[LiveBuffer, ...]
    temp_max_live_bytes: int = field(default=0, metadata=as_json(omit=True))
    """Temp bytes live at the peak step (no fragmentation); `temp_bytes` ≥ this."""
    temp_allocation_bytes: int = field(default=0, metadata=as_json(omit=True))
    """The packed temp allocation of the default memory space (the dump's
    `preallocated-temp`): `temp_bytes` on CPU and GPU; TPU's `temp_bytes` is what libtpu
    makes of it (`backends.tpu.reported_temp`)."""
    timeline: tuple[int, ...] = field(default=(), repr=False, metadata=as_json(omit=True))
    """Temp bytes live at each step of the flattened schedule."""
    steps: tuple[str, ...] = field(default=(), repr=False, metadata=as_json(omit=True))
    """What runs at each step of the flattened schedule."""
    platform: str = field(default=Cpu.name, metadata=as_json(omit=True))
    """The backend (`Backend.name`): `cpu`, `gpu`, `tpu`, or the name the user gave."""
    other_memory_space_bytes: dict[int, int] = field(default_factory=dict,
                                                     metadata=as_json(key="memory_spaces", value=by_key))
    """Packed temp bytes of memory spaces other than 0, by space (`S(n)` in a layout): TPU
    keeps temporaries in S(1); S(5) is host memory. Each space is its own heap, packed apart."""
    total_bytes: int = field(default=0, metadata=as_json(after="alias_bytes"))
    """Arguments + outputs − aliased + temp: what the device holds for the step."""
    static_bytes: int = field(default=0, metadata=as_json(omit=True))
    """`peak_bytes`' first part: the largest buffer of every argument, constant and output
    allocation."""
    peak_covers_temp: bool = field(default=True, metadata=as_json(omit=True))
    """Whether XLA's `peak_memory_in_bytes` counts the heap (temp) at all: not on CPU, where XLA
    records no heap trace and the figure is `static_bytes` alone (below temp, by definition)."""
    notes: tuple[str, ...] = ()
    """What a figure leaves out, in a sentence each (TPU: what libtpu adds to temp)."""
    xla: dict[str, int] | None = field(default=None, metadata=as_json(omit_none=True))
    """XLA's own `memory_analysis()` figures, when the input came with them (`with_xla`)."""

    @property
    def host_temp_bytes(self) -> int:
        """Packed temp bytes in host memory (`S(5)`), XLA's `host_temp_size_in_bytes`."""
        return self.other_memory_space_bytes.get(HOST_MEMORY_SPACE, 0)


XLA_FIGURES = {"temp_bytes": "temp_size_in_bytes", "argument_bytes": "argument_size_in_bytes",
               "output_bytes": "output_size_in_bytes", "alias_bytes": "alias_size_in_bytes",
               "peak_bytes": "peak_memory_in_bytes"}
"""Each figure of `MemoryAnalysis` and the `memory_analysis()` field XLA gives it under."""


def with_xla(analysis: MemoryAnalysis, stats) -> MemoryAnalysis:
    """`analysis` carrying XLA's own figures beside its own, from `compiled.memory_analysis()`
    (an object with the `*_in_bytes` attributes) or a dict of them (a fixture's
    `memory_analysis.json`); the text report shows them side by side."""
    def get(name):
        value = stats.get(name) if isinstance(stats, dict) else getattr(stats, name, None)
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

    xla = {ours: value for ours, field_name in XLA_FIGURES.items() if (value := get(field_name)) is not None}
    if all(k in xla for k in ("temp_bytes", "argument_bytes", "output_bytes", "alias_bytes")):
        xla["total_bytes"] = xla["argument_bytes"] + xla["output_bytes"] - xla["alias_bytes"] + xla["temp_bytes"]
    return dataclasses.replace(analysis, xla=xla)


class _Allocation:
    """One allocation of XLA's buffer assignment outside the heap: an argument's, a
    constant's, an output's. Its values' live ranges, `(start, end, id, value)` in start
    order: values of one allocation never overlap but at one step where one hands over to
    the next, so their ends come in the same order, and the ones meeting an interval are
    found by a bisection and a short walk back."""

    __slots__ = ("bit", "ends_ordered", "kind", "live_out", "ranges", "reusable", "size", "space", "span",
                 "starts", "values")

    def __init__(self, size: int, space: int, kind: str, live_out: bool, reusable: bool):
        self.size, self.space, self.kind, self.live_out, self.reusable = size, space, kind, live_out, reusable
        self.values: list[Value] = []
        self.ranges: list[tuple[int, int, int, Value]] = []
        self.starts: list[int] = []
        self.span = (1 << 62, -1)
        self.bit = 0
        """`1 << i` for the i-th reusable allocation (its bit in `_BusyIndex`), else 0."""
        self.ends_ordered = True
        """Whether the ends do come in start order, so that `meeting` sees every value (the
        values of one buffer, put in together, may nest)."""

    def add(self, vs: list[Value], ranges) -> None:
        for v in vs:
            self.values.append(v)
            r = ranges.get(v)
            if r is None:
                continue
            k = bisect.bisect_right(self.ranges, (r[0], r[1], v.id))
            if (k and self.ranges[k - 1][1] > r[1]) or (k < len(self.ranges) and self.ranges[k][1] < r[1]):
                self.ends_ordered = False
            self.ranges.insert(k, (r[0], r[1], v.id, v))
            self.starts.insert(k, r[0])
            self.span = (min(self.span[0], r[0]), max(self.span[1], r[1]))

    def meeting(self, lo: int, hi: int) -> list[tuple[int, int, int, Value]]:
        """The values live at some step of `[lo, hi]`."""
        out = []
        k = bisect.bisect_right(self.starts, hi) - 1
        ranges = self.ranges
        while k >= 0 and ranges[k][1] >= lo:
            out.append(ranges[k])
            k -= 1
        return out


class _BusyIndex:
    """The reusable allocations holding a value live over a step, as the bits of one int
    (`_Allocation.bit`), for all of them at once: XLA tries every donated argument's and
    output's allocation for every temp buffer, millions of `fits` on a real-scale step,
    nearly all refused because the allocation is busy then; asked here first, only the
    allocations free at both ends of the buffer's live range are tried one by one.

    Steps are doubled: a value live over `[s, e]` marks `2s+1 .. 2e-1`, so a range asked at
    its ends (`2s+1` and `2e-1`, a one-step range at `2s`) finds the values it overlaps at
    more than the step where one ends and the other begins, which `fits` always refuses; a
    value within the range, or live at one step, is left for `fits` to find. A segment tree
    of bit masks: marking a range ORs its bit into O(log n) nodes, a step ORs its path up."""

    __slots__ = ("cover", "n")

    def __init__(self, last_step: int):
        # A power of two: the paths up from two steps join, and are walked once from there.
        self.n = 1 << (2 * last_step + 2).bit_length()
        self.cover = [0] * (2 * self.n)

    def mark(self, bit: int, s: int, e: int) -> None:
        cover = self.cover
        lo, hi = self.n + 2 * s + 1, self.n + 2 * e
        while lo < hi:
            if lo & 1:
                cover[lo] |= bit
                lo += 1
            if hi & 1:
                hi -= 1
                cover[hi] |= bit
            lo >>= 1
            hi >>= 1

    def at_ends(self, s: int, e: int) -> int:
        """The bits busy at the ends of `[s, e]`."""
        cover = self.cover
        x, y = (self.n + 2 * s + 1, self.n + 2 * e - 1) if s < e else (self.n + 2 * s,) * 2
        bits = 0
        while x != y:
            bits |= cover[x] | cover[y]
            x >>= 1
            y >>= 1
        while x:
            bits |= cover[x]
            x >>= 1
        return bits


class _Assigner:
    """XLA's BufferAssigner::AssignBuffersForComputations over the module's buffers: which go
    to an allocation of their own or into an argument's or output's, and which wait for the
    heap (the temp buffers).

    Buffers are taken largest first (then outputs first, then by XLA's post order). An
    argument or a constant gets an allocation of its own; a plain array value first
    tries its operands' allocations, then every donated argument's and output's allocation
    from the last made (the smallest) on; a buffer that finds none waits for the heap,
    unless it is an output, which gets a new allocation. An allocation takes a buffer that
    fits, of its memory space, when no two of their values are live at once (a value may
    begin at the very step another ends when it may be written over it, as in the heap),
    and an output only into an allocation of exactly its size::

        donated p [pppppp]..........[oooo]  (p, then the new value o returned in its place)
        temp x            [xxxxxxx]         → into p's allocation: its time is free there

    Which of the donated and output allocations are worth a `fits` is asked of a
    `_BusyIndex` first, which only leaves out the ones `fits` refuses (see there).
    """

    def __init__(self, df: Dataflow, live: LiveRanges, may_share, order: str = "size",
                 must_not_live_out=None):
        self.df, self.ranges, self.may_share = df, live.ranges, may_share
        self.must_not_live_out = must_not_live_out
        """The backend's predicate on values that never share an allocation that may live
        out (`Backend.must_not_live_out`), or None."""
        self.order = order
        """"size": XLA's default, largest first, reusing any free donated argument's or
        output's allocation; "start": FAST_MERGE's, by live range start, reusing only an
        operand's allocation (TPU's libtpu 0.0.50, `backends.tpu.TpuRules`)."""
        self.time = live.schedule.time
        self.span = live.schedule.span
        self.allocations: list[_Allocation] = []
        self.of_buffer: dict[int, _Allocation] = {}
        self.reusable_order: list[_Allocation] = []
        self.temp: list[int] = []
        self.busy = _BusyIndex(max((r[1] for r in self.ranges.values()), default=0))
        self.in_space: dict[int, int] = {}
        """The bits of the reusable allocations of each memory space."""
        self.of_size: dict[tuple[int, int], int] = {}
        """... and of each space and size, the only ones an output may go to."""
        self.unindexed = 0
        """Bits of the allocations `meeting` may not see whole, which `_BusyIndex` may thus
        refuse where `fits` would not: always tried."""

    def run(self) -> None:
        df = self.df
        module = df.module
        aliased = {(a.parameter, a.parameter_index) for a in module.attributes.decoded("input_output_alias", ())}
        late = 1 << 40
        sizes = [max(v.size for v in vs) for vs in df.buffers]
        if self.order == "start":
            # XLA's kLiveRangeStart: the buffer's earliest value start, then larger, then
            # live-out first, then the buffer's id.
            ranges = self.ranges
            order = sorted(range(len(df.buffers)), key=lambda b: (
                min((ranges[v][0] for v in df.buffers[b] if v in ranges), default=late), -sizes[b],
                b not in df.live_out, b))
        else:
            post = _post_order_positions(df)
            order = sorted(range(len(df.buffers)), key=lambda b: (
                -sizes[b], b not in df.live_out,
                min(post.get(v.instruction, late) for v in df.buffers[b]), df.buffers[b][0].id))
        for b in order:
            self.assign(b, sizes[b], aliased)

    def assign(self, b: int, size: int, aliased) -> None:
        df = self.df
        vs = df.buffers[b]
        space = vs[0].shape.memory_space
        live_out = b in df.live_out
        for v in vs:
            if v.instruction.opcode == "constant":
                self.new(b, size, space, "constant", live_out, False)
                return
        entry = df.module.entry
        for v in vs:
            inst = v.instruction
            if inst.opcode == "parameter" and inst.computation is entry:
                has_alias = (inst.parameter_number, v.index) in aliased
                self.new(b, size, space, "parameter", live_out, has_alias)
                return
        if any(v.shape.is_tuple for v in vs):
            # A tuple table gets an allocation of its own (XLA AssignSpecialHloBuffer,
            # `set_is_tuple`), without heap events, placed beside the heap (`Backend.combine_temp`).
            if live_out:
                self.new(b, size, space, "output", True, False)
            else:
                self.new(b, size, space, "tuple", False, False)
            return
        for v in vs:
            if not v.index:
                for operand in v.instruction.operands:
                    for ov in _top_values(df, operand):
                        a = self.of_buffer.get(ov.buffer)
                        if a is not None and self.fits(a, b, size, space, live_out):
                            self.put(a, b)
                            return
        # The reusable allocations from the last made on, as XLA tries them. FAST_MERGE's
        # free pool holds the allocations whose buffers all ended before this one starts:
        # never a donated argument's (not in its pool) nor an output's (live to the end).
        tries = self.of_size.get((space, size), 0) if live_out else self.in_space.get(space, 0)
        if self.order == "start":
            tries = 0
        if tries:
            tries &= ~self.busy_over(vs) | self.unindexed
        while tries:
            i = tries.bit_length() - 1
            tries ^= 1 << i
            a = self.reusable_order[i]
            if self.fits(a, b, size, space, live_out):
                self.put(a, b)
                return
        if not live_out:
            self.temp.append(b)
            return
        self.new(b, size, space, "output", True, True)

    def busy_over(self, vs: list[Value]) -> int:
        """The reusable allocations `fits` refuses for these values for being busy then."""
        busy, ranges = self.busy, self.ranges
        bits = 0
        for v in vs:
            r = ranges.get(v)
            if r is None:
                return -1
            bits |= busy.at_ends(r[0], r[1])
        return bits

    def new(self, b: int, size: int, space: int, kind: str, live_out: bool, reusable: bool) -> _Allocation:
        a = _Allocation(size, space, kind, live_out, reusable)
        self.allocations.append(a)
        if reusable:
            a.bit = 1 << len(self.reusable_order)
            self.reusable_order.append(a)
            self.in_space[space] = self.in_space.get(space, 0) | a.bit
            self.of_size[space, size] = self.of_size.get((space, size), 0) | a.bit
        self.put(a, b)
        return a

    def put(self, a: _Allocation, b: int) -> None:
        a.add(self.df.buffers[b], self.ranges)
        if b in self.df.live_out:
            a.live_out = True
        self.of_buffer[b] = a
        if a.bit:
            for v in self.df.buffers[b]:
                r = self.ranges.get(v)
                if r is not None:
                    self.busy.mark(a.bit, r[0], r[1])
            if not a.ends_ordered:
                self.unindexed |= a.bit

    def fits(self, a: _Allocation, b: int, size: int, space: int, live_out: bool) -> bool:
        """XLA MaybeAssignBuffer."""
        if not a.reusable or a.space != space or size > a.size or (live_out and a.size != size):
            return False
        if self.must_not_live_out is not None and (a.live_out or live_out) and any(
                map(self.must_not_live_out, (*self.df.buffers[b], *(a.values if live_out else ())))):
            return False
        ranges = self.ranges
        for v in self.df.buffers[b]:
            r = ranges.get(v)
            if r is None:
                return False
            if r[0] <= a.span[1] and a.span[0] <= r[1]:
                # Something live at once is allowed only where one value ends at the very
                # step the other begins and may be written over it.
                for s, e, _, w in a.meeting(r[0], r[1]):
                    if not self.touch_shares(v, r, w, (s, e)):
                        return False
            if v.instruction.opcode == "copy":
                for w in a.values:
                    if any(v.instruction in p.users for p, _ in w.positions):
                        return False
        return True

    def touch_shares(self, v: Value, r, w: Value, rw) -> bool:
        """XLA LiveRangeInterferes' exception: `v` and `w` overlap only at one end, and the
        later may be written over the earlier at its last position."""
        if r[1] == rw[0]:
            operand, user = v, w
        elif rw[1] == r[0]:
            operand, user = w, v
        else:
            return False
        end = _end_position(operand, self.time, self.span)
        if end is None or user.instruction.opcode == "copy" or end[0] not in user.instruction.operands:
            return False
        return self.may_share_at(end, user)

    def may_share_at(self, end, user: Value) -> bool:
        inst, index = end
        ov = self.df.value_sets.get(inst, {}).get(index)
        if ov is None:
            return False
        # Asked as XLA asks it: about the instruction at that position, which may only
        # forward the value (an all-reduce-done, a bitcast).
        return self.may_share(ov, user, end)


def _top_values(df: Dataflow, operand: Instruction) -> list[Value]:
    """The values at an operand's top-level output (XLA GetAllSlices(operand, {}))."""
    v = df.value_sets.get(operand, {}).get(())
    return [v] if v is not None else []


def _end_position(v: Value, time, span) -> tuple | None:
    """The position at which `v`'s live range ends, its latest on the schedule."""
    best, best_t = None, -1
    for inst, idx in v.positions:
        t = time.get(inst)
        if t is None:
            continue
        if inst.is_root:
            t = span.get(inst.computation, (0, t))[1]
        if t > best_t:
            best, best_t = (inst, idx), t
    return best


def _post_order_positions(df: Dataflow) -> dict[Instruction, int]:
    """XLA's post order of instructions for sorting buffers: computations callers first."""
    return post_order_ranks(reversed(callees_first(df.module)), df.analyzed)


class _Sharing:
    """Which values may take an operand's buffer, for one heap replay: the answers per user
    instruction are kept while it runs (see `can_share_operand_buffer`)."""

    __slots__ = ("backend", "cache", "dataflow", "facts")

    def __init__(self, dataflow: Dataflow, facts: Facts, backend: Backend):
        self.dataflow, self.facts, self.cache, self.backend = dataflow, facts, {}, backend

    def may_share(self, operand_value: Value, user_value: Value, at: tuple | None = None) -> bool:
        return can_share_operand_buffer(operand_value, user_value, self.cache, self.dataflow.in_place, self.facts,
                                        self.backend, at)

    def may_share_any(self, user: Instruction) -> bool:
        return may_share_any_operand_buffer(user, self.cache, self.dataflow.in_place, self.backend)


@dataclass(frozen=True)
class MemoryModel:
    """What the memory analysis builds on its way to the figures, for the analyses that ask
    more of it (held gathers, roles): the values and buffers, their live ranges over the
    flattened schedule, and the packed heap of each memory space."""

    module: Any
    backend: Backend
    """The target's rules the model was built by (hloscope.analysis.backends)."""
    dataflow: Dataflow
    live: LiveRanges
    heaps: dict[int, Heap]
    """The temp heap of each memory space (0 is the default, HBM)."""
    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    static_bytes: int = 0
    """The largest buffer of every argument, constant and output allocation (the part of
    XLA's `peak_memory_in_bytes` that is not heap)."""
    tables: dict[int, list[int]] = field(default_factory=dict)
    """The sizes of the tuple tables' allocations of each memory space, combined with its heap
    into `heaps[space].size`."""
    notes: tuple[str, ...] = ()
    """What the model assumed where the text does not say (TPU: which libtpu's rules)."""
    trace_peaks: dict[int, int] = field(default_factory=dict)
    """The most bytes a memory space's heap trace holds at once, where XLA's trace is not
    the heap's buffers over their live ranges (`Backend.trace_peaks`: TPU's VMEM)."""
    facts: Facts = field(default=PLAIN, repr=False, compare=False)
    """What the model was built asking (hloscope.analysis.facts); the analyses that ask
    more of the model ask it too."""

    @property
    def platform(self) -> str:
        """The backend's name (`MemoryAnalysis.platform`)."""
        return self.backend.name

    @property
    def heap_peak_bytes(self) -> int:
        """The most bytes live at one step in any memory space's heap, no packing: the heap
        part of XLA's `peak_memory_in_bytes` (0 where XLA records no heap trace: CPU)."""
        if not self.backend.records_heap_trace:
            return 0
        return max((self.trace_peaks.get(s, h.max_live) for s, h in self.heaps.items()), default=0)

    @property
    def peak_bytes(self) -> int:
        """XLA's `peak_memory_in_bytes` (ComputePeakMemorySizes): `static_bytes` plus
        `heap_peak_bytes`."""
        return self.static_bytes + self.heap_peak_bytes

    @property
    def peak_step(self) -> int:
        """The step of the flattened schedule where the most default-space temp bytes are live."""
        heap = self.heaps.get(0)
        return heap.max_live_at if heap is not None else 0

    def live_at(self, step: int) -> list[Value]:
        """The default space's temp values live at `step`."""
        heap = self.heaps.get(0)
        if heap is None:
            return []
        ranges = self.live.ranges
        return [v for v in heap.offsets if ranges[v][0] <= step <= ranges[v][1]]


def build_memory_model(module, platform: str | None = None, alignment: int | None = None,
                       facts: Facts = PLAIN) -> MemoryModel:
    """Values, live ranges and packed heaps of a scheduled module (see `MemoryModel`).

    Raises NotScheduledError for a module without `is_scheduled=true`: liveness needs the
    optimized, scheduled HLO (`compiled.as_text()` or a `*after_optimizations*.txt` dump).
    """
    if not module.is_scheduled:
        raise NotScheduledError(
            f"module {module.name!r} is not scheduled: memory analysis needs the optimized, scheduled HLO "
            "(`jax.jit(f).lower(...).compile().as_text()` or an `*after_optimizations.txt` dump), "
            "whose header says `is_scheduled=true`"
        )
    return _build_with(module, backends.for_module(module, platform, facts), alignment, facts)


def _alignment(backend: Backend, space: int, alignment: int | None) -> int:
    return alignment or backend.alignment(space)


def _tuple_tables(allocations, df: Dataflow, live: LiveRanges) -> dict[int, list[int]]:
    """The sizes of the temp tuple tables' allocations, by memory space (XLA's
    AssignSpecialHloBuffer gives each tuple-shaped buffer an allocation of its own, never
    the heap's: in every CPU, GPU and TPU dump). Async printing sugar hides a wrapped
    computation whose ROOT tuple (a variadic reduce-scatter's or all-gather's) is one more,
    as large as the start's result `{1}`."""
    sizes: dict[int, list[int]] = {}
    for a in allocations:
        if a.kind == "tuple":
            sizes.setdefault(a.space, []).append(a.size)
    time = live.schedule.time
    for start, wrapped in df.async_wrapped.items():
        out = df.value_sets.get(start, {}).get((1,))
        if wrapped is None and _is_sugar(df, start) and start in time and out is not None and out.shape.is_tuple:
            sizes.setdefault(out.shape.memory_space, []).append(out.size)
    return sizes


def _is_sugar(df: Dataflow, start: Instruction) -> bool:
    """An async start printed as sugar, its wrapped computation not in the text."""
    return (df.wrappers.get(start) or start.info).sugar


def _undecided_note(df: Dataflow, backend: Backend) -> str | None:
    """What the starts whose text does not say native op or async wrapper (read as native,
    `Dataflow.undecided`) would add as wrappers, above the heap: the hidden wrapped ROOT's
    tuple table each (`_tuple_tables`), and the table of the operands `{0}` where the native
    op has none (a collective-permute-start's; an async-start defines it)."""
    if not df.undecided:
        return None
    sizes = []
    for start in df.undecided:
        out = df.value_sets.get(start, {}).get((1,))
        if out is not None and out.shape.is_tuple:
            sizes.append(out.size)
        operands = start.shape.at((0,))
        if operands.is_tuple and (0,) not in df.value_sets.get(start, {}):
            # A table of a pointer per operand: as large as the result's, one per operand too.
            same = out is not None and out.shape.is_tuple and len(out.shape.tuple_shapes) == len(operands.tuple_shapes)
            sizes.append(out.size if same else operands.padded_byte_size)
    alignment = _alignment(backend, 0, None)
    most = sum(round_up(size, alignment) for size in sizes)
    kinds = "/".join(sorted({start.opcode for start in df.undecided}))
    return (f"{len(df.undecided)} {kinds} of several operands read as XLA's native op: its text does not "
            "tell it from an async-start wrapping the collective, which XLA prints alike (GPU compilations "
            "since jax 0.11 wrap every collective), and no other start of the module tells; as wrappers "
            f"they would hold {len(sizes)} tuple table{'' if len(sizes) == 1 else 's'} more in all, "
            f"up to {most} bytes more temp")


def _build_with(module, backend: Backend, alignment: int | None, facts: Facts) -> MemoryModel:
    df = analyze_dataflow(module, facts)
    if backend.byte_size is not None:
        for v in df.values:
            v.size = backend.byte_size(v.shape)
    live = compute_live_ranges(df)

    entry = module.entry
    argument = sum(v.size for p in entry.parameters for v in df.value_sets[p].values()
                   if v.instruction is p)
    params = {p.parameter_number: p for p in entry.parameters}
    alias = 0
    for a in module.attributes.decoded("input_output_alias", ()):
        p = params.get(a.parameter)
        v = df.value_sets[p].get(a.parameter_index) if p is not None and p in df.value_sets else None
        if v is not None:
            alias += v.size
    output = sum(max(v.size for v in df.buffers[b]) for b in df.live_out)

    packed, notes = backend.assign(lambda order, packing: _assign_and_pack(
        df, live, facts, backend, alignment, order, packing))
    return MemoryModel(module, backend, df, live, packed.heaps, argument, output, alias, packed.static,
                       packed.tables, notes, backend.trace_peaks(packed.heaps, live, df), facts)


@dataclass(frozen=True)
class _Packed:
    heaps: dict[int, Heap]
    static: int
    tables: dict[int, list[int]]
    hbm_bytes: int
    """Every allocation of memory space 0, the combined temp allocation included: what
    libtpu compares with the device's memory (`backends.tpu.falls_back`)."""


def _assign_and_pack(df: Dataflow, live: LiveRanges, facts: Facts, backend: Backend, alignment: int | None,
                     order: str, packing: HeapAlgorithm) -> _Packed:
    """Buffer assignment in `order` (`_Assigner`), then each memory space's temp heap packed:
    the default space's by `packing` (its heap trace replayed where the backend's reported
    temp reads it), the others by XLA's best of two orders (`BEST_OF_TWO`)."""
    assigner = _Assigner(df, live, _Sharing(df, facts, backend).may_share, order, backend.must_not_live_out)
    assigner.run()
    # Peak's static part: every argument, constant and output allocation, as large as its
    # largest buffer (XLA ComputePeakMemorySizes).
    static = sum(a.size for a in assigner.allocations if a.kind in ("parameter", "constant") or a.live_out)
    fixed = sum(a.size for a in assigner.allocations if a.space == 0 and a.kind != "tuple")
    by_space: dict[int, list[Value]] = {}
    for b in assigner.temp:
        for v in df.buffers[b]:
            by_space.setdefault(v.shape.memory_space, []).append(v)
    tables = _tuple_tables(assigner.allocations, df, live)
    del assigner
    heaps: dict[int, Heap] = {}
    for space, vs in by_space.items():
        # Passed on, not kept here: the heap lets its answers go once the replay is done,
        # before packing, the analysis' peak.
        sharing = _Sharing(df, facts, backend)
        heaps[space] = simulate_heap(df, live, vs, _alignment(backend, space, alignment),
                                     packing if space == 0 else BEST_OF_TWO, sharing.may_share,
                                     sharing.may_share_any, peak_buffers=backend.reads_peak_buffers and space == 0)
        del sharing
    for space, sizes in tables.items():
        heap = heaps.get(space) or Heap(0, 0, 0, [0] * (live.schedule.end + 1), {}, "spatial")
        heaps[space] = dataclasses.replace(
            heap, size=backend.combine_temp(heap.size, sizes, _alignment(backend, space, alignment)))
    hbm = fixed + (heaps[0].size if 0 in heaps else 0)
    return _Packed(heaps, static, tables, hbm)


def analyze_memory(module, platform: str | None = None, alignment: int | None = None,
                   facts: Facts = PLAIN, model: MemoryModel | None = None) -> MemoryAnalysis:
    """XLA's memory figures for a scheduled module (bytes); see `MemoryAnalysis`. `model`:
    the module's `build_memory_model`, when the caller has it already."""
    if model is None:
        model = build_memory_model(module, platform, alignment, facts)
    live, heaps = model.live, model.heaps
    argument, output, alias = model.argument_bytes, model.output_bytes, model.alias_bytes
    heap = heaps.get(0)
    steps = live.schedule.steps
    if heap is None:
        temp, max_live, at, timeline = 0, 0, 0, [0] * (len(steps) + 1)
    else:
        temp, max_live, at, timeline = heap.size, heap.max_live, heap.max_live_at, heap.timeline
    at_live = model.live_at(at)
    # One entry per buffer slot: values of one group at the same step are the same bytes.
    seen_slots: set[int] = set()
    rows = []
    for v in sorted(at_live, key=lambda v: (-v.size, v.id)):
        slot = heap.offsets[v] if heap else 0
        if slot in seen_slots:
            continue
        seen_slots.add(slot)
        inst = v.instruction
        name = inst.name if not v.index else f"{inst.name}{{{','.join(map(str, v.index))}}}"
        rows.append(LiveBuffer(name, v.size, v.shape.text, inst.op_name, inst.source))
    peak_name = steps[at] if at < len(steps) else (steps[-1] if steps else "")
    notes: list[str] = list(model.notes)
    undecided = _undecided_note(model.dataflow, model.backend)
    if undecided is not None:
        notes.append(undecided)
    if heap is not None:
        temp, note = model.backend.reported_temp(heap, model.tables.get(0, []))
        if note is not None:
            notes.append(note)
    return MemoryAnalysis(
        name=module.name,
        temp_bytes=temp,
        argument_bytes=argument,
        output_bytes=output,
        alias_bytes=alias,
        peak_bytes=model.peak_bytes,
        peak_at={"index": at, "instruction": peak_name},
        live_at_peak=tuple(rows),
        temp_max_live_bytes=max_live,
        temp_allocation_bytes=heap.size if heap is not None else 0,
        timeline=tuple(timeline),
        steps=tuple(steps),
        platform=model.platform,
        other_memory_space_bytes={s: h.size for s, h in heaps.items() if s != 0},
        total_bytes=argument + output - alias + temp,
        static_bytes=model.static_bytes,
        peak_covers_temp=model.backend.records_heap_trace,
        notes=tuple(notes),
    )
