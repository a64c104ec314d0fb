"""Live ranges over the flattened module schedule, the peak, and XLA's best-fit packing.

This follows XLA's HloLiveRange (module-scoped) and the heap simulator that buffer
assignment runs; the rules, each next to the code that applies it:

Flattening. One timeline for the module. A computation a `call`/`conditional` runs is
inlined just before the calling instruction; a `while` gets its condition, then its body,
inlined before it; an async start gets its wrapped computation before it. A loop body appears
once, so trip counts never multiply memory::

    entry:   a   while(a)   b            time:  0:a  1:cond.p  2:lt  3:body.p  4:add  5:tuple
    cond:    p   lt(p)                          6:while  7:b
    body:    p   add(p)   tuple(add)

Live ranges are inclusive `[start, end]` step intervals.
"""

from __future__ import annotations

import heapq
import itertools
import operator
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass, field
from itertools import compress, islice
from operator import lt

from ..ir.module import Computation, Instruction
from ..ir.opcodes import info as opinfo
from .callgraph import loop_parts, scheduled_callees
from .dataflow import AT_DEFINITION, Dataflow, Value


@dataclass(frozen=True)
class Schedule:
    """The flattened schedule: `steps[t]` is the name of what runs at step t."""

    steps: list[str]
    time: dict[Instruction, int]
    """Step of each instruction of every flattened computation."""
    span: dict[Computation, tuple[int, int]]
    """`[start, end)` steps of each flattened computation; end is the step after its last."""
    wrapped_time: dict[Instruction, int]
    """For async printing sugar (no wrapped computation in the text): the step of the wrapped op."""
    async_context: dict[Computation, Instruction]
    """Computations run by an async start → that start."""

    @property
    def end(self) -> int:
        """XLA's schedule_end_time: one past the last step."""
        return len(self.steps)


def flatten_schedule(dataflow: Dataflow) -> Schedule:
    """The module's one timeline: each computation the schedule runs inlined where it runs
    (`callgraph.scheduled_callees`), async printing sugar given its wrapped op's steps."""
    module = dataflow.module
    steps: list[str] = []
    time: dict[Instruction, int] = {}
    span: dict[Computation, tuple[int, int]] = {}
    wrapped_time: dict[Instruction, int] = {}
    async_context: dict[Computation, Instruction] = {}

    async_wrapped = dataflow.async_wrapped
    wrappers = dataflow.wrappers

    def visit(comp: Computation) -> None:
        if comp in span:
            return
        start = len(steps)
        span[comp] = (start, start)  # entered: a computation that calls itself is not entered again
        for inst in comp.instructions:
            info = wrappers.get(inst) or opinfo(inst.opcode)
            if info.runs_callees:
                # Condition first, then body: their order on the timeline is XLA's.
                for c in scheduled_callees(inst):
                    if info.calls_kind == "async":
                        async_context[c] = inst
                    visit(c)
            elif info.sugar and inst in async_wrapped:
                # Printing sugar: XLA's wrapped computation holds one parameter per operand
                # and the wrapped op; they take steps of their own before the start.
                for n in range(len(inst.operands)):
                    steps.append(f"{inst.name}/param_{n}")
                wrapped_time[inst] = len(steps)
                steps.append(f"{inst.name}/{info.wrapped}")
            time[inst] = len(steps)
            steps.append(inst.name)
        span[comp] = (start, len(steps))

    visit(module.entry)
    return Schedule(steps, time, span, wrapped_time, async_context)


@dataclass(frozen=True)
class LiveRanges:
    schedule: Schedule
    ranges: dict[Value, tuple[int, int]]
    """Inclusive `[start, end]` of every value the schedule reaches."""
    own_end: dict[Value, int] = field(default_factory=dict)
    """Where NormalizeAliasedBuffers moved a value's end (values of one buffer hand over to
    each other): the end its own uses and positions give it."""


def _chain_done(start: Instruction) -> Instruction | None:
    """The `-done` that ends an async chain begun by `start`."""
    seen = 0
    cur = start
    while seen < 64:
        nxt = [u for u in cur.users if u.info.async_role in ("update", "done")]
        if not nxt:
            return None
        cur = nxt[0]
        if cur.info.async_role == "done":
            return cur
        seen += 1
    return None


