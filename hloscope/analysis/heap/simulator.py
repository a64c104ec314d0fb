"""XLA's HeapSimulator: the temp values' allocation and free events replayed over the
schedule, values that may take a dying operand's slot joined to it, and the resulting groups
packed by the algorithm the backend chose (`HeapAlgorithm`)."""

from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass

from ...ir.module import Instruction
from ..dataflow import Dataflow, Value
from ..liveness import LiveRanges
from .algorithm import Group, HeapAlgorithm, merge_intervals


@dataclass(frozen=True)
class Heap:
    """The temp heap of one memory space."""

    size: int
    """Packed size in bytes, with the tuple tables' allocations above the packing (memory.py):
    XLA's `temp_size_in_bytes`."""
    max_live: int
    """The largest sum of live bytes at one step (no fragmentation)."""
    max_live_at: int
    timeline: list[int]
    """Bytes live at each step."""
    offsets: dict[Value, int]
    strategy: str
    peak_buffers_bytes: int = 0
    """(Replayed on request: `simulate_heap`'s `peak_buffers`, else 0.) The bytes of XLA's
    `PeakMemoryLogicalBuffers()` of the heap's allocation, as its
    ComputePeakMemoryLogicalBuffers replays the heap trace. A shared buffer counts while its
    first value lives (or once more when shared after that value's FREE), not while any of
    its values lives, so it can be less than `max_live`."""


class _Trace:
    """XLA's ComputePeakMemoryLogicalBuffers: the heap trace's events (ALLOC, SHARE_WITH, FREE)
    replayed for the most bytes they hold at once. A value shared into another's slot adds
    its bytes only when that slot has no value outstanding, so a buffer whose first value is
    freed before the rest counts once more, and one whose values overlap counts once."""

    __slots__ = ("canonical", "counted", "live", "outstanding", "peak")

    def __init__(self):
        self.outstanding: dict[Value, int] = {}
        self.canonical: dict[Value, Value] = {}
        self.counted: dict[Value, int] = {}
        self.live = self.peak = 0

    def alloc(self, v: Value) -> None:
        self.outstanding[v] = 1
        self._add(v, v.size)

    def share(self, v: Value, slot_of: Value) -> None:
        self.canonical[v] = slot_of
        n = self.outstanding[slot_of] = self.outstanding.get(slot_of, 0) + 1
        self._add(v, v.size if n == 1 else 0)

    def free(self, v: Value) -> None:
        slot_of = self.canonical.get(v, v)
        self.outstanding[slot_of] = self.outstanding.get(slot_of, 0) - 1
        self.live -= self.counted[v]

    def _add(self, v: Value, size: int) -> None:
        self.counted[v] = size
        self.live += size
        self.peak = max(self.peak, self.live)


class _Untraced:
    """No replay of the heap trace: `Heap.peak_buffers_bytes` stays 0."""

    peak = 0

    def alloc(self, v: Value) -> None:
        pass

    def share(self, v: Value, slot_of: Value) -> None:
        pass

    def free(self, v: Value) -> None:
        pass


_UNTRACED = _Untraced()


