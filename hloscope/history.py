"""A trend: one row per CI run in an SQLite file, and every figure drawn over commits.

`record` appends a run of a step (its commit, when, the check's verdict and words, and the
step's snapshot, hloscope.snapshots); a figure of it (memory figures, temp bytes at the peak
by role, collective counts and bytes, FLOPs) is also a row of the `figures` table, for
queries. `trend` reads a step's runs in order; each change of temp memory between two runs
is a jump, explained by the diff of their two snapshots (the same sentence a check against
the earlier one gives). `text` and `html` render it: the page is one self-contained file
(inline SVG, no script, nothing fetched). SQLite from the standard library: no server.

Tables:

    runs(id INTEGER PRIMARY KEY, time TEXT, commit_id TEXT, step TEXT, module TEXT,
         platform TEXT, ok INTEGER, words TEXT, snapshot TEXT)
    figures(run INTEGER, name TEXT, value INTEGER)
"""

from __future__ import annotations

import datetime
import html as html_escape
import json
import os
import sqlite3
import subprocess
from dataclasses import dataclass
from typing import Any

from .analysis.diff import diff as diff_sides
from .errors import HloscopeError
from .snapshots import side, validated
from .units import human_bytes, human_flops

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, time TEXT NOT NULL, commit_id TEXT, step TEXT NOT NULL,
                                 module TEXT, platform TEXT, ok INTEGER, words TEXT, snapshot TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS figures (run INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL, value INTEGER);
