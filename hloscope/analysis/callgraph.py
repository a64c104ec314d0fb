"""The call graph: which computations run, in what order, how often, and under what.

XLA runs a called computation in one of two ways (its call contexts, from the opcode table's
`OpInfo.calls_kind`): as steps of the schedule (`runs_callees`: a while's condition and body,
a call's callee, a conditional's branches, an async start's wrapped computation), or inside
the op that calls it (a fusion's computation, a reducer). The memory analyses follow the first
kind only (`scheduled_computations`, `scheduled_callees`, `callees_first`); counting
collectives and the cost follow every call that can run one or the other
(`running_graph`), since TPU puts collectives inside fusions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..ir.module import Computation, Instruction, Module
from ..ir.opcodes import info as opinfo
from ..ir.opcodes import spellings
from .facts import PLAIN, Facts


def loop_parts(inst: Instruction) -> tuple[Computation | None, Computation | None]:
    """A loop's (condition, body), None for one the module does not have."""
    module = inst.computation.module if inst.computation is not None else None
    if module is None:
        return None, None
    attributes = inst.attributes
    parts = []
    for key in ("condition", "body"):
        names = attributes.decoded(key)
        parts.append(module.callee(names[0]) if names else None)
    return parts[0], parts[1]


# ─── trip counts ─────────────────────────────────────────────────────────────────────


def trip_count(loop: Instruction, callers: Callable[[Computation], list] | None = None) -> int | None:
    """How many times a while loop runs its body: the `known_trip_count` XLA recorded in its
    backend_config, else what `inferred_trip_count` finds; None when neither says."""
    known = loop.known_trip_count
    return known if known is not None else inferred_trip_count(loop, callers)


def inferred_trip_count(loop: Instruction, callers: Callable[[Computation], list] | None = None) -> int | None:
    """A while loop's trip count found the way XLA's while-loop analysis finds it
    (ComputeWhileLoopTripCount): the condition reads one element of the loop state (the
    counter, element K); the body's root is a tuple whose element K is the counter plus a
    constant; the init tuple's element K is a constant; the condition compares the counter
    with a constant (LT, LE, GT, GE, NE or EQ, either side). Copies, converts, bitcasts and
    the fusions or calls XLA wraps the compare or the add in are looked through, and so is
    the `call` XLA's CPU backend outlines a loop into (the init then comes from the caller:
    `callers(computation)` gives the instructions calling a computation). The count
    is then solved in closed form rather than by XLA's brute-force run of at most 128 steps,
    which gives the same answer wherever that run ends. None when the loop is not of this
    form, never ends, or its counter would overflow its type."""
    cond, body = loop_parts(loop)
    if cond is None or body is None or not loop.operands:
        return None
    try:
        index = _counter_index(cond)
        if index is None:
            return None
        test = _scalar(cond.root, _Frame(cond.parameters[0], index))
        root = body.root
        if not isinstance(test, _Compare) or root.opcode != "tuple":
            return None
        update = _scalar(root.operands[index], _Frame(body.parameters[0], index))
        init = _element(loop.operands[0], index, _Frame(None, index, callers=callers))
    except (_NotScalar, IndexError, AttributeError, TypeError, RecursionError):
        return None
    if not isinstance(update, _Linear) or update.a != 1 or not isinstance(init, int):
        return None
    step = update.b
    # left − right = a·counter + b; after n trips the counter is init + n·step.
    left, right = _linear(test.left), _linear(test.right)
    a, b = left.a - right.a, left.b - right.b
    trips = _solve(test.direction, a * step, a * init + b)
    if trips is None:
        return None
    bits = _INT_BITS.get(cond.root.operands[0].shape.element_type if cond.root.operands else "", 64)
    last = init + trips * step
    if not -(1 << (bits - 1)) <= last < (1 << bits):  # wrapped around: XLA's answer differs
        return None
    return trips