def simulate_heap(dataflow: Dataflow, live: LiveRanges, temp: list[Value], alignment: int,
                  algorithm: HeapAlgorithm, may_share: "callable | None" = None,
                  may_share_any: "callable | None" = None, peak_buffers: bool = False) -> Heap:
    """Replay allocation events as XLA's HeapSimulator does, then pack with `algorithm`
    (`best_fit.BEST_OF_TWO`: XLA's default; `fast_merge.FAST_MERGE`: TPU's HBM).
    `peak_buffers`: also replay the heap trace for `Heap.peak_buffers_bytes` (`_Trace`),
    which TPU's temp needs (a few MB of bookkeeping on a large heap, else spared).

    At each step, values that start are allocated before values that end are freed. A value
    whose buffer already has a placed value takes the same place. A lone value may take over
    an operand's slot when that operand's value dies at this very step (and `may_share` says
    the op can write over it; `may_share_any(instruction)` False says it for every operand)::

        step:        4    5    6
        a = exp(x)   [aaaaaaa]            a dies at 5, where b starts:
        b = neg(a)        [bbbbbbbbb]     b takes a's slot, one group [4, 6]
    """
    ranges = live.ranges
    temp = [v for v in temp if v in ranges and v.size > 0]
    temp.sort(key=lambda v: (ranges[v][0], ranges[v][1], v.id))
    temp_set = set(temp)
    end_step = live.schedule.end
    # Steps with events only (most steps of a big module have none to replay).
    defined: dict[int, list[Value]] = {}
    freed: dict[int, list[Value]] = {}
    for v in temp:
        s, e = ranges[v]
        if s in defined:
            defined[s].append(v)
        else:
            defined[s] = [v]
        if e in freed:
            freed[e].append(v)
        else:
            freed[e] = [v]
    buffer_sizes: dict[int, int] = {}
    for v in temp:
        buffer_sizes[v.buffer] = max(buffer_sizes.get(v.buffer, 0), v.size)
    buffer_count: dict[int, int] = {}
    for v in dataflow.values:
        buffer_count[v.buffer] = buffer_count.get(v.buffer, 0) + 1
    value_sets = dataflow.value_sets

    group_of: dict[Value, Group] = {}
    first_in_buffer: dict[int, Group] = {}
    groups: list[Group] = []
    # The heap algorithm's clock ticks once per allocation or free event, not per step: XLA
    # orders equal-sized buffers by this event-time duration.
    clock = 0
    event: dict[Value, list[int]] = {}
    trace = _Trace() if peak_buffers else _UNTRACED
    candidates: dict[Instruction, list[Value]] = {}  # a step's, made anew with its `dying`
    for i in sorted(defined.keys() | freed.keys()):
        freed_now = freed.get(i, ())
        # Instructions defining what dies now: an operand not among them cannot hand over its
        # slot (a quick test before the full one). And, per instruction, the values its
        # operands could hand over now: the same for each value it defines (a combined
        # all-reduce defines hundreds).
        dying: set[Instruction] | None = None
        for v in defined.get(i, ()):
            g = first_in_buffer.get(v.buffer)
            if g is not None:
                g.values.append(v)
                g.intervals.append(ranges[v])
                g.size = max(g.size, buffer_sizes[v.buffer])
                group_of[v] = g
                event[v] = [clock, -1]
                clock += 1
                trace.share(v, g.first)  # the buffer's first value (a takeover is of a lone value)
                continue
            shared = False
            inst = v.instruction
            if (may_share is not None and freed_now and buffer_count.get(v.buffer, 0) == 1
                    and inst.info.shares_operand_buffer and (may_share_any is None or may_share_any(inst))):
                if dying is None:
                    dying, candidates = {w.instruction for w in freed_now}, {}
                # XLA tries every value of every operand, in operand order and then by value
                # id, whose defining instruction is itself an operand (IsUserOf).
                found = candidates.get(inst)
                if found is None:
                    found = candidates[inst] = _operand_values(inst, value_sets, dying)
                for ov in found:
                    if ov not in temp_set or buffer_count.get(ov.buffer, 0) > 1:
                        continue
                    if ranges[ov][1] != i or ov not in freed_now:
                        continue
                    if not may_share(ov, v):
                        continue
                    freed_now.remove(ov)
                    event[ov][1] = clock
                    clock += 1
                    trace.free(ov)
                    trace.share(v, ov)
                    g = group_of[ov]
                    g.values.append(v)
                    g.intervals.append(ranges[v])
                    g.size = max(g.size, v.size)
                    group_of[v] = g
                    first_in_buffer[v.buffer] = g
                    event[v] = [clock, -1]
                    clock += 1
                    shared = True
                    break
            if not shared:
                g = Group(v, ranges[v])
                g.size = buffer_sizes[v.buffer]
                groups.append(g)
                group_of[v] = g
                first_in_buffer[v.buffer] = g
                event[v] = [clock, -1]
                clock += 1
                trace.alloc(v)
        for v in freed_now:
            event[v][1] = clock
            clock += 1
            trace.free(v)
    for g in groups:
        first_event = event[g.first]
        g.own_span = first_event[0] - first_event[1]
        if len(g.values) == 1:
            g.span = g.own_span
            g.born, g.dies = first_event
        else:
            # map, not generators: this runs once per group, and shared buffers make some long.
            events = [event[v] for v in g.values]
            g.born, g.dies = min(map(_first, events)), max(map(_second, events))
            g.span = g.born - g.dies
    # What the replay needed and the packing does not: let the packing reuse its memory.
    del event, group_of, first_in_buffer, defined, freed, buffer_count, buffer_sizes, temp_set, temp, candidates
    del may_share, may_share_any
    # The no-fragmentation figure: bytes live per step, each group counted once per step.
    delta = [0] * (end_step + 2)
    for g in groups:
        for s, e in merge_intervals(g.intervals):
            delta[s] += g.size
            delta[e + 1] -= g.size
    timeline = list(itertools.accumulate(delta[:end_step + 1]))
    del delta
    max_live = max(timeline) if timeline else 0
    max_live_at = timeline.index(max_live) if timeline else 0
    packed = algorithm.pack(groups, alignment, max_live)
    offsets = {v: packed.offsets[id(g)] for g in groups for v in g.values}
    return Heap(packed.size, max_live, max_live_at, timeline, offsets, packed.strategy, trace.peak)


_first, _second = operator.itemgetter(0), operator.itemgetter(1)


def _operand_values(inst: Instruction, value_sets, dying) -> list[Value]:
    """The values an operand slot could be taken from, in the order XLA's heap simulator tries
    them: `inst`'s operands in order, each one's values by id, keeping those defined by an
    instruction that is itself an operand of `inst` and defines a value dying now."""
    operands = inst.operands
    among: set[Instruction] | None = None  # the operands, as a set once one is looked for
    out = []
    for operand in operands:
        vs = value_sets.get(operand)
        if not vs:
            continue
        for ov in vs.values() if len(vs) == 1 else sorted(vs.values(), key=_value_id):
            defining = ov.instruction
            if defining in dying:
                if defining is not operand:
                    if among is None:
                        among = set(operands)
                    if defining not in among:
                        continue
                out.append(ov)
    return out


_value_id = operator.attrgetter("id")

