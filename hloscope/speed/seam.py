"""The one seam: how the api layer parses and analyses through hloscope.speed."""

from __future__ import annotations

import contextlib

from ..text.parser import parse_part
from . import runtime
from .facts import TEXT_FACTS
from .lazy import LAZY, check_elsewhere, read_all, settle
from .split import parse_in_two


def parse_lazily(text: str, filename: str, progress=None) -> list:
    """The modules of `text` with printed bodies left unread (`lazy.LazyComputation`), read
    in two processes where that pays (`split`). Raises HloSyntaxError as a full parse would,
    for what the parse itself finds; the rest is the verdict's (`analyzing`)."""
    with runtime.no_cyclic_gc():
        modules = parse_in_two(text, filename, runtime.FORKING, progress)
        if modules is None:
            modules = parse_part(text, filename, unread=LAZY, progress=progress)
    runtime.trim()  # what the tokens' copies of the bodies took (see runtime.trim)
    return modules


def parse_eagerly(text: str, filename: str, progress=None) -> list:
    """The modules of `text`, every body read (the plain parse), the cyclic GC off meanwhile."""
    with runtime.no_cyclic_gc():
        return parse_part(text, filename, progress=progress)


@contextlib.contextmanager
def analyzing(module, reads_all: bool = False):
    """One analysis of `module` at work: the cyclic GC off (an analysis makes hundreds of
    thousands of small, acyclic objects), the check of a lazily loaded module's unread
    bodies (the full parse's verdict) in a forked job meanwhile, settled before the answer.
    `reads_all`: the analysis reads every body; they are read first, each once, in text
    order (`lazy.read_all`). Gives the facts the analysis asks (`facts.TEXT_FACTS`)."""
    with runtime.no_cyclic_gc():
        check_elsewhere(module, runtime.FORKING)
        try:
            if reads_all:
                read_all(module)
            yield TEXT_FACTS
            settle(module)
        finally:
            check_elsewhere(module, None)