def _solve(direction: str, p: int, q: int) -> int | None:
    """The first n ≥ 0 at which `p·n + q DIRECTION 0` no longer holds; None when never."""
    if direction in ("GT", "GE"):
        p, q, direction = -p, -q, "LT" if direction == "GT" else "LE"
    if direction == "LT":
        if q >= 0:
            return 0
        return None if p <= 0 else (-q + p - 1) // p
    if direction == "LE":
        if q > 0:
            return 0
        return None if p <= 0 else (-q) // p + 1
    if direction == "NE":
        if q == 0:
            return 0
        return None if p == 0 or (-q) % p or (-q) // p < 0 else (-q) // p
    if direction == "EQ":
        return 0 if q != 0 else (1 if p != 0 else None)
    return None


_INT_BITS = {"s8": 8, "s16": 16, "s32": 32, "s64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


class _NotScalar(Exception):
    """The value is not an integer scalar this evaluation can follow."""


class _Linear:
    """a · counter + b."""

    __slots__ = ("a", "b")

    def __init__(self, a: int, b: int):
        self.a, self.b = a, b


class _Compare:
    __slots__ = ("direction", "left", "right")

    def __init__(self, direction: str, left, right):
        self.direction, self.left, self.right = direction, left, right


class _Frame:
    """Where the counter comes from: element `index` of `state` (the loop computation's
    parameter), and what the parameters of a fused or called computation stand for."""

    __slots__ = ("state", "index", "bindings", "depth", "callers")

    def __init__(self, state: Instruction | None, index: int, bindings: dict | None = None, depth: int = 0,
                 callers=None):
        self.state, self.index, self.bindings, self.depth = state, index, bindings or {}, depth
        self.callers = callers

    def deeper(self, bindings: dict | None = None) -> "_Frame":
        if self.depth >= 32:
            raise _NotScalar
        return _Frame(None, self.index, bindings, self.depth + 1, self.callers)


def _argument(param: Instruction, frame: _Frame) -> Instruction:
    """What the one `call` of a parameter's computation passes for it."""
    comp = param.computation
    if frame.callers is None or comp is None:
        raise _NotScalar
    calls = frame.callers(comp)
    if len(calls) != 1 or calls[0].opcode != "call":
        raise _NotScalar
    return calls[0].operands[param.parameter_number or 0]


def _element(inst: Instruction, index: int, frame: _Frame):
    """`_scalar` of element `index` of a tuple-shaped value."""
    for _ in range(64):
        if inst.opcode == "tuple":
            return _scalar(inst.operands[index], frame)
        if inst.opcode == "copy":
            inst = inst.operands[0]
        elif inst.opcode == "parameter" and id(inst) not in frame.bindings:
            inst, frame = _argument(inst, frame), frame.deeper()
        else:
            raise _NotScalar
    raise _NotScalar


def _linear(v) -> _Linear:
    if isinstance(v, _Linear):
        return v
    if isinstance(v, int):
        return _Linear(0, v)
    raise _NotScalar


def _counter_index(cond: Computation) -> int | None:
    """The one element of the loop state the condition reads (XLA's unique GTE dependence)."""
    state = cond.parameters[0] if cond.parameters else None
    seen: set[int] = set()
    indices: set[int] = set()
    stack = [cond.root]
    while stack:
        inst = stack.pop()
        if id(inst) in seen:
            continue
        seen.add(id(inst))
        if inst.opcode == "get-tuple-element" and inst.operands and inst.operands[0] is state:
            indices.add(inst.attributes.decoded("index"))
            continue
        if inst is state:
            return None  # the whole state is read, not one element of it
        stack.extend(inst.operands)
    return indices.pop() if len(indices) == 1 else None


def _scalar(inst: Instruction, frame: _Frame):
    """An integer, a _Linear of the counter, or a _Compare; raises _NotScalar otherwise."""
    op = inst.opcode
    shape = inst.shape
    if shape.is_tuple or shape.dimensions:
        raise _NotScalar
    if op == "constant":
        text = (inst.literal or "").strip().strip("{}").strip()
        if text in ("true", "false"):
            return int(text == "true")
        try:
            return int(text)
        except ValueError:
            raise _NotScalar from None
    if op == "parameter":
        if id(inst) in frame.bindings:
            return frame.bindings[id(inst)]
        if frame.state is None and not frame.bindings:
            return _scalar(_argument(inst, frame), frame.deeper())
        raise _NotScalar
    if op == "get-tuple-element":
        source = inst.operands[0]
        index = inst.attributes.decoded("index")
        if frame.state is not None and source is frame.state:
            if index == frame.index:
                return _Linear(1, 0)
            raise _NotScalar
        return _element(source, index, frame)
    if opinfo(op).keeps_elements:  # a scalar's one element
        if op == "convert" and shape.element_type not in _INT_BITS:
            raise _NotScalar
        return _scalar(inst.operands[0], frame)
    if op in ("fusion", "call"):
        callee = inst.called_computations
        if len(callee) != 1:
            raise _NotScalar
        comp = callee[0]
        bindings = {}
        for param in comp.parameters:
            try:
                bindings[id(param)] = _scalar(inst.operands[param.parameter_number or 0], frame)
            except _NotScalar:
                continue  # a parameter the result may not depend on
        return _scalar(comp.root, frame.deeper(bindings))
    values = [_scalar(o, frame) for o in inst.operands]
    if op == "compare" and len(values) == 2:
        return _Compare(inst.attributes.decoded("direction"), values[0], values[1])
    if any(isinstance(v, _Compare) for v in values):
        raise _NotScalar
    if op in ("add", "subtract") and len(values) == 2:
        x, y = _linear(values[0]), _linear(values[1])
        sign = 1 if op == "add" else -1
        result = _Linear(x.a + sign * y.a, x.b + sign * y.b)
    elif op == "multiply" and len(values) == 2 and any(isinstance(v, int) for v in values):
        k, other = (values[0], values[1]) if isinstance(values[0], int) else (values[1], values[0])
        result = _Linear(k * _linear(other).a, k * _linear(other).b)
    elif op == "negate" and len(values) == 1:
        x = _linear(values[0])
        result = _Linear(-x.a, -x.b)
    else:
        raise _NotScalar
    return result.b if result.a == 0 else result


def scheduled_callees(inst: Instruction, xla_order: bool = False) -> list[Computation]:
    """The computations `inst` runs as steps of the schedule ([] for most instructions): a
    call's callee, a conditional's branches, an async start's wrapped computation, a loop's
    condition then body. That is the order of XLA's flattened timeline (HloLiveRange); with
    `xla_order`, a loop's body comes first, as in XLA's `called_computations()`, which
    numbers values (the two orders are both XLA's, for different things)."""
    op = opinfo(inst.opcode)
    if not op.runs_callees:
        return []
    kind = op.calls_kind
    if kind == "loop" and not xla_order:
        return [c for c in loop_parts(inst) if c is not None]
    called = inst.called_computations
    return called[:1] if kind == "async" else called


def scheduled_computations(module: Module) -> Iterator[Computation]:
    """The computations the schedule runs, each once, in the order the flattened timeline
    first enters them: the entry, then depth first through control flow and async starts
    (`scheduled_callees`); not fused or applied computations, which stay unread. Each is
    yielded before it is read: a caller may look at its unread text first."""
    seen: set[str] = set()
    stack: list[Iterator[Computation]] = [iter((module.entry,))]
    while stack:
        for comp in stack[-1]:
            if comp.name not in seen:
                seen.add(comp.name)
                yield comp
                stack.append(_scheduled_callees_of(comp))
                break
        else:
            stack.pop()


def _scheduled_callees_of(comp: Computation) -> Iterator[Computation]:
    for inst in comp.instructions:
        if opinfo(inst.opcode).runs_callees:
            yield from scheduled_callees(inst)


def scheduled_instructions(module: Module) -> Iterator[Instruction]:
    """The instructions of `scheduled_computations`, computation by computation."""
    for comp in scheduled_computations(module):
        yield from comp.instructions


def callees_first(module: Module) -> list[Computation]:
    """The computations the schedule runs, each after every one it runs (XLA's
    MakeComputationPostOrder over control flow, callees in `xla_order`)."""
    order: list[Computation] = []
    seen: set[str] = set()

    def visit(comp: Computation) -> None:
        if comp.name in seen:
            return
        seen.add(comp.name)
        for inst in comp.instructions:
            if opinfo(inst.opcode).runs_callees:
                for callee in scheduled_callees(inst, xla_order=True):
                    visit(callee)
        order.append(comp)

    visit(module.entry)
    return order


@dataclass(frozen=True, slots=True)
class Runs:
    """How often a computation runs per run of the entry computation."""

    times: int
    """Each call's runs summed, a loop's body × its trip count (a loop whose trip count is
    unknown counted as one trip)."""
    known: bool
    """No loop of unknown trip count is on any call path to it: `times` is exact."""

    @property
    def exact(self) -> int | None:
        """`times`, or None when it is not known."""
        return self.times if self.known else None


NEVER = Runs(0, True)


# Calls that can run a schedule's computations or reach a collective: not to_apply of a
# reducer, sort or map (thread-local callees never hold one, and the schedule never runs
# them), but a `call` (whose callee is its to_apply, so it is looked for by opcode), fusions,
# loops, conditionals, async wrappers and custom-calls.
_CALLING_ATTRIBUTES = ("calls=", "body=", "condition=", "branch_computations=", "true_computation=",
                       "false_computation=", "called_computations=")
_TO_APPLY_CALLS = tuple(sorted(spellings(calls_kind="call")))


def may_call_what_runs(comp: Computation, facts: Facts = PLAIN) -> bool:
    """False for a body that certainly calls nothing the schedule runs and nothing a
    collective could be in (it calls reducers, comparators and maps at most)."""
    return facts.writes_any(comp, _CALLING_ATTRIBUTES) or facts.holds_any(comp, _TO_APPLY_CALLS)


def running_graph(module: Module, facts: Facts = PLAIN) -> "CallGraph":
    """The calls that run the schedule's computations and those collectives can be in: their
    `runs` and trip counts are the whole graph's. Bodies that call only thread-local
    computations (`may_call_what_runs`) are not walked."""
    return CallGraph(module, reads=lambda comp: may_call_what_runs(comp, facts), facts=facts)


class CallGraph:
    """Every call of a module, of every kind, and how often each computation runs per run of
    the entry (`runs`: the one run counter, which counting collectives and cost share).

    Keyed by Computation objects, never by names: XLA renames a computation whose name
    repeats (`%f.0` after `%f` becomes `f.1`), and the text's attributes still call it by the
    written name. `reads(comp)` False says a computation's calls need not be known (its body
    is then not walked): counting collectives skips bodies that call nothing a collective can
    be in. None walks all."""

    def __init__(self, module: Module, reads: Callable[[Computation], bool] | None = None,
                 facts: Facts = PLAIN):
        self.module = module
        # callee → [(calling instruction, times one run of the instruction runs the callee)]
        self._callers: dict[Computation, list[tuple[Instruction, int | None]]] = defaultdict(list)
        self._trips: dict[Instruction, int | None] = {}
        loops: list[Instruction] = []
        calls_nothing: dict[int, bool] = {}  # by `Facts.same_but_metadata`: alike ones call alike
        for comp in module.computations:
            original = facts.same_but_metadata(comp)
            if original is not comp:
                quiet = calls_nothing.get(id(original))
                if quiet is None:
                    quiet = calls_nothing[id(original)] = not any(
                        inst.called_computation_names for inst in original.instructions)
                if quiet:
                    continue  # a copy not made yet, and nothing to find in it
            if reads is not None and not reads(comp):
                continue
            for inst in comp.instructions:
                names = inst.called_computation_names
                if not names:
                    continue
                if opinfo(inst.opcode).is_loop:
                    loops.append(inst)
                for name in dict.fromkeys(names):
                    callee = module.callee(name)
                    if callee is not None:
                        self._callers[callee].append((inst, 1))
        # A loop runs its body once per trip and its condition once more; every other callee
        # runs once per call. Found once every call is known: a loop's init can come from
        # the call its computation was outlined into.
        for loop in loops:
            trips = self._trips[loop] = trip_count(loop, self.calling)
            per_call: dict[Computation, int | None] = {}
            for key, extra in (("body", 0), ("condition", 1)):
                for name in loop.attributes.decoded(key) or ():
                    callee = module.callee(name)
                    if callee is not None:
                        per_call[callee] = None if trips is None else trips + extra
            for callee, times in per_call.items():
                self._callers[callee] = [(inst, times if inst is loop else t) for inst, t in self._callers[callee]]
        self._runs: dict[Computation, Runs] = {}
        self._loops: dict[Computation, tuple[str, ...]] = {}
        self._reachable: dict[Computation, bool] = {}
        self._async: dict[Computation, bool] = {}

    def callers(self, comp: Computation) -> list[tuple[Instruction, int | None]]:
        """(calling instruction, times one run of it runs `comp`) for every call."""
        return self._callers.get(comp, [])

    def calling(self, comp: Computation) -> list[Instruction]:
        """The instructions that call `comp`."""
        return [inst for inst, _ in self._callers.get(comp, ())]

    def trip_count(self, loop: Instruction) -> int | None:
        """How many times `loop` runs its body (`trip_count`, its init followed into callers)."""
        if loop in self._trips:
            return self._trips[loop]
        return trip_count(loop, self.calling)

    def runs(self, comp: Computation, _stack: frozenset = frozenset()) -> Runs:
        """How often `comp` runs per run of the entry: the sum over its calls of how often
        the calling computation runs × how often the call runs it; 0 when unreached."""
        found = self._runs.get(comp)
        if found is not None:
            return found
        if comp is self.module.entry:
            found = Runs(1, True)
        elif comp in _stack:  # recursion, which valid HLO never has: do not loop forever
            return NEVER
        else:
            times, known = 0, True
            for inst, per_run in self._callers.get(comp, ()):
                caller = inst.computation
                if caller is None:
                    continue
                r = self.runs(caller, _stack | {comp})
                known = known and r.known and (per_run is not None or not r.times)
                times += r.times * (1 if per_run is None else per_run)
            found = Runs(times, known)
        self._runs[comp] = found
        return found

    def reachable(self, comp: Computation, _stack: frozenset = frozenset()) -> bool:
        """Some chain of calls from the entry reaches `comp`."""
        if comp in self._reachable:
            return self._reachable[comp]
        if comp is self.module.entry:
            ok = True
        elif comp in _stack:
            return False
        else:
            ok = any(inst.computation is not None and self.reachable(inst.computation, _stack | {comp})
                     for inst, _ in self._callers.get(comp, ()))
        self._reachable[comp] = ok
        return ok

    def loops(self, comp: Computation, _stack: frozenset = frozenset()) -> tuple[str, ...]:
        """Loop instructions on any call path from the entry, outermost first."""
        if comp in self._loops:
            return self._loops[comp]
        if comp in _stack:
            return ()
        out: dict[str, None] = {}
        for inst, _ in self._callers.get(comp, ()):
            if inst.computation is not None:
                for name in self.loops(inst.computation, _stack | {comp}):
                    out[name] = None
            if opinfo(inst.opcode).is_loop:
                out[inst.name] = None
        self._loops[comp] = tuple(out)
        return self._loops[comp]

    def async_callers(self, comp: Computation) -> list[Instruction]:
        """The async starts that call `comp`: it runs inside their async wrapper
        (printing sugar with its callee printed included)."""
        return [inst for inst, _ in self._callers.get(comp, ()) if inst.info.async_role == "start"]

    def runs_asynchronously(self, comp: Computation, _stack: frozenset = frozenset()) -> bool:
        """An async start calls `comp`, or a computation that runs asynchronously does
        (a fusion in the computation an `async-start` wraps: `fusion-start` printed as such)."""
        if comp in self._async:
            return self._async[comp]
        if comp in _stack:
            return False
        found = any(inst.info.async_role == "start"
                    or (inst.computation is not None
                        and self.runs_asynchronously(inst.computation, _stack | {comp}))
                    for inst, _ in self._callers.get(comp, ()))
        self._async[comp] = found
        return found