CREATE INDEX IF NOT EXISTS runs_by_step ON runs (step, id);
"""

BYTE_FIGURES = ("temp_bytes", "peak_bytes", "total_bytes", "argument_bytes", "output_bytes")


def commit_id(explicit: str | None = None, cwd: str | None = None) -> str | None:
    """The commit a run belongs to: `explicit`, else `$HLOSCOPE_COMMIT`, else `git rev-parse
    HEAD` in `cwd`, else `$GITHUB_SHA`; None when none says."""
    if explicit:
        return explicit
    if os.environ.get("HLOSCOPE_COMMIT"):
        return os.environ["HLOSCOPE_COMMIT"]
    try:
        run = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=cwd, timeout=10)
        if run.returncode == 0 and run.stdout.strip():
            return run.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("GITHUB_SHA") or None


def figures(snap: dict[str, Any]) -> dict[str, int | None]:
    """A snapshot's figures by name: `temp_bytes`, ..., `temp.ROLE` (temp bytes of a role at
    the peak), `collectives.KIND` (static count), `collectives.KIND.bytes` (per step),
    `flops`, `recompute_flops`, `collective_bytes`, `held_gathers.bytes_at_peak`."""
    out: dict[str, int | None] = {f: snap["memory"][f] for f in BYTE_FIGURES}
    out.update({f"temp.{role}": t["bytes"] for role, t in sorted(snap["temp_at_peak"].items())})
    for kind, t in sorted(snap["collectives"].items()):
        out[f"collectives.{kind}"] = t["count"]
        out[f"collectives.{kind}.bytes"] = t["dynamic_bytes"]
    out["held_gathers.bytes_at_peak"] = snap["held_gathers"]["held_bytes_at_peak"]
    for f in ("flops", "recompute_flops", "collective_bytes"):
        if snap.get("cost"):
            out[f] = snap["cost"][f]
    return out


class HistoryError(HloscopeError):
    """A file that is not an SQLite history hloscope can read or append to."""


def _connect(path: str) -> sqlite3.Connection:
    try:
        db = sqlite3.connect(path)
        db.executescript(_SCHEMA)
    except sqlite3.DatabaseError as e:
        raise HistoryError(f"{path}: error: not an hloscope history (SQLite says: {e})") from None
    return db


def record(path: str, snap: dict[str, Any], step: str | None = None, commit: str | None = None, ok: bool = True,
           words: str = "", when: str | None = None) -> int:
    """Append one run of `step` (default: the snapshot's name, else its module) to the history
    at `path` (created when missing); its id."""
    validated(snap, path)
    step = step or snap["key"].get("name") or snap["key"].get("module") or "step"
    when = when or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    db = _connect(path)
    try:
        with db:
            cur = db.execute("INSERT INTO runs (time, commit_id, step, module, platform, ok, words, snapshot) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             (when, commit, step, snap["key"].get("module"), snap["key"].get("platform"), int(ok),
                              words, json.dumps(snap, sort_keys=True)))
            run = cur.lastrowid
            db.executemany("INSERT INTO figures (run, name, value) VALUES (?, ?, ?)",
                           [(run, k, v) for k, v in figures(snap).items()])
        return run
    finally:
        db.close()


@dataclass(frozen=True)
class Run:
    id: int
    time: str
    commit: str | None
    step: str
    ok: bool
    words: str
    figures: dict[str, int | None]
    snapshot: dict[str, Any]


@dataclass(frozen=True)
class Jump:
    """A change of temp memory from one run of a step to the next, and why."""

    before: Run
    after: Run
    delta_temp_bytes: int
    sentence: str
    """The diff's sentence, the earlier run as the baseline."""


@dataclass(frozen=True)
class Trend:
    step: str
    runs: tuple[Run, ...]
    jumps: tuple[Jump, ...]


def trends(path: str) -> list[Trend]:
    """Every step of the history, its runs in the order recorded, and its jumps explained."""
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    db = _connect(path)
    try:
        rows = db.execute("SELECT id, time, commit_id, step, ok, words, snapshot FROM runs ORDER BY id").fetchall()
    except sqlite3.DatabaseError as e:
        raise HistoryError(f"{path}: error: not an hloscope history (SQLite says: {e})") from None
    finally:
        db.close()
    by_step: dict[str, list[Run]] = {}
    for rid, when, commit, step, ok, words, text in rows:
        snap = json.loads(text)
        by_step.setdefault(step, []).append(Run(rid, when, commit, step, bool(ok), words or "", figures(snap), snap))
    out = []
    for step, runs in by_step.items():
        jumps = []
        for before, after in zip(runs, runs[1:]):
            delta = after.figures["temp_bytes"] - before.figures["temp_bytes"]
            if delta:
                d = diff_sides(side(before.snapshot), side(after.snapshot), names=(_name(before), _name(after)))
                jumps.append(Jump(before, after, delta, d.summary[:1].upper() + d.summary[1:]))
        out.append(Trend(step, tuple(runs), tuple(jumps)))
    return out


def _name(run: Run) -> str:
    return f"commit {run.commit[:10]}" if run.commit else f"run {run.id}"


def _value(name: str, v: int | None) -> str:
    if v is None:
        return "unknown"
    if name.startswith("collectives.") and not name.endswith(".bytes"):
        return f"{v:,}"
    if "flops" in name:
        return human_flops(v)
    return human_bytes(v, digits=1)


def as_json(trend_list: list[Trend]) -> dict[str, Any]:
    """`hloscope history --json`: each step's runs (figures) and jumps (with their sentence)."""
    return {"steps": [{"step": t.step,
                       "runs": [{"id": r.id, "time": r.time, "commit": r.commit, "ok": r.ok, "words": r.words,
                                 "figures": r.figures} for r in t.runs],
                       "jumps": [{"before": j.before.id, "after": j.after.id, "delta_temp_bytes": j.delta_temp_bytes,
                                  "sentence": j.sentence} for j in t.jumps]} for t in trend_list]}


# ─── text ──────────────────────────────────────────────────────────────────────────────


def text(trend_list: list[Trend]) -> str:
    """Each step: its runs (commit, verdict, temp, peak, total) and each jump with its sentence."""
    lines = []
    for t in trend_list:
        lines.append(f"{t.step}: {len(t.runs)} run{'s' if len(t.runs) != 1 else ''}, "
                     f"{len(t.jumps)} jump{'s' if len(t.jumps) != 1 else ''} of temp memory")
        for r in t.runs:
            f = r.figures
            lines.append(f"  {(r.commit or '-')[:10]:<10}  {r.time}  {'ok  ' if r.ok else 'FAIL'}  "
                         f"temp {_value('temp_bytes', f['temp_bytes']):>10}  peak {_value('peak_bytes', f['peak_bytes']):>10}  "
                         f"total {_value('total_bytes', f['total_bytes']):>10}")
        for j in t.jumps:
            lines.append(f"  jump {_name(j.before)} → {_name(j.after)}: "
                         f"{human_bytes(j.delta_temp_bytes, digits=1, sign=True)}: {j.sentence}")
    return "\n".join(lines)


# ─── HTML ──────────────────────────────────────────────────────────────────────────────

_W, _H, _PAD = 360, 150, 36


def _of(run: Run, name: str) -> int | None:
    """A figure of a run; a role or collective kind the run has none of: 0."""
    return run.figures.get(name, 0 if name.startswith(("temp.", "collectives.")) else None)


def _chart(name: str, runs: tuple[Run, ...], jumps: tuple[Jump, ...]) -> str:
    values = [_of(r, name) for r in runs]
    known = [v for v in values if v is not None]
    lo, hi = (min(known), max(known)) if known else (0, 1)
    if hi == lo:
        lo, hi = lo - 1 if lo else 0, hi + 1
    n = len(runs)

    def x(i: int) -> float:
        return _PAD + (i * (_W - 2 * _PAD) / (n - 1) if n > 1 else (_W - 2 * _PAD) / 2)

    def y(v: int) -> float:
        return _H - _PAD / 2 - (v - lo) * (_H - _PAD) / (hi - lo)

    esc = html_escape.escape
    jumped = {j.after.id: (n, j) for n, j in enumerate(jumps, 1)}
    points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values) if v is not None)
    parts = [f'<svg viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" role="img" aria-label="{esc(name)}">',
             f'<line x1="{_PAD}" y1="{_H - _PAD / 2}" x2="{_W - _PAD}" y2="{_H - _PAD / 2}" class="axis"/>',
             f'<text x="4" y="12" class="tick">{esc(_value(name, hi))}</text>',
             f'<text x="4" y="{_H - _PAD / 2 - 4}" class="tick">{esc(_value(name, lo))}</text>',
             f'<polyline points="{points}" class="line"/>']
    for i, (r, v) in enumerate(zip(runs, values)):
        if v is None:
            continue
        n_j, j = jumped.get(r.id, (0, None))
        moved = j is not None and i and values[i - 1] != v
        tip = f"{_name(r)}: {_value(name, v)}" + (f"\njump {n_j}: {j.sentence}" if moved else "")
        parts.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="{4.5 if moved else 2.5}" '
                     f'class="{"jump" if moved else "dot"}"><title>{esc(tip)}</title></circle>')
        if moved:
            parts.append(f'<text x="{x(i) + 6:.1f}" y="{y(v) - 6:.1f}" class="num">{n_j}</text>')
    for i in sorted({0, n - 1}):
        anchor = "start" if i == 0 and n > 1 else "end"
        parts.append(f'<text x="{x(i):.1f}" y="{_H - 4}" text-anchor="{anchor}" class="tick">'
                     f'{esc((runs[i].commit or f"run {runs[i].id}")[:10])}</text>')
    parts.append("</svg>")
    return "".join(parts)


