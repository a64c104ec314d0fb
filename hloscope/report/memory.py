"""`hloscope memory` (and `--by role`)."""

from __future__ import annotations

from rich.text import Text

from ..units import human_bytes
from .blocks import element_note, heading, sparkline, table
from .table import FIGURE, TRAIL, Column


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
