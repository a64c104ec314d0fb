"""Memory of a scheduled module: XLA's `memory_analysis()` figures, the peak and what is live.

`analyze_memory(module)` runs dataflow (values, buffers), liveness (live ranges over the
flattened schedule) and XLA's heap simulation and best-fit packing of the temp buffers.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from ..errors import NotScheduledError
from ..executor import INLINE, Executor
from ..ir.module import Instruction
from .callgraph import scheduled_computations, scheduled_instructions
from .dataflow import (
    FUSED_FACTS_MIN_COMPUTATIONS,
    Dataflow,
    FusedFacts,
    Value,
    analyze_dataflow,
    can_share_operand_buffer,
    may_share_any_operand_buffer,
)
from .liveness import (
    Heap,
    LiveRanges,
    compute_live_ranges,
    merge_intervals,
    simulate_heap,
)

ALIGNMENT = {"cpu": 64, "gpu": 256, "tpu": 512}
"""Byte alignment of buffers inside XLA's temp allocation, per backend (CPU: 64, as
cpu_function_runtime's MinAlign; GPU: 256, kXlaAllocatedBufferAlignBytes; both as seen in
the fixtures' buffer-assignment dumps)."""

HOST_MEMORY_SPACE = 5
"""`S(5)`: XLA's memory space for host memory (reported as `host_*` by `memory_analysis()`)."""


@dataclass(frozen=True)
class LiveBuffer:
    """A temp value live at the peak."""

    instruction: str
    """Name of the instruction that defines it (with `{index}` for a tuple element)."""
    bytes: int
    shape: str
    op_name: str | None
    source: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"instruction": self.instruction, "bytes": self.bytes, "shape": self.shape,
                "op_name": self.op_name, "source": self.source}


@dataclass(frozen=True)
class MemoryAnalysis:
    """Memory figures of one module, in bytes.

    `temp_bytes` estimates XLA's `temp_size_in_bytes` (the packed temp allocation);
    `argument_bytes`, `output_bytes`, `alias_bytes` are XLA's figures of the same names;
    `peak_bytes` is arguments + outputs − aliased + temp, the device memory the executable
    needs. `peak_at` is the schedule step where the most temp bytes are live.
    """

    name: str
    temp_bytes: int
    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    peak_bytes: int
    peak_at: dict[str, Any]
    live_at_peak: tuple[LiveBuffer, ...]
    temp_max_live_bytes: int = 0
    """Temp bytes live at the peak step (no fragmentation); `temp_bytes` ≥ this."""
    timeline: tuple[int, ...] = field(default=(), repr=False)
    """Temp bytes live at each step of the flattened schedule."""
    steps: tuple[str, ...] = field(default=(), repr=False)
    """What runs at each step of the flattened schedule."""
    platform: str = "cpu"
    other_memory_space_bytes: dict[int, int] = field(default_factory=dict)
    """Packed temp bytes of memory spaces other than 0, by space (`S(n)` in a layout): TPU
    keeps temporaries in S(1); S(5) is host memory. Each space is its own heap, packed apart."""

    @property
    def host_temp_bytes(self) -> int:
        """Packed temp bytes in host memory (`S(5)`), XLA's `host_temp_size_in_bytes`."""
        return self.other_memory_space_bytes.get(HOST_MEMORY_SPACE, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "temp_bytes": self.temp_bytes,
            "argument_bytes": self.argument_bytes,
            "output_bytes": self.output_bytes,
            "alias_bytes": self.alias_bytes,
            "peak_bytes": self.peak_bytes,
            "peak_at": dict(self.peak_at),
            "live_at_peak": [b.to_dict() for b in self.live_at_peak],
            # After the contract keys: packed temp bytes per memory space other than 0.
            "memory_spaces": {str(space): size for space, size in sorted(self.other_memory_space_bytes.items())},
        }


_GPU_MARKERS = ("operation_queue_id", "__triton", "__cublas")


