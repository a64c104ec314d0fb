"""HTML reports: one self-contained file a browser opens with no network at all.

`memory_page(results)` draws `hloscope memory --html`: the live temp bytes over the
flattened schedule, the peak, the buffers live at it, zoom on a range of steps. The page is
plain SVG and a little vanilla JavaScript (no plotting library to vendor or keep up to date);
the data travels as one JSON document inside the page, and the script draws from it.

Why the drawing happens in the browser: a zoomed view needs the exact values of the steps it
shows, so the page carries the whole timeline (a few bytes a step) and reduces it, per view,
to the min and max of each pixel column. What is drawn is bounded by the chart's width, not by
the schedule's length, and a single-step peak survives because each column keeps its max.

The JSON is designed for more than one drawing: a module's `series` is a list stacked in
order (one "temp" series today; one per buffer role once roles exist), and the `Timeline`
object in the script draws any series over any step range, so a diff page can put two of them
on one shared range beside a list of causes (`_page(kind, payload)` with a kind of its own).
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .analysis import backends
from .analysis.memory import MemoryAnalysis
from .analysis.roles import ROLES, RolesAtPeak
from .files import write_whole
from .wording import tidy_op_name

if TYPE_CHECKING:  # named in annotations only: the memory and gathers pages need no diff
    from .analysis.diff import DiffResult

DATA_FORMAT = 1
"""Version of the JSON the page carries; bumped when its shape changes."""


ROLE_COLORS = {
    "gathered_parameters": "#e07b39", "gradients": "#c23b5a", "activations": "#4f7fd0",
    "temporaries": "#8fb3e8",
    "unknown": "#a8adb8", "parameters": "#2e8b57", "optimizer_state": "#5aa36f", "inputs": "#7fbf8f",
}


_TEMP_WORDS = {
    "packed": {"key": "XLA temp allocation", "card": "packed", "line": "XLA temp allocation (packed)",
               "legend": "XLA's temp allocation: the buffers packed, with fragmentation"},
    "libtpu": {"key": "XLA temp", "card": "libtpu's figure", "line": "XLA temp (libtpu's figure)",
               "legend": "XLA's temp: libtpu's HBM temp allocation, its fragmentation counted once more"},
}
"""How the page names the temp figure, by what the target reports (`Backend.temp_figure`)."""


def timeline_data(result: MemoryAnalysis, title: str | None = None,
                  by_role: dict[str, list[int]] | None = None,
                  roles: dict[str, str] | None = None) -> dict[str, Any]:
    """What the page needs to draw one module's memory: figures, the timeline as stacked
    series (one per role when `by_role` is given: they add up to the timeline), what runs at
    each step, the peak and the buffers live there."""
    timeline = list(result.timeline)
    if by_role:
        series = [{"key": role, "label": role.replace("_", " "), "values": by_role[role],
                   "color": ROLE_COLORS.get(role)} for role in ROLES if role in by_role]
    else:
        series = [{"key": "temp", "label": "live temp bytes", "values": timeline}]
    at = int(result.peak_at.get("index", 0))
    return {
        "title": title or result.name,
        "name": result.name,
        "temp": _TEMP_WORDS[backends.named(result.platform).temp_figure],
        "figures": {
            "temp_bytes": result.temp_bytes,
            "temp_max_live_bytes": result.temp_max_live_bytes,
            "argument_bytes": result.argument_bytes,
            "output_bytes": result.output_bytes,
            "alias_bytes": result.alias_bytes,
            "peak_bytes": result.peak_bytes,
            "total_bytes": result.total_bytes,
        },
        "peak_covers_temp": result.peak_covers_temp,
        "notes": list(result.notes),
        "steps": list(result.steps),
        # Stacked bottom to top.
        "series": series,
        "peak": {
            "index": at,
            "instruction": result.peak_at.get("instruction", ""),
            "bytes": timeline[at] if 0 <= at < len(timeline) else 0,
        },
        "live_at_peak": [{**b.to_dict(), **({"role": roles.get(b.instruction)} if roles else {})}
                         for b in result.live_at_peak],
    }


def memory_page(results: MemoryAnalysis | Sequence[MemoryAnalysis], titles: Sequence[str] | None = None,
                by_role: Sequence[dict[str, list[int]] | None] | None = None,
                roles: Sequence[RolesAtPeak | None] | None = None) -> str:
    """The HTML page of `hloscope memory --html`: one section per module, its timeline
    stacked by role when `by_role` (per module) is given, each buffer's role with `roles`."""
    if isinstance(results, MemoryAnalysis):
        results = [results]
    titles = list(titles) if titles is not None else [None] * len(results)
    by_role = list(by_role) if by_role is not None else [None] * len(results)
    roles = list(roles) if roles is not None else [None] * len(results)
    modules = [timeline_data(r, t, br, _roles_of(ro)) for r, t, br, ro in zip(results, titles, by_role, roles)]
    heading = modules[0]["title"] if len(modules) == 1 else f"{len(modules)} modules"
    return _page(f"hloscope memory: {heading}", {"kind": "memory", "modules": modules})


