"""Two compilations of one program side by side: the temp-memory gap explained by named causes.

The gap in `temp_bytes` (XLA's packed temp allocation) splits exactly into:

    temp = (bytes live at the peak step) + (packing loss: temp − bytes live at the peak)

and the bytes live at the peak split by role (analysis.roles). So

    Δtemp = Σ_role Δ(bytes of that role live at each side's peak) + Δ(packing loss)

with no remainder: each term is a cause, and the causes add up to the gap. Each role's cause
lists the instructions behind its largest buffers on both sides, matched across the two
modules by what survives recompilation (hloscope.analysis.match): the op_name with its
control-flow wrappers removed and the shape, then what is left by the op_name and source
line alone (the same op at another size), and for entry parameters the JAX pytree path.
The diff also puts the collectives and the held gathers of both sides next to each other,
and says where each peak is.

The causes, the sentence and the explanation read of each side only its `Brief`: per role,
the temp bytes at the peak, where they are held and the largest buffers; the held gathers'
count and bytes. A module's brief is worked out from its results; a snapshot (a side kept
as a small file, hloscope.snapshot) stores its own, cut to the largest buffers of each role,
so a check against a snapshot says what a check against the module says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..encode import Encoded, as_json, extra
from ..units import human_bytes, human_flops
from . import backends
from .collectives import COLLECTIVE_KINDS, CollectivesResult
from .cost import CostResult
from .explain import Explanation, explain
from .gathers import GathersResult
from .match import match_buffers
from .memory import MemoryAnalysis
from .roles import ROLES, RoleBuffer, RolesAtPeak

ROLE_WORDS = {
    "parameters": "parameters",
    "optimizer_state": "optimizer state",
    "inputs": "inputs",
    "gathered_parameters": "gathered (full-size) parameters",
    "gradients": "gradient buffers",
    "activations": "activations saved for the backward pass",
    "temporaries": "temporaries",
    "unknown": "buffers without metadata",
}


@dataclass(frozen=True)
class Place(Encoded):
    """Some of a role's temp bytes at the peak, by the place that holds them."""

    place: str | None
    """`RoleBuffer.held_in`: a collective's kind, `for all-reduce` (waiting for one), `loop`,
    or None (no place holds them)."""
    bytes: int
    instructions: int
    """Distinct instructions holding them (the elements of one combined collective once)."""


@dataclass(frozen=True)
class RoleAtPeak(Encoded):
    """One role's temp buffers live at a side's peak, as much as the diff reads of them."""

    role: str
    bytes: int
    """All of them (the side's `temp_by_role`)."""
    buffers: int
    """How many there are."""
    places: tuple[Place, ...]
    """Their bytes by place, each place where the largest buffer it holds ranks."""
    largest: tuple[RoleBuffer, ...]
    """The largest first: every one, or a snapshot's first `cut`."""

    @property
    def below_cut_bytes(self) -> int:
        """Bytes of the buffers `largest` leaves out (a snapshot's cut)."""
        return self.bytes - sum(r.bytes for r in self.largest)


def role_at_peak(role: str, rows, cut: int | None = None) -> RoleAtPeak:
    """The RoleAtPeak of `rows`, a role's temp buffers at the peak, largest first."""
    places: dict[str | None, list] = {}
    for r in rows:
        entry = places.setdefault(r.held_in, [0, set()])
        entry[0] += r.bytes
        entry[1].add(r.instruction.split("{", 1)[0])
    return RoleAtPeak(role, sum(r.bytes for r in rows), len(rows),
                      tuple(Place(p, n, len(names)) for p, (n, names) in places.items()),
                      tuple(rows if cut is None else rows[:cut]))


@dataclass(frozen=True)
class Brief(Encoded):
    """What the diff reads of a side beyond its memory figures, collectives and cost."""

    temp: dict[str, RoleAtPeak]
    """Role → its temp buffers at the peak (roles with none left out)."""
    held_gathers: int
    """How many all-gathers stay live from forward into backward (analysis.gathers)."""
    held_bytes: int
    held_bytes_at_peak: int
    cut: int | None = None
    """How many buffers of each role `temp` names (None: every one)."""


def side_brief(roles: RolesAtPeak, gathers: GathersResult, cut: int | None = None) -> Brief:
    """A side's Brief from its roles at the peak and its held gathers."""
    rows: dict[str, list] = {}
    for r in roles.buffers:
        if r.where == "temp":
            rows.setdefault(r.role, []).append(r)
    return Brief({role: role_at_peak(role, rows[role], cut) for role in ROLES if role in rows},
                 len(gathers.held), gathers.held_bytes, gathers.held_bytes_at_peak, cut)


