"""Collectives analysis: every collective of a module, its kind, groups, bytes and how often it runs.

What counts as one collective (XLA's own view, as its C++ parser builds the module):

- a plain collective instruction (`all-gather`, `all-reduce`, ...), in any computation,
  fused computations included (TPU puts its collectives inside fusions);
- an asynchronous pair counts once, at its start: `all-gather-start`/`-done` (native async
  opcodes) and the sugar `reduce-scatter-start`/`-done` (an `async-start` wrapping a
  `reduce-scatter`); the `-done` (and any `-update`) is not counted;
- an explicit `async-start(...), calls=%wrapped` is not counted itself: the collective
  inside `%wrapped` is, once, and is marked asynchronous (so is one in a fusion there: the
  dumps of the newest jax's GPU steps wrap `fusion`s of all-reduces so, which `as_text()`
  prints as `fusion-start`).

`send`/`recv` are point-to-point transfers, reported apart (`point_to_point`), counted at
`send`/`recv`, not at their `-done`.

Bytes are the per-device size of the collective's RESULT, summed over array leaves (tuple
pointer tables excluded): for a plain op its own shape; for an asynchronous start, the shape
of its matching `-done`, which is the result of the operation it runs (the gathered output
of an `all-gather-start`, the scattered output of a `reduce-scatter-start`), not the start's
(operand, result, context) tuple.

How often a collective runs per execution of the entry computation (`dynamic_count`):
the entry runs once; a computation runs as often as the sum, over the instructions that call
it, of (how often the caller's computation runs) × (how often that instruction runs it): a
`while` runs its body `known_trip_count` times and its condition `known_trip_count + 1`
times; every other caller (call, fusion, async-start, conditional branch, to_apply) once.
A conditional's branches are each counted as if taken (an upper bound). A `while` without
`known_trip_count` has the trip count XLA's while-loop analysis would find from its counter
(`callgraph.trip_count`: a constant init, a constant step, a constant bound); a loop of no
such form makes everything under it unknown: `dynamic_count` is None and
`unknown_trip_count` is True; nothing is guessed. A computation no instruction reaches from
the entry runs 0 times (`reachable` is False).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..encode import Encoded, as_json, encode, extra
from ..ir.opcodes import COLLECTIVE_KINDS, POINT_TO_POINT_KINDS
from .callgraph import CallGraph, running_graph
from .facts import PLAIN, Facts

GROUP_KEYS = ("kind", "computation", "op_name", "source")
"""What `CollectivesResult.group_by` (and `count-collectives --by`) can group instances by."""


@dataclass(frozen=True, slots=True)
class Collective(Encoded):
    """One collective (or send/recv) instruction of a module."""

    kind: str
    """`all-gather`, `all-reduce`, ..., or `send`/`recv` for point-to-point transfers."""
    instruction: str
    """Name of the counted instruction (the start of an async pair), without `%`."""
    opcode: str
    """Its opcode as written (`all-gather-start`, `reduce-scatter-start`, `all-gather`, ...)."""
    computation: str
    """The computation it sits in (a fused or async-wrapped computation included)."""
    bytes: int
    """Per-device result bytes (the `-done`'s shape for an async start), array leaves summed."""
    is_async: bool
    """Started asynchronously: a native or sugared start, or inside an `async-start`'s callee."""
    group_size: int | None
    """Participants per replica group; None when the groups are `{}` or absent."""
    num_groups: int | None
    """Number of replica groups; None when the groups are `{}` or absent."""
    group_form: str | None
    """`explicit`, `iota`, `mesh` or `empty` (the replica_groups form), None when absent."""
    channel_id: int | None
    """`channel_id`, when present."""
    dynamic_count: int | None = field(metadata=as_json(after="bytes"))
    """Executions per run of the entry computation (× enclosing while trip counts);
    None when an enclosing while has no known trip count."""
    unknown_trip_count: bool = field(metadata=as_json(after="dynamic_bytes"))
    """An enclosing while loop has no `known_trip_count`."""
    reachable: bool = field(metadata=as_json(after="unknown_trip_count"))
    """Some call chain from the entry computation reaches its computation."""
    loops: tuple[str, ...]
    """Names of the while instructions it runs under, outermost first (over every call path)."""
    op_name: str | None
    """`metadata.op_name` (of the start, or of the `-done` when the start has none)."""
    source: str | None
    """`file:line` from the metadata, when present."""
    json_extra = (extra("dynamic_bytes", after="dynamic_count"),)

    @property
    def dynamic_bytes(self) -> int | None:
        """`bytes` × `dynamic_count`, None when the count is unknown."""
        return None if self.dynamic_count is None else self.bytes * self.dynamic_count


@dataclass(frozen=True, slots=True)
class Tally(Encoded):
    """Counts and bytes of a set of collectives (one kind, or one group of `group_by`)."""

    count: int = 0
    """Static count: instructions in the text (an async pair once)."""
    dynamic_count: int | None = 0
    """Executions per run (× trip counts); None when any member's count is unknown."""
    bytes: int = 0
    """Sum of per-device result bytes over the static instances."""
    dynamic_bytes: int | None = 0
    """Sum of bytes × dynamic count; None when any member's count is unknown."""
    async_count: int = 0
    """How many of the static instances are asynchronous."""
    group_sizes: tuple[int, ...] = ()
    """Distinct replica-group sizes, ascending."""
    unknown_trip_count: bool = False
    """Some member runs under a while loop with no known trip count."""

    @classmethod
    def of(cls, items: Iterable[Collective]) -> "Tally":
        items = list(items)
        unknown = any(c.dynamic_count is None for c in items)
        return cls(
            count=len(items),
            dynamic_count=None if unknown else sum(c.dynamic_count for c in items),  # type: ignore[misc]
            bytes=sum(c.bytes for c in items),
            dynamic_bytes=None if unknown else sum(c.dynamic_bytes for c in items),  # type: ignore[misc]
            async_count=sum(c.is_async for c in items),
            group_sizes=tuple(sorted({c.group_size for c in items if c.group_size is not None})),
            unknown_trip_count=unknown,
        )


@dataclass(frozen=True, slots=True)
class CollectivesResult(Encoded):
    """The collectives of one module: every instance, and tallies per kind."""

    module: str = field(metadata=as_json(key="name"))
    """The module's name."""
    instances: tuple[Collective, ...] = field(metadata=as_json(after="total"))
    """Collectives and send/recv, in text order of computations and instructions."""
    by_kind: dict[str, Tally] = field(hash=False, metadata=as_json(key="collectives"))
    """Every kind of `COLLECTIVE_KINDS`, in that order (zero tallies included)."""
    point_to_point: dict[str, Tally] = field(hash=False)
    """`send` and `recv`."""
    total: Tally = field(default_factory=Tally)
    """All collectives together (send/recv excluded)."""

    def count(self, kind: str, dynamic: bool = False) -> int | None:
        """Static (or dynamic) count of one kind; `total` for every collective together."""
        tally = self.tally(kind)
        return tally.dynamic_count if dynamic else tally.count

    def tally(self, kind: str) -> Tally:
        if kind == "total":
            return self.total
        if kind in self.by_kind:
            return self.by_kind[kind]
        if kind in self.point_to_point:
            return self.point_to_point[kind]
        raise KeyError(f"unknown collective kind {kind!r}; known: {', '.join(KNOWN_KINDS)}")

    @property
    def collectives(self) -> tuple[Collective, ...]:
        """The instances that are collectives (send/recv excluded)."""
        return tuple(c for c in self.instances if c.kind in COLLECTIVE_KINDS)

    def group_by(self, key: str) -> list[tuple[str | None, str, Tally]]:
        """`(key value, kind, tally)` rows, for key one of `GROUP_KEYS`; busiest first."""
        if key not in GROUP_KEYS:
            raise ValueError(f"cannot group by {key!r}; choose one of {', '.join(GROUP_KEYS)}")
        groups: dict[tuple[str | None, str], list[Collective]] = defaultdict(list)
        for c in self.instances:
            groups[(getattr(c, key), c.kind)].append(c)
        rows = [(k, kind, Tally.of(items)) for (k, kind), items in groups.items()]
        order = {kind: i for i, kind in enumerate(KNOWN_KINDS)}
        rows.sort(key=lambda r: (-r[2].count, order.get(r[1], 99), str(r[0])))
        return rows

    def to_dict(self, by: str | None = None) -> dict[str, Any]:
        """The JSON object; grouped `by` one of GROUP_KEYS other than `kind`, the groups too."""
        if by is None or by == "kind":
            return encode(self)
        groups = [{by: k, "kind": kind, **t.to_dict()} for k, kind, t in self.group_by(by)]
        return encode(self, {"by": by, "groups": groups}, after="total")


KNOWN_KINDS = COLLECTIVE_KINDS + POINT_TO_POINT_KINDS


# ─── the analysis ─────────────────────────────────────────────────────────────────────


def _done_of(start):
    """The `-done` that completes an async start (following `-update`s), or None."""
    seen = set()
    inst = start
    while inst is not None and id(inst) not in seen:
        seen.add(id(inst))
        nxt = None
        for user in inst.users:
            role = user.info.async_role
            if role == "done":
                return user
            if role == "update" and nxt is None:
                nxt = user
        inst = nxt
    return None


def _result_bytes(inst) -> int:
    if inst.info.async_role == "start":
        done = _done_of(inst)
        if done is not None:
            return done.shape.total_byte_size
    return inst.shape.total_byte_size


def _groups(inst):
    rg = inst.attributes.decoded("replica_groups")
    if rg is None:
        return None, None, None
    return rg.group_size, rg.num_groups, rg.form


# Skipping unread bodies (hloscope.load(..., lazy=True)): every collective spelling contains
# its kind's name, so a body whose text names no kind holds no collective.
_KIND_NAMES = COLLECTIVE_KINDS + POINT_TO_POINT_KINDS


def _may_hold_collective(comp, holds: dict[int, bool], facts: Facts) -> bool:
    """False for a body that certainly holds no collective: its text names no kind, or it is
    alike one that holds none (`Facts.same_but_metadata`; `holds`, by that one)."""
    original = facts.same_but_metadata(comp)
    if original is comp:
        return facts.writes_any(comp, _KIND_NAMES)
    found = holds.get(id(original))
    if found is None:
        found = holds[id(original)] = any(inst.info.collective is not None for inst in original.instructions)
    return found


def analyze_collectives(module, facts: Facts = PLAIN, graph: CallGraph | None = None) -> CollectivesResult:
    """Every collective of `module` (see this module's docstring for what counts, and how).
    `graph`: the module's `running_graph`, when already found."""
    graph = running_graph(module, facts) if graph is None else graph
    found: list[Collective] = []
    holds: dict[int, bool] = {}  # by original
    for comp in module.computations:
        if not _may_hold_collective(comp, holds, facts):
            continue  # an unread body that certainly holds none
        # Inside an async-start's wrapped computation: asynchronous. If the start is itself
        # a counted collective (sugar printed with its callee), the callee's op is not recounted.
        starts = graph.async_callers(comp)
        in_async = bool(starts) or graph.runs_asynchronously(comp)
        counted_by_start = any(s.info.collective for s in starts)
        comp_runs = graph.runs(comp).exact
        reachable = graph.reachable(comp)
        loops = graph.loops(comp)
        for inst in comp.instructions:
            op = inst.info
            kind = op.collective
            if kind is None or op.async_role in ("done", "update"):
                continue
            if counted_by_start and comp.root is inst:
                continue
            is_async = in_async or op.async_role == "start"
            size, n_groups, form = _groups(inst)
            op_name, source = inst.op_name, inst.source
            if op_name is None and op.async_role == "start":
                done = _done_of(inst)
                if done is not None:
                    op_name, source = done.op_name, done.source
            dyn = comp_runs
            found.append(
                Collective(
                    kind=kind,
                    instruction=inst.name,
                    opcode=inst.opcode,
                    computation=comp.name,
                    bytes=_result_bytes(inst),
                    is_async=is_async,
                    group_size=size,
                    num_groups=n_groups,
                    group_form=form,
                    channel_id=inst.attributes.decoded("channel_id"),
                    dynamic_count=dyn,
                    unknown_trip_count=dyn is None,
                    reachable=reachable,
                    loops=loops,
                    op_name=op_name,
                    source=source,
                )
            )
    instances = tuple(found)
    by_kind = {k: Tally.of(c for c in instances if c.kind == k) for k in COLLECTIVE_KINDS}
    p2p = {k: Tally.of(c for c in instances if c.kind == k) for k in POINT_TO_POINT_KINDS}
    total = Tally.of(c for c in instances if c.kind in COLLECTIVE_KINDS)
    return CollectivesResult(module=module.name, instances=instances, by_kind=by_kind,
                             point_to_point=p2p, total=total)


def collectives(modules) -> list[CollectivesResult]:
    """`analyze_collectives` of each module."""
    return [analyze_collectives(m) for m in modules]


__all__ = ["Collective", "CollectivesResult", "GROUP_KEYS", "KNOWN_KINDS", "Tally", "analyze_collectives",
           "collectives"]
