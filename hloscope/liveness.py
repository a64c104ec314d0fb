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

import itertools
from dataclasses import dataclass

from .dataflow import AT_DEFINITION, Dataflow, Value, parse_input_output_alias
from .ir import Computation, Instruction
from .opcodes import info as opinfo


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
    module = dataflow.module
    steps: list[str] = []
    time: dict[Instruction, int] = {}
    span: dict[Computation, tuple[int, int]] = {}
    wrapped_time: dict[Instruction, int] = {}
    async_context: dict[Computation, Instruction] = {}

    def visit(comp: Computation) -> None:
        if comp in span:
            return
        start = len(steps)
        for inst in comp.instructions:
            info = opinfo(inst.opcode)
            rule = info.value_rule
            if rule == "call" or rule == "conditional":
                for c in inst.called_computations:
                    visit(c)
            elif rule == "while":
                names = inst.attributes
                # Condition first, then body: their order on the timeline is XLA's.
                for key in ("condition", "body"):
                    c = module.computation(names.decoded(key)[0])
                    if c is not None:
                        visit(c)
            elif inst in dataflow.async_wrapped:
                wrapped = dataflow.async_wrapped[inst]
                if wrapped is not None:
                    async_context[wrapped] = inst
                    visit(wrapped)
                elif info.sugar:
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
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        return _compute_live_ranges(dataflow, schedule)
    finally:
        if enabled:
            gc.enable()


def _compute_live_ranges(dataflow: Dataflow, schedule: Schedule | None) -> LiveRanges:
    sched = schedule or flatten_schedule(dataflow)
    module = dataflow.module
    time, span = sched.time, sched.span
    entry = module.entry
    aliased_params = {(pn, pi) for _, pn, pi in parse_input_output_alias(module.attributes.get("input_output_alias"))}
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
        rule = info.value_rule
        if rule == "call" and all(c in span for c in inst.called_computations):
            continue
        if rule == "while":
            body = module.computation(inst.attributes.decoded("body")[0])
            if body is not None and body in span and body.parameters:
                t = time.get(body.parameters[0])
                if t is None:
                    continue
        (use_top if info.uses_only_top_level else use_all)[inst] = t
    get_all, get_top = use_all.get, use_top.get

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
            idx = v.index
            for user in d.users:
                t = get_all(user)
                if t is None and not idx:
                    t = get_top(user)
                if t is not None and t > end:
                    end = t
            ranges[v] = (start, end)
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
            for user in pinst.users:
                t = get_all(user)
                if t is None and not idx:
                    t = get_top(user)
                if t is not None and t > end:
                    end = t
        ranges[v] = (start, end)

    # NormalizeAliasedBuffers: values of one buffer hand over to each other.
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
            ranges[v] = (s, e)
    return LiveRanges(sched, ranges)


# ---------------------------------------------------------------------------------------------
# The heap: which values share an operand's slot, and best-fit packing.


@dataclass(frozen=True)
class Placement:
    """A value group's place in the temp allocation: bytes `[offset, offset + size)`."""

    offset: int
    size: int


@dataclass(frozen=True)
class Heap:
    """The temp heap of one memory space."""

    size: int
    """Packed size in bytes: XLA's `temp_size_in_bytes` estimate."""
    max_live: int
    """The largest sum of live bytes at one step (no fragmentation)."""
    max_live_at: int
    timeline: list[int]
    """Bytes live at each step."""
    offsets: dict[Value, int]
    strategy: str