def diff_page(result: DiffResult, titles: Sequence[str] = ("A", "B"),
              by_role: Sequence[dict[str, list[int]] | None] = (None, None)) -> str:
    """The HTML page of `hloscope diff --html`: everything the text diff says (the sentence,
    the causes with their largest buffers, collective instructions, held gathers, the trade),
    then A's and B's timelines one above the other on one byte scale, buffers with their roles."""
    causes = [{"role": c.role or c.kind, "label": (c.role or c.label or c.kind).replace("_", " "), "bytes": c.bytes,
               "a_bytes": c.a_bytes, "b_bytes": c.b_bytes, "description": c.description,
               "instructions": {side: [{**r, "op_name": tidy_op_name(r["op_name"] or "") or None}
                                       for r in c.instructions.get(side, ())] for side in ("a", "b")}}
              for c in result.causes]
    modules = [timeline_data(result.a.memory, f"A: {titles[0]}", by_role[0], _roles_of(result.a.roles)),
               timeline_data(result.b.memory, f"B: {titles[1]}", by_role[1], _roles_of(result.b.roles))]
    sides = (result.a, result.b)
    top = max(max(s.memory.temp_bytes, max(s.memory.timeline, default=0)) for s in sides)
    trade = result.trade()
    payload = {"kind": "diff", "summary": result.summary, "causes": causes,
               "delta_temp_bytes": result.delta_temp_bytes, "modules": modules, "shared_top": top,
               "collectives": [{"kind": k, **v} for k, v in result.collectives_delta().items()],
               "held_gathers": {name: {"values": len(s.gathers.held), "bytes_at_peak": s.gathers.held_bytes_at_peak}
                                for name, s in zip(("a", "b"), sides)},
               "trade": result.trade_sentence(),
               "recomputed": {name: trade[name]["recomputed"][:5] for name in ("a", "b")} if trade else None}
    return _page("hloscope diff: " + " vs ".join(titles), payload)


def _roles_of(roles: RolesAtPeak | None) -> dict[str, str]:
    """Each buffer's role at the peak, by instruction name (`RolesAtPeak.buffers`)."""
    return {b.instruction: b.role for b in roles.buffers} if roles is not None else {}


def write_html(path: str | os.PathLike, text: str) -> None:
    """Write the page `text` to `path`, whole or not at all (`files.write_whole`)."""
    write_whole(path, text)


def json_for_script(data: Any) -> str:
    """`data` as JSON to put inside a <script> element: "</script>" or "<!--" in a name or
    op_name would end the element early; escaped, the JSON parser reads the same characters
    back."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def self_contained_page(title: str, style: str, script: str, body: str, data: Any) -> str:
    """One HTML page that loads nothing from anywhere: `title` (escaped here) as its title and
    heading, then `body` (HTML), `data` (as JSON, in `#hloscope-data`) and `script`. One pass
    fills the template: no part can be taken for a placeholder of another."""
    parts = {"TITLE": html.escape(title), "STYLE": style, "SCRIPT": script, "BODY": body,
             "DATA": json_for_script(data)}
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], _TEMPLATE)


_PLACEHOLDER = re.compile(r"@@([A-Z]+)@@")


def _page(title: str, payload: dict[str, Any]) -> str:
    return self_contained_page(title, _STYLE, _SCRIPT,
                               '<main id="report"></main>\n<div id="tooltip" role="tooltip" hidden></div>',
                               {"format": DATA_FORMAT, "role_colors": ROLE_COLORS, **payload})


# The page may load nothing from anywhere: the policy makes the browser refuse it, so a
# stray URL shows up as an error in the console (and in the test) instead of a silent fetch.
_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@@TITLE@@</title>
<style>@@STYLE@@</style>
</head>
<body>
<header><h1>@@TITLE@@</h1></header>
@@BODY@@
<script type="application/json" id="hloscope-data">@@DATA@@</script>
<script>@@SCRIPT@@</script>
</body>
</html>
"""

