"""Terminal output: rich is imported here and nowhere else.

Formatters build renderables (tables, text) from analysis results; `print_renderable`
prints them, without colour when stdout is not a terminal or NO_COLOR is set.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
from typing import Any, Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .units import human_bytes, human_flops

_UNBOUNDED = 1 << 20
"""The width text is laid out in when it goes to a pipe or a file: no line is wrapped and no
name shortened; a reader (or `less -S`) scrolls."""


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich's own handler exits with status 1, the code for a failed check: the reader
        # (`| head -1`) has what it wanted, so the command line ends quietly with 0 instead.
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def terminal_width(stream=None) -> int | None:
    """The columns of the terminal that `stream` (stdout) is, or COLUMNS when set; None
    when output goes to a pipe or a file."""
    stream = stream or sys.stdout
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if not stream.isatty():
        return None
    return shutil.get_terminal_size().columns


def console(stderr: bool = False) -> Console:
    """A console on stdout (or stderr): colour only on a terminal and without NO_COLOR; the
    terminal's width, COLUMNS, or (piped) unbounded."""
    no_color = bool(os.environ.get("NO_COLOR"))
    stream = sys.stderr if stderr else sys.stdout
    width = terminal_width(stream)
    return _Console(file=stream, no_color=no_color, highlight=False, soft_wrap=False,
                    width=width or _UNBOUNDED, color_system=None if no_color else "auto")


def print_renderable(items: Any) -> None:
    out = console()
    items = list(items) if isinstance(items, (list, tuple)) else [items]
    if out.is_terminal:
        for item in items:
            out.print(item)
        return
    # To a pipe or a file: plain lines, without the padding a table's cells end in.
    with out.capture() as captured:
        for item in items:
            out.print(item)
    out.file.write("\n".join(line.rstrip() for line in captured.get().split("\n")))


