"""`hloscope count-collectives`."""

from __future__ import annotations

from rich.text import Text

from ..units import human_bytes
from .blocks import heading, table
from .table import FIGURE, NAME, TRAIL, Column


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