_STYLE = r"""
.causes h2.summary { font-size: 17px; line-height: 1.4; }
.cause-table { border-collapse: collapse; margin: 8px 0 24px; font-size: 13px; }
.cause-table th, .cause-table td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; }
.cause-table td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.cause-table tr.grew td:first-child { color: #b42318; }
.cause-table tr.shrank td:first-child { color: #067647; }
.cause-table tr.total td { font-weight: 600; border-bottom: none; }
.buffer-table, .collective-table { border-collapse: collapse; margin: 4px 0 12px; font-size: 13px; }
.buffer-table th, .buffer-table td, .collective-table th, .collective-table td {
  border-bottom: 1px solid var(--line); padding: 3px 10px; text-align: left; vertical-align: top; }
.buffer-table td.num, .collective-table td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.ident { white-space: nowrap; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
td.trail { color: var(--muted); font-size: 12px; overflow-wrap: anywhere; }
.causes span.sw, .buf span.sw { display: inline-block; width: 12px; height: 10px; margin-right: 6px;
  vertical-align: -1px; border-radius: 2px; }
.buffers.with-roles .buf { grid-template-columns: minmax(120px, 28%) 180px 1fr 170px; }
.buf .bytes { white-space: nowrap; }
.buf .role { color: var(--muted); white-space: nowrap; }
p.held, p.trade { margin: 6px 0; }
:root { --ink: #1d2330; --muted: #5b6475; --line: #d5dae3; --bg: #ffffff; --panel: #f6f8fb;
        --series0: #6f9ad8; --series0-min: #2f558f; --peak: #c62828; --pack: #7a4fb5; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--ink); background: var(--bg); }
header { padding: 14px 24px 6px; border-bottom: 1px solid var(--line); }
h1 { font-size: 18px; margin: 0 0 6px; font-weight: 600; overflow-wrap: break-word; }
h2 { font-size: 16px; margin: 0 0 8px; font-weight: 600; overflow-wrap: break-word; }
h3 { font-size: 14px; margin: 18px 0 6px; font-weight: 600; }
main { padding: 8px 24px 40px; }
section.module { margin-top: 14px; }
.figures { display: flex; flex-wrap: wrap; gap: 8px; margin: 4px 0 10px; }
.note { margin: 0 0 8px; color: #555; font-size: 13px; }
.figure { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; min-width: 150px; }
.figure .k { color: var(--muted); font-size: 12px; }
.figure .v { font-size: 16px; font-weight: 600; font-variant-numeric: tabular-nums; }
.figure .b { color: var(--muted); font-size: 11px; font-variant-numeric: tabular-nums; }
.controls { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; color: var(--muted); margin: 6px 0; }
.controls input[type=number] { width: 110px; font: inherit; padding: 2px 4px; }
.controls button { font: inherit; padding: 2px 10px; cursor: pointer; }
.chart { position: relative; width: 100%; user-select: none; }
.chart svg { display: block; width: 100%; height: 340px; cursor: crosshair; }
.chart text { font-size: 11px; fill: var(--muted); font-variant-numeric: tabular-nums; }
.chart .axis-title { font-size: 12px; fill: var(--ink); }
.chart .grid { stroke: #eceff4; }
.chart .axis { stroke: #9aa3b2; }
.chart .peak-line { stroke: var(--peak); stroke-dasharray: 3 3; }
.chart .peak-marker { fill: var(--peak); stroke: #fff; stroke-width: 1.5; cursor: pointer; }
.chart .peak-label { fill: var(--peak); font-size: 12px; font-weight: 600; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
.chart .pack-line { stroke: var(--pack); stroke-dasharray: 6 4; }
.chart .pack-label { fill: var(--pack); paint-order: stroke; stroke: #fff; stroke-width: 3px; }
.chart .cursor { stroke: #39414f; stroke-width: 1; }
.chart .brush { fill: rgba(58, 103, 176, 0.15); stroke: var(--series0-min); }
.legend { display: flex; flex-wrap: wrap; gap: 16px; color: var(--muted); font-size: 12px; margin: 4px 0 0 4px; }
.legend span.sw { display: inline-block; width: 14px; height: 10px; margin-right: 5px; vertical-align: -1px; border-radius: 2px; }
.legend span.dash { display: inline-block; width: 18px; height: 0; margin-right: 5px; vertical-align: 3px; border-top: 2px dashed var(--pack); }
.legend span.dot { display: inline-block; width: 9px; height: 9px; margin-right: 5px; border-radius: 50%; background: var(--peak); }
.buffers-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 12px; }
.buffers-head input { font: inherit; padding: 2px 6px; width: 260px; }
.buffers { max-height: 420px; overflow: auto; border: 1px solid var(--line); border-radius: 6px; }
.buf { display: grid; grid-template-columns: minmax(120px, 28%) 170px 1fr; gap: 10px; align-items: center;
       padding: 3px 10px; border-bottom: 1px solid #f0f2f6; cursor: pointer; }
.buf:hover, .buf:focus { background: #eef3fb; outline: none; }
.buf.pinned { background: #e3ecfa; }
.buf .name { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; word-break: break-all; }
.buf .bytes { font-variant-numeric: tabular-nums; display: flex; align-items: center; gap: 6px; }
.buf .bar { height: 9px; background: var(--series0-min); border-radius: 2px; min-width: 1px; }
.buf .shape { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; color: var(--muted); word-break: break-all; }
.details { margin-top: 10px; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; }
.details dl, #tooltip dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; }
.details dt, #tooltip dt { color: var(--muted); }
.details dd, #tooltip dd { margin: 0; word-break: break-all; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.muted { color: var(--muted); }
#tooltip { position: fixed; z-index: 10; pointer-events: none; max-width: 560px; background: #fff; color: var(--ink);
           border: 1px solid #b8c0cc; border-radius: 6px; box-shadow: 0 4px 14px rgba(0,0,0,.12); padding: 6px 10px; font-size: 12.5px; }
#tooltip .t, .details .t { font-weight: 600; margin-bottom: 3px; }
"""

