"""Terminal output: rich is imported here and nowhere else.

Formatters build renderables (tables, text) from analysis results; `print_renderable`
prints them, without colour when stdout is not a terminal or NO_COLOR is set.
"""

from __future__ import annotations

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