def compute_live_ranges(dataflow: Dataflow, schedule: Schedule | None = None) -> LiveRanges:
    """Each value's live interval, as XLA's HloLiveRange computes it.

    - A value starts at its defining step; a parameter at its computation's first step.
    - It ends at its last use or last position; a position at a computation's ROOT extends it
      to that computation's end (the step after its last instruction)::

          0: p = parameter(0)      p    [0 ...... 3]   ROOT position: to the end (3)
          1: a = exp(p)            a      [1 2]        last use at 2
          2: b = add(a, p)         b        [2 3]
          3: ROOT t = tuple(b, p)

    - A use by a `while` counts at its body's parameter: the init value dies as the body
      starts. A use by a `call` is not counted (the callee's own uses are).
    - Entry parameters not donated (`input_output_alias`) live to the schedule's end.
    - Values of a computation an async start runs live until the matching `-done`.
    - Values of one buffer never overlap: sorted by start, each ends where the next begins
      (XLA NormalizeAliasedBuffers).
    """
    return _compute_live_ranges(dataflow, schedule)


def _compute_live_ranges(dataflow: Dataflow, schedule: Schedule | None) -> LiveRanges:
    sched = schedule or flatten_schedule(dataflow)
    module = dataflow.module
    time, span = sched.time, sched.span
    entry = module.entry
    aliased_params = {(a.parameter, a.parameter_index) for a in module.attributes.decoded("input_output_alias", ())}
    done_time: dict[Computation, int] = {}
    for comp, start in sched.async_context.items():
        done = _chain_done(start)
        done_time[comp] = time[done] if done is not None and done in time else span[comp][1]

    # When each instruction reads its operands' values (XLA's uses, see `Value.uses`):
    # `use_all` for users that read every index, `use_top` for those reading only the
    # top-level value; a `while` reads its init at its body's parameter, a `call` through
    # its callee's own uses (not at all here).
    use_all: dict[Instruction, int] = {}
    use_top: dict[Instruction, int] = {}
    for inst, t in time.items():
        info = opinfo(inst.opcode)
        if not info.uses_operand_values:
            continue
        kind = info.calls_kind
        if kind == "call" and all(c in span for c in inst.called_computations):
            continue
        if kind == "loop":
            body = loop_parts(inst)[1]
            if body is not None and body in span and body.parameters:
                t = time.get(body.parameters[0])
                if t is None:
                    continue
        (use_top if info.uses_only_top_level else use_all)[inst] = t
    get_all, get_top = use_all.get, use_top.get
    # Per instruction, the latest step at which a user reads it: (users reading every index,
    # users reading only the top level), -1 for none. Worked out once per instruction, not
    # once per value there: a while body's parameter holds N values of its state and has N
    # get-tuple-element users.
    latest: dict[Instruction, tuple[int, int]] = {}

    def latest_use(inst: Instruction) -> tuple[int, int]:
        a = b = -1
        for user in inst.users:
            t = get_all(user)
            if t is not None and t > a:
                a = t
            t = get_top(user)
            if t is not None and t > b:
                b = t
        latest[inst] = (a, b)
        return a, b

    ranges: dict[Value, tuple[int, int]] = {}
    sched_end = sched.end
    wrapped_time = sched.wrapped_time
    get_time, get_span = time.get, span.get
    for v in dataflow.values:
        d = v.instruction
        t = get_time(d)
        if t is None:
            continue
        comp = d.computation
        cspan = get_span(comp)
        if cspan is None:
            continue
        is_param = d.opcode == "parameter"
        if v.wrapped_step is not None and d in wrapped_time:
            start = wrapped_time[d]
        else:
            start = cspan[0] if is_param else t
        if is_param and comp is entry and (d.parameter_number, v.index) not in aliased_params:
            ranges[v] = (start, sched_end)
            continue
        end = cspan[1] if d.is_root else t
        if done_time and comp in done_time:
            end = max(end, done_time[comp])
        positions = v._positions
        if positions is AT_DEFINITION:
            # The common case: one position, where it is defined.
            used = latest.get(d) or latest_use(d)
            t = used[0] if v.index else max(used)
            ranges[v] = (start, t if t > end else end)
            continue
        for pinst, _ in positions[1:]:
            if pinst.is_root:
                pspan = get_span(pinst.computation)
                if pspan is not None:
                    if pspan[1] > end:
                        end = pspan[1]
                    continue
            t = get_time(pinst)
            if t is not None and t > end:
                end = t
        for pinst, idx in positions:
            used = latest.get(pinst) or latest_use(pinst)
            t = used[0] if idx else max(used)
            if t > end:
                end = t
        ranges[v] = (start, end)

    # NormalizeAliasedBuffers: values of one buffer hand over to each other.
    own_end: dict[Value, int] = {}
    for vs in dataflow.buffers:
        if len(vs) < 2:
            continue
        live = sorted((ranges[v][0], ranges[v][1], v.id, v) for v in vs if v in ranges)
        for i in range(len(live) - 1):
            s1, e1, _, v1 = live[i]
            s2, e2, id2, v2 = live[i + 1]
            new2 = max(e1, e2)
            live[i + 1] = (s2, new2, id2, v2)
            live[i] = (s1, min(e1, s2), live[i][2], v1)
        for s, e, _, v in live:
            if e != ranges[v][1]:
                own_end[v] = ranges[v][1]
            ranges[v] = (s, e)
    return LiveRanges(sched, ranges, own_end)


