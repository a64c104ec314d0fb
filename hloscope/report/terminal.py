"""The console hloscope prints to: rich's, with colour only on a terminal, the terminal's
width, and plain unbounded lines into a pipe or a file."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
from typing import Any

from rich.console import Console

_UNBOUNDED = 1 << 20
"""The width text is laid out in when it goes to a pipe or a file: no line is wrapped and no
name shortened; a reader (or `less -S`) scrolls."""


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich's own handler exits with status 1, the code for a failed check: the reader
        # (`| head -1`) has what it wanted, so the command line ends quietly with 0 instead.
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def terminal_width(stream=None) -> int | None:
    """The columns of the terminal that `stream` (stdout) is (COLUMNS, when set, says how many);
    None when output goes to a pipe or a file, whatever COLUMNS says: piped lines stay whole."""
    stream = stream or sys.stdout
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return shutil.get_terminal_size().columns


def console(stderr: bool = False) -> Console:
    """A console on stdout (or stderr): colour only on a terminal and without NO_COLOR; the
    terminal's width, or (piped) unbounded."""
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
            # A table's line (no_wrap) is never wrapped by rich: past the terminal's edge, the
            # terminal folds it; rich would break it at a space, even inside a cell.
            out.print(item, soft_wrap=getattr(item, "no_wrap", None) is True)
        return
    # To a pipe or a file: plain lines, without the padding a table's cells end in.
    with out.capture() as captured:
        for item in items:
            # A table's line (no_wrap) is never wrapped by rich: past the terminal's edge, the
            # terminal folds it; rich would break it at a space, even inside a cell.
            out.print(item, soft_wrap=getattr(item, "no_wrap", None) is True)
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
