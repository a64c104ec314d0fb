"""`hloscope stats`."""

from __future__ import annotations

from rich.text import Text

from .blocks import heading, table
from .table import FIGURE, Column


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