def detect_platform(module) -> str:
    """`tpu`, `gpu` or `cpu`, from what each backend leaves in its optimized HLO: tiled
    layouts in the entry's shapes (TPU); a GPU backend config or cuBLAS call in the schedule."""
    for comp in scheduled_computations(module):  # the entry first
        # An unread body's text says, without reading it, that no GPU marker is there.
        maybe_gpu = comp.may_mention(_GPU_MARKERS)
        if comp is module.entry and any(":T(" in inst.shape.text for inst in comp.instructions):
            return "tpu"
        if maybe_gpu and any(_marks_gpu(inst) for inst in comp.instructions):
            return "gpu"
    return "cpu"


def _marks_gpu(inst: Instruction) -> bool:
    attributes = inst.attributes
    tail = getattr(attributes, "tail", "")
    if tail and "operation_queue_id" not in tail and "__triton" not in tail:
        # Still unsplit text that holds neither marker: no need to split it to know.
        raw = ""
    else:
        raw = attributes.raw.get("backend_config", "") if hasattr(attributes, "raw") else ""
    if "operation_queue_id" in raw or "fusion_backend_config" in raw and "__triton" in raw:
        return True
    return inst.opcode == "custom-call" and "__cublas" in inst.attributes.get("custom_call_target", "")


def _reuse_live_out_allocations(df: Dataflow, live: LiveRanges, temp_buffers: list[int]) -> set[int]:
    """Buffers XLA places into an output (or donated-argument) allocation instead of the heap.

    Before the heap simulation, buffer assignment offers each buffer, largest first, to the
    allocations made so far, smallest first; a writable one (a non-tuple output, or an entry
    parameter donated through `input_output_alias`) takes a buffer that fits and whose values
    are never live while its own are::

        param.3 (donated)  [ppppppppp]            .         out [o]
        temp x (fits)                  [xxxxx]    → x goes into param.3's allocation
    """
    ranges = live.ranges
    allocations = []
    for n, b in enumerate(sorted(df.live_out - df.constant_buffers,
                                 key=lambda b: (-max(v.size for v in df.buffers[b]), df.buffers[b][0].id))):
        vs = df.buffers[b]
        if any(v.shape.is_tuple for v in vs) or any(v not in ranges for v in vs):
            continue
        if b in df.entry_param_buffers and all(v.instruction.opcode == "parameter" for v in vs):
            continue  # a read-only argument returned as is
        allocations.append((max(v.size for v in vs), -n, [ranges[v] for v in vs], vs[0].shape.memory_space))
    taken: set[int] = set()
    if not allocations:
        return taken
    allocations.sort(key=lambda a: (a[0], a[1]))
    sizes = [a[0] for a in allocations]
    # A buffer with one live range conflicts with an allocation whose ranges merge into one
    # interval exactly when it overlaps that interval: such allocations ("simple") are found
    # by blocks of the per-space sequence keeping the smallest end and the largest start, so
    # the first one that fits is found without visiting each. The others ("complex": ranges
    # with holes, or those that took a buffer) are checked one by one, as are buffers with
    # several ranges.
    n_alloc = len(allocations)
    spans = [[min(s for s, _ in a[2]), max(e for _, e in a[2])] for a in allocations]
    none_start, none_end = -1, 1 << 62  # never "ends before" nor "starts after" anything
    simple_start = [none_start] * n_alloc
    simple_end = [none_end] * n_alloc
    complex_by_space: dict[int, list[int]] = {}
    members: dict[int, list[int]] = {}
    for k, (_, _, alloc_ranges, space) in enumerate(allocations):
        members.setdefault(space, []).append(k)
        if len(merge_intervals(alloc_ranges)) == 1:
            simple_start[k], simple_end[k] = spans[k]
        else:
            complex_by_space.setdefault(space, []).append(k)
    block = 32
    # Per space: its allocations in order, and per block of them (min end, max start).
    blocks: dict[int, tuple[list[int], list[int], list[int]]] = {}
    for space, ks in members.items():
        mins = [min(simple_end[k] for k in ks[i:i + block]) for i in range(0, len(ks), block)]
        maxs = [max(simple_start[k] for k in ks[i:i + block]) for i in range(0, len(ks), block)]
        blocks[space] = (ks, mins, maxs)

    def conflicts(alloc_ranges, mine, lo, hi) -> bool:
        if len(mine) == 1:
            for s, e in alloc_ranges:
                if s <= hi and lo <= e:
                    return True
            return False
        return any(s <= e2 and s2 <= e for s, e in alloc_ranges for s2, e2 in mine)

    order = sorted(temp_buffers, key=lambda b: (-max(v.size for v in df.buffers[b]), df.buffers[b][0].id))
    for b in order:
        vs = df.buffers[b]
        if any(v not in ranges for v in vs) or any(v.shape.is_tuple for v in vs):
            continue
        size = max(v.size for v in vs)
        # Merged: a buffer's values mostly follow one another without a gap (a while loop's
        # carried state), and one interval takes the fast search below.
        mine = [(s, e) for s, e in merge_intervals([ranges[v] for v in vs])] if len(vs) > 1 else [ranges[vs[0]]]
        lo, hi = mine[0][0], mine[-1][1]
        my_space = vs[0].shape.memory_space
        if my_space not in blocks:
            continue
        ks, mins, maxs = blocks[my_space]
        # Allocations are in increasing size: skip those too small at once.
        first = bisect.bisect_left(sizes, size)
        pos = bisect.bisect_left(ks, first)
        found = None
        if len(mine) == 1:
            # The first simple allocation that does not overlap [lo, hi].
            bi = pos // block
            while bi < len(mins):
                if mins[bi] < lo or maxs[bi] > hi:
                    for p in range(max(pos, bi * block), min(len(ks), (bi + 1) * block)):
                        k = ks[p]
                        if simple_end[k] < lo or simple_start[k] > hi:
                            found = k
                            break
                    if found is not None:
                        break
                bi += 1
            # A complex allocation before it that fits.
            for k in complex_by_space.get(my_space, ()):
                if k < first:
                    continue
                if found is not None and k > found:
                    break
                span = spans[k]
                if hi < span[0] or lo > span[1] or not conflicts(allocations[k][2], mine, lo, hi):
                    found = k
                    break
        else:
            for p in range(pos, len(ks)):
                k = ks[p]
                span = spans[k]
                if hi < span[0] or lo > span[1] or not conflicts(allocations[k][2], mine, lo, hi):
                    found = k
                    break
        if found is None:
            continue
        k = found
        allocations[k][2].extend(mine)
        span = spans[k]
        span[0], span[1] = min(span[0], lo), max(span[1], hi)
        taken.add(b)
        if simple_end[k] != none_end:
            # It now has more than one range: checked one by one from here on.
            simple_start[k], simple_end[k] = none_start, none_end
            p = bisect.bisect_left(ks, k)
            i = p // block * block
            mins[p // block] = min(simple_end[q] for q in ks[i:i + block])
            maxs[p // block] = max(simple_start[q] for q in ks[i:i + block])
            bisect.insort(complex_by_space.setdefault(my_space, []), k)
    return taken


class _Sharing:
    """Which values may take an operand's buffer, for one heap replay: the answers per user
    instruction are kept while it runs (see `can_share_operand_buffer`)."""

    __slots__ = ("cache", "dataflow", "facts")

    def __init__(self, dataflow: Dataflow, facts):
        self.dataflow, self.facts, self.cache = dataflow, facts, {}
        if facts is not None:
            facts.name_callees()

    def may_share(self, operand_value: Value, user_value: Value) -> bool:
        return can_share_operand_buffer(operand_value, user_value, self.cache, self.dataflow.in_place, self.facts)

    def may_share_any(self, user: Instruction) -> bool:
        return may_share_any_operand_buffer(user, self.cache, self.dataflow.in_place)


@dataclass(frozen=True)
class MemoryModel:
    """What the memory analysis builds on its way to the figures, for the analyses that ask
    more of it (held gathers, roles): the values and buffers, their live ranges over the
    flattened schedule, and the packed heap of each memory space."""

    module: Any
    platform: str
    dataflow: Dataflow
    live: LiveRanges
    heaps: dict[int, Heap]
    """The temp heap of each memory space (0 is the default, HBM)."""
    argument_bytes: int
    output_bytes: int
    alias_bytes: int

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
                       executor: Executor = INLINE) -> MemoryModel:
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
    # First: it looks at the scheduled bodies' text before they are read.
    platform = platform or detect_platform(module)
    facts = None
    if len(module.computations) >= FUSED_FACTS_MIN_COMPUTATIONS:
        # The scheduled bodies read first: the child then has them too.
        facts = FusedFacts.start(list(scheduled_instructions(module)), executor)
    try:
        return _build_with(module, platform, alignment, facts, executor)
    finally:
        if facts is not None:
            facts.close()


def _build_with(module, platform: str, alignment: int | None, facts: FusedFacts | None,
                executor: Executor) -> MemoryModel:
    alignment = alignment or ALIGNMENT.get(platform, 1)
    df = analyze_dataflow(module, facts)
    live = compute_live_ranges(df)

    entry = module.entry
    argument = sum(v.size for p in entry.parameters for v in df.value_sets[p].values()
                   if v.instruction is p)
    params = {p.parameter_number: p for p in entry.parameters}
    alias = 0
    for a in module.attributes.decoded("input_output_alias", ()):
        p = params.get(a.parameter)
        if p is not None:
            alias += p.shape.at(a.parameter_index).byte_size
    output = sum(max(v.size for v in df.buffers[b]) for b in df.live_out)

    excluded = df.live_out | df.entry_param_buffers | df.constant_buffers
    temp_buffers = [b for b in range(len(df.buffers)) if b not in excluded]
    reused = _reuse_live_out_allocations(df, live, temp_buffers)
    by_space: dict[int, list[Value]] = {}
    for b in temp_buffers:
        if b in reused:
            continue
        for v in df.buffers[b]:
            by_space.setdefault(v.shape.memory_space, []).append(v)
    heaps: dict[int, Heap] = {}
    for space, vs in by_space.items():
        # Passed on, not kept here: the heap lets its answers go once the replay is done,
        # before packing, the analysis' peak.
        sharing = _Sharing(df, facts)
        heaps[space] = simulate_heap(df, live, vs, alignment, sharing.may_share, sharing.may_share_any, executor)
        del sharing
    return MemoryModel(module, platform, df, live, heaps, argument, output, alias)


def analyze_memory(module, platform: str | None = None, alignment: int | None = None,
                   executor: Executor = INLINE, model: MemoryModel | None = None) -> MemoryAnalysis:
    """XLA's memory figures for a scheduled module (bytes); see `MemoryAnalysis`. `model`:
    the module's `build_memory_model`, when the caller has it already."""
    if model is None:
        model = build_memory_model(module, platform, alignment, executor)
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
    return MemoryAnalysis(
        name=module.name,
        temp_bytes=temp,
        argument_bytes=argument,
        output_bytes=output,
        alias_bytes=alias,
        peak_bytes=argument + output - alias + temp,
        peak_at={"index": at, "instruction": peak_name},
        live_at_peak=tuple(rows),
        temp_max_live_bytes=max_live,
        timeline=tuple(timeline),
        steps=tuple(steps),
        platform=model.platform,
        other_memory_space_bytes={s: h.size for s, h in heaps.items() if s != 0},
    )
