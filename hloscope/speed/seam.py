"""The one seam: everything the layers above ask of hloscope.speed, and the only module of it
they import (a contract in pyproject.toml). Each entry has a plain equivalent that gives the
same answers: a parse without laziness, an analysis without the cache, the two sides of a
diff one after the other."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from . import cache, plain, runtime
from .facts import TextFacts
from .lazy import LAZY, check_elsewhere, read_all, settle

if TYPE_CHECKING:  # loaded by `_parsing`, at the first parse
    from ..text import parser  # noqa: F401
    from . import split  # noqa: F401

T = TypeVar("T")
U = TypeVar("U")

# ─── parsing ─────────────────────────────────────────────────────────────────────────


def parse_lazily(text: str, filename: str, progress=None) -> list:
    """The modules of `text` with printed bodies left unread (`lazy.LazyComputation`), read
    in two processes where that pays (`split`). Raises HloSyntaxError as a full parse would,
    for what the parse itself finds; the rest is the verdict's (`analyzing`)."""
    parser, split = _parsing()
    with runtime.no_cyclic_gc():
        modules = split.parse_in_two(text, filename, runtime.FORKING, progress)
        if modules is None:
            modules = parser.parse_part(text, filename, unread=LAZY, progress=progress)
    runtime.trim()  # what the tokens' copies of the bodies took (see runtime.trim)
    return modules


def parse_eagerly(text: str, filename: str, progress=None) -> list:
    """The modules of `text`, every body read (the plain parse), the cyclic GC off meanwhile."""
    parser, _ = _parsing()
    with runtime.no_cyclic_gc():
        return parser.parse_part(text, filename, progress=progress)


def _parsing():
    """(hloscope.text.parser, hloscope.speed.split), loaded at the first parse: a command
    answered from the cache parses nothing, and so never loads the parser, Lark and the
    grammar (tens of ms: docs/speed.md). The imports under TYPE_CHECKING above name the arrows."""
    return importlib.import_module("hloscope.text.parser"), importlib.import_module("hloscope.speed.split")


# ─── the cache ───────────────────────────────────────────────────────────────────────


def caching() -> bool:
    """Whether the cache is on (`HLOSCOPE_CACHE`, `--no-cache`)."""
    return cache.enabled()


def content_key(data: bytes) -> str | None:
    """The name of everything the cache keeps for a file of these bytes; None when the cache
    is off."""
    return cache.digest_bytes(data) if cache.enabled() else None


def known_key(path: str) -> str | None:
    """The `content_key` of the file at `path` as noted when it was last read
    (`note_key`), if its status says it has not changed since: found without reading it.
    None otherwise. The plain equivalent: `content_key` of its bytes."""
    return cache.file_key(path)


def file_state(path: str) -> tuple | None:
    """The status of the file at `path` that `known_key` recognizes it by; taken before
    reading the file, for `note_key`."""
    return cache.file_state(path)


def note_key(state: tuple | None, key: str) -> None:
    """Note that the file whose `file_state` was `state` has content key `key`."""
    cache.note_file_key(state, key)


def text_key(module) -> str | None:
    """The `content_key` of the text `module` was loaded from, when the cache named it."""
    return cache.text_key(module)


def kept_modules(text_of: Callable[[], str], filename: str, key: str) -> list | None:
    """The modules of the text the cache keeps an outline of under `key`, bodies unread (as
    `parse_lazily` leaves them), their computations made when first asked for, over
    `text_of()`; None when it keeps none. The plain equivalent: `parse_lazily(text_of(), filename)`."""
    return cache.lookup(text_of, filename, key, parse_lazily)


def keep_modules(text: str, modules: list, key: str, lazy: bool) -> None:
    """Keep the outline of `modules` (parsed lazily from `text`) under `key`, and name them
    by it, so that analyses keep their results (`memoized`)."""
    if lazy:
        cache.store(text, modules, key)
    cache.attach(modules, key)


memoized = cache.memoized
"""`memoized(name, types)(fn)`: `fn(module, ...)`'s result kept by the module's text's hash."""


# ─── analysing ───────────────────────────────────────────────────────────────────────


@contextlib.contextmanager
def analyzing(module, reads_all: bool = False):
    """One analysis of `module` at work: the cyclic GC off (an analysis makes hundreds of
    thousands of small objects, none garbage while it runs), the check of a lazily loaded module's unread
    bodies (the full parse's verdict) in a forked job meanwhile, settled before the answer.
    `reads_all`: the analysis reads every body; they are read first, each once, in text
    order (`lazy.read_all`). Gives the facts the analysis asks (`facts.TextFacts`)."""
    with runtime.no_cyclic_gc():
        check_elsewhere(module, runtime.FORKING)
        try:
            if reads_all:
                read_all(module)
            yield TextFacts()
            settle(module)
        finally:
            check_elsewhere(module, None)


def meanwhile(here: Callable[[], T], there: Callable[[], U], types: tuple[type, ...]) -> tuple[T, U]:
    """(`here()`, `there()`), `there` worked out by a forked child while this process works
    out `here` (each then keeps one CPU busy). `types`: the frozen dataclasses `there()`'s
    answer is made of, which it crosses as (`plain`). Where no child starts, or it fails
    (its error is then raised by `there()` here, after `here()`'s: the order they come in
    without a child), both are worked out here, one after the other."""
    allowed = plain.allowing(types)
    job = runtime.FORKING.submit(_as_plain, there, allowed)
    with runtime.taking_cpus(1 if job is not None else 0):
        try:
            first = here()
        except BaseException:
            if job is not None:
                job.cancel()
            raise
    answer = job.result() if job is not None else None
    if answer is None:
        return first, there()
    with runtime.no_cyclic_gc():
        return first, plain.decode(answer, allowed)


def _as_plain(there: Callable[[], Any], allowed) -> Any:
    with runtime.taking_cpus(1):  # the parent's, working out the other half
        return plain.encode(there(), allowed)


@contextlib.contextmanager
def ahead(work: Callable[..., None], *args: Any) -> Iterator[runtime.Child | None]:
    """While the block runs, a forked child does `work(send, *args)`, each `send(message)`
    (plain data) reaching the block's `child.receive()` in turn; the block gets None where
    no child starts (the caller then does the work itself, when it needs it). The child and
    the block each keep one CPU busy meanwhile."""
    child = runtime.FORKING.stream(_with_a_cpu_taken, work, *args)
    with runtime.taking_cpus(1 if child is not None else 0):
        yield child


def _with_a_cpu_taken(send, work: Callable[..., None], *args: Any) -> None:
    with runtime.taking_cpus(1):  # the parent's
        work(send, *args)


def one_command() -> None:
    """The process runs one command, then exits (the CLI): the cyclic GC off from now on (the
    millions of IR objects a command builds live until it exits: the collector would only
    scan them again and again, seconds on a 100 MB module)."""
    runtime.no_cyclic_gc_from_now()


def finish() -> None:
    """Before the process leaves: wait for the children that write into the cache (what they
    write is there for the next command)."""
    runtime.wait_for_background()
