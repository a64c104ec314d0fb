"""Terminal output: rich is imported in this package and nowhere else.

Formatters build renderables (tables, text) from analysis results; every table goes through
the one renderer (`table.render_table`), which never splits an identifier; `print_renderable`
prints them, without colour when stdout is not a terminal or NO_COLOR is set.

Words used one way everywhere (README, "Reading the output"): a *step* is a training step
(`per step`); a place in the compiled schedule is a *position* (`peak at position 226`);
counts are plain numbers and sizes carry units; an all-gather *instruction* may return several
all-gathered *values* (`all-gather-start{1,3}` is element {1,3} of its tuple result).
"""

from __future__ import annotations

from rich.text import Text

from .table import FIGURE, NAME, PROSE, TRAIL, Column, render_table, shorten_middle, tidy_op_name
from .terminal import console, parse_progress, print_renderable, terminal_width

from ..units import human_bytes, human_flops


def table(title: str | None, columns, rows) -> list[Text]:
    """`render_table` at the width of the terminal stdout is (unbounded into a pipe)."""
    return render_table(title, columns, rows, terminal_width())


def heading(text: str) -> Text:
    return Text(text, style="bold")


def stats_report(result, labels=None) -> list:
    """`hloscope stats`: one block per module; `labels` (the input files, when there are
    several) prefix the headings."""
    out: list = []
    for n, m in enumerate(result.modules):
        prefix = f"{labels[n]}: " if labels else ""
        out.append(heading(f"{prefix}{m.name}: {m.computations} computations, {m.instructions} instructions"
                           + (" (scheduled)" if m.is_scheduled else "")))
        rows = sorted(m.opcodes.items(), key=lambda kv: (-kv[1], kv[0]))
        out.extend(table(None, [Column("opcode"), Column("count", FIGURE)], rows))
        out.append(Text(""))
    return out


# ─── count-collectives ─────────────────────────────────────────────────────────────────


def _count(n: int | None) -> str:
    return "?" if n is None else str(n)


def collectives_report(results, by: str = "kind", labels=None) -> list:
    """`hloscope count-collectives`: a table per module, with totals; `?` = unknown trip count.

    `labels`, one per result, prefix each heading (the input file when there are several)."""
    out: list = []
    for n, r in enumerate(results):
        prefix = f"{labels[n]}: " if labels else ""
        out.append(heading(f"{prefix}{r.module}: {r.total.count} collectives, "
                           f"{_count(r.total.dynamic_count)} per step"))
        cols = [Column("kind"), Column("count", FIGURE), Column("per step", FIGURE), Column("bytes", FIGURE),
                Column("bytes per step", FIGURE), Column("async", FIGURE), Column("group sizes")]
        if by == "kind":
            tallies = [(kind, t) for kind, t in r.by_kind.items() if t.count]
            tallies += [(kind, t) for kind, t in r.point_to_point.items() if t.count]
            rows = [[kind, *_tally_cells(t)] for kind, t in tallies]
            rows.append(["total", *_tally_cells(r.total)])
            out.extend(table(None, cols, rows))
        else:
            # The group's name last, where the rest of the line is free for it.
            cols = cols + [Column(by, TRAIL if by in ("op_name", "source") else NAME)]
            rows = [[kind, *_tally_cells(t), key if key is not None else f"(no {by})"]
                    for key, kind, t in r.group_by(by)]
            rows.append(["total", *_tally_cells(r.total), ""])
            out.extend(table(None, cols, rows))
        if r.total.unknown_trip_count:
            out.append(Text("? : under a while loop whose trip count is neither recorded (known_trip_count) "
                            "nor inferable from its counter", style="dim"))
        out.append(Text(""))
    return out


def _tally_cells(t) -> list[str]:
    return [str(t.count), _count(t.dynamic_count), human_bytes(t.bytes),
            human_bytes(t.dynamic_bytes) if t.dynamic_bytes is not None else "?",
            str(t.async_count), ",".join(str(s) for s in t.group_sizes) or "-"]


# ─── check ─────────────────────────────────────────────────────────────────────────────


