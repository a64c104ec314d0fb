"""A sweep as one self-contained HTML page (`hloscope sweep --html`): the ranked table, a
scatter of memory per device against the estimated step time with the device's memory as a
line and the Pareto front, and each variant's diff against the best, opened by a click on its
point or its row. The picture is SVG written here; a few lines of script only show and hide.
"""

from __future__ import annotations

import html
import math

from ..htmlreport import self_contained_page
from ..report.cost import human_seconds
from ..units import human_bytes, human_flops
from .grid import apart, label, varying
from .result import SweepResult, Variant

WIDTH, HEIGHT = 760, 380
LEFT, RIGHT, TOP, BOTTOM = 78, 44, 20, 48


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _y(v: Variant, timed: bool) -> float:
    return v.step_time_estimate if timed else float(v.flops)


def pareto(rows: list[Variant], timed: bool) -> list[Variant]:
    """The variants no other beats on both memory and time (or FLOPs), by memory."""
    front, best = [], math.inf
    for v in sorted(rows, key=lambda v: (v.total_bytes, _y(v, timed))):
        if _y(v, timed) < best:
            front.append(v)
            best = _y(v, timed)
    return front


def _domain(values: list[float]) -> tuple[float, float]:
    """An axis' range: the values with a margin of a tenth of their spread (of their size when
    they are all alike), from 0 when the margin would reach below it."""
    lo, hi = min(values), max(values)
    pad = (hi - lo) / 10 or abs(hi) / 10 or 1.0
    lo = 0.0 if lo - pad < 0 else lo - pad
    return lo, hi + pad


def scatter(result: SweepResult) -> str:
    """The SVG: a point per variant that compiled (rank inside), x memory, y time."""
    rows = [v for v in result.variants if v.ok]
    if not rows:
        return "<p class='muted'>No variant compiled.</p>"
    timed = all(v.step_time_estimate is not None for v in rows)
    memory = [v.total_bytes for v in rows]
    shows_hbm = result.hbm_bytes is not None and result.hbm_bytes <= 4 * max(memory)
    x_lo, x_hi = _domain(memory + ([result.hbm_bytes] if shows_hbm else []))
    y_lo, y_hi = _domain([_y(v, timed) for v in rows])
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + pw * (x - x_lo) / (x_hi - x_lo)

    def py(y: float) -> float:
        return TOP + ph * (1 - (y - y_lo) / (y_hi - y_lo))

    fmt_y = human_seconds if timed else human_flops
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {WIDTH} {HEIGHT}' id='scatter' "
           f"data-points='{len(rows)}' role='img' aria-label='memory against estimated step time'>"]
    for k in range(5):
        x, y = x_lo + (x_hi - x_lo) * k / 4, y_lo + (y_hi - y_lo) * k / 4
        out.append(f"<line class='grid' x1='{px(x):.1f}' y1='{TOP}' x2='{px(x):.1f}' y2='{TOP + ph}'/>")
        out.append(f"<line class='grid' x1='{LEFT}' y1='{py(y):.1f}' x2='{LEFT + pw}' y2='{py(y):.1f}'/>")
        out.append(f"<text x='{px(x):.1f}' y='{TOP + ph + 16}' text-anchor='middle'>{_e(human_bytes(x, 1))}</text>")
        out.append(f"<text x='{LEFT - 6}' y='{py(y) + 4:.1f}' text-anchor='end'>{_e(fmt_y(y) if y else '0')}</text>")
    out.append(f"<line class='axis' x1='{LEFT}' y1='{TOP + ph}' x2='{LEFT + pw}' y2='{TOP + ph}'/>")
    out.append(f"<line class='axis' x1='{LEFT}' y1='{TOP}' x2='{LEFT}' y2='{TOP + ph}'/>")
    out.append(f"<text class='axis-title' x='{LEFT + pw / 2}' y='{HEIGHT - 8}' text-anchor='middle'>"
               "memory per device (arguments + outputs − aliased + temp)</text>")
    y_title = "estimated step time (roofline ESTIMATE)" if timed else "FLOPs per step (no step-time estimate)"
    out.append(f"<text class='axis-title' transform='translate(14 {TOP + ph / 2}) rotate(-90)' "
               f"text-anchor='middle'>{_e(y_title)}</text>")
    if result.hbm_bytes is not None:
        if shows_hbm:
            x = px(result.hbm_bytes)
            out.append(f"<line class='hbm' id='hbm-line' x1='{x:.1f}' y1='{TOP}' x2='{x:.1f}' y2='{TOP + ph}'/>")
            left = x > LEFT + pw / 2  # the label on the side with room
            out.append(f"<text class='hbm-label' x='{x - 4 if left else x + 4:.1f}' y='{TOP + 12}' "
                       f"text-anchor='{'end' if left else 'start'}'>device memory {_e(human_bytes(result.hbm_bytes, 1))}</text>")
        else:
            out.append(f"<text class='hbm-label' id='hbm-line' x='{LEFT + pw}' y='{TOP + 12}' text-anchor='end'>"
                       f"device memory {_e(human_bytes(result.hbm_bytes, 1))} →</text>")
    front = pareto(rows, timed)
    points = " ".join(f"{px(v.total_bytes):.1f},{py(_y(v, timed)):.1f}" for v in front)
    out.append(f"<polyline class='pareto' id='pareto' data-ranks='{' '.join(str(v.rank) for v in front)}' points='{points}'/>")
    on_front = {v.rank for v in front}
    named = varying(result.grid)
    for v in sorted(rows, key=lambda v: -v.rank):  # the better drawn over the worse where they overlap
        cls = "pt" + (" best" if v.rank == 1 else "") + ("" if v.fits else " nofit") + (" front" if v.rank in on_front else "")
        x, y = px(v.total_bytes), py(_y(v, timed))
        out.append(f"<g class='{cls}' data-rank='{v.rank}' tabindex='0'><circle cx='{x:.1f}' cy='{y:.1f}' r='8'/>"
                   f"<text x='{x:.1f}' y='{y + 4:.1f}' text-anchor='middle'>{v.rank}</text>"
                   f"<title>{_e(label(v.knobs, named))}: {_e(human_bytes(v.total_bytes))}, {_e(fmt_y(_y(v, timed)))}</title></g>")
    out.append("</svg>")
    return "".join(out)


