"""The one table renderer of every command: identifiers are never split.

A column says what its cells are (`Column.kind`):
- `figure`: a number with its unit, right-aligned;
- `name`: an identifier (an instruction, a pytree path, a kind): printed whole or not in the row;
- `trail`: a long descriptive name (`op_name`, `source`): shortened in its middle, head and
  tail kept (`generate.py:254` stays whole), when the row is too wide;
- `prose`: words, wrapped at spaces.

Laid out for a terminal's width, a table that does not fit shortens its trails, wraps its
prose, and, where even that does not fit, moves columns out of the table onto indented lines
of their own below each row, whole. Piped (no width), every row is one line. The full values
are always in `--json`.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text

from ..wording import tidy_op_name

FIGURE, NAME, TRAIL, PROSE = "figure", "name", "trail", "prose"
_GAP = 2
_INDENT = "    "
_PROSE_FIRST = 40
"""How wide a prose column grows before trails get the rest of the room."""


@dataclass(frozen=True)
class Column:
    header: str
    kind: str = NAME

    @property
    def right(self) -> bool:
        return self.kind == FIGURE


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


def _shortest(name: str) -> str:
    """The shortest form `shorten_middle` gives a path-like name: its ends."""
    parts = name.split("/")
    return f"{parts[0]}/…/{parts[-1]}" if len(parts) > 2 else name


def _longest_word(text: str) -> int:
    return max((cell_len(w) for w in re.split(r"\s+", text) if w), default=0)


def render_table(title: str | None, columns, rows, width: int | None = None) -> list[Text]:
    """The lines of a table: the title, the header, then each row (see the module docstring).
    `width` is the terminal's (None: piped, every row on one line)."""
    rows = [[str(cell) for cell in row] for row in rows]
    rows = [[tidy_op_name(cell) if col.kind == TRAIL else cell for col, cell in zip(columns, row)]
            for row in rows]
    natural = [max([cell_len(c.header)] + [cell_len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    out: list[Text] = [Text(title, style="bold")] if title else []
    if not width or _span(natural) <= width:
        return out + _lines(columns, rows, natural, list(range(len(columns))))
    shown, widths = _fit(columns, rows, natural, width)
    rows = [[_cell(columns[i], r[i], widths[i]) for i in range(len(columns))] for r in rows]
    apart = [i for i in range(len(columns)) if i not in shown]
    lines = _lines(columns, rows, widths, shown, apart=apart, width=width)
    if apart:
        headers = _packed(["below each row:", *(columns[i].header for i in apart)], width - len(_INDENT))
        lines[1:1] = [_line(_INDENT + text.replace(":" + _SEPARATOR, ": "), "dim") for text in headers]
    return out + lines


def _span(widths) -> int:
    return sum(widths) + _GAP * (len(widths) - 1) if widths else 0


def _fit(columns, rows, natural, width) -> tuple[list[int], list[int]]:
    """Which columns stay in the table, and each one's width."""
    widths = list(natural)
    flexible = [i for i, c in enumerate(columns) if c.kind in (TRAIL, PROSE)]
    least = {}
    for i in flexible:
        if columns[i].kind == TRAIL:
            least[i] = max([cell_len(columns[i].header)] + [cell_len(_shortest(r[i])) for r in rows])
        else:
            least[i] = max(min(natural[i], 16), _longest_word(columns[i].header),
                           max((_longest_word(r[i]) for r in rows), default=0))
    shown = list(range(len(columns)))
    # Out first: the trails, then the names and prose from the right (a table puts what
    # matters most on its left), then figures from the right; its first name stays.
    first = next((i for i, c in enumerate(columns) if c.kind == NAME), 0)
    order = ([i for i in flexible if columns[i].kind == TRAIL]
             + [i for i in reversed(range(len(columns))) if columns[i].kind in (NAME, PROSE) and i != first]
             + [i for i in reversed(range(len(columns))) if columns[i].kind == FIGURE and i != first][:-1])
    while True:
        fixed = [i for i in shown if i not in least]
        room = width - sum(natural[i] for i in fixed) - _GAP * (len(shown) - 1)
        flex = [i for i in shown if i in least]
        if room >= sum(least[i] for i in flex) and _distinct(columns, rows, flex, least):
            break
        if not order:
            return shown, widths
        shown.remove(order.pop(0))
    spare = room - sum(least[i] for i in flex)
    for i in flex:
        widths[i] = least[i]
    for cap in (lambda i: _PROSE_FIRST if columns[i].kind == PROSE else widths[i],
                lambda i: natural[i] if columns[i].kind == TRAIL else widths[i],
                lambda i: natural[i]):
        for i in flex:
            grow = max(0, min(spare, min(cap(i), natural[i]) - widths[i]))
            widths[i] += grow
            spare -= grow
    return shown, widths


def _distinct(columns, rows, flex, least) -> bool:
    """Whether the trails shortened to their least widths still tell different names apart."""
    for i in flex:
        if columns[i].kind != TRAIL:
            continue
        names = {r[i] for r in rows}
        if len({shorten_middle(n, least[i]) for n in names}) != len(names):
            return False
    return True


def _cell(column: Column, value: str, width: int) -> str:
    return shorten_middle(value, width) if column.kind == TRAIL else value


def _lines(columns, rows, widths, shown, apart=(), width=None) -> list[Text]:
    def line(cells: list[list[str]]) -> list[str]:
        height = max(len(c) for c in cells)
        out = []
        for k in range(height):
            parts = []
            for i, cell in zip(shown, cells):
                text = cell[k] if k < len(cell) else ""
                pad = widths[i] - cell_len(text)
                parts.append(" " * pad + text if columns[i].right else text + " " * pad)
            out.append("  ".join(parts).rstrip())
        return out

    lines = [_line(line([[columns[i].header] for i in shown])[0], "bold")]
    for r in rows:
        cells = [_wrap(r[i], widths[i]) if columns[i].kind == PROSE else [r[i]] for i in shown]
        lines.extend(_line(text) for text in line(cells))
        room = (width or _UNBOUNDED) - len(_INDENT)
        values = [shorten_middle(r[i], room) if columns[i].kind == TRAIL else r[i]
                  for i in apart if r[i] and columns[i].kind != PROSE]
        texts = _packed(values, room) + [text for i in apart if r[i] and columns[i].kind == PROSE
                                         for text in _wrap(r[i], room)]
        lines.extend(_line(_INDENT + text, "dim") for text in texts)
    return lines


_UNBOUNDED = 1 << 20
_SEPARATOR = " · "


def _packed(values: list[str], width: int) -> list[str]:
    """`values` joined by ` · ` into as few lines of `width` as hold them, none split."""
    lines: list[str] = []
    for value in values:
        if lines and cell_len(lines[-1]) + len(_SEPARATOR) + cell_len(value) <= width:
            lines[-1] += _SEPARATOR + value
        else:
            lines.append(value)
    return lines


def _line(text: str, style: str = "") -> Text:
    """One line as printed: never wrapped by the console (past a terminal's edge, the terminal
    folds it), so no identifier in it is split."""
    return Text(text, style=style, no_wrap=True, overflow="ignore")


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]