# ---------------------------------------------------------------------------------------------
# The heap: which values share an operand's slot, and best-fit packing.


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


class _Group:
    __slots__ = ("values", "intervals", "size", "first", "own_span", "span", "born", "dies")

    def __init__(self, v: Value, rng: tuple[int, int]):
        self.first = v
        self.values = [v]
        self.intervals = [rng]
        self.size = v.size
        self.own_span = self.span = 0
        """In event time, as the packing orders' keys: minus the first value's duration, and
        minus the whole group's."""
        self.born = self.dies = 0
        """In event time: the group's first allocation and its last free."""


def simulate_heap(dataflow: Dataflow, live: LiveRanges, temp: list[Value], alignment: int,
                  may_share: "callable | None" = None, may_share_any: "callable | None" = None,
                  order: str = "best", peak_buffers: bool = False) -> Heap:
    """Replay allocation events as XLA's HeapSimulator does, then pack with best fit.

    `order`: "best" packs in XLA's two orders and keeps the smaller heap (CPU, GPU, and TPU
    after its fallback); "merge" packs once, as XLA's FastMerge heap (`_fast_merge`): TPU's
    HBM. `peak_buffers`: also replay the heap trace for `Heap.peak_buffers_bytes` (`_Trace`),
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

    group_of: dict[Value, _Group] = {}
    first_in_buffer: dict[int, _Group] = {}
    groups: list[_Group] = []
    # The heap algorithm's clock ticks once per allocation or free event, not per step: XLA
    # orders equal-sized buffers by this event-time duration.
    clock = 0
    event: dict[Value, list[int]] = {}
    trace = _Trace() if peak_buffers else _UNTRACED
    for i in sorted(defined.keys() | freed.keys()):
        freed_now = freed.get(i, ())
        # Instructions defining what dies now: an operand not among them cannot hand over its
        # slot (a quick test before the full one).
        dying = None
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
                    dying = {w.instruction for w in freed_now}
                # XLA tries every value of every operand, in operand order and then by value
                # id, whose defining instruction is itself an operand (IsUserOf).
                for ov in _operand_values(inst, value_sets, dying):
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
                g = _Group(v, ranges[v])
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
    del event, group_of, first_in_buffer, defined, freed, buffer_count, buffer_sizes, temp_set, temp
    del may_share, may_share_any
    best = None
    # XLA tries both orders and keeps the smaller heap (ChooseBestHeapAlgorithm). Durations
    # are in event time; spatial looks at the first value's own interval, temporal at the
    # group's whole span.
    orders = (("spatial", lambda g: (-g.size, g.own_span, g.first.id)),
              ("temporal", lambda g: (g.span, -g.size, g.first.id)))
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
    if order == "merge":
        size, group_offsets = _fast_merge(groups, alignment)
        offsets = {v: group_offsets[id(g)] for g in groups for v in g.values}
        return Heap(size, max_live, max_live_at, timeline, offsets, "merge", trace.peak)

    for name, key in orders:
        if best is not None and best[0] <= max_live:
            # No packing is smaller than the most bytes live at one step (groups live at one
            # step never share bytes): this order cannot do better, and a tie keeps the first.
            break
        # Given the heap to beat, the packing stops once it is no smaller (None).
        packed = _best_fit(sorted(groups, key=key), alignment, None if best is None else best[0])
        if packed is None:
            continue
        size, offsets = packed
        if best is None or size < best[0]:
            best = (size, offsets, name)
    size, group_offsets, strategy = best if best else (0, {}, "spatial")
    offsets = {v: group_offsets[id(g)] for g in groups for v in g.values}
    return Heap(size, max_live, max_live_at, timeline, offsets, strategy, trace.peak)


_first, _second = operator.itemgetter(0), operator.itemgetter(1)


def _operand_values(inst: Instruction, value_sets, dying) -> list[Value]:
    """The values an operand slot could be taken from, in the order XLA's heap simulator tries
    them: `inst`'s operands in order, each one's values by id, keeping those defined by an
    instruction that is itself an operand of `inst` and defines a value dying now."""
    operands = inst.operands
    out = []
    for operand in operands:
        vs = value_sets.get(operand)
        if not vs:
            continue
        if len(vs) == 1:
            ov = next(iter(vs.values()))
            if ov.instruction in dying and (ov.instruction is operand or ov.instruction in operands):
                out.append(ov)
            continue
        for ov in sorted(vs.values(), key=_value_id):
            if ov.instruction in dying and (ov.instruction is operand or ov.instruction in operands):
                out.append(ov)
    return out


_value_id = operator.attrgetter("id")


def _fast_merge(groups: list[_Group], alignment: int) -> tuple[int, dict[int, int]]:
    """XLA's FastMerge heap (ConstrainedGlobalDecreasingSizeBestFitHeap, `kFastMerge`), the
    packing of TPU's HBM temp: groups in the order of their first allocation event, each into
    the free chunk just large enough for it (the least usable bytes, then the lowest offset),
    at that chunk's first aligned offset. A group's chunk is free again for every group first
    allocated after its last value's FREE, merged with its free neighbours. Chunks begin where
    the one below ends, unaligned, so a chunk's usable size is its end less its first aligned
    offset::

        alignment 4     0   3 4  6
        a (3 bytes)     [aaa]          a at 0; free chunk [3, inf), usable from 4
        b (2 bytes)         .[bb]      b at 4, chunk [3, 6) taken; free [6, inf)
        a freed, c (3)  [ccc]          [0, 3) holds 3 usable bytes: c at 0, not at 8
    """
    free = _FreeChunks(alignment)
    pending: list[tuple[int, int, int]] = []   # (the group's last FREE event, chunk start, end)
    offsets: dict[int, int] = {}
    heap_size = 0
    for g in sorted(groups, key=_born):
        while pending and pending[0][0] < g.born:
            _, start, end = heapq.heappop(pending)
            free.release(start, end)
        start, at = free.take(g.size)
        offsets[id(g)] = at
        heap_size = max(heap_size, at + g.size)
        heapq.heappush(pending, (g.dies, start, at + g.size))
    return heap_size, offsets


_born = operator.attrgetter("born")


class _FreeChunks:
    """XLA's FreeChunksManager: the free chunks of an unbounded heap, by offset and by usable
    size (the chunk's end less its first aligned offset)."""

    __slots__ = ("alignment", "by_usable", "ends", "starts")

    def __init__(self, alignment: int):
        self.alignment = alignment
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.by_usable: list[tuple[int, int]] = []
        self._add(0, 1 << 62)

    def take(self, size: int) -> tuple[int, int]:
        """The chunk just large enough for `size` bytes: (its start, the aligned offset given
        out); what is left above the `size` bytes stays free."""
        _, start = self.by_usable[bisect_left(self.by_usable, (size, -1))]
        k = bisect_left(self.starts, start)
        end = self.ends[k]
        self._remove(k)
        at = self._aligned(start)
        if end > at + size:
            self._add(at + size, end)
        return start, at

    def release(self, start: int, end: int) -> None:
        """`[start, end)` free again, merged with a free chunk just above or below it."""
        k = bisect_left(self.starts, start)
        if k < len(self.starts) and self.starts[k] == end:
            end = self.ends[k]
            self._remove(k)
        if k and self.ends[k - 1] >= start:
            start, end = self.starts[k - 1], max(end, self.ends[k - 1])
            self._remove(k - 1)
        self._add(start, end)

    def _aligned(self, offset: int) -> int:
        return -(-offset // self.alignment) * self.alignment

    def _add(self, start: int, end: int) -> None:
        k = bisect_left(self.starts, start)
        self.starts.insert(k, start)
        self.ends.insert(k, end)
        usable = end - self._aligned(start)
        if usable > 0:
            insort(self.by_usable, (usable, start))

    def _remove(self, k: int) -> None:
        start, end = self.starts.pop(k), self.ends.pop(k)
        usable = end - self._aligned(start)
        if usable > 0:
            del self.by_usable[bisect_left(self.by_usable, (usable, start))]


def merge_intervals(intervals):
    """Closed intervals, overlapping or adjacent ones joined, in order (not to be mutated:
    a lone interval comes back in the list it came in, as most groups have one)."""
    if len(intervals) == 1:
        return intervals
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _best_fit(groups: list[_Group], alignment: int,
              limit: int | None = None) -> tuple[int, dict[int, int]] | None:
    """GlobalDecreasingSizeBestFitHeap: place each group, in order, in the smallest gap (over
    its whole lifetime) that fits it, lowest offset among equals; else above everything.
    With a `limit`, None as soon as the heap reaches it (it only grows).

    A gap is a hole in the union of the `[offset, aligned end)` ranges of the groups placed so
    far that meet the candidate in time (XLA finds those through an interval tree of chunks).
    Here that union is kept pre-merged, per node of two segment trees over the time axis, as
    one flat list `[start, end, start, end, ...]` of disjoint ranges (touching ranges merged,
    so the lists stay short where memory is densely packed; and strictly increasing, so one
    bisection finds a place in it):

    - `cover`: each placed interval at the nodes of its canonical decomposition (the nodes on
      one leaf's path to the root hold the intervals containing that step);
    - `starts`: each placed interval at every ancestor of its start's leaf.

    An interval meets `[a, b]` either by containing `a` or by starting in `(a, b]`, so the
    union for a candidate is that of O(log T) such lists, not of every chunk it meets. Only
    the order of interval ends matters for overlap, so time is compressed to their ranks.

    Offsets are counted in units of `alignment` inside: every placed range starts and ends
    on a multiple of it (a group goes at 0 or at an aligned end), so a gap fits a group
    exactly when it holds its aligned size. The numbers stay small: Python sorts and
    compares ints below 2**30 on a fast path, and heaps of several GB exceed that in bytes."""
    offsets: dict[int, int] = {}
    if not groups:
        return 0, offsets
    merged = [merge_intervals(g.intervals) for g in groups]
    points = sorted({p for ivs in merged for iv in ivs for p in iv})
    rank = {p: i for i, p in enumerate(points)}
    leaves = 1
    while leaves < len(points) + 1:
        leaves *= 2
    # Per node: None, or the flat list of its disjoint ranges in offset order. Both trees
    # live in one list, `starts` after `cover`, so that one loop fills both.
    trees: list[list[int] | None] = [None] * (4 * leaves)
    starts_at = 2 * leaves
    heap_size = 0
    for g, ivs in zip(groups, merged):
        size = -(-g.size // alignment)  # in units of the alignment (see the docstring)
        ivs = [(rank[s] + leaves, rank[e] + leaves) for s, e in ivs]
        # The merged ranges of every placed group that meets this one in time.
        lists = []
        add = lists.append
        for a, b in ivs:
            node = a
            while node:
                found = trees[node]
                if found:
                    add(found)
                node >>= 1
            lo, hi = a + 1, b + 1
            while lo < hi:
                if lo & 1:
                    found = trees[lo + starts_at]
                    if found:
                        add(found)
                    lo += 1
                if hi & 1:
                    hi -= 1
                    found = trees[hi + starts_at]
                    if found:
                        add(found)
                lo >>= 1
                hi >>= 1
        # The smallest hole that fits, lowest offset among equals; else the top. With all the
        # starts S and all the ends E sorted each on its own, the holes of the union of the
        # ranges are exactly the non-empty [E[i], S[i + 1]) (and [0, S[0])): at any x in
        # one, as many ranges have ended as have begun.
        best_off = None
        if not lists:
            best_off = 0
        else:
            if len(lists) == 1:
                S, E = lists[0][0::2], lists[0][1::2]
            else:
                flat = []
                for node_ranges in lists:
                    flat += node_ranges
                # Every list has even length: the even places of the whole are the starts.
                S, E = flat[0::2], flat[1::2]
                S.sort()
                E.sort()
            best_gap = S[0]
            if best_gap >= size:
                best_off = 0
            # Holes come in offset order: the first that fits exactly is the answer (none is
            # smaller, none lower), and a third of the groups of a model's step find one.
            if best_gap != size:
                for i in compress(range(len(E)), map(lt, E, islice(S, 1, None))):
                    gap = S[i + 1] - E[i]
                    if gap >= size and (best_off is None or gap < best_gap):
                        best_off, best_gap = E[i], gap
                        if gap == size:
                            break
            if best_off is None:
                best_off = E[-1]
        offsets[id(g)] = best_off * alignment
        x, y = best_off, best_off + size
        # The nodes that take [x, y): each interval's canonical nodes in `cover`, and the
        # ancestors of its start's leaf in `starts`.
        targets = []
        put = targets.append
        for a, b in ivs:
            lo, hi = a, b + 1
            while lo < hi:
                if lo & 1:
                    put(lo)
                    lo += 1
                if hi & 1:
                    hi -= 1
                    put(hi)
                lo >>= 1
                hi >>= 1
            node = a
            while node:
                put(node + starts_at)
                node >>= 1
        for k in targets:
            node_ranges = trees[k]
            if node_ranges is None:
                trees[k] = [x, y]
                continue
            # Merge [x, y) with the ranges it overlaps or touches, else insert it. In the
            # flat list, range r is [2r, 2r + 1]: the first range ending at or after x is
            # i (bisect_left(x) // 2, whether that lands on its start or its end), and
            # j - 1 the last one starting at or before y (j = (bisect_right(y) + 1) // 2).
            i = bisect_left(node_ranges, x) & -2
            j = (bisect_right(node_ranges, y, i) + 1) & -2
            if i == j:
                node_ranges[i:i] = (x, y)
            else:
                s, e = node_ranges[i], node_ranges[j - 1]
                node_ranges[i:j] = (s if s < x else x, e if e > y else y)
        top = best_off * alignment + g.size
        if top > heap_size:
            heap_size = top
            if limit is not None and heap_size >= limit:
                return None
    return heap_size, offsets


def live_bytes_timeline(live: LiveRanges, values=None) -> list[int]:
    """Bytes live at each step (each value counted over its own interval), by a difference
    array: O(values + steps)."""
    delta = [0] * (live.schedule.end + 2)
    ranges = live.ranges
    if values is None:
        for v, (s, e) in ranges.items():
            size = v.size
            delta[s] += size
            delta[e + 1] -= size
    else:
        for v in values:
            r = ranges.get(v)
            if r is None:
                continue
            delta[r[0]] += v.size
            delta[r[1] + 1] -= v.size
    out = list(itertools.accumulate(delta[:-1]))
    return out