@dataclass(frozen=True)
class Side:
    """What one module brings to the diff: its analyses' results."""

    memory: MemoryAnalysis
    roles: RolesAtPeak
    collectives: CollectivesResult
    gathers: GathersResult
    cost: CostResult | None = None
    """Its totals, and of its instructions those that recompute the most (`in_brief`)."""
    label: str = ""
    kept: Brief | None = None
    """A side cut short (a snapshot's, whose `roles` and `gathers` hold only their largest
    buffers) carries its Brief; None: worked out from `roles` and `gathers`."""

    def brief(self) -> Brief:
        """What the diff reads of this side (see Brief)."""
        return self.kept if self.kept is not None else side_brief(self.roles, self.gathers)


def _side_json(side: Side) -> dict[str, Any]:
    """A side in the diff's JSON: its memory summary, label and bytes at its peak by role."""
    return {**side.memory.to_dict(), "label": side.label, "by_role": dict(side.roles.by_role)}


def _held_json(side: Side) -> dict[str, Any]:
    k = side.brief()
    return {"count": k.held_gathers, "held_bytes": k.held_bytes, "held_bytes_at_peak": k.held_bytes_at_peak,
            "instructions": [h.instruction for h in side.gathers.held]}


@dataclass(frozen=True)
class Cause(Encoded):
    kind: str
    """`role` (bytes of one role live at the peak), `packing` (what packing adds to them in
    the temp allocation) or `backend` (what the backend's report adds to the allocation:
    TPU's libtpu counts its fragmentation once more)."""
    role: str | None
    bytes: int
    """B minus A."""
    a_bytes: int
    b_bytes: int
    description: str
    label: str | None = None
    """What the cause is called in a table: its role, else the backend's name for it
    (`packing`; `allocation slack` for libtpu's)."""
    instructions: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    """`{"a": [...], "b": [...]}`: the largest buffers of this role live at each side's peak
    (instruction, bytes, shape, op_name, source, and `matched`: the other side's buffer it
    matches, or None)."""


@dataclass(frozen=True)
class DiffResult(Encoded):
    a: Side = field(metadata=as_json(value=_side_json))
    b: Side = field(metadata=as_json(value=_side_json))
    summary: str
    causes: tuple[Cause, ...]
    """Largest first by size of the change; their bytes sum to `delta_temp_bytes`."""
    names: tuple[str, str] = field(default=("A", "B"), metadata=as_json(omit=True))
    """How the sentence calls the two sides."""
    explanation: Explanation | None = field(default=None, metadata=as_json(after="summary"))
    """The leading cause's mechanism, the suspects it rules out, and a lever (analysis.explain)."""
    json_extra = (
        extra("delta_temp_bytes", after="summary"),
        extra("delta_peak_bytes", after="summary"),
        extra("explained_bytes", after="summary"),
        extra("peaks", lambda d: {"a": d.a.memory.peak_at, "b": d.b.memory.peak_at}),
        extra("collectives", lambda d: d.collectives_delta()),
        extra("held_gathers", lambda d: {"a": _held_json(d.a), "b": _held_json(d.b)}),
        extra("cost", lambda d: d.trade()),
    )

    @property
    def delta_temp_bytes(self) -> int:
        return self.b.memory.temp_bytes - self.a.memory.temp_bytes

    @property
    def delta_peak_bytes(self) -> int:
        return self.b.memory.peak_bytes - self.a.memory.peak_bytes

    @property
    def explained_bytes(self) -> int:
        return sum(c.bytes for c in self.causes)

    def collectives_delta(self) -> dict[str, dict[str, Any]]:
        out = {}
        for kind in (*COLLECTIVE_KINDS, "total"):
            ta, tb = self.a.collectives.tally(kind), self.b.collectives.tally(kind)
            if ta.count or tb.count:
                out[kind] = {"a": ta.count, "b": tb.count, "a_bytes": ta.bytes, "b_bytes": tb.bytes,
                             "a_dynamic": ta.dynamic_count, "b_dynamic": tb.dynamic_count,
                             "a_dynamic_bytes": ta.dynamic_bytes, "b_dynamic_bytes": tb.dynamic_bytes}
        return out

    def trade(self) -> dict[str, Any] | None:
        """What the memory change costs: FLOPs (the recomputed ones apart), bytes accessed and
        collective bytes per step on each side (× loop trip counts), None without costs."""
        a, b = self.a.cost, self.b.cost
        if a is None or b is None:
            return None

        def one(c: CostResult) -> dict[str, Any]:
            return {"flops": c.flops, "recompute_flops": c.recompute_flops, "bytes_accessed": c.bytes_accessed,
                    "collective_bytes": c.collective_bytes, "collective_bytes_by_kind": dict(c.collective_bytes_by_kind),
                    "recomputed": [i.instruction for i in c.recomputed[:10]]}

        return {"a": one(a), "b": one(b), "delta_flops": b.flops - a.flops,
                "delta_bytes_accessed": b.bytes_accessed - a.bytes_accessed,
                "delta_collective_bytes": b.collective_bytes - a.collective_bytes}

    def trade_sentence(self) -> str | None:
        """The price of the memory change in one line: `trade: B saves 3.6 MiB of temp and runs
        +31% FLOPs (recomputing 2.1 GFLOP), +0% bytes accessed, +100% collective bytes per step
        (× loop trip counts)`; None without costs."""
        trade = self.trade()
        if trade is None:
            return None
        a, b = trade["a"], trade["b"]
        delta = self.delta_temp_bytes
        verb = f"saves {human_bytes(-delta)} of temp" if delta < 0 else f"needs {human_bytes(delta)} more temp"
        why = f" (recomputing {human_flops(b['recompute_flops'])})" if b["recompute_flops"] > a["recompute_flops"] else ""
        return (f"trade: {self.names[1]} {verb} and runs {_percent(b['flops'], a['flops'])} FLOPs{why}, "
                f"{_percent(b['bytes_accessed'], a['bytes_accessed'])} bytes accessed, "
                f"{_percent(b['collective_bytes'], a['collective_bytes'])} collective bytes per step "
                f"(× loop trip counts)")