_SCRIPT = r"""
"use strict";
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

  function fmtBytes(n) {
    let sign = n < 0 ? "-" : "", v = Math.abs(n), u = 0;
    while (v >= 1024 && u < UNITS.length - 1) { v /= 1024; u++; }
    return sign + (u === 0 ? String(v) : v.toFixed(2)) + " " + UNITS[u];
  }
  function fmtInt(n) { return Number(n).toLocaleString("en-US"); }

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function sv(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // One tooltip for the page; its content is a title and a list of (key, value) rows.
  const tip = document.getElementById("tooltip");
  function showTip(x, y, title, rows) {
    tip.replaceChildren();
    tip.appendChild(el("div", {class: "t"}, title));
    const dl = el("dl");
    for (const [k, v] of rows) { dl.appendChild(el("dt", {}, k)); dl.appendChild(el("dd", {}, v)); }
    tip.appendChild(dl);
    tip.hidden = false;
    const w = tip.offsetWidth, h = tip.offsetHeight;
    const left = x + 14 + w > window.innerWidth ? Math.max(4, x - 14 - w) : x + 14;
    const top = y + 14 + h > window.innerHeight ? Math.max(4, y - 14 - h) : y + 14;
    tip.style.left = left + "px";
    tip.style.top = top + "px";
  }
  function hideTip() { tip.hidden = true; }

  // Ticks of a byte axis in binary units: 0, 64 MiB, 128 MiB, ... (about `count` of them).
  function byteTicks(top, count) {
    let unit = 1;
    while (unit * 1024 <= top && unit < Math.pow(1024, 5)) unit *= 1024;
    const step = niceStep(top / unit / count) * unit;
    const ticks = [];
    for (let v = 0; v <= top * (1 + 1e-9); v += step) ticks.push(v);
    return ticks;
  }
  function niceStep(raw) {
    if (!(raw > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 2.5, 5, 10]) if (raw <= m * p) return m * p;
    return 10 * p;
  }
  function stepTicks(lo, hi, count) {
    const step = Math.max(1, niceStep((hi - lo) / count));
    const ticks = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) ticks.push(v);
    return ticks;
  }

  // The min and max of `values[lo, hi)` within each of `columns` buckets, and the step where
  // each bucket's max is (so hovering a column names the step that makes its height).
  function envelope(values, lo, hi, columns) {
    const n = hi - lo, buckets = Math.min(n, columns);
    const starts = new Int32Array(buckets + 1), mins = new Float64Array(buckets),
          maxs = new Float64Array(buckets), argmax = new Int32Array(buckets);
    for (let c = 0; c <= buckets; c++) starts[c] = lo + Math.floor(c * n / buckets);
    for (let c = 0; c < buckets; c++) {
      let mn = Infinity, mx = -Infinity, at = starts[c];
      for (let i = starts[c]; i < starts[c + 1]; i++) {
        const v = values[i];
        if (v < mn) mn = v;
        if (v > mx) { mx = v; at = i; }
      }
      mins[c] = mn; maxs[c] = mx; argmax[c] = at;
    }
    return {buckets, starts, mins, maxs, argmax};
  }

  // A chart of stacked series over the steps of a schedule, with zoom, hover and marks.
  // `opts.marks`: {peak: {index, bytes, instruction}, lines: [{bytes, label, cls}]}.
  class Timeline {
    constructor(host, series, steps, opts) {
      this.host = host;
      this.steps = steps;
      this.opts = opts || {};
      this.length = Math.max(1, ...series.map(s => s.values.length));
      // Stacked: series k is drawn from the sum of those below it to that sum plus its own.
      this.layers = [];
      let below = null;
      for (const s of series) {
        const top = new Float64Array(this.length);
        for (let i = 0; i < this.length; i++) top[i] = (below ? below[i] : 0) + (s.values[i] || 0);
        this.layers.push({series: s, top});
        below = top;
      }
      this.total = below || new Float64Array(this.length);
      this.lo = 0; this.hi = this.length;
      this.onRange = () => {};
      this.svg = sv("svg", {role: "img", "aria-label": "live temp bytes over the schedule"});
      host.appendChild(this.svg);
      this.margin = {left: 78, right: 18, top: 28, bottom: 44};
      this.listen();
    }

    stepName(i) { return i < this.steps.length ? this.steps[i] : "(end of schedule)"; }

    setRange(lo, hi) {
      lo = Math.max(0, Math.min(this.length - 1, Math.floor(lo)));
      hi = Math.max(lo + 1, Math.min(this.length, Math.ceil(hi)));
      this.lo = lo; this.hi = hi;
      this.render();
      this.onRange(lo, hi);
    }

    x(step) { return this.margin.left + (step - this.lo) / (this.hi - this.lo) * this.plotW; }
    y(bytes) { return this.margin.top + this.plotH - bytes / this.yTop * this.plotH; }
    stepAt(px) {
      const f = (px - this.margin.left) / this.plotW;
      return Math.max(this.lo, Math.min(this.hi - 1, this.lo + Math.floor(f * (this.hi - this.lo))));
    }

    render() {
      const svg = this.svg, m = this.margin;
      const width = Math.max(320, Math.floor(this.host.clientWidth)), height = 340;
      this.plotW = width - m.left - m.right;
      this.plotH = height - m.top - m.bottom;
      svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
      svg.replaceChildren();
      const full = this.lo === 0 && this.hi === this.length;
      this.env = envelope(this.total, this.lo, this.hi, Math.floor(this.plotW));
      this.downsampled = this.env.buckets < this.hi - this.lo;
      let visibleMax = 0;
      for (let c = 0; c < this.env.buckets; c++) visibleMax = Math.max(visibleMax, this.env.maxs[c]);
      // Zoomed in, the scale follows what is shown; over the whole schedule it also fits
      // the packed allocation line, which sits at or above the highest point.
      let top = visibleMax;
      if (full) for (const line of this.opts.lines || []) top = Math.max(top, line.bytes);
      // A diff draws A and B on one scale: the higher of the two sets both.
      if (full && this.opts.top) top = Math.max(top, this.opts.top);
      const ticks = byteTicks(Math.max(top * 1.12, 1), 5);
      this.yTop = ticks[ticks.length - 1] >= top * 1.05 ? ticks[ticks.length - 1] : top * 1.12;

      for (const t of ticks) {
        if (t > this.yTop) continue;
        const y = this.y(t);
        svg.appendChild(sv("line", {class: "grid", x1: m.left, x2: m.left + this.plotW, y1: y, y2: y}));
        svg.appendChild(sv("text", {x: m.left - 6, y: y + 4, "text-anchor": "end"}, fmtBytes(t).replace(".00", "")));
      }
      for (const s of stepTicks(this.lo, this.hi - 1, Math.max(2, Math.floor(this.plotW / 90)))) {
        const x = this.x(s + 0.5);
        svg.appendChild(sv("line", {class: "axis", x1: x, x2: x, y1: m.top + this.plotH, y2: m.top + this.plotH + 4}));
        svg.appendChild(sv("text", {x, y: m.top + this.plotH + 16, "text-anchor": "middle"}, fmtInt(s)));
      }
      svg.appendChild(sv("line", {class: "axis", x1: m.left, x2: m.left + this.plotW, y1: m.top + this.plotH, y2: m.top + this.plotH}));
      svg.appendChild(sv("line", {class: "axis", x1: m.left, x2: m.left, y1: m.top, y2: m.top + this.plotH}));
      svg.appendChild(sv("text", {class: "axis-title x-title", x: m.left + this.plotW / 2, y: height - 6, "text-anchor": "middle"},
        `schedule position (${fmtInt(this.lo)}–${fmtInt(this.hi - 1)} of ${fmtInt(this.length)})`));
      svg.appendChild(sv("text", {class: "axis-title", transform: `translate(14 ${m.top + this.plotH / 2}) rotate(-90)`,
        "text-anchor": "middle"}, "live temp bytes"));

      this.drawLayers();
      this.drawMarks(full);
      this.cursor = sv("line", {class: "cursor", y1: m.top, y2: m.top + this.plotH, visibility: "hidden"});
      svg.appendChild(this.cursor);
      this.brush = sv("rect", {class: "brush", y: m.top, height: this.plotH, visibility: "hidden"});
      svg.appendChild(this.brush);
      svg.dataset.lo = this.lo; svg.dataset.hi = this.hi;
      svg.dataset.left = m.left; svg.dataset.plotWidth = this.plotW; svg.dataset.buckets = this.env.buckets;
      svg.dataset.yTop = this.yTop;
    }

    // Each layer's band per bucket: its max as the light area, its min as the dark one, so a
    // column that hides many steps still shows how high and how low they go.
    drawLayers() {
      const base = this.margin.top + this.plotH;
      const layers = this.layers.length ? this.layers : [];
      for (let k = layers.length - 1; k >= 0; k--) {
        const e = k === layers.length - 1 ? this.env : envelope(layers[k].top, this.lo, this.hi, Math.floor(this.plotW));
        for (const [which, cls] of [["maxs", "max"], ["mins", "min"]]) {
          const pts = [];
          for (let c = 0; c < e.buckets; c++) {
            const y = this.y(e[which][c]).toFixed(1);
            pts.push(`${this.x(e.starts[c]).toFixed(1)},${y}`, `${this.x(e.starts[c + 1]).toFixed(1)},${y}`);
          }
          const d = `M${this.x(this.lo).toFixed(1)},${base}L${pts.join("L")}L${this.x(this.hi).toFixed(1)},${base}Z`;
          if (cls === "min" && (!this.downsampled || layers.length > 1)) continue;
          const own = layers[k].series.color;
          const color = own || (k === 0 ? (cls === "max" ? "var(--series0)" : "var(--series0-min)") : `hsl(${(k * 67) % 360} 55% ${cls === "max" ? 78 : 48}%)`);
          this.svg.appendChild(sv("path", {class: `series series-${cls}`, "data-series": layers[k].series.key, d, fill: color}));
        }
      }
    }

    drawMarks(full) {
      const m = this.margin, svg = this.svg;
      const p = this.opts.peak, peakShown = p && p.index >= this.lo && p.index < this.hi;
      const peakRight = peakShown && this.x(p.index + 0.5) > m.left + this.plotW * 0.6;
      const lineLabels = [];
      for (const line of this.opts.lines || []) {
        if (line.bytes > this.yTop) continue;
        const y = this.y(line.bytes);
        // Labelled on the side the peak's label does not reach; moved below the line where
        // the peak's label still crosses it (checked once both are drawn).
        const atLeft = peakShown && !peakRight;
        svg.appendChild(sv("line", {class: line.cls, x1: m.left, x2: m.left + this.plotW, y1: y, y2: y}));
        const text = sv("text", {class: line.cls.replace("line", "label"), x: atLeft ? m.left + 6 : m.left + this.plotW - 4,
          y: y - 5, "text-anchor": atLeft ? "start" : "end"}, `${line.label} ${fmtBytes(line.bytes)}`);
        svg.appendChild(text);
        lineLabels.push([text, y]);
      }
      if (!peakShown) return;
      const x = this.x(p.index + 0.5), y = this.y(this.total[p.index]);
      svg.appendChild(sv("line", {class: "peak-line", x1: x, x2: x, y1: y, y2: m.top + this.plotH}));
      const label = sv("text", {class: "peak-label", x: peakRight ? x - 10 : x + 10, y: Math.max(m.top - 8, y - 10),
        "text-anchor": peakRight ? "end" : "start"}, `peak ${fmtBytes(this.total[p.index])} at position ${fmtInt(p.index)}: ${p.instruction}`);
      svg.appendChild(label);
      const box = label.getBBox();
      for (const [text, y] of lineLabels) {
        const other = text.getBBox();
        const crosses = box.x < other.x + other.width && other.x < box.x + box.width &&
                        box.y < other.y + other.height && other.y < box.y + box.height;
        if (crosses) text.setAttribute("y", y + 14);
      }
      const marker = sv("circle", {class: "peak-marker", cx: x, cy: y, r: 5.5, "data-step": p.index});
      svg.appendChild(marker);
    }

    hoverRows(i) {
      const rows = [["live temp", `${fmtBytes(this.total[i])} (${fmtInt(this.total[i])} B)`]];
      if (this.layers.length > 1) for (const l of this.layers) rows.push([l.series.label, fmtBytes(l.series.values[i] || 0)]);
      return rows;
    }

    hover(ev, onPeak) {
      const r = this.svg.getBoundingClientRect();
      const px = (ev.clientX - r.left) * (this.plotW + this.margin.left + this.margin.right) / r.width;
      if (px < this.margin.left || px > this.margin.left + this.plotW) { this.leave(); return; }
      let i, rows;
      const c = Math.min(this.env.buckets - 1, Math.floor((px - this.margin.left) / this.plotW * this.env.buckets));
      if (onPeak) i = this.opts.peak.index;
      else i = this.env.argmax[c];
      rows = this.hoverRows(i);
      const a = this.env.starts[c], b = this.env.starts[c + 1] - 1;
      if (!onPeak && b > a) rows.push(["this pixel", `positions ${fmtInt(a)}–${fmtInt(b)}; lowest ${fmtBytes(this.env.mins[c])}`]);
      const isPeak = this.opts.peak && i === this.opts.peak.index;
      const x = this.x(i + 0.5);
      this.cursor.setAttribute("x1", x); this.cursor.setAttribute("x2", x);
      this.cursor.setAttribute("visibility", "visible");
      showTip(ev.clientX, ev.clientY, `${isPeak ? "PEAK · " : ""}position ${fmtInt(i)}: ${this.stepName(i)}`, rows);
    }
    leave() { this.cursor && this.cursor.setAttribute("visibility", "hidden"); hideTip(); }

    // Drag across the chart to zoom on those steps; double-click to see them all again.
    listen() {
      let dragFrom = null;
      const toPlot = ev => {
        const r = this.svg.getBoundingClientRect();
        return (ev.clientX - r.left) * (this.plotW + this.margin.left + this.margin.right) / r.width;
      };
      this.svg.addEventListener("mousedown", ev => { if (ev.button === 0) { dragFrom = toPlot(ev); ev.preventDefault(); } });
      this.svg.addEventListener("mousemove", ev => {
        this.hover(ev, ev.target.classList && ev.target.classList.contains("peak-marker"));
        if (dragFrom === null) return;
        const to = toPlot(ev), a = Math.max(this.margin.left, Math.min(dragFrom, to)),
              b = Math.min(this.margin.left + this.plotW, Math.max(dragFrom, to));
        this.brush.setAttribute("x", a); this.brush.setAttribute("width", Math.max(0, b - a));
        this.brush.setAttribute("visibility", "visible");
      });
      window.addEventListener("mouseup", ev => {
        if (dragFrom === null) return;
        const to = toPlot(ev), from = dragFrom;
        dragFrom = null;
        this.brush.setAttribute("visibility", "hidden");
        if (Math.abs(to - from) < 4) return;
        const a = this.stepAt(Math.min(from, to)), b = this.stepAt(Math.max(from, to));
        this.setRange(a, b + 1);
      });
      this.svg.addEventListener("mouseleave", () => this.leave());
      this.svg.addEventListener("dblclick", () => this.setRange(0, this.length));
    }
  }

  function figure(key, bytes, note) {
    const f = el("div", {class: "figure"});
    f.appendChild(el("div", {class: "k"}, key));
    f.appendChild(el("div", {class: "v"}, fmtBytes(bytes)));
    f.appendChild(el("div", {class: "b"}, `${fmtInt(bytes)} B${note ? " · " + note : ""}`));
    return f;
  }

  function bufferRows(b, peak) {
    return [["bytes", `${fmtBytes(b.bytes)} (${fmtInt(b.bytes)} B)`], ["shape", b.shape],
            ["op_name", b.op_name || "—"], ["source", b.source || "—"],
            ["role", b.role ? b.role.replace(/_/g, " ") : "—"],
            ["live at", `position ${fmtInt(peak.index)} of the schedule (${peak.instruction}), the peak`]];
  }

  function memorySection(mod, index, sharedTop) {
    const sec = el("section", {class: "module", id: `module-${index}`});
    sec.appendChild(el("h2", {}, mod.title === mod.name ? mod.name : `${mod.name} — ${mod.title}`));
    const f = mod.figures, figs = el("div", {class: "figures"});
    const temp = mod.temp;
    figs.appendChild(figure(temp.key, f.temp_bytes, temp.card));
    figs.appendChild(figure("max live temp", f.temp_max_live_bytes, `at position ${fmtInt(mod.peak.index)}`));
    figs.appendChild(figure("arguments", f.argument_bytes));
    figs.appendChild(figure("outputs", f.output_bytes));
    figs.appendChild(figure("aliased", f.alias_bytes));
    figs.appendChild(figure("device total", f.total_bytes, "args + outs − aliased + temp"));
    figs.appendChild(figure("XLA's peak (peak_bytes)", f.peak_bytes, mod.peak_covers_temp === false
      ? "largest static buffers only: XLA records no heap trace here, no temp" : "largest static buffers + most heap live"));
    sec.appendChild(figs);
    for (const note of mod.notes || []) sec.appendChild(el("p", {class: "note"}, note));

    const controls = el("div", {class: "controls"});
    const from = el("input", {type: "number", min: 0, step: 1, "aria-label": "first position", class: "from"});
    const to = el("input", {type: "number", min: 0, step: 1, "aria-label": "last position", class: "to"});
    const reset = el("button", {type: "button", class: "reset"}, "whole schedule");
    const peakBtn = el("button", {type: "button", class: "zoom-peak"}, "around the peak");
    controls.append("schedule positions", from, "to", to, reset, peakBtn,
                    el("span", {}, "· drag across the chart to zoom, double-click for the whole schedule"));
    sec.appendChild(controls);

    const chart = el("div", {class: "chart"});
    sec.appendChild(chart);
    const lines = f.temp_bytes > 0 ? [{bytes: f.temp_bytes, label: temp.line, cls: "pack-line"}] : [];
    const tl = new Timeline(chart, mod.series, mod.steps, {peak: mod.peak, lines, top: sharedTop});
    const lowest = el("span"), seriesNotes = [];
    tl.onRange = (lo, hi) => {
      from.value = lo; to.value = hi - 1;
      // The min band and its legend entry only mean something when a column holds several steps.
      lowest.hidden = !tl.downsampled;
      for (const n of seriesNotes) n.textContent = tl.downsampled ? " (highest in each pixel column)" : "";
    };
    const apply = () => {
      const a = parseInt(from.value, 10), b = parseInt(to.value, 10);
      if (Number.isFinite(a) && Number.isFinite(b)) tl.setRange(Math.min(a, b), Math.max(a, b) + 1);
    };
    from.addEventListener("change", apply);
    to.addEventListener("change", apply);
    reset.addEventListener("click", () => tl.setRange(0, tl.length));
    peakBtn.addEventListener("click", () => {
      const half = Math.max(20, Math.floor(tl.length / 40));
      tl.setRange(mod.peak.index - half, mod.peak.index + half + 1);
    });

    const legend = el("div", {class: "legend"});
    for (const l of tl.layers) {
      const item = el("span");
      item.appendChild(el("span", {class: "sw", style: `background: ${l.series.color || "var(--series0)"}`}));
      const note = el("span");
      seriesNotes.push(note);
      item.append(l.series.label, note);
      legend.appendChild(item);
    }
    lowest.appendChild(el("span", {class: "sw", style: "background: var(--series0-min)"}));
    lowest.append("lowest in each pixel column");
    const pk = el("span");
    pk.appendChild(el("span", {class: "dot"}));
    pk.append("peak (most temp bytes live)");
    if (tl.layers.length > 1) legend.append(pk); else legend.append(lowest, pk);
    if (lines.length) {
      const pack = el("span");
      pack.appendChild(el("span", {class: "dash"}));
      pack.append(temp.legend);
      legend.append(pack);
    }
    sec.appendChild(legend);

    const bufs = mod.live_at_peak, sum = bufs.reduce((a, b) => a + b.bytes, 0);
    const head = el("div", {class: "buffers-head"});
    head.appendChild(el("h3", {}, `Buffers live at the peak (position ${fmtInt(mod.peak.index)}: ${mod.peak.instruction}) — ` +
                               `${fmtInt(bufs.length)} buffers, ${fmtBytes(sum)}`));
    const filter = el("input", {type: "search", placeholder: "filter: instruction, shape, op_name, source", "aria-label": "filter buffers"});
    head.appendChild(filter);
    sec.appendChild(head);
    const list = el("div", {class: "buffers", role: "list"});
    const details = el("div", {class: "details"});
    details.appendChild(el("span", {class: "muted"}, "Click a buffer to keep its details here."));
    const top = bufs.length ? bufs[0].bytes : 1;
    const hasRoles = bufs.some(b => "role" in b);
    if (hasRoles) list.classList.add("with-roles");
    // Rows are made as the list scrolls, a page at a time: thousands of buffers can be live at
    // the peak of a large module, and laying them all out at once would delay the first paint.
    const PAGE = 200;
    let shown = [], made = 0;
    const more = () => {
      const frag = document.createDocumentFragment();
      for (const i of shown.slice(made, made + PAGE)) {
        const b = bufs[i];
        const row = el("div", {class: "buf", role: "listitem", tabindex: 0, "data-i": i});
        row.appendChild(el("span", {class: "name"}, b.instruction));
        const bytes = el("span", {class: "bytes"});
        bytes.appendChild(el("span", {class: "bar", style: `width: ${Math.max(1, Math.round(80 * b.bytes / top))}px`}));
        bytes.append(fmtBytes(b.bytes));
        row.appendChild(bytes);
        row.appendChild(el("span", {class: "shape"}, b.shape));
        if (hasRoles) {
          const role = el("span", {class: "role"});
          role.appendChild(el("span", {class: "sw", style: `background: ${ROLE_COLORS[b.role] || "var(--series0)"}`}));
          role.append(b.role ? b.role.replace(/_/g, " ") : "—");
          row.appendChild(role);
        }
        frag.appendChild(row);
      }
      made = Math.min(shown.length, made + PAGE);
      list.appendChild(frag);
    };
    const show = indices => { shown = indices; made = 0; list.replaceChildren(); more(); };
    list.addEventListener("scroll", () => {
      if (made < shown.length && list.scrollTop + list.clientHeight > list.scrollHeight - 300) more();
    });
    show(bufs.map((_, i) => i));
    const rowOf = ev => ev.target.closest && ev.target.closest(".buf");
    list.addEventListener("mousemove", ev => {
      const row = rowOf(ev);
      if (!row) { hideTip(); return; }
      const b = bufs[+row.dataset.i];
      showTip(ev.clientX, ev.clientY, b.instruction, bufferRows(b, mod.peak));
    });
    list.addEventListener("mouseleave", hideTip);
    const pin = row => {
      if (!row) return;
      for (const r of list.querySelectorAll(".buf.pinned")) r.classList.remove("pinned");
      row.classList.add("pinned");
      const b = bufs[+row.dataset.i];
      details.replaceChildren(el("div", {class: "t"}, b.instruction));
      const dl = el("dl");
      for (const [k, v] of bufferRows(b, mod.peak)) { dl.appendChild(el("dt", {}, k)); dl.appendChild(el("dd", {}, v)); }
      details.appendChild(dl);
    };
    list.addEventListener("click", ev => pin(rowOf(ev)));
    list.addEventListener("keydown", ev => { if (ev.key === "Enter") pin(rowOf(ev)); });
    filter.addEventListener("input", () => {
      const q = filter.value.toLowerCase();
      show(bufs.map((_, i) => i).filter(i => {
        const b = bufs[i];
        return q === "" || `${b.instruction} ${b.shape} ${b.op_name || ""} ${b.source || ""} ${b.role || ""}`.toLowerCase().includes(q);
      }));
    });
    if (!bufs.length) list.appendChild(el("div", {class: "buf muted"}, "No temp buffer is live at the peak."));
    sec.append(list, details);
    return {sec, tl};
  }

  // The diff's sentence and its causes, which add up to the gap in temp bytes; then what the
  // text diff says besides: each cause's largest buffers, collective instructions, held
  // gathers and the trade.
  function causesSection(data) {
    const sec = el("section", {class: "causes", id: "causes"});
    sec.appendChild(el("h2", {class: "summary"}, data.summary));
    const signed = n => (n > 0 ? "+" : n < 0 ? "−" : "±") + fmtBytes(Math.abs(n));
    const table = (cls, headers, rows) => {
      const t = el("table", {class: cls});
      const head = el("tr");
      for (const h of headers) head.appendChild(el("th", {}, h));
      t.appendChild(head);
      for (const r of rows) t.appendChild(r);
      return t;
    };
    const swatch = role => el("span", {class: "sw", style: `background: ${ROLE_COLORS[role] || "var(--series0)"}`});
    const rows = data.causes.map(c => {
      const tr = el("tr", {class: c.bytes > 0 ? "grew" : "shrank"});
      const cause = el("td", {class: "cause"});
      cause.append(swatch(c.role), c.label);
      tr.append(el("td", {class: "num"}, signed(c.bytes)), el("td", {class: "num"}, fmtBytes(c.a_bytes)),
                el("td", {class: "num"}, fmtBytes(c.b_bytes)), cause, el("td", {}, c.description));
      return tr;
    });
    const total = el("tr", {class: "total"});
    total.append(el("td", {class: "num"}, signed(data.delta_temp_bytes)), el("td"), el("td"),
                 el("td", {}, "temp (sum)"), el("td", {}, "the causes add up to the gap"));
    rows.push(total);
    sec.appendChild(table("cause-table", ["change (B − A)", "A", "B", "cause", "what"], rows));

    const largest = data.causes.filter(c => c.instructions && (c.instructions.a.length || c.instructions.b.length));
    if (largest.length) {
      const box = el("div", {class: "largest", id: "largest"});
      for (const c of largest) {
        const h = el("h3");
        h.append(swatch(c.role), `${c.label}: largest buffers at each peak`);
        box.appendChild(h);
        const trs = [];
        for (const side of ["a", "b"]) for (const r of c.instructions[side].slice(0, 5)) {
          const tr = el("tr");
          tr.append(el("td", {}, side.toUpperCase()), el("td", {class: "num"}, fmtBytes(r.bytes)),
                    el("td", {class: "ident"}, r.instruction), el("td", {class: "ident"}, r.matched || "—"),
                    el("td", {class: "trail"}, r.op_name || ""), el("td", {class: "trail"}, r.source || ""));
          trs.push(tr);
        }
        box.appendChild(table("buffer-table", ["side", "bytes", "instruction", "matches", "op_name", "source"], trs));
      }
      sec.appendChild(box);
    }
    if (data.collectives && data.collectives.length) {
      const trs = data.collectives.map(v => {
        const tr = el("tr");
        const change = v.b - v.a;
        tr.append(el("td", {}, v.kind), el("td", {class: "num"}, fmtInt(v.a)), el("td", {class: "num"}, fmtInt(v.b)),
                  el("td", {class: "num"}, (change > 0 ? "+" : change < 0 ? "−" : "±") + fmtInt(Math.abs(change))),
                  el("td", {class: "num"}, fmtBytes(v.a_bytes)), el("td", {class: "num"}, fmtBytes(v.b_bytes)));
        return tr;
      });
      const h = el("h3", {}, "Collective instructions (count in the text; bytes of their results)");
      sec.append(h, table("collective-table", ["kind", "A", "B", "change", "A bytes", "B bytes"], trs));
    }
    const g = data.held_gathers;
    if (g) sec.appendChild(el("p", {class: "held"}, "Held all-gathered values (one all-gather instruction may return " +
      `several): A ${fmtInt(g.a.values)} (${fmtBytes(g.a.bytes_at_peak)} live at its peak), ` +
      `B ${fmtInt(g.b.values)} (${fmtBytes(g.b.bytes_at_peak)} live at its peak)`));
    if (data.trade) sec.appendChild(el("p", {class: "trade"}, data.trade));
    for (const side of ["a", "b"]) {
      const r = data.recomputed && data.recomputed[side];
      if (r && r.length) sec.appendChild(el("p", {class: "muted"}, `recomputed in ${side.toUpperCase()}: ${r.join(", ")}`));
    }
    return sec;
  }

  const data = JSON.parse(document.getElementById("hloscope-data").textContent);
  const ROLE_COLORS = data.role_colors || {};
  const report = document.getElementById("report");
  const timelines = [];
  if (data.kind === "diff") report.appendChild(causesSection(data));
  if (data.kind === "memory" || data.kind === "diff") {
    data.modules.forEach((mod, i) => {
      const {sec, tl} = memorySection(mod, i, data.shared_top || 0);
      report.appendChild(sec);
      timelines.push(tl);
      tl.setRange(0, tl.length);
    });
  }
  let pending = 0;
  window.addEventListener("resize", () => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(() => timelines.forEach(t => t.render()));
  });
  document.body.dataset.ready = "1";
})();
"""