def _table(result: SweepResult) -> str:
    knobs = list(result.grid)
    head = "".join(f"<th>{_e(h)}</th>" for h in ["rank", *knobs, "temp", "total", "fits", "step (est.)", "flops",
                                                   "recompute", "collective", "held gathers at peak", "why"])
    body = []
    for v in result.variants:
        cells = [str(v.rank)] + [str(v.knobs.get(k, "")) for k in knobs]
        if v.ok:
            cells += [human_bytes(v.temp_bytes), human_bytes(v.total_bytes), "yes" if v.fits else "NO",
                      f"≥ {human_seconds(v.step_time_estimate)}" if v.step_time_estimate is not None else "-",
                      human_flops(v.flops), human_flops(v.recompute_flops) if v.recompute_flops else "-",
                      human_bytes(v.collective_bytes), f"{v.held_gathers} ({human_bytes(v.held_bytes_at_peak)})",
                      v.why or ""]
            tds = "".join(f"<td class='num'>{_e(c)}</td>" for c in cells[:-1]) + f"<td class='why'>{_e(cells[-1])}</td>"
        else:
            tds = "".join(f"<td class='num'>{_e(c)}</td>" for c in cells) + \
                f"<td colspan='9' class='error'>error: {_e(v.error)}</td>"
        cls = "row" + ("" if v.ok else " failed") + ("" if v.fits or not v.ok else " nofit")
        body.append(f"<tr class='{cls}' data-rank='{v.rank}'>{tds}</tr>")
    return f"<table class='ranked'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _diff_panel(result: SweepResult, index: int) -> str:
    v = result.variants[index]
    best = result.variants[0]
    if index == 0:
        inner = (f"<h3>{_e(label(v.knobs, varying(result.grid)))} is the best variant</h3>"
                 + (f"<p>Against its best neighbour: {_e(v.why)}</p>" if v.why else ""))
    else:
        d = result.to_best.get(index)
        if d is None:
            inner = f"<h3>{_e(label(v.knobs))}</h3><p>No diff against the best.</p>"
        else:
            causes = "".join(
                f"<tr><td class='num'>{_e(human_bytes(c.bytes, sign=True))}</td><td class='num'>{_e(human_bytes(c.a_bytes))}</td>"
                f"<td class='num'>{_e(human_bytes(c.b_bytes))}</td><td>{_e((c.role or c.label or c.kind).replace('_', ' '))}</td>"
                f"<td>{_e(c.description)}</td></tr>" for c in d.causes)
            colls = "".join(f"<tr><td>{_e(k)}</td><td class='num'>{x['a']}</td><td class='num'>{x['b']}</td>"
                            f"<td class='num'>{_e(human_bytes(x['a_bytes']))}</td><td class='num'>{_e(human_bytes(x['b_bytes']))}</td></tr>"
                            for k, x in d.collectives_delta().items())
            trade = d.trade()
            differ = apart(best.knobs, v.knobs)
            inner = (f"<h3>rank {v.rank} ({_e(label(v.knobs, differ))}) against the best, rank 1 "
                     f"({_e(label(best.knobs, differ))})</h3>"
                     f"<p class='summary'>{_e(d.summary)}</p>"
                     + (f"<p>{_e(d.trade_sentence())}</p>" if trade else "")
                     + "<table class='causes'><thead><tr><th>change</th><th>best (A)</th><th>this (B)</th><th>cause</th>"
                       f"<th>what</th></tr></thead><tbody>{causes}</tbody></table>"
                     + ("<table class='causes'><thead><tr><th>collective</th><th>best</th><th>this</th><th>best bytes</th>"
                        f"<th>this bytes</th></tr></thead><tbody>{colls}</tbody></table>" if colls else "")
                     + (f"<p class='muted'>Against its best neighbour: {_e(v.why)}</p>" if v.why else ""))
    return f"<section class='diff' id='diff-{v.rank}' data-rank='{v.rank}' hidden>{inner}</section>"


