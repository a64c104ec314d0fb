"""Terminal output: rich is imported here and nowhere else.

Formatters build renderables (tables, text) from analysis results; `print_renderable`
prints them, without colour when stdout is not a terminal or NO_COLOR is set.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text


def console(stderr: bool = False) -> Console:
    no_color = bool(os.environ.get("NO_COLOR"))
    stream = sys.stderr if stderr else sys.stdout
    return Console(file=stream, no_color=no_color, highlight=False, soft_wrap=False,
                   width=None if stream.isatty() else 120)


def print_renderable(items: Any) -> None:
    out = console()
    if isinstance(items, (list, tuple)):
        for item in items:
            out.print(item)
    else:
        out.print(items)


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
    # parser does not fork (hloscope.parallel), and a large file is what it forks for.
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


def human_bytes(n: int | float | None) -> str:
    """1536 → '1.50 KiB'."""
    if n is None:
        return "-"
    n = float(n)
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{sign}{n:.0f} {unit}" if unit == "B" else f"{sign}{n:.2f} {unit}"
        n /= 1024
    return f"{sign}{n:.2f} TiB"


def table(title: str | None, columns: Iterable[tuple[str, str]], rows: Iterable[Iterable[Any]]) -> Table:
    """A plain table; columns are (header, justify)."""
    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None,
              header_style="bold")
    for header, justify in columns:
        t.add_column(header, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        t.add_row(*(str(c) for c in row))
    return t


def heading(text: str) -> Text:
    return Text(text, style="bold")


def stats_report(result) -> list:
    """`hloscope stats`: one block per module."""
    out: list = []
    for m in result.modules:
        out.append(heading(f"{m.name}: {m.computations} computations, {m.instructions} instructions"
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
        else:
            cols = [(by, "left")] + cols
            rows = [[key if key is not None else "-", kind, *_tally_cells(t)] for key, kind, t in r.group_by(by)]
        rows.append(([""] if by != "kind" else []) + ["total", *_tally_cells(r.total)])
        out.append(table(None, cols, rows))
        if r.total.unknown_trip_count:
            out.append(Text("? : under a while loop with no known_trip_count", style="dim"))
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


def memory_report(results, top: int = 10) -> list:
    """`hloscope memory`: headline figures, the top buffers live at the peak, the timeline."""
    out: list = []
    for m in results:
        out.append(heading(f"{m.name}: temp {human_bytes(m.temp_bytes)} "
                           f"(max live {human_bytes(m.temp_max_live_bytes)}), "
                           f"peak {human_bytes(m.peak_bytes)}"))
        out.append(Text(f"arguments {human_bytes(m.argument_bytes)} · outputs {human_bytes(m.output_bytes)} · "
                        f"aliased {human_bytes(m.alias_bytes)} · peak at step {m.peak_at['index']} "
                        f"({m.peak_at['instruction']})"))
        rows = [(human_bytes(b.bytes), b.instruction, b.shape if len(b.shape) <= 40 else b.shape[:39] + "…",
                 b.op_name or "", b.source or "")
                for b in m.live_at_peak[:top]]
        if rows:
            out.append(table(f"top {len(rows)} of {len(m.live_at_peak)} buffers live at the peak",
                             [("bytes", "right"), ("instruction", "left"), ("shape", "left"),
                              ("op_name", "left"), ("source", "left")], rows))
        if m.timeline:
            out.append(Text(f"temp bytes over {len(m.timeline)} steps (max {human_bytes(max(m.timeline))}):"))
            out.append(Text(sparkline(m.timeline)))
        out.extend(memory_spaces_lines(m))
        out.append(Text(""))
    return out


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
    if any(h.origin == "explicit" and h.bytes_at_peak for h in g.held):
        lines.append("Some held gathers are explicit all_gather calls of the program: no remedy is demonstrated "
                     "for those here.")
    return lines