def _percent(new: int, old: int) -> str:
    if old == 0:
        return "n/a" if new == 0 else "new"
    return f"{100 * (new - old) / old:+.0f}%"


def diff(a: Side, b: Side, top: int = 5, names: tuple[str, str] = ("A", "B")) -> DiffResult:
    """Explain B's temp memory against A's (see this module's docstring)."""
    ka, kb = a.brief(), b.brief()
    causes = []
    for role in ROLES:
        ta, tb = ka.temp.get(role), kb.temp.get(role)
        ra, rb = (ta.bytes if ta else 0), (tb.bytes if tb else 0)
        if ra == rb:
            continue
        rows_a, rows_b = (ta.largest if ta else ()), (tb.largest if tb else ())
        pairs = match_buffers(rows_a, rows_b)
        causes.append(Cause(
            kind="role", role=role, bytes=rb - ra, a_bytes=ra, b_bytes=rb,
            description=_describe(role, ra, rb, ta, tb),
            instructions={"a": tuple(_row(r, pairs.get(("a", r.instruction))) for r in rows_a[:top]),
                          "b": tuple(_row(r, pairs.get(("b", r.instruction))) for r in rows_b[:top])},
        ))
    # The packing: the temp allocation beyond the bytes live at the peak. TPU's reported temp
    # adds to its allocation what libtpu adds (`backends.tpu.reported_temp`): a cause of its own.
    pa = a.memory.temp_allocation_bytes - a.memory.temp_max_live_bytes
    pb = b.memory.temp_allocation_bytes - b.memory.temp_max_live_bytes
    if pa != pb:
        targets = {backends.named(m.platform) for m in (a.memory, b.memory)}
        words = {(t.slack_label, t.slack_words(pb > pa)) for t in targets}
        label, description = words.pop() if len(words) == 1 else ("packing", backends.named(None).slack_words(pb > pa))
        causes.append(Cause(kind="packing", role=None, bytes=pb - pa, a_bytes=pa, b_bytes=pb,
                            description=description, label=label))
    ba = a.memory.temp_bytes - a.memory.temp_allocation_bytes
    bb = b.memory.temp_bytes - b.memory.temp_allocation_bytes
    if ba != bb:
        causes.append(Cause(kind="backend", role=None, bytes=bb - ba, a_bytes=ba, b_bytes=bb,
                            description=_backend_words(a.memory, b.memory, bb > ba, names)))
    causes.sort(key=lambda c: (-abs(c.bytes), c.kind, c.role or ""))
    result = DiffResult(a, b, "", tuple(causes), names)
    why = _explanation(result, ka, kb)
    summary = _summary(result, ka, kb)
    if why is not None and why.words:
        summary = f"{summary[:-1]}. {sentence_case(why.words)}."
    if why is not None and why.lever is not None:
        summary += f" Lever: {why.lever.what} (price: {why.lever.price})."
    return DiffResult(a, b, summary, tuple(causes), names, why)


def _lead(d: DiffResult) -> Cause | None:
    """The largest cause that moves with the gap."""
    delta = d.delta_temp_bytes
    return next((c for c in d.causes if (c.bytes > 0) == (delta > 0)), None) if delta else None


