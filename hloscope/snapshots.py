"""Snapshots: one compilation kept as a small, stable JSON file a repository can commit.

A snapshot holds what `hloscope diff` reads of one side (analysis.diff's `Side` and its
`Brief`), cut short: the memory figures; the bytes held at the peak by role; of each role's
temp buffers at the peak their bytes, count, places and the `CUT` largest (instruction,
op_name, source, role, bytes, shape), the bytes below the cut as a figure; the collectives by
kind (static and per-step counts, bytes); the held all-gathers (count, bytes, bytes at the
peak, the `CUT` largest at the peak); FLOPs, recomputed FLOPs and collective bytes; the jax
and jaxlib that compiled it when known; and a key (module name, target) for matching. Its
text is `json.dumps(..., indent=1, sort_keys=True)`: one figure per line, so a change reads
as a `git diff`. A check against a snapshot (`budget.check(baseline=PATH)`) rebuilds the
side and runs the diff on it: the same verdict, sentence and causes as against the module,
except that buffers below the cut are counted, not named (the check says so).
"""

from __future__ import annotations

import json
import os
from importlib import metadata
from typing import Any

from . import __version__
from .analysis.collectives import COLLECTIVE_KINDS, POINT_TO_POINT_KINDS, CollectivesResult, Tally
from .analysis.cost import CostResult
from .analysis.diff import Brief, Place, RoleAtPeak, Side, side_brief
from .analysis.gathers import GathersResult, HeldGather
from .analysis.memory import LiveBuffer, MemoryAnalysis
from .analysis.roles import ROLES, RoleBuffer, RolesAtPeak
from .api.compare import side as module_side
from .api.loading import from_compiled
from .errors import HloscopeError
from .files import write_whole

FORMAT = "hloscope-snapshot"
VERSION = 1
"""The format's version: a reader refuses a snapshot of a newer one."""
CUT = 5
"""Buffers kept of each role at the peak, and held all-gathers kept: as many as a diff's
table shows of each side (the sentence names three)."""
SUFFIX = ".hloscope.json"

MEMORY_FIGURES = ("temp_bytes", "argument_bytes", "output_bytes", "alias_bytes", "total_bytes", "peak_bytes",
                  "temp_max_live_bytes", "temp_allocation_bytes")
"""The memory figures a snapshot keeps (MemoryAnalysis's fields of those names)."""
COST_FIGURES = ("flops", "recompute_flops", "bytes_accessed", "collective_bytes")


class SnapshotError(HloscopeError):
    """A file that is not a snapshot hloscope can read."""


# ─── taking one ────────────────────────────────────────────────────────────────────────


def snapshot(module, name: str | None = None, jax_version: str | None = None,
             jaxlib_version: str | None = None, cut: int = CUT, source_root: str | None = None) -> dict[str, Any]:
    """The snapshot of `module` (a Module, or a jax compiled object) as JSON data; `name`: the
    step it is (a test's id, say); the versions of jax and jaxlib that compiled it, when known
    (from a jax compiled object, those of the running jax); `source_root`: a directory the
    source lines are written relative to (a repository's root: the same on every machine)."""
    if hasattr(module, "as_text"):
        jax_version, jaxlib_version = running_jax(jax_version, jaxlib_version)
        module = from_compiled(module)
    side = module_side(module)
    return of_side(side, name=name, jax_version=jax_version, jaxlib_version=jaxlib_version, cut=cut,
                   entry_parameters=len(module.entry.parameters), source_root=source_root)


def running_jax(jax_version: str | None = None, jaxlib_version: str | None = None) -> tuple[str | None, str | None]:
    """The versions given, else those of the installed jax and jaxlib (which compiled it)."""
    def installed(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return jax_version or installed("jax"), jaxlib_version or installed("jaxlib")


def of_side(side: Side, name: str | None = None, jax_version: str | None = None, jaxlib_version: str | None = None,
            cut: int = CUT, entry_parameters: int | None = None, source_root: str | None = None) -> dict[str, Any]:
    """A snapshot of a diff's Side (see this module's docstring)."""
    m, roles, gathers, cost = side.memory, side.roles, side.gathers, side.cost
    prefix = os.path.join(os.path.abspath(source_root), "") if source_root else None

    def source(s: str | None) -> str | None:
        return s[len(prefix):] if prefix and s and s.startswith(prefix) else s

    kept = side_brief(roles, gathers, cut)
    held = sorted(gathers.held, key=lambda h: (-h.bytes_at_peak, -h.bytes, h.instruction))[:cut]
    out: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "key": {"module": m.name, "platform": m.platform, "entry_parameters": entry_parameters, "name": name},
        "producer": {"hloscope": __version__, "jax": jax_version, "jaxlib": jaxlib_version},
        "cut": cut,
        "memory": {**{f: getattr(m, f) for f in MEMORY_FIGURES},
                   "peak_at": dict(m.peak_at),
                   "memory_spaces": {str(k): v for k, v in sorted(m.other_memory_space_bytes.items())},
                   "notes": list(m.notes)},
        "by_role": {r: b for r, b in roles.by_role.items() if b},
        "temp_at_peak": {role: _role_json(t, source) for role, t in kept.temp.items()},
        "collectives": _collectives_json(side.collectives),
        "held_gathers": {"count": kept.held_gathers, "held_bytes": kept.held_bytes,
                         "held_bytes_at_peak": kept.held_bytes_at_peak,
                         "largest": [{"instruction": h.instruction, "bytes": h.bytes, "bytes_at_peak": h.bytes_at_peak,
                                      "source": source(h.source), "parameter_path": h.parameter_path} for h in held]},
        "cost": None if cost is None else {
            **{f: getattr(cost, f) for f in COST_FIGURES},
            "collective_bytes_by_kind": {k: v for k, v in cost.collective_bytes_by_kind.items() if v}},
    }
    return out


