"""Pieces every command's output is made of: tables at the terminal's width, headings, notes."""

from __future__ import annotations

from rich.text import Text

from .table import render_table
from .terminal import terminal_width


def table(title: str | None, columns, rows) -> list[Text]:
    """`render_table` at the width of the terminal stdout is (unbounded into a pipe)."""
    return render_table(title, columns, rows, terminal_width())


def heading(text: str) -> Text:
    return Text(text, style="bold")


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


def element_note(names) -> list[Text]:
    """What `all-gather-start{1,3}` means, once under a table that shows such a name."""
    name = next((n for n in names if n.endswith("}") and "{" in n), None)
    if name is None:
        return []
    base, index = name[:-1].split("{", 1)
    return [Text(f"{name}: element {{{index}}} of the tuple that {base} returns", style="dim")]