def sweep_page(result: SweepResult) -> str:
    """The page (one string, nothing loaded from anywhere)."""
    hbm = human_bytes(result.hbm_bytes, 1) if result.hbm_bytes is not None else "no limit"
    title = f"hloscope sweep: {result.factory} on {result.target}"
    notes = "".join(f"<p class='muted'>note: {_e(n)}</p>" for n in result.notes)
    estimate = ("<p class='muted'>Step times are a roofline ESTIMATE on "
                f"{_e(result.roofline)} from published peaks, not a measurement.</p>" if result.roofline else "")
    panels = "".join(_diff_panel(result, i) for i, v in enumerate(result.variants) if v.ok)
    return self_contained_page(
        title, _STYLE, _SCRIPT,
        f"<main><p>{len(result.variants)} variants; device memory: {_e(hbm)}. Click a point or a "
        f"row for its diff against the best.</p>{estimate}{notes}"
        f"<div class='plot'>{scatter(result)}"
        "<div class='legend'><span class='sw best'></span>best <span class='sw'></span>fits "
        "<span class='sw nofit'></span>does not fit <span class='line pareto'></span>Pareto front (ringed) "
        "<span class='line hbm'></span>device memory</div></div>"
        f"<div id='panels'>{panels}</div>{_table(result)}</main>",
        {"ranks": [v.rank for v in result.variants if v.ok]})


_STYLE = r"""
:root { --ink: #1d2330; --muted: #5b6475; --line: #d5dae3; --panel: #f6f8fb; --fit: #4f7fd0; --nofit: #c62828;
        --best: #067647; --pareto: #e07b39; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; color: var(--ink); }
header { padding: 14px 24px 6px; border-bottom: 1px solid var(--line); }
h1 { font-size: 18px; margin: 0 0 6px; font-weight: 600; word-break: break-all; }
h3 { font-size: 15px; margin: 0 0 6px; }
main { padding: 8px 24px 40px; }
.muted { color: var(--muted); }
.plot { max-width: 800px; }
#scatter { width: 100%; height: auto; display: block; }
#scatter text { font-size: 11px; fill: var(--muted); }
#scatter .axis-title { font-size: 12px; fill: var(--ink); }
#scatter .grid { stroke: #eceff4; }
#scatter .axis { stroke: #9aa3b2; }
#scatter .hbm { stroke: var(--nofit); stroke-width: 2; stroke-dasharray: 6 4; }
#scatter .hbm-label { fill: var(--nofit); font-size: 12px; font-weight: 600; }
#scatter .pareto { fill: none; stroke: var(--pareto); stroke-width: 2; }
#scatter .pt { cursor: pointer; }
#scatter .pt circle { fill: var(--fit); stroke: #fff; stroke-width: 1.5; }
#scatter .pt.best circle { fill: var(--best); }
#scatter .pt.nofit circle { fill: var(--nofit); }
#scatter .pt text { fill: #fff; font-size: 10px; font-weight: 700; pointer-events: none; }
#scatter .pt.front circle { stroke: var(--pareto); stroke-width: 3; }
#scatter .pt.selected circle { stroke: var(--ink); stroke-width: 3; }
.legend { display: flex; gap: 14px; color: var(--muted); font-size: 12px; margin: 2px 0 8px 78px; align-items: center; }
.legend .sw { display: inline-block; width: 11px; height: 11px; border-radius: 50%; background: var(--fit); }
.legend .sw.best { background: var(--best); } .legend .sw.nofit { background: var(--nofit); }
.legend .line { display: inline-block; width: 20px; border-top: 2px solid var(--pareto); }
.legend .line.hbm { border-top: 2px dashed var(--nofit); }
.diff { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; margin: 8px 0 14px; max-width: 1200px; }
.diff .summary { font-weight: 600; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.why { min-width: 420px; max-width: 900px; }
td.error { color: var(--nofit); }
tr.row { cursor: pointer; } tr.row:hover { background: #eef3fb; } tr.selected { background: #e3ecfa; }
tr.nofit td:nth-child(1) { color: var(--nofit); }
"""

_SCRIPT = r"""
"use strict";
(function () {
  const ranks = JSON.parse(document.getElementById("hloscope-data").textContent).ranks;
  function open(rank) {
    document.querySelectorAll("section.diff").forEach(s => { s.hidden = s.dataset.rank !== String(rank); });
    document.querySelectorAll("#scatter .pt, tr.row").forEach(e => e.classList.toggle("selected", e.dataset.rank === String(rank)));
    document.body.dataset.open = String(rank);
  }
  document.querySelectorAll("#scatter .pt").forEach(p => {
    p.addEventListener("click", () => open(p.dataset.rank));
    p.addEventListener("keydown", e => { if (e.key === "Enter") open(p.dataset.rank); });
  });
  document.querySelectorAll("tr.row").forEach(r => r.addEventListener("click", () => {
    if (ranks.includes(Number(r.dataset.rank))) open(r.dataset.rank);
  }));
  document.body.dataset.ready = "1";
})();
"""

__all__ = ["pareto", "scatter", "sweep_page"]