def _role_json(t: RoleAtPeak, source) -> dict[str, Any]:
    return {"bytes": t.bytes, "buffers": t.buffers, "below_cut_bytes": t.below_cut_bytes,
            "places": [{"place": p.place, "bytes": p.bytes, "instructions": p.instructions} for p in t.places],
            "largest": [_buffer_json(r, source) for r in t.largest]}


def _buffer_json(r: RoleBuffer, source) -> dict[str, Any]:
    out = {"instruction": r.instruction, "role": r.role, "bytes": r.bytes, "shape": r.shape,
           "op_name": r.op_name, "source": source(r.source), "held_in": r.held_in}
    if r.why is not None:
        out["why"] = r.why
    return out


def _tally_json(t: Tally) -> dict[str, Any]:
    return {"count": t.count, "dynamic_count": t.dynamic_count, "bytes": t.bytes, "dynamic_bytes": t.dynamic_bytes}


def _collectives_json(c: CollectivesResult) -> dict[str, Any]:
    kinds = {k: _tally_json(c.tally(k)) for k in (*COLLECTIVE_KINDS, *POINT_TO_POINT_KINDS) if c.tally(k).count}
    return {**kinds, "total": _tally_json(c.total)}


# ─── the file ──────────────────────────────────────────────────────────────────────────


