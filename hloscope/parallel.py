"""Work done by a forked child meanwhile: the second half of a large text's lazy parse, the
facts of fused computations a memory analysis will ask for, the second of the heap's two
packing orders, and writing a large text's outline into the cache.

`in_child(fn, *args)` runs `fn` in a forked process and returns a `Child`, whose `result()`
waits for what `fn` returns (plain data, sent back with marshal over a pipe; a child can
also send several messages, `in_child_sending`), or None where forking is not possible or
not wanted: not Linux, threads running (`fork` copies only the caller's), one usable CPU,
or `HLOSCOPE_JOBS=1`. Callers then do the work themselves, so results never depend on
whether a child ran.

A lazy parse leaves each computation as an outline (its name, header and where its body
lies in the text), so what the parse child finds is small to send back: a few numbers and
names per computation, not instructions. The parent reads the first half meanwhile,
rebuilds the child's computations over its own copy of the text, and finishes the module
as a sequential parse would (same names, same checks): the result is the same module.
Anything unusual falls back to the sequential parse, which then gives the answer or the
error: a text under `MIN_CHARS`, more than one module, no computation boundary near the
middle, a body the grammar's printed form does not cover (read at once, so not an outline),
a syntax error on either side, or a failed child.
"""

from __future__ import annotations

import atexit
import marshal
import os
import re
import signal
import sys
import threading
from typing import Any, Callable

from .errors import HloSyntaxError
from .ir import Computation

MIN_CHARS = 16 << 20
"""Below this a fork, and rebuilding the child's computations, gains too little."""

# A body's closing brace, blank lines, then the header of the next computation.
_BOUNDARY = re.compile(r"\n\}[ \t]*\r?\n(?:[ \t]*\r?\n)*(?=(?:ENTRY[ \t]+)?%?[A-Za-z_][\w.\-]*[ \t]+\()")


def can_fork() -> bool:
    if os.environ.get("HLOSCOPE_JOBS") == "1":
        return False
    if not hasattr(os, "fork") or not sys.platform.startswith("linux") or threading.active_count() > 1:
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus >= 2


class Child:
    """A forked child at work, sending messages: `receive()` waits for the next one (None
    once the child has ended or failed); `result()` takes the first and lets the child go;
    `cancel()` stops it when nothing more it sends is needed."""

    __slots__ = ("pid", "stream")

    def __init__(self, pid: int, read_fd: int):
        self.pid, self.stream = pid, os.fdopen(read_fd, "rb")

    def receive(self) -> Any:
        stream = self.stream
        if stream.closed:
            return None
        try:
            head = stream.read(8)
            size = int.from_bytes(head, "little") if len(head) == 8 else -1
            data = stream.read(size) if size >= 0 else b""
            if len(data) == size:
                return marshal.loads(data)
        except (OSError, EOFError, ValueError, TypeError):
            pass
        self.cancel()  # ended, failed or sent garbage: nothing more comes
        return None

    def result(self) -> Any:
        message = self.receive()
        self.cancel()
        return message

    def cancel(self) -> None:
        if self.stream.closed:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        self.stream.close()
        os.waitpid(self.pid, 0)


def in_child(fn: Callable[..., Any], *args: Any) -> Child | None:
    """Start `fn(*args)` in a forked child, which sends back what it returns (see `Child`);
    None where no child was started."""
    return in_child_sending(_send_result, fn, *args)


def _send_result(send: Callable[[Any], None], fn: Callable[..., Any], *args: Any) -> None:
    send(fn(*args))


def in_child_sending(fn: Callable[..., Any], *args: Any) -> Child | None:
    """Start `fn(send, *args)` in a forked child: each `send(message)` (plain data) reaches
    the parent's `Child.receive()` in turn. None where no child was started."""
    if not can_fork():
        return None
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the child: compute, send, leave at once (no atexit, no finally of the caller)
        os.close(read_fd)
        try:
            with os.fdopen(write_fd, "wb") as out:
                def send(message: Any) -> None:
                    data = marshal.dumps(message)
                    out.write(len(data).to_bytes(8, "little") + data)
                    out.flush()

                fn(send, *args)
        except BaseException:  # noqa: BLE001, S110 - the parent gets no more messages and does the work itself
            pass
        finally:
            os._exit(0)
    os.close(write_fd)
    return Child(pid, read_fd)


