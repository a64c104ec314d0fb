"""Live ranges over the flattened schedule (`schedule`), as XLA's HloLiveRange computes them:
inclusive `[start, end]` step intervals, one per value."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ..ir.module import Computation, Instruction
from ..ir.opcodes import info as opinfo
from .callgraph import loop_parts
from .dataflow import AT_DEFINITION, Dataflow, Value
from .schedule import Schedule, flatten_schedule


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
