"""Work done by a forked child meanwhile: the head of a large text's lazy parse, the
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
names per computation, not instructions. The child reads the head of the text; the parent
reads the tail, where the entry is, then the bodies the schedule runs until the child is
done, rebuilds the child's computations over its own copy of the text, and finishes the
module as a sequential parse would (same names, same checks): the result is the same module.
Anything unusual falls back to the sequential parse, which then gives the answer or the
error: a text under `MIN_CHARS`, more than one module, no computation boundary near the
split, a body the grammar's printed form does not cover (read at once, so not an outline),
a syntax error on either side, or a failed child.
"""

from __future__ import annotations

import atexit
import marshal
import os
import re
import select
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

    def ready(self) -> bool:
        """Whether `receive()` would return without waiting (a message, or the child's end)."""
        if self.stream.closed:
            return True
        return bool(select.select([self.stream], [], [], 0)[0])

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
    """The modules of `text` parsed lazily in two processes, or None to parse sequentially.

    The child reads the head of the text, the parent the tail, which holds the entry (XLA
    prints callees first). The parent's part is the smaller: while the child is still at
    work, it reads the bodies the schedule runs (`_read_schedule`), which every analysis
    reads first."""
    split = _split_point(text)
    if split is None:
        return None
    head = in_child(_outline_of_head, text, split)
    if head is None:
        return None
    tail = tail_facts = None
    try:
        tail = _tail(text, split, filename, progress)
        if tail is not None:
            from .parser import NameFacts

            tail_facts = NameFacts.of(tail)  # what the join's rename check reads of this part
            _read_schedule(tail, head)
    finally:
        outline = head.result()
    if tail is None or outline is None:
        return None
    return [_join(outline, tail, tail_facts, text, filename)]


def _split_point(text: str) -> int | None:
    """A computation boundary placed so that the parent, parsing the tail and then reading
    the entry's body (about as fast as parsing it), is done about when the child is done
    with the head. Loop bodies lie anywhere: those in the tail fill the time left
    (`_read_schedule`)."""
    if len(text) < MIN_CHARS:
        return None
    first_header = text.find("HloModule")
    if first_header >= 0 and text.find("\nHloModule", first_header + 1) >= 0:
        return None  # several modules
    entry = text.rfind("\nENTRY ")
    entry_chars = len(text) - entry if entry >= 0 else 0
    at = int(len(text) * (1 - max(0.35, (1 - entry_chars / len(text)) / 2)))
    m = _BOUNDARY.search(text, at)
    if m is None:  # the entry's body runs past that point: the last boundary before it
        before = list(_BOUNDARY.finditer(text, len(text) // 4, at))
        m = before[-1] if before else None
    return m.end() if m else None


def _tail(text: str, split: int, filename: str, progress):
    """The computations of `text[split:]`, lazy bodies placed in the whole text; None if a
    body is not an outline (read at once) or the part does not parse."""
    from .parser import parse_part

    scaled = None
    if progress is not None:
        def scaled(position: int) -> None:
            progress(position * len(text) // (len(text) - split))
    try:
        comps = parse_part(text[split:], filename, lazy=True, progress=scaled, start="computations")
    except (HloSyntaxError, ValueError):
        return None
    lines_before = text.count("\n", 0, split)
    for c in comps:
        body = c._body
        if body is None:
            return None  # read at once: fine for a sequential parse, which this becomes
        body.source, body.start, body.end = text, body.start + split, body.end + split
        body.line += lines_before
        c.line += lines_before
    return comps


def _read_schedule(comps: list[Computation], child: Child) -> None:
    """Read the bodies of the entry in `comps` and of what it runs through control flow (in
    `comps` too), until `child` is done. A body that does not read stays unread: its error
    is the read's on first use, as in a sequential parse. With time left, find the names of
    the computations their instructions call, which every analysis asks for."""
    by_name = {c.text_name: c for c in comps}
    stack = [c for c in comps if c.is_entry]
    seen: set[str] = set()
    read = []
    while stack and not child.ready():
        comp = stack.pop()
        if comp.text_name in seen:
            continue
        seen.add(comp.text_name)
        try:
            comp.read_keeping_outline()
        except HloSyntaxError:
            continue
        read.append(comp)
        for inst in comp.instructions:
            if inst.info.runs_callees:
                stack.extend(c for c in map(by_name.get, (n.lstrip("%") for n in inst.called_computation_names))
                             if c is not None)
    for comp in read:
        instructions = comp.instructions
        for start in range(0, len(instructions), 512):
            if child.ready():
                return
            for inst in instructions[start:start + 512]:
                inst.called_computation_names  # noqa: B018 - found once, kept on the instruction


def _outline_of_head(text: str, split: int):
    """What the parent needs of `text[:split]` (module name, header attributes as (text, line,
    column), debug tables), per computation its name, entry flag, line, signature, attribute
    texts, body span and line/column, then the part's `NameFacts`; None if not outlines."""
    from .parser import NameFacts, parse_part

    try:
        (part,) = parse_part(text[:split], lazy=True, source=text, unfinished=True)
    except (HloSyntaxError, ValueError):
        return None
    out = []
    for c in part.computations:
        body = c._body
        if body is None or not isinstance(c.signature, str) or c.text_name != c.name:
            return None
        out.append((c.name, c.is_entry, c.line, c.signature,
                    [f", {k}={v}" for k, v in c.attributes.raw.items()],
                    body.start, body.end, body.line, body.column))
    header = (part.name, [(str(t), t.line, t.column) for t in part.attr_tokens], part.tables)
    return header, out, NameFacts.of(part.computations).plain()


def _join(head, tail: list[Computation], tail_facts, text: str, filename: str):
    from lark import Token

    from .attributes import Attributes
    from .parser import NameFacts, Unfinished, _Body, finish_module

    (name, attr_tokens, tables), outlines, head_facts = head
    comps = []
    for comp_name, is_entry, line, signature, attributes, start, end, body_line, body_column in outlines:
        comps.append(Computation(comp_name, None, is_entry, None, Attributes(attributes), line, signature,
                                 body=_Body(text, start, end, body_line, body_column)))
    tokens = [Token("ATTRIBUTE", t, line=line, column=column) for t, line, column in attr_tokens]
    try:
        module = finish_module(Unfinished(name, tokens, comps, tables), tail,
                               [NameFacts(*head_facts), tail_facts])
    except HloSyntaxError as e:
        # Checks across the parts (a repeated computation name, two entries) as the
        # sequential parse words them, with the line shown.
        from .parser import _attach_source

        raise _attach_source(e, text, filename) from None
    if filename != "<string>":
        module.source_path = filename
    return module
