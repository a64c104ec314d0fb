"""A sweep as text: the ranked table, each variant's why, and the progress bar on stderr
(rich, through hloscope.report's console and tables)."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from ..report.blocks import heading, table
from ..report.cost import human_seconds
from ..report.terminal import console
from ..report.table import FIGURE, Column
from ..units import human_bytes, human_flops
from .grid import label, varying
from .result import SweepResult, Variant


def _time(v: Variant) -> str:
    return f"≥ {human_seconds(v.step_time_estimate)}" if v.step_time_estimate is not None else "-"


def sweep_report(result: SweepResult) -> list:
    """The ranked table (one column per knob), then each variant's why and each failure."""
    knobs = list(result.grid)
    hbm = f"{human_bytes(result.hbm_bytes)} per device" if result.hbm_bytes is not None else "no limit"
    out: list = [heading(f"sweep of {result.factory} on {result.target} ({len(result.variants)} variants, "
                         f"memory: {hbm})")]
    rows = []
    for v in result.variants:
        cells = [str(v.rank)] + [str(v.knobs.get(k, "")) for k in knobs]
        if v.ok:
            cells += [human_bytes(v.temp_bytes), human_bytes(v.total_bytes), "yes" if v.fits else "NO", _time(v),
                      v.bound or "-", human_flops(v.flops), human_flops(v.recompute_flops) if v.recompute_flops else "-",
                      human_bytes(v.collective_bytes), f"{v.held_gathers} ({human_bytes(v.held_bytes_at_peak)})"]
        else:
            cells += ["error"] + [""] * 8
        rows.append(cells)
    columns = ([Column("rank", FIGURE)] + [Column(k) for k in knobs]
               + [Column("temp", FIGURE), Column("total", FIGURE), Column("fits"), Column("step (est.)", FIGURE),
                  Column("bound"), Column("flops", FIGURE), Column("recompute", FIGURE), Column("collective", FIGURE),
                  Column("held gathers (at peak)", FIGURE)])
    out.extend(table(None, columns, rows))
    if result.roofline:
        out.append(Text(f"step (est.): roofline ESTIMATE on {result.roofline} from published peaks, not a "
                        "measurement; total: arguments + outputs − aliased + temp, per device", style="dim"))
    out.append(heading("why each differs from its best neighbour (one knob apart)"))
    named = varying(result.grid)
    for v in result.variants:
        if v.why:
            out.append(Text(f"{v.rank}. {label(v.knobs, named)}: {v.why}"))
    for v in result.variants:
        if not v.ok:
            out.append(Text(f"{v.rank}. {label(v.knobs, named)}: error: {v.error}", style="red"))
    for note in result.notes:
        out.append(Text(f"note: {note}", style="dim"))
    out.append(Text(f"{result.compiled} compiled, {len(result.variants) - result.compiled} from the cache", style="dim"))
    return out


class ProgressBar:
    """`progress(done, total, what)` for hloscope.sweep: a bar on stderr while compiling (on a
    terminal; elsewhere a line per variant compiled), gone once the last compile ends."""

    def __init__(self):
        self.err = console(stderr=True)
        self.bar: Progress | None = None
        self.task = None

    def __call__(self, done: int, total: int, what: str) -> None:
        if not self.err.is_terminal:
            if done:
                self.err.print(f"compiled {done}/{total}: {what}")
            return
        if self.bar is None and done < total:
            self.bar = Progress(TextColumn("compiling"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                TextColumn("{task.description}"), console=self.err, transient=True)
            self.bar.start()
            self.task = self.bar.add_task("", total=total)
        if self.bar is not None:
            self.bar.update(self.task, completed=done, description=what)
            if done >= total:
                self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


__all__ = ["ProgressBar", "sweep_report"]
