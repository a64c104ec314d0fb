"""The syntax of HLO text: `grammars/hlo.lark`, the one specification, and its terminals.

`spec_text()` is the specification alone (read by hloscope.text.lark_engine); `fast_text()`
is the specification followed by `grammars/hlo_fast.lark`, which adds only composite
terminals built from the specification's own and `%extend` alternatives that use them (read
by the default engine, hloscope.text.parser).

Everything in hloscope that reads syntax takes its patterns from here: the parser's engines
(hloscope.text) and the lazy decoding of attribute values (hloscope.ir.attributes), which
cuts an attribute tail with the grammar's own ATTRIBUTE terminal.
"""

from __future__ import annotations

import functools
import os
import re
from typing import TYPE_CHECKING

from . import patterns, settings

if TYPE_CHECKING:
    import lark

GRAMMAR_NAME = "hlo.lark"
FAST_GRAMMAR_NAME = "hlo_fast.lark"


def _grammar_file(name: str) -> str:
    """A grammar file: inside the installed package (where the wheel puts it), else the
    source tree's `grammars/`. Found with `os.path` alone: importing `importlib.resources`
    and `pathlib` would cost every command, cached or not, ~8 ms (the cache's stamp reads
    these files)."""
    here = os.path.dirname(os.path.abspath(__file__))
    packaged = os.path.join(here, "grammars", name)
    if os.path.isfile(packaged):
        return packaged
    return os.path.join(os.path.dirname(here), "grammars", name)


def read(path: str) -> str:
    """A grammar file's text."""
    with open(path, encoding="utf-8") as f:
        return f.read()


def path() -> str:
    """The specification, `hlo.lark`: inside the installed package, else the source tree's."""
    return _grammar_file(GRAMMAR_NAME)


def fast_path() -> str:
    """The fast engine's additions, `hlo_fast.lark`, found as `path()` is."""
    return _grammar_file(FAST_GRAMMAR_NAME)


def spec_text() -> str:
    """The specification alone."""
    return read(path())


def fast_text() -> str:
    """The specification, then the fast engine's additions (which `%extend` its rules)."""
    return spec_text() + "\n" + read(fast_path())


def text() -> str:
    """The specification alone (as `spec_text()`)."""
    return spec_text()


def lark_cache_file(purpose: str) -> str | bool:
    """Where Lark keeps its analysis of the grammar for one use of it (a second start takes
    milliseconds instead of a quarter second); Lark checks the grammar's hash before using
    it. False (no file) when caching is off."""
    import lark  # here: a command answered from the cache reads no grammar (docs/speed.md)

    directory = settings.private_dir()
    if directory is None:
        return False
    return os.path.join(directory, f"grammar-{purpose}-lark{lark.__version__}.cache")


@functools.lru_cache(maxsize=1)
def _terminals() -> lark.Lark:
    import lark

    # The fast grammar: ATTRIBUTE and INSTRUCTION live in its additions.
    return lark.Lark(fast_text(), parser="lalr", lexer="contextual", cache=lark_cache_file("terminals"),
                     start=["start", "inline_body", "computations"])


def terminal_regex(name: str) -> str:
    """The regular expression of one of the grammar's terminals."""
    return _terminals().get_terminal(name).pattern.to_regexp()


@functools.lru_cache(maxsize=1)
def attribute_pattern() -> re.Pattern[str]:
    """The ATTRIBUTE terminal (`, name=value`), for cutting an attribute tail."""
    return patterns.compiled(terminal_regex("ATTRIBUTE"))