def _align(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


class _Group:
    __slots__ = ("values", "intervals", "size", "start", "end", "first", "events")

    def __init__(self, v: Value, rng: tuple[int, int]):
        self.first = v
        self.values = [v]
        self.intervals = [rng]
        self.size = v.size
        self.start, self.end = rng


def simulate_heap(dataflow: Dataflow, live: LiveRanges, temp: list[Value], alignment: int,
                  may_share: "callable | None" = None) -> Heap:
    """Replay allocation events as XLA's HeapSimulator does, then pack with best fit.

    At each step, values that start are allocated before values that end are freed. A value
    whose buffer already has a placed value takes the same place. A lone value may take over
    an operand's slot when that operand's value dies at this very step (and `may_share` says
    the op can write over it)::

        step:        4    5    6
        a = exp(x)   [aaaaaaa]            a dies at 5, where b starts:
        b = neg(a)        [bbbbbbbbb]     b takes a's slot, one group [4, 6]
    """
    ranges = live.ranges
    temp = [v for v in temp if v in ranges and v.size > 0]
    temp.sort(key=lambda v: (ranges[v][0], ranges[v][1], v.id))
    temp_set = set(temp)
    end_step = live.schedule.end
    defined: list[list[Value]] = [[] for _ in range(end_step + 1)]
    freed: list[list[Value]] = [[] for _ in range(end_step + 1)]
    for v in temp:
        s, e = ranges[v]
        defined[s].append(v)
        freed[e].append(v)
    buffer_sizes: dict[int, int] = {}
    for v in temp:
        buffer_sizes[v.buffer] = max(buffer_sizes.get(v.buffer, 0), v.size)
    buffer_count: dict[int, int] = {}
    for v in dataflow.values:
        buffer_count[v.buffer] = buffer_count.get(v.buffer, 0) + 1

    group_of: dict[Value, _Group] = {}
    first_in_buffer: dict[int, _Group] = {}
    groups: list[_Group] = []
    # The heap algorithm's clock ticks once per allocation or free event, not per step: XLA
    # orders equal-sized buffers by this event-time duration.
    clock = 0
    event: dict[Value, list[int]] = {}
    freed_sets = [list(f) for f in freed]
    for i in range(end_step + 1):
        for v in defined[i]:
            g = first_in_buffer.get(v.buffer)
            if g is not None:
                g.values.append(v)
                g.intervals.append(ranges[v])
                g.size = max(g.size, buffer_sizes[v.buffer])
                group_of[v] = g
                event[v] = [clock, -1]
                clock += 1
                continue
            shared = False
            if may_share is not None and buffer_count.get(v.buffer, 0) == 1:
                for operand in v.instruction.operands:
                    ov = dataflow.value_at(operand, ())
                    if ov is None or ov not in temp_set or buffer_count.get(ov.buffer, 0) > 1:
                        continue
                    if ranges[ov][1] != i or ov not in freed_sets[i]:
                        continue
                    if ov.instruction is not operand or not v.instruction.info.shares_operand_buffer:
                        continue
                    if not may_share(ov, v):
                        continue
                    freed_sets[i].remove(ov)
                    event[ov][1] = clock
                    clock += 1
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
        for v in freed_sets[i]:
            event[v][1] = clock
            clock += 1
    for g in groups:
        g.start = min(s for s, _ in g.intervals)
        g.end = max(e for _, e in g.intervals)
        g.events = [tuple(event[v]) for v in g.values]

    # The no-fragmentation figure: bytes live per step, each group counted once per step.
    delta = [0] * (end_step + 2)
    for g in groups:
        for s, e in _merge(g.intervals):
            delta[s] += g.size
            delta[e + 1] -= g.size
    timeline, cur = [], 0
    for t in range(end_step + 1):
        cur += delta[t]
        timeline.append(cur)
    max_live = max(timeline) if timeline else 0
    max_live_at = timeline.index(max_live) if timeline else 0

    best = None
    # XLA tries both orders and keeps the smaller heap (ChooseBestHeapAlgorithm). Durations
    # are in event time; spatial looks at the first value's own interval, temporal at the
    # group's whole span.
    for name, key in (("spatial", lambda g: (-g.size, g.events[0][0] - g.events[0][1], g.first.id)),
                      ("temporal", lambda g: (min(a for a, _ in g.events) - max(b for _, b in g.events),
                                              -g.size, g.first.id))):
        size, offsets = _best_fit(sorted(groups, key=key), alignment)
        if best is None or size < best[0]:
            best = (size, offsets, name)
    size, group_offsets, strategy = best if best else (0, {}, "spatial")
    offsets = {v: group_offsets[id(g)] for g in groups for v in g.values}
    return Heap(size, max_live, max_live_at, timeline, offsets, strategy)


def _merge(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


class _TimeIndex:
    """Placed intervals, found by overlap in O(log T + found) (T: the number of steps).

    Two segment trees over the steps: `cover` keeps each interval at the nodes of its
    canonical decomposition (the nodes on one leaf's path to the root hold the intervals
    containing that step, each once); `starts` keeps it at every ancestor of its start's
    leaf. An interval overlapping `[a, b]` either contains `a` or starts in `(a, b]`."""

    __slots__ = ("leaves", "cover", "starts")

    def __init__(self, steps: int):
        leaves = 1
        while leaves < steps + 1:
            leaves *= 2
        self.leaves = leaves
        self.cover: dict[int, list[int]] = {}
        self.starts: dict[int, list[int]] = {}

    def add(self, item: int, s: int, e: int) -> None:
        cover, lo, hi = self.cover, s + self.leaves, e + self.leaves + 1
        while lo < hi:
            if lo & 1:
                cover.setdefault(lo, []).append(item)
                lo += 1
            if hi & 1:
                hi -= 1
                cover.setdefault(hi, []).append(item)
            lo >>= 1
            hi >>= 1
        starts, node = self.starts, s + self.leaves
        while node:
            starts.setdefault(node, []).append(item)
            node >>= 1

    def overlapping(self, a: int, b: int, out: set[int]) -> None:
        """Add to `out` every item whose interval meets `[a, b]`."""
        cover, node = self.cover, a + self.leaves
        while node:
            found = cover.get(node)
            if found:
                out.update(found)
            node >>= 1
        starts, lo, hi = self.starts, a + 1 + self.leaves, b + 1 + self.leaves
        while lo < hi:
            if lo & 1:
                found = starts.get(lo)
                if found:
                    out.update(found)
                lo += 1
            if hi & 1:
                hi -= 1
                found = starts.get(hi)
                if found:
                    out.update(found)
            lo >>= 1
            hi >>= 1


_SHIFT = 64
_MASK = (1 << _SHIFT) - 1


def _best_fit(groups: list[_Group], alignment: int) -> tuple[int, dict[int, int]]:
    """GlobalDecreasingSizeBestFitHeap: place each group, in order, in the smallest gap (over
    its whole lifetime) that fits it, lowest offset among equals; else above everything.

    The groups placed so far are found by time overlap through `_TimeIndex` (as XLA keeps its
    chunks in an interval tree), not by scanning all of them."""
    offsets: dict[int, int] = {}
    if not groups:
        return 0, offsets
    index = _TimeIndex(max(g.end for g in groups) + 1)
    placed: list[int] = []  # offset << _SHIFT | aligned end
    heap_size = 0
    for g in groups:
        ivs = _merge(g.intervals)
        near: set[int] = set()
        for s, e in ivs:
            index.overlapping(s, e, near)
        # Occupied [offset, aligned end) ranges, in (offset, end) order: one int each sorts
        # much faster than tuples.
        used = sorted(map(placed.__getitem__, near))
        best_off, best_gap = None, None
        cursor = 0
        size = g.size
        for key in used:
            off, aend = key >> _SHIFT, key & _MASK
            if off > cursor:
                gap = off - cursor
                if gap >= size and (best_gap is None or gap < best_gap):
                    best_off, best_gap = cursor, gap
            if aend > cursor:
                cursor = aend
        if best_off is None:
            best_off = cursor
        offsets[id(g)] = best_off
        n = len(placed)
        placed.append((best_off << _SHIFT) | _align(best_off + size, alignment))
        for s, e in ivs:
            index.add(n, s, e)
        heap_size = max(heap_size, best_off + size)
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