@contextlib.contextmanager
def parse_progress(path: str, min_bytes: int = 8 << 20):
    """A progress bar on stderr while a large file is parsed, when stderr is a terminal;
    yields the callback for the parser (or None)."""
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    if size < min_bytes or not sys.stderr.isatty() or path.endswith(".gz"):
        yield None
        return
    import time

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    # Refreshed from the callback, not by rich's refresh thread: with a thread running, the
    # parser does not fork (hloscope.speed.runtime), and a large file is what it forks for.
    with Progress(TextColumn("parsing {task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeElapsedColumn(), console=console(stderr=True), transient=True, auto_refresh=False) as bar:
        # The parser reports characters; for UTF-8 HLO (ASCII in practice) they are bytes.
        task = bar.add_task(os.path.basename(path), total=size)
        shown = [0.0]

        def report(done: int) -> None:
            now = time.monotonic()
            if now - shown[0] >= 0.1:
                shown[0] = now
                bar.update(task, completed=done, refresh=True)

        yield report


def table(title: str | None, columns: Iterable[tuple[str, str]], rows: Iterable[Iterable[Any]]) -> Table:
    """A plain table; columns are (header, justify)."""
    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None,
              header_style="bold")
    for header, justify in columns:
        # Folded, never cut with an ellipsis: a name that does not fit goes on over lines.
        t.add_column(header, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for row in rows:
        t.add_row(*(str(c) for c in row))
    return t


def shorten_middle(name: str, width: int) -> str:
    """`name` in at most `width` characters, its middle left out: an `op_name` keeps its first
    component and as many of its last ones as fit (`jit(step)/…/transpose(jvp(mlp))/dot_general`),
    a path its tail (`/…/model/layers.py:212`); other text its head and a longer tail."""
    if len(name) <= width:
        return name
    parts = name.split("/")
    if len(parts) > 2:
        kept: list[str] = []
        for part in reversed(parts[1:]):
            if len(parts[0]) + 3 + len("/".join([part, *kept])) > width:
                break
            kept.insert(0, part)
        if kept:
            return parts[0] + "/…/" + "/".join(kept)
    head = max(0, (width - 1) // 3)
    tail = max(1, width - 1 - head)
    return name[:head] + "…" + name[-tail:]


def fitted_table(title: str | None, columns, rows, shorten=(), width: int | None = None) -> list:
    """`table` laid out for `width` columns (a terminal's; None: a pipe, where every row stays
    on one line), names never cut. When the rows are wider than the terminal, the columns at
    indices `shorten` (op_name, source) are shortened in the middle, head and tail kept
    (`shorten_middle`), unless that would leave less than a name's two ends or make two
    different names look alike; then those columns leave the table and each row's names follow it on
    a line of their own, indented and whole (folded only past the terminal's edge)."""
    columns = list(columns)
    rows = [[str(c) for c in row] for row in rows]
    if not width or not shorten or not rows:
        return [table(title, columns, rows)]
    natural = [max([len(h)] + [len(r[i]) for r in rows]) for i, (h, _) in enumerate(columns)]
    if sum(natural) + 2 * (len(columns) - 1) <= width:
        return [table(title, columns, rows)]
    others = sum(w for i, w in enumerate(natural) if i not in shorten) + 2 * (len(columns) - 1)
    # Each column first gets what its names need at their shortest (first component, `…`,
    # last component), then the first columns (op_name before source) what is left.
    rooms = {i: max(len(_compact(r[i])) for r in rows) for i in shorten}
    spare = width - others - sum(rooms.values())
    if spare >= 0:
        for i in shorten:
            grow = min(spare, natural[i] - rooms[i])
            rooms[i] += grow
            spare -= grow
        shortened = [list(r) for r in rows]
        for i in shorten:
            names = {r[i] for r in rows}
            short = {n: shorten_middle(n, rooms[i]) for n in names}
            if len(set(short.values())) != len(names):
                break
            for r in shortened:
                r[i] = short[r[i]]
        else:
            return [table(title, columns, shortened)]
    kept = [i for i in range(len(columns)) if i not in shorten]
    widths = [natural[i] for i in kept]
    out: list = [Text(title, style="bold")] if title else []

    def line(cells) -> str:
        return "  ".join(c.rjust(w) if columns[i][1] == "right" else c.ljust(w)
                         for i, c, w in zip(kept, cells, widths)).rstrip()

    out.append(Text(line([columns[i][0] for i in kept]), style="bold"))
    for r in rows:
        out.append(Text(line([r[i] for i in kept])))
        for i in shorten:
            if r[i]:
                out.append(Text("    " + r[i], style="dim"))
    return out


def _compact(name: str) -> str:
    """The shortest form `shorten_middle` gives a path-like name: its ends."""
    parts = name.split("/")
    return f"{parts[0]}/…/{parts[-1]}" if len(parts) > 2 else name


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
        out.append(table(None, [("opcode", "left"), ("count", "right")], rows))
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
        cols = [("kind", "left"), ("count", "right"), ("dynamic", "right"), ("bytes", "right"),
                ("dynamic bytes", "right"), ("async", "right"), ("group sizes", "left")]
        if by == "kind":
            tallies = [(kind, t) for kind, t in r.by_kind.items() if t.count]
            tallies += [(kind, t) for kind, t in r.point_to_point.items() if t.count]
            rows = [[kind, *_tally_cells(t)] for kind, t in tallies]
            rows.append(["total", *_tally_cells(r.total)])
            out.append(table(None, cols, rows))
        else:
            # The group's name last, where the rest of the line is free for it: whole when it
            # fits, else shortened in the middle (its tail, the op or the line, kept).
            cols = cols + [(by, "left")]
            rows = [[kind, *_tally_cells(t), key if key is not None else f"(no {by})"]
                    for key, kind, t in r.group_by(by)]
            rows.append(["total", *_tally_cells(r.total), ""])
            out.extend(fitted_table(None, cols, rows, shorten=(len(cols) - 1,), width=terminal_width()))
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
        out.append(heading(f"{prefix}{m.name}: temp {human_bytes(m.temp_bytes)} "
                           f"(max live {human_bytes(m.temp_max_live_bytes)}), "
                           f"total {human_bytes(getattr(m, 'total_bytes', 0))}, "
                           f"peak {human_bytes(m.peak_bytes)}"))
        out.append(Text(f"arguments {human_bytes(m.argument_bytes)} · outputs {human_bytes(m.output_bytes)} · "
                        f"aliased {human_bytes(m.alias_bytes)} · peak at step {m.peak_at['index']} "
                        f"({m.peak_at['instruction']})"))
        if getattr(m, "xla", None):
            out.append(xla_memory_analysis_line(m))
        if xla and xla[n] is not None:
            out.append(xla_figures_line(xla[n]))
        out.extend(Text(f"note: {note}") for note in getattr(m, "notes", ()))
        rows = [(human_bytes(b.bytes), b.instruction, b.shape, b.op_name or "", b.source or "")
                for b in m.live_at_peak[:top]]
        if rows:
            out.extend(fitted_table(f"top {len(rows)} of {len(m.live_at_peak)} buffers live at the peak",
                                    [("bytes", "right"), ("instruction", "left"), ("shape", "left"),
                                     ("op_name", "left"), ("source", "left")], rows,
                                    shorten=(3, 4), width=terminal_width()))
        if m.timeline:
            out.append(Text(f"temp bytes over {len(m.timeline)} steps (max {human_bytes(max(m.timeline))}):"))
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


def gathers_report(results, memories=None) -> list:
    """`hloscope gathers`: per module the held all-gathers, largest at the peak first, what
    they cost at the peak, and the remedy where one is demonstrated (docs/gathers.md)."""
    out: list = []
    for k, g in enumerate(results):
        memory = memories[k] if memories else None
        out.append(heading(f"{g.name}: {len(g.held)} of {g.gathers} all-gathered values held, "
                           f"{human_bytes(g.held_bytes)} ({human_bytes(g.held_bytes_at_peak)} live at the peak, "
                           f"step {g.peak_step})"))
        if g.boundary == "schedule":
            where = f"step {g.boundary_step}" if g.boundary_step is not None else "nowhere (no gradient reduction)"
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
            out.append(table("held all-gathers",
                             [("bytes", "right"), ("at peak", "right"), ("instruction", "left"),
                              ("parameter", "left"), ("why", "left"), ("uses (steps)", "left"),
                              ("users", "left"), ("origin", "left")], rows))
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
    out.append(Text(f"A: {d.a.label or a.name}: temp {human_bytes(a.temp_bytes)}, peak at step "
                    f"{a.peak_at['index']} ({a.peak_at['instruction']})"))
    out.append(Text(f"B: {d.b.label or b.name}: temp {human_bytes(b.temp_bytes)}, peak at step "
                    f"{b.peak_at['index']} ({b.peak_at['instruction']})"))
    rows = [(human_bytes(c.bytes, sign=True), human_bytes(c.a_bytes), human_bytes(c.b_bytes),
             (c.role or c.label or c.kind).replace("_", " "), c.description) for c in d.causes]
    rows.append((human_bytes(d.explained_bytes, sign=True), human_bytes(a.temp_bytes), human_bytes(b.temp_bytes), "temp (sum)",
                 "the causes add up to the gap"))
    out.append(table("causes of the temp gap (B − A)",
                     [("change", "right"), ("A", "right"), ("B", "right"), ("cause", "left"),
                      ("what", "left")], rows))
    for c in d.causes:
        if c.kind != "role" or not (c.instructions.get("a") or c.instructions.get("b")):
            continue
        detail = []
        for side in ("a", "b"):
            for r in c.instructions.get(side, ())[:top]:
                detail.append((side.upper(), human_bytes(r["bytes"]), r["instruction"], r["matched"] or "—",
                               r["op_name"] or "", r["source"] or ""))
        out.append(table(f"{c.role.replace('_', ' ')}: largest buffers at each peak",
                         [("side", "left"), ("bytes", "right"), ("instruction", "left"), ("matches", "left"),
                          ("op_name", "left"), ("source", "left")], detail))
    crow = [(kind, str(v["a"]), str(v["b"]), f"{v['b'] - v['a']:+d}", human_bytes(v["a_bytes"]),
             human_bytes(v["b_bytes"]))
            for kind, v in d.collectives_delta().items()]
    if crow:
        out.append(table("collectives (static count, result bytes)",
                         [("kind", "left"), ("A", "right"), ("B", "right"), ("change", "right"),
                          ("A bytes", "right"), ("B bytes", "right")], crow))
    ga, gb = d.a.gathers, d.b.gathers
    out.append(Text(f"held all-gathers: A {len(ga.held)} ({human_bytes(ga.held_bytes_at_peak)} at its peak), "
                    f"B {len(gb.held)} ({human_bytes(gb.held_bytes_at_peak)} at its peak)"))
    trade = d.trade()
    if trade is not None:
        out.append(Text(trade_sentence(d, trade)))
        for side in ("a", "b"):
            if trade[side]["recomputed"]:
                out.append(Text(f"recomputed in {side.upper()}: {', '.join(trade[side]['recomputed'][:5])}"
                                + (", ..." if len(trade[side]["recomputed"]) > 5 else "")))
    return out


def _percent(new: int, old: int) -> str:
    if old == 0:
        return "n/a" if new == 0 else "new"
    return f"{100 * (new - old) / old:+.0f}%"


def trade_sentence(d, trade) -> str:
    """The price of the memory change: `B saves 3.6 MiB of temp and runs +31% FLOPs (recomputing
    2.1 GFLOP), +0% bytes accessed, +100% collective bytes per step`."""
    a, b = trade["a"], trade["b"]
    delta = d.delta_temp_bytes
    verb = f"saves {human_bytes(-delta)} of temp" if delta < 0 else f"needs {human_bytes(delta)} more temp"
    recompute = b["recompute_flops"] - a["recompute_flops"]
    why = f" (recomputing {human_flops(b['recompute_flops'])})" if recompute > 0 else ""
    return (f"trade: {d.names[1]} {verb} and runs {_percent(b['flops'], a['flops'])} FLOPs{why}, "
            f"{_percent(b['bytes_accessed'], a['bytes_accessed'])} bytes accessed, "
            f"{_percent(b['collective_bytes'], a['collective_bytes'])} collective bytes per step "
            f"(× loop trip counts)")


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
            out.extend(fitted_table(f"top {len(rows)} of {len(groups)} by {by}",
                                    [("flops", "right"), ("share", "right"), ("bytes", "right"),
                                     ("collective", "right"), ("recompute", "right"), ("instructions", "right"),
                                     (by, "left")], rows, shorten=(6,), width=terminal_width()))
        else:
            rows = [(human_flops(i.total_flops), f"{100 * i.total_flops / r.flops:.1f}%" if r.flops else "-",
                     str(i.runs), human_bytes(i.total_bytes_accessed),
                     human_flops(i.total_recompute_flops) if i.recompute_flops else "", i.instruction, i.opcode,
                     i.op_name or "")
                    for i in r.top(top)]
            if rows:
                out.extend(fitted_table(f"top {len(rows)} of {len(r.instructions)} instructions by FLOPs",
                                        [("flops", "right"), ("share", "right"), ("runs", "right"),
                                         ("bytes", "right"), ("recompute", "right"), ("instruction", "left"),
                                         ("opcode", "left"), ("op_name", "left")], rows,
                                        shorten=(7,), width=terminal_width()))
        if estimates:
            e = estimates[n]
            out.append(heading(f"roofline ESTIMATE on {e.target} (published peaks, not a measurement): "
                               f"≥ {human_seconds(e.seconds)} per step, {e.bound}-bound"))
            out.append(Text(f"compute {human_seconds(e.compute_seconds)} · memory {human_seconds(e.memory_seconds)} · "
                            f"collectives {human_seconds(e.collective_seconds)} · all serialized "
                            f"{human_seconds(e.serial_seconds)}", style="dim"))
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
        out.append(table(f"{r.name}: held at the peak (step {r.peak_step}) by role",
                         [("role", "left"), ("at the peak", "right"), ("of it temp", "right"),
                          ("most temp over the step", "right"), ("temp over the schedule", "left")], rows))
    return out