def _explanation(d: DiffResult, ka: Brief, kb: Brief) -> Explanation | None:
    lead = _lead(d)
    if lead is None or lead.kind != "role":
        return None
    more = d.delta_temp_bytes > 0
    keeper, other = (d.b, d.a) if more else (d.a, d.b)
    kept = kb if more else ka
    names = (d.names[1], d.names[0]) if more else d.names
    recompute = ((keeper.cost.recompute_flops, other.cost.recompute_flops)
                 if keeper.cost is not None and other.cost is not None else None)
    return explain(lead.role, names[0], names[1], kept.temp.get(lead.role), keeper.collectives,
                   other.collectives, (kept.held_gathers, kept.held_bytes_at_peak), recompute)


def _backend_words(a: MemoryAnalysis, b: MemoryAnalysis, more: bool, names: tuple[str, str]) -> str:
    """What libtpu adds to the HBM temp allocation when it reports temp: the allocation's
    fragmentation once more (its allocation less its peak buffers)."""
    who = names[1] if more else names[0]
    return (f"libtpu's report counts more of the HBM temp allocation's fragmentation in {who} (temp = "
            f"allocation + allocation − its peak buffers; allocations {_human(a.temp_allocation_bytes)} "
            f"and {_human(b.temp_allocation_bytes)})")


def _row(r, matched: str | None) -> dict[str, Any]:
    return {"instruction": r.instruction, "bytes": r.bytes, "shape": r.shape, "op_name": r.op_name,
            "source": r.source, "matched": matched}


def _describe(role: str, ra: int, rb: int, ta: RoleAtPeak | None, tb: RoleAtPeak | None) -> str:
    words = ROLE_WORDS[role]
    more, held = ("B", tb) if rb > ra else ("A", ta)
    where = _collective_homes(held)
    return f"{more} keeps more {words} live at its peak" + (f" ({where})" if where else "")


def _collective_homes(held: RoleAtPeak | None) -> str:
    """`in 3 all-reduces` when buffers of a cause are held by collectives (elements of one
    combined collective count once)."""
    homes = [p for p in (held.places if held else ()) if p.place not in (None, "loop") and not p.place.startswith("for ")]
    return ", ".join(f"in {p.instructions} {p.place}{'s' if p.instructions != 1 else ''}" for p in homes)


def _human(n: float) -> str:
    return human_bytes(abs(n), digits=1)


def _summary(d: DiffResult, ka: Brief, kb: Brief) -> str:
    """The diff's sentence, begun with a capital when it begins with a word (`this
    compilation`), never by changing a name (`accum=2`, `remat=full`)."""
    return sentence_case(_sentence(d, ka, kb))


def sentence_case(text: str) -> str:
    """`text` with a capital first letter when its first token is a plain lowercase word."""
    first = text.split(" ", 1)[0]
    return text[:1].upper() + text[1:] if first.isalpha() and first.islower() else text


def _sentence(d: DiffResult, ka: Brief, kb: Brief) -> str:
    delta = d.delta_temp_bytes
    base = d.a.memory.temp_bytes
    name_a, name_b = d.names
    if delta == 0:
        return f"{name_a} and {name_b} need the same temp memory."
    pct = f" ({100 * abs(delta) / base:.0f}%)" if base else ""
    head = f"{name_b} needs {_human(delta)}{pct} {'more' if delta > 0 else 'less'} temp memory than {name_a}"
    lead = _lead(d)
    if lead is None:
        return head + "."
    if lead.kind == "packing":
        return f"{head}: mostly {lead.label or 'packing'}: {lead.description} ({_human(lead.bytes)})."
    if lead.kind == "backend":
        return f"{head}: mostly the backend's report: {lead.description} ({_human(lead.bytes)})."
    keeper, other = (name_b, name_a) if delta > 0 else (name_a, name_b)
    kept, other_kept = (lead.b_bytes, lead.a_bytes) if delta > 0 else (lead.a_bytes, lead.b_bytes)
    held = (kb if delta > 0 else ka).temp.get(lead.role)
    rows = held.largest if held else ()
    names = ", ".join(r.instruction for r in rows[:3]) + (", ..." if held and held.buffers > 3 else "")
    where = _collective_homes(held)
    tail = f"which {other} does not" if other_kept == 0 else f"against {_human(other_kept)} in {other}"
    return (f"{head}: at its peak {keeper} keeps {_human(kept)} of {ROLE_WORDS[lead.role]}"
            f"{' ' + where if where else ''} ({names}), {tail}.")