_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d2330; background: #fff; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
.grid { display: flex; flex-wrap: wrap; gap: 14px; }
figure { margin: 0; border: 1px solid #dde2ea; border-radius: 6px; padding: 6px 8px; }
figcaption { font-weight: 600; font-size: 13px; }
.axis { stroke: #9aa3b2; } .line { fill: none; stroke: #2f6fdb; stroke-width: 2; }
.dot { fill: #2f6fdb; } .jump { fill: #d94a38; } .tick { font-size: 10px; fill: #5b6475; }
.num { font-size: 11px; font-weight: 700; fill: #d94a38; }
ol.jumps li { margin: 6px 0; } .delta { font-weight: 600; } .fail { color: #d94a38; font-weight: 600; }
table { border-collapse: collapse; font-size: 12px; } td, th { padding: 2px 8px; text-align: right; }
td:first-child, th:first-child { text-align: left; font-family: ui-monospace, monospace; }
"""

FIGURES_DRAWN = ("temp_bytes", "peak_bytes", "total_bytes")
"""Drawn first for every step, then its other figures that change over the runs."""


def html(trend_list: list[Trend], title: str = "hloscope trend") -> str:
    """One self-contained page: per step, each figure over the runs (a red dot where temp
    memory jumped; hover for the sentence), then the jumps with their sentences and the runs."""
    esc = html_escape.escape
    body = [f"<h1>{esc(title)}</h1>"]
    for t in trend_list:
        names = list(FIGURES_DRAWN) + sorted(
            {k for r in t.runs for k in r.figures} - set(FIGURES_DRAWN),
            key=lambda k: (not k.startswith("temp."), k))
        changing = [k for k in names if k in FIGURES_DRAWN or len({_of(r, k) for r in t.runs}) > 1]
        body.append(f"<h2>{esc(t.step)} · {len(t.runs)} runs · {len(t.jumps)} jumps of temp memory</h2>")
        body.append('<div class="grid">' + "".join(
            f"<figure><figcaption>{esc(k)}</figcaption>{_chart(k, t.runs, t.jumps)}</figure>" for k in changing)
            + "</div>")
        if t.jumps:
            body.append('<h2>Jumps of temp memory (red, numbered)</h2><ol class="jumps">' + "".join(
                f'<li><span class="delta">{esc(human_bytes(j.delta_temp_bytes, digits=1, sign=True))}</span> '
                f"{esc(_name(j.before))} → {esc(_name(j.after))}: {esc(j.sentence)}</li>" for j in t.jumps) + "</ol>")
        rows = "".join(
            f"<tr><td>{esc((r.commit or '-')[:12])}</td><td>{esc(r.time)}</td>"
            f"<td>{'ok' if r.ok else '<span class=fail>failed</span>'}</td>"
            + "".join(f"<td>{esc(_value(k, r.figures.get(k)))}</td>" for k in FIGURES_DRAWN) + "</tr>"
            for r in t.runs)
        body.append("<table><tr><th>commit</th><th>time</th><th>check</th>"
                    + "".join(f"<th>{k}</th>" for k in FIGURES_DRAWN) + f"</tr>{rows}</table>")
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f'<style>{_STYLE}</style></head><body data-ready="1">{"".join(body)}</body></html>\n')