_background: list[int] = []


def in_background(fn: Callable[..., Any], *args: Any) -> bool:
    """Start `fn(*args)` in a forked child and return at once, False where no child was
    started (the caller then does the work itself). The child is waited for when this
    process exits (`wait_for_background`): what it writes is there for the next one."""
    if not can_fork():
        return False
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:
        try:
            fn(*args)
        except BaseException:  # noqa: BLE001, S110 - nothing to report to: the work is optional
            pass
        finally:
            os._exit(0)
    if not _background:
        atexit.register(wait_for_background)
    _background.append(pid)
    return True


def wait_for_background() -> None:
    """Wait for every child `in_background` started."""
    while _background:
        try:
            os.waitpid(_background.pop(), 0)
        except ChildProcessError:
            pass


def parse_lazily_in_two(text: str, filename: str, progress=None):
    """The modules of `text` parsed lazily in two processes, or None to parse sequentially."""
    split = _split_point(text)
    if split is None:
        return None
    second_half = in_child(_outline_of_second_half, text, split)
    if second_half is None:
        return None
    first_facts = None
    try:
        first = _first_half(text, split, filename, progress)
        if first is not None:
            # While the child may still be at work: what the join's rename check reads of
            # this half.
            from .parser import NameFacts

            first_facts = NameFacts.of(first.computations)
    finally:
        second = second_half.result()
    if first is None or second is None:
        return None
    return [_join(first, second, text, filename, first_facts)]


def _split_point(text: str) -> int | None:
    if len(text) < MIN_CHARS:
        return None
    first_header = text.find("HloModule")
    if first_header >= 0 and text.find("\nHloModule", first_header + 1) >= 0:
        return None  # several modules
    m = _BOUNDARY.search(text, len(text) // 2)
    return m.end() if m else None


def _first_half(text: str, split: int, filename: str, progress):
    from .parser import parse_part

    scaled = None
    if progress is not None:
        def scaled(position: int) -> None:
            progress(position * len(text) // split)
    try:
        (part,) = parse_part(text[:split], filename, lazy=True, progress=scaled, source=text, unfinished=True)
    except (HloSyntaxError, ValueError):
        return None
    if any(c._body is None for c in part.computations):
        return None  # read at once: fine for a sequential parse, which this becomes
    return part


def _outline_of_second_half(text: str, split: int):
    """Per computation of `text[split:]`: name, entry flag, line, signature, attribute texts,
    body span and line/column in the whole text; then the half's `NameFacts`. None if not
    outlines."""
    from .parser import NameFacts, parse_part

    chunk = text[split:]
    comps = parse_part(chunk, lazy=True, start="computations")
    lines_before = text.count("\n", 0, split)
    out = []
    for c in comps:
        body = c._body
        if body is None or not isinstance(c.signature, str) or c.text_name != c.name:
            return None
        out.append((c.name, c.is_entry, c.line + lines_before, c.signature,
                    [f", {k}={v}" for k, v in c.attributes.raw.items()],
                    body.start + split, body.end + split, body.line + lines_before, body.column))
    return out, NameFacts.of(comps).plain()


def _join(first, second, text: str, filename: str, first_facts):
    from .attributes import Attributes
    from .parser import NameFacts, _Body, finish_module

    outlines, second_facts = second
    comps = []
    for name, is_entry, line, signature, attributes, start, end, body_line, body_column in outlines:
        comps.append(Computation(name, None, is_entry, None, Attributes(attributes), line, signature,
                                 body=_Body(text, start, end, body_line, body_column)))
    try:
        module = finish_module(first, comps, [first_facts, NameFacts(*second_facts)])
    except HloSyntaxError as e:
        # Checks across the halves (a repeated computation name, two entries) as the
        # sequential parse words them, with the line shown.
        from .parser import _attach_source

        raise _attach_source(e, text, filename) from None
    if filename != "<string>":
        module.source_path = filename
    return module
