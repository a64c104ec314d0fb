"""Reading HLO: from a file, a string or a jax `Compiled`, into analysable modules.

Here the speed machinery is wired in: a file's outline comes from the cache when its text was
seen before, a large text is parsed in two parts at once (hloscope.text.split, with the
forking executor), and freed parse buffers go back to the system.
"""

from __future__ import annotations

import gzip
import os

from ..text import lark_engine
from ..text.parser import parse_part
from ..text.split import parse_in_two
from . import cache, runtime
from .module import Module, adopt


def parse_all(text: str, filename: str = "<string>", lazy: bool = False, progress=None,
              engine: str = "fast") -> list[Module]:
    """Parse HLO text holding one or more modules. Raises HloSyntaxError.

    With `lazy`, computation bodies in XLA's printed form are checked by the grammar but cut
    into instructions only when first used (fused computations are most of a large dump);
    an error only those instructions can show (an undefined operand) then surfaces on use.
    A large text is then read in two parts at once where it can be (hloscope.text.split).
    `progress(characters_read)` is called as the parse advances.

    `engine`: "fast" (the default), or "lark": the reference engine, which reads the text
    with the grammar's specification alone (hloscope.text.lark_engine), always eagerly and
    several times slower, into the same IR.
    """
    if engine == "lark":
        return adopt(lark_engine.parse_all(text, filename))
    if engine != "fast":
        raise ValueError(f"engine must be 'fast' or 'lark', not {engine!r}")
    if not lazy:
        return adopt(parse_part(text, filename, lazy=False, progress=progress))
    modules = parse_in_two(text, filename, runtime.FORKING, progress)
    if modules is None:
        modules = parse_part(text, filename, lazy=True, progress=progress)
    runtime.trim()  # what the tokens' copies of the bodies took (see runtime.trim)
    return adopt(modules)


def parse(text: str, filename: str = "<string>", lazy: bool = False, engine: str = "fast") -> Module:
    """Parse HLO text holding exactly one module (the first, if there are several).
    `engine`: "fast" or "lark", as for `parse_all`."""
    return parse_all(text, filename, lazy, engine=engine)[0]


def read_bytes(path: str) -> bytes:
    """A file's bytes, gunzipped when it ends in `.gz`."""
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


def decode_text(data: bytes) -> str:
    """HLO text from a file's bytes: UTF-8, a malformed byte read as U+FFFD, newlines kept
    as written."""
    return data.decode("utf-8", errors="replace")


def load_all(path: str | os.PathLike, lazy: bool = False, progress=None) -> list[Module]:
    """Read a file (plain or .gz) and parse every module in it.

    With `lazy`, bodies are read on first use, and the module's outline is kept in
    hloscope's cache (see hloscope.api.cache) so that the next load of the same text is
    instant. Modules loaded from a file carry the text's hash, under which analyses keep
    their results.
    """
    path = os.fspath(path)
    data = read_bytes(path)
    # Hashed as bytes: encoding the decoded text again to hash it took twice as long.
    key = cache.digest_bytes(data) if cache.enabled() else None
    text = decode_text(data)
    del data
    if lazy and key is not None:
        modules = cache.lookup(text, path, key)
        if modules is not None:
            return adopt(modules)
    modules = parse_all(text, path, lazy=lazy, progress=progress)
    if key is not None:
        if lazy:
            cache.store(text, modules, key)
        cache.attach(modules, key)
    return modules


def load(path: str | os.PathLike, lazy: bool = False) -> Module:
    """Read a file and parse its (first) module."""
    return load_all(path, lazy)[0]


def from_compiled(compiled) -> Module:
    """The Module of a `jax.jit(f).lower(...).compile()` result (its optimized HLO)."""
    return parse(compiled.as_text(), "<compiled>")