def _github_escape(text: str, is_property: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if is_property:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def github_annotations(violations, file: str) -> str:
    """One `::error file=FILE,title=...::message` workflow command per violation."""
    return "".join(
        f"::error file={_github_escape(file, True)},title={_github_escape('hloscope budget', True)}"
        f"::{_github_escape(v.message)}\n"
        for v in violations
    )


def check_report(violations, file: str, fmt: str = "text", modules=()) -> str:
    """`hloscope check`: each violation on a line (or as GitHub annotations), else `ok`."""
    if fmt == "github":
        return github_annotations(violations, file).rstrip("\n")
    if not violations:
        return f"{file}: ok ({', '.join(modules)} within budget)" if modules else f"{file}: ok"
    lines = [f"{file}: {len(violations)} budget violation{'s' if len(violations) != 1 else ''}"]
    lines += [f"{file}: error: {v.message}" for v in violations]
    return "\n".join(lines)


_SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values, width: int = 72) -> str:
    """A one-line chart of `values`, each character the maximum of its bucket."""
    values = list(values)
    if not values:
        return ""
    width = max(1, min(width, len(values)))
    buckets = [max(values[i * len(values) // width:(i + 1) * len(values) // width] or [0]) for i in range(width)]
    top = max(buckets) or 1
    return "".join(_SPARK[min(len(_SPARK) - 1, int(b * (len(_SPARK) - 1) / top + 0.5))] for b in buckets)


def memory_report(results, top: int = 10, labels=None, xla=None) -> list:
    """`hloscope memory`: headline figures, the top buffers live at the peak, the timeline.

    `labels` (the input files, when there are several) prefix the headings; `xla`, one per
    result, XLA's own figures from a dump's buffer assignment (hloscope.text.dumpfiles), or None."""
    out: list = []
    for n, m in enumerate(results):
        prefix = f"{labels[n]}: " if labels else ""
        covers = getattr(m, "peak_covers_temp", True)
        out.append(heading(f"{prefix}{m.name}: temp {human_bytes(m.temp_bytes)} "
                           f"(max live {human_bytes(m.temp_max_live_bytes)}), "
                           f"total {human_bytes(getattr(m, 'total_bytes', 0))}"
                           + (f", peak {human_bytes(m.peak_bytes)}" if covers else "")))
        out.append(Text(f"arguments {human_bytes(m.argument_bytes)} · outputs {human_bytes(m.output_bytes)} · "
                        f"aliased {human_bytes(m.alias_bytes)} · temp peaks at position {m.peak_at['index']} "
                        f"of the schedule ({m.peak_at['instruction']})"))
        if not covers:
            out.append(Text(f"XLA's peak_memory_in_bytes is {human_bytes(m.peak_bytes)} here: on this backend XLA "
                            "records no heap trace, so it counts only the largest argument, constant and output "
                            "buffers, no temp", style="dim"))
        if getattr(m, "xla", None):
            out.append(xla_memory_analysis_line(m))
        if xla and xla[n] is not None:
            out.append(xla_figures_line(xla[n]))
        out.extend(Text(f"note: {note}") for note in getattr(m, "notes", ()))
        rows = [(human_bytes(b.bytes), b.instruction, b.shape, b.op_name or "", b.source or "")
                for b in m.live_at_peak[:top]]
        if rows:
            out.extend(table(f"top {len(rows)} of {len(m.live_at_peak)} buffers live at the peak",
                             [Column("bytes", FIGURE), Column("instruction"), Column("shape"),
                              Column("op_name", TRAIL), Column("source", TRAIL)], rows))
            out.extend(element_note(r[1] for r in rows))
        if m.timeline:
            out.append(Text(f"temp bytes over the schedule's {len(m.timeline)} positions "
                            f"(max {human_bytes(max(m.timeline))}):"))
            out.append(Text(sparkline(m.timeline)))
        out.extend(memory_spaces_lines(m))
        out.append(Text(""))
    return out


def element_note(names) -> list[Text]:
    """What `all-gather-start{1,3}` means, once under a table that shows such a name."""
    name = next((n for n in names if n.endswith("}") and "{" in n), None)
    if name is None:
        return []
    base, index = name[:-1].split("{", 1)
    return [Text(f"{name}: element {{{index}}} of the tuple that {base} returns", style="dim")]


def xla_memory_analysis_line(m) -> Text:
    """XLA's `memory_analysis()` figures beside hloscope's, each with hloscope's error."""
    parts = []
    for key, label in (("temp_bytes", "temp"), ("argument_bytes", "arguments"), ("output_bytes", "outputs"),
                       ("alias_bytes", "aliased"), ("total_bytes", "total"), ("peak_bytes", "peak")):
        theirs = m.xla.get(key)
        if theirs is None:
            continue
        ours = getattr(m, key, 0)
        error = "exact" if ours == theirs else (f"{(ours - theirs) / theirs:+.2%}" if theirs else "n/a")
        parts.append(f"{label} {human_bytes(theirs)} (hloscope {error})")
    return Text("XLA (memory_analysis): " + " · ".join(parts))


def xla_figures_line(f) -> Text:
    """XLA's own figures, summed from the dump's buffer assignment, beside hloscope's."""
    others = " · ".join(f"S({c}) {human_bytes(b)}" for c, b in sorted(f.other_memory_space_temp_bytes.items()))
    return Text(f"XLA (buffer assignment): temp {human_bytes(f.temp_bytes)} · arguments "
                f"{human_bytes(f.argument_bytes)} · outputs {human_bytes(f.output_bytes)} · "
                f"aliased {human_bytes(f.alias_bytes)}" + (f" · temp in other memory spaces {others}" if others else ""))


def memory_spaces_lines(m) -> list:
    """Temp bytes of memory spaces other than device memory (0), host memory (S(5)) apart."""
    spaces = getattr(m, "other_memory_space_bytes", None) or {}
    out: list = []
    others = [f"S({space}) {human_bytes(size)}" for space, size in sorted(spaces.items()) if space != 5]
    if others:
        out.append(Text("temp in other memory spaces (packed apart, not in temp above): " + " · ".join(others)))
    if 5 in spaces:
        out.append(Text(f"host memory (S(5)): temp {human_bytes(spaces[5])} (not in temp or peak above)"))
    return out


def gathers_report(results, memories=None) -> list:
    """`hloscope gathers`: per module the held all-gathers, largest at the peak first, what
    they cost at the peak, and the remedy where one is demonstrated (docs/gathers.md)."""
    out: list = []
    for k, g in enumerate(results):
        memory = memories[k] if memories else None
        out.append(heading(f"{g.name}: {len(g.held)} of {g.gathers} all-gathered values held, "
                           f"{human_bytes(g.held_bytes)} ({human_bytes(g.held_bytes_at_peak)} live at the peak, "
                           f"position {g.peak_step} of the schedule)"))
        if g.boundary == "schedule":
            where = (f"position {g.boundary_step}" if g.boundary_step is not None
                     else "nowhere (no gradient reduction)")
            out.append(Text("no JAX metadata tells forward from backward: the backward pass is taken to start "
                            f"at the first gradient reduction, {where}"))
        rows = []
        for h in g.held:
            sides: dict[str, int] = {}
            for u in h.users:
                sides[u.side] = sides.get(u.side, 0) + 1
            rows.append((human_bytes(h.bytes), human_bytes(h.bytes_at_peak), h.instruction,
                         h.parameter_path or h.parameter or "", ", ".join(r.replace("_", " ") for r in h.reasons),
                         f"{h.first_use.get('step', '?')}–{h.last_use.get('step', '?')}",
                         " ".join(f"{side} {n}" for side, n in sorted(sides.items())), h.origin))
        if rows:
            out.extend(table("held all-gathered values",
                             [Column("bytes", FIGURE), Column("at peak", FIGURE), Column("instruction"),
                              Column("parameter"), Column("why", PROSE), Column("used (positions)"),
                              Column("users"), Column("origin")], rows))
            out.extend(element_note(r[2] for r in rows))
            out.append(Text("a value is one all-gathered array: a combined all-gather instruction returns several",
                            style="dim"))
            out.extend(Text(line) for line in _gathers_advice(g, memory))
        for a in g.as_all_reduce:
            out.append(Text(f"all-gather done as an all-reduce: {a.instruction} ({human_bytes(a.bytes)}): "
                            "a zero-padded shard all-reduced, then sliced; an all-gather moves the same result"))
        out.append(Text(""))
    return out


def _gathers_advice(g, memory) -> list[str]:
    """What the held gathers cost at the peak, and the remedy demonstrated on hloscope's
    fixture pairs (docs/gathers.md) for the partitioner's gathers; for explicit ones, only
    what was found."""
    lines = []
    if g.held_bytes_at_peak == 0:
        lines.append("None of the held bytes is live at the peak: re-gathering them would not lower the peak, "
                     "and would add all-gathers.")
        return lines
    share = f" ({100 * g.held_bytes_at_peak / memory.temp_bytes:.0f}% of temp)" if memory and memory.temp_bytes else ""
    lines.append(f"Held gathers account for {human_bytes(g.held_bytes_at_peak)} at the peak{share}: the most "
                 "re-gathering them could save there.")
    if any(h.origin == "partitioner" and h.bytes_at_peak for h in g.held):
        lines.append("These gathers come from the SPMD partitioner, which a remat policy never sees "
                     "(jax-ml/jax#25010); wrapping each layer in jax.checkpoint keeps XLA from merging the "
                     "backward pass's gathers into the forward ones. On hloscope's fixture pairs it re-gathered all "
                     "but one held gather at the price of more all-gathers; XLA's temp fell on the H100 target but "
                     "rose on CPU, where other buffers set the peak (docs/gathers.md). Compare both compilations "
                     "with `hloscope diff` before adopting it.")
    if any("spans_backward_start" in h.reasons and h.bytes_at_peak for h in g.held):
        lines.append("Some are held because XLA's schedule gathers them early (a recomputation or a backward "
                     "pass's gather run during the forward pass): jax.checkpoint does not change that; on "
                     "hloscope's CPU fixture its re-gathers are the ones held.")
    if any(h.origin == "explicit" and h.bytes_at_peak for h in g.held):
        lines.append("Some held gathers are explicit all_gather calls of the program: no remedy is demonstrated "
                     "for those here.")
    return lines


def diff_report(d, top: int = 5) -> list:
    """`hloscope diff`: the one sentence, the causes, then the details of each side."""
    a, b = d.a.memory, d.b.memory
    out: list = [heading(d.summary)]
    for name, side, m in (("A", d.a, a), ("B", d.b, b)):
        out.append(Text(f"{name}: {side.label or m.name}: temp {human_bytes(m.temp_bytes)}, peak at position "
                        f"{m.peak_at['index']} of its schedule ({m.peak_at['instruction']})"))
    shown, small = _shown_causes(d)
    rows = [(human_bytes(c.bytes, sign=True), human_bytes(c.a_bytes), human_bytes(c.b_bytes),
             (c.role or c.label or c.kind).replace("_", " "), c.description) for c in shown]
    if small:
        rows.append((human_bytes(sum(c.bytes for c in small), sign=True), human_bytes(sum(c.a_bytes for c in small)),
                     human_bytes(sum(c.b_bytes for c in small)), f"{len(small)} smaller",
                     ", ".join((c.role or c.label or c.kind).replace("_", " ") for c in small)))
    rows.append((human_bytes(d.explained_bytes, sign=True), human_bytes(a.temp_bytes), human_bytes(b.temp_bytes),
                 "temp (sum)", "the causes add up to the gap"))
    out.extend(table("causes of the temp gap (B − A)",
                     [Column("change", FIGURE), Column("A", FIGURE), Column("B", FIGURE), Column("cause"),
                      Column("what", PROSE)], rows))
    for c in d.causes:
        if c.kind != "role" or not (c.instructions.get("a") or c.instructions.get("b")):
            continue
        detail = [(side.upper(), human_bytes(r["bytes"]), r["instruction"], r["matched"] or "—", r["op_name"] or "",
                   r["source"] or "")
                  for side in ("a", "b") for r in c.instructions.get(side, ())[:top]]
        out.extend(table(f"{c.role.replace('_', ' ')}: largest buffers at each peak",
                         [Column("side"), Column("bytes", FIGURE), Column("instruction"), Column("matches"),
                          Column("op_name", TRAIL), Column("source", TRAIL)], detail))
        out.extend(element_note(r[2] for r in detail))
    crow = [(kind, str(v["a"]), str(v["b"]), f"{v['b'] - v['a']:+d}", human_bytes(v["a_bytes"]),
             human_bytes(v["b_bytes"]))
            for kind, v in d.collectives_delta().items()]
    if crow:
        out.extend(table("collective instructions (count in the text; bytes of their results)",
                         [Column("kind"), Column("A", FIGURE), Column("B", FIGURE), Column("change", FIGURE),
                          Column("A bytes", FIGURE), Column("B bytes", FIGURE)], crow))
    ga, gb = d.a.gathers, d.b.gathers
    out.append(Text(f"held all-gathered values (one all-gather instruction may return several): "
                    f"A {len(ga.held)} ({human_bytes(ga.held_bytes_at_peak)} live at its peak), "
                    f"B {len(gb.held)} ({human_bytes(gb.held_bytes_at_peak)} live at its peak)"))
    trade = d.trade()
    if trade is not None:
        out.append(Text(d.trade_sentence()))
        for side in ("a", "b"):
            if trade[side]["recomputed"]:
                out.append(Text(f"recomputed in {side.upper()}: {', '.join(trade[side]['recomputed'][:5])}"
                                + (", ..." if len(trade[side]["recomputed"]) > 5 else "")))
    return out


def _shown_causes(d) -> tuple[list, list]:
    """The causes worth a row, and those too small to (under 0.5% of the gap or its largest
    cause, and under 1 KiB), which share one row: their sum still closes the table."""
    scale = max([abs(d.delta_temp_bytes)] + [abs(c.bytes) for c in d.causes])
    shown, small = [], []
    for c in d.causes:
        (small if abs(c.bytes) * 200 < scale and abs(c.bytes) < 1024 else shown).append(c)
    return (shown, small) if len(small) > 1 else (d.causes, [])


# ─── cost ──────────────────────────────────────────────────────────────────────────────


def human_seconds(s: float) -> str:
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale or unit == "µs":
            return f"{s / scale:.3g} {unit}"
    return f"{s:.3g} s"


def cost_report(results, by: str | None = None, top: int = 10, labels=None, estimates=None) -> list:
    """`hloscope cost`: per module the step's FLOPs, bytes and collective bytes (loops × their
    trip counts), XLA's convention beside them when loops make it differ, the recomputed forward
    ops, the costliest instructions (or groups), and with `estimates` a labelled roofline ESTIMATE."""
    out: list = []
    for n, r in enumerate(results):
        prefix = f"{labels[n]}: " if labels else ""
        out.append(heading(f"{prefix}{r.module}: {human_flops(r.flops)} per step · "
                           f"{human_bytes(r.bytes_accessed)} accessed · "
                           f"{human_bytes(r.collective_bytes)} collective results"))
        out.append(Text(f"transcendentals {r.transcendentals:,} · XLA's convention (each loop one trip): "
                        f"{human_flops(r.flops_xla_convention)}, {human_bytes(r.bytes_accessed_xla_convention)}"))
        for loop in r.loops:
            trips = "unknown trip count, counted once" if loop.trip_count is None else f"× {loop.trip_count}"
            out.append(Text(f"loop {loop.instruction} ({loop.computation}): {trips}, "
                            f"one trip {human_flops(loop.trip_flops)}"))
        kinds = [f"{kind} {human_bytes(b)} (wire ≈ {human_bytes(r.collective_wire_bytes_by_kind[kind])})"
                 for kind, b in r.collective_bytes_by_kind.items() if b]
        if kinds:
            out.append(Text("collectives per step: " + " · ".join(kinds)))
        recomputed = r.recomputed
        if r.recompute_flops:
            share = 100 * r.recompute_flops / r.flops if r.flops else 0.0
            out.append(Text(f"recomputation: {human_flops(r.recompute_flops)} ({share:.1f}% of the step) in "
                            f"{len(recomputed)} instructions that replay forward ops"))
        else:
            out.append(Text("recomputation: none found (no rematted_computation metadata, no .remat clones)"))
        if by:
            groups = r.group_by(by)
            rows = [(human_flops(g.flops), f"{100 * g.flops / r.flops:.1f}%" if r.flops else "-",
                     human_bytes(g.bytes_accessed), human_bytes(g.collective_bytes),
                     human_flops(g.recompute_flops) if g.recompute_flops else "", str(g.instructions),
                     g.key if g.key is not None else "-")
                    for g in groups[:top]]
            out.extend(table(f"top {len(rows)} of {len(groups)} by {by}",
                             [Column("flops", FIGURE), Column("share", FIGURE), Column("bytes", FIGURE),
                              Column("collective", FIGURE), Column("recompute", FIGURE),
                              Column("instructions", FIGURE), Column(by, TRAIL if by in ("op_name", "source") else NAME)],
                             rows))
        else:
            rows = [(human_flops(i.total_flops), f"{100 * i.total_flops / r.flops:.1f}%" if r.flops else "-",
                     str(i.runs), human_bytes(i.total_bytes_accessed),
                     human_flops(i.total_recompute_flops) if i.recompute_flops else "", i.instruction, i.opcode,
                     i.op_name or "")
                    for i in r.top(top)]
            if rows:
                out.extend(table(f"top {len(rows)} of {len(r.instructions)} instructions by FLOPs",
                                 [Column("flops", FIGURE), Column("share", FIGURE), Column("runs", FIGURE),
                                  Column("bytes", FIGURE), Column("recompute", FIGURE), Column("instruction"),
                                  Column("opcode"), Column("op_name", TRAIL)], rows))
        if estimates:
            e = estimates[n]
            out.append(heading(f"roofline ESTIMATE on {e.target} (published peaks, not a measurement): "
                               f"≥ {human_seconds(e.seconds)} per step, {e.bound}-bound"))
            out.append(Text(f"compute {human_seconds(e.compute_seconds)} · memory {human_seconds(e.memory_seconds)} · "
                            f"collectives {human_seconds(e.collective_seconds)} · all serialized "
                            f"{human_seconds(e.serial_seconds)}", style="dim"))
            if e.compute_peaks:
                total = sum(f for _, f, _, _ in e.compute_peaks) or 1
                out.append(Text("compute at: " + " · ".join(
                    f"{arithmetic} {100 * flops / total:.0f}% of FLOPs at {peak / 1e12:.4g} TFLOP/s ({what})"
                    for arithmetic, flops, peak, what in e.compute_peaks), style="dim"))
            out.append(Text(f"source: {e.source}", style="dim"))
        out.append(Text(""))
    return out


def roles_report(roles, timelines=None) -> list:
    """`hloscope memory --by role`: what the device holds at the peak by role, and each role's
    most bytes over the timeline with a sparkline of it."""
    out: list = []
    for n, r in enumerate(roles):
        series = timelines[n] if timelines else {}
        rows = []
        for role, held in r.by_role.items():
            line = series.get(role)
            if not held and not line:
                continue
            rows.append((role.replace("_", " "), human_bytes(held), human_bytes(r.temp_by_role.get(role, 0)),
                         human_bytes(max(line)) if line else "—", sparkline(line, 40) if line else ""))
        rows.append(("total", human_bytes(r.total), human_bytes(sum(r.temp_by_role.values())), "", ""))
        out.extend(table(f"{r.name}: held at the peak (position {r.peak_step} of the schedule) by role",
                         [Column("role"), Column("at the peak", FIGURE), Column("of it temp", FIGURE),
                          Column("most temp at any position", FIGURE), Column("temp over the schedule")], rows))
    return out