def dumps(snap: dict[str, Any]) -> str:
    """The snapshot's text: sorted keys, one value per line, a final newline."""
    return json.dumps(snap, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write(path: str | os.PathLike, snap: dict[str, Any]) -> None:
    """Write `snap` to `path` (its directory made), replacing it at once."""
    write_whole(path, dumps(snap), make_directory=True)


def looks_like_snapshot(path: str | os.PathLike) -> bool:
    """Whether a file is a snapshot (a JSON object) rather than HLO text or a dump directory."""
    path = os.fspath(path)
    if path == "-" or not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        head = f.read(64).lstrip()
    return head.startswith(b"{")


def read(path: str | os.PathLike) -> dict[str, Any]:
    """A snapshot file, checked to be one this hloscope reads."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            snap = json.load(f)
    except OSError as e:
        raise SnapshotError(f"{path}: error: cannot read the snapshot: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise SnapshotError(f"{path}:{e.lineno}:{e.colno}: error: not valid JSON: {e.msg}") from None
    return validated(snap, path)


def validated(snap: Any, where: str = "snapshot") -> dict[str, Any]:
    """`snap` when it is a snapshot of a version this hloscope reads, else SnapshotError."""
    if not isinstance(snap, dict) or snap.get("format") != FORMAT:
        raise SnapshotError(f"{where}: error: not an hloscope snapshot (no \"format\": \"{FORMAT}\"); "
                            "write one with `hloscope snapshot FILE -o STEP.hloscope.json`")
    version = snap.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise SnapshotError(f"{where}: error: snapshot format version {version!r} is newer than this "
                            f"hloscope reads ({VERSION}): upgrade hloscope, or write the snapshot again")
    for key in ("memory", "temp_at_peak", "collectives", "held_gathers", "key"):
        if not isinstance(snap.get(key), dict):
            raise SnapshotError(f"{where}: error: the snapshot has no {key!r} object")
    return snap


# ─── a side from a snapshot ────────────────────────────────────────────────────────────


def side(snap: dict[str, Any], label: str = "") -> Side:
    """The diff's Side of a snapshot: its figures, and its Brief (cut to `cut` buffers)."""
    mem, key = snap["memory"], snap["key"]
    name = key.get("module") or ""
    temp = {}
    for role in ROLES:
        t = snap["temp_at_peak"].get(role)
        if t is None:
            continue
        rows = tuple(_buffer(role, r) for r in t["largest"])
        places = tuple(Place(p["place"], p["bytes"], p["instructions"]) for p in t["places"])
        temp[role] = RoleAtPeak(role, t["bytes"], t["buffers"], places, rows)
    rows = sorted((r for t in temp.values() for r in t.largest), key=lambda r: (-r.bytes, r.instruction))
    peak_at = dict(mem["peak_at"])
    memory = MemoryAnalysis(
        name=name, temp_bytes=mem["temp_bytes"], argument_bytes=mem["argument_bytes"],
        output_bytes=mem["output_bytes"], alias_bytes=mem["alias_bytes"], peak_bytes=mem["peak_bytes"],
        peak_at=peak_at, live_at_peak=tuple(LiveBuffer(r.instruction, r.bytes, r.shape, r.op_name, r.source) for r in rows),
        temp_max_live_bytes=mem["temp_max_live_bytes"], temp_allocation_bytes=mem["temp_allocation_bytes"],
        platform=key["platform"],
        other_memory_space_bytes={int(k): v for k, v in mem.get("memory_spaces", {}).items()},
        total_bytes=mem["total_bytes"], notes=tuple(mem.get("notes", ())))
    by_role = {r: snap.get("by_role", {}).get(r, 0) for r in ROLES}
    roles = RolesAtPeak(name, peak_at.get("index", 0), by_role, {r: temp[r].bytes if r in temp else 0 for r in ROLES},
                        tuple(rows), sum(by_role.values()))
    g = snap["held_gathers"]
    held = tuple(HeldGather(instruction=h["instruction"], bytes=h["bytes"], reasons=(), first_use={}, last_use={},
                            live=(0, 0), spans_peak=h["bytes_at_peak"] > 0, bytes_at_peak=h["bytes_at_peak"],
                            users=(), op_name=None, source=h.get("source"), parameter=None,
                            parameter_path=h.get("parameter_path"), origin="unknown") for h in g.get("largest", ()))
    gathers = GathersResult(name, held, g["count"], "snapshot", None, peak_at.get("index", 0))
    kept = Brief(temp, g["count"], g["held_bytes"], g["held_bytes_at_peak"], snap.get("cut"))
    return Side(memory=memory, roles=roles, collectives=_collectives(name, snap["collectives"]), gathers=gathers,
                cost=_cost(name, snap.get("cost")), label=label, kept=kept)


def _buffer(role: str, r: dict[str, Any]) -> RoleBuffer:
    return RoleBuffer(r["instruction"], role, r["bytes"], r.get("shape", ""), r.get("op_name"), r.get("source"),
                      "temp", r.get("why"), r.get("held_in"))


def _tally(t: dict[str, Any] | None) -> Tally:
    if t is None:
        return Tally()
    return Tally(count=t["count"], dynamic_count=t["dynamic_count"], bytes=t["bytes"], dynamic_bytes=t["dynamic_bytes"],
                 unknown_trip_count=t["dynamic_count"] is None)


def _collectives(name: str, c: dict[str, Any]) -> CollectivesResult:
    return CollectivesResult(name, (), {k: _tally(c.get(k)) for k in COLLECTIVE_KINDS},
                             {k: _tally(c.get(k)) for k in POINT_TO_POINT_KINDS}, _tally(c.get("total")))


def _cost(name: str, c: dict[str, Any] | None) -> CostResult | None:
    if c is None:
        return None
    by_kind = {k: c.get("collective_bytes_by_kind", {}).get(k, 0) for k in COLLECTIVE_KINDS}
    return CostResult(module=name, flops=c["flops"], transcendentals=0, bytes_accessed=c["bytes_accessed"],
                      collective_bytes=c["collective_bytes"], collective_bytes_by_kind=by_kind,
                      collective_wire_bytes=0, collective_wire_bytes_by_kind={}, recompute_flops=c["recompute_flops"],
                      matmul_flops={},
                      flops_xla_convention=0, transcendentals_xla_convention=0, bytes_accessed_xla_convention=0,
                      unknown_trip_count=False, opaque=0, loops=(), instructions=())


# ─── what a check against a snapshot says of it ──────────────────────────────────────


def mismatch(snap: dict[str, Any], module) -> str | None:
    """Why `module` may not be the program `snap` was taken of (another module name or target),
    or None."""
    key = snap["key"]
    said = []
    if key.get("module") and key["module"] != module.name:
        said.append(f"module {key['module']!r}, not {module.name!r}")
    platform = module.memory().platform
    if key.get("platform") and key["platform"] != platform:
        said.append(f"target {key['platform']!r}, not {platform!r}")
    return f"the snapshot is of {' and of '.join(said)}" if said else None


def below_cut(kept: Brief, roles) -> list[tuple[str, int, int]]:
    """`(role, buffers below the cut, their bytes)` of a snapshot's Brief, for the roles named."""
    out = []
    for role in roles:
        t = kept.temp.get(role)
        if t is not None and t.below_cut_bytes:
            out.append((role, t.buffers - len(t.largest), t.below_cut_bytes))
    return out
