"""Reading HLO: from a file, a string or a jax `Compiled`, into analysable modules.

How fast is hloscope.speed's: a file's outline comes from its cache when the text was seen
before, a lazy parse leaves bodies unread, a large text is parsed in two parts at once.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import importlib
import os
import re
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import HloscopeError, HloSyntaxError
from ..text.dumpfiles import (
    AFTER_OPTIMIZATIONS,
    BEFORE_OPTIMIZATIONS,
    BufferAssignmentFigures,
    buffer_assignment_beside,
    buffer_assignment_figures,
    default_dump_module,
    dump_modules,
    mlir_start,
    side_file_kind,
)
from ..speed import seam as speed
from ..units import human_bytes
from .module import Module, adopt

if TYPE_CHECKING:  # loaded by `parse_all` when asked for
    from ..text import lark_engine  # noqa: F401


def parse_all(text: str, filename: str = "<string>", lazy: bool = False, progress=None,
              engine: str = "fast") -> list[Module]:
    """Parse HLO text holding one or more modules. Raises HloSyntaxError.

    With `lazy`, computation bodies in XLA's printed form are checked by the grammar but cut
    into instructions only when first used (fused computations are most of a large dump);
    an error only those instructions can show (an undefined operand) then surfaces on use.
    A large text is then read in two parts at once where it can be (hloscope.speed.split).
    `progress(characters_read)` is called as the parse advances.

    `engine`: "fast" (the default), or "lark": the reference engine, which reads the text
    with the grammar's specification alone (hloscope.text.lark_engine), always eagerly and
    several times slower, into the same IR.
    """
    if text[:1] == "\ufeff":
        text = text[1:]
    check_is_hlo(text, filename)
    if engine == "lark":
        # The reference engine, loaded only when asked for (it builds a parser of its own).
        return adopt(importlib.import_module("hloscope.text.lark_engine").parse_all(text, filename))
    if engine != "fast":
        raise ValueError(f"engine must be 'fast' or 'lark', not {engine!r}")
    if not lazy:
        return adopt(speed.parse_eagerly(text, filename, progress))
    return adopt(speed.parse_lazily(text, filename, progress))


def parse(text: str, filename: str = "<string>", lazy: bool = False, engine: str = "fast") -> Module:
    """Parse HLO text holding exactly one module (the first, if there are several).
    `engine`: "fast" or "lark", as for `parse_all`."""
    return parse_all(text, filename, lazy, engine=engine)[0]


STDIN = "-"
"""The path that names standard input."""

STDIN_NAME = "<stdin>"

_HOW_TO_GET_HLO = ("hloscope reads the HLO XLA prints after optimizing: "
                   "`jax.jit(f).lower(*args).compile().as_text()`, or the `*after_optimizations.txt` "
                   "of `XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text`")


class InputError(HloscopeError):
    """An input hloscope cannot read as HLO, said in one sentence that names it:
    `FILE: error: MESSAGE`."""

    def __init__(self, path: str, message: str):
        self.path = path
        self.message = message
        super().__init__(f"{path}: error: {message}")


class NotCompiledError(HloscopeError, TypeError):
    """`from_compiled` was handed something other than a compiled jax computation."""


def display_name(path: str) -> str:
    """How an input is named in messages and in JSON's `file`."""
    return STDIN_NAME if path == STDIN else path


def read_bytes(path: str) -> bytes:
    """A file's bytes (`-`: standard input), gunzipped when they are gzip data. Raises
    InputError naming the file when it cannot be read or its gzip data is broken."""
    name = display_name(path)
    try:
        if path == STDIN:
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except IsADirectoryError:
        raise InputError(name, "a directory without XLA dump modules") from None
    except FileNotFoundError:
        raise _missing(name, path, "no such file") from None
    except OSError as e:
        raise InputError(name, f"cannot be read: {e.strerror or e}") from None
    if data[:2] == b"\x1f\x8b":  # gzip's magic number, whatever the name says
        try:
            data = gzip.decompress(data)
        except EOFError:
            raise InputError(name, "the gzip data ends early: the file is truncated") from None
        except (gzip.BadGzipFile, zlib.error, OSError) as e:
            raise InputError(name, f"the gzip data is corrupt ({e})") from None
    elif path.endswith(".gz"):
        raise InputError(name, "named .gz but not gzip data (it does not begin with gzip's bytes 1f 8b)")
    return data


def decode_text(data: bytes, path: str = "<string>") -> str:
    """HLO text from a file's bytes: UTF-8 (UTF-16 when a byte-order mark says so), a byte
    order mark dropped, Windows line ends read as newlines, a malformed byte read as U+FFFD.
    Raises InputError for binary data (no byte of it is echoed)."""
    name = display_name(path)
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return _newlines(data.decode("utf-16", errors="replace"))
    data = data.removeprefix(codecs.BOM_UTF8)
    head = data[: 1 << 16]
    nul = head.find(b"\0")
    replaced = head.decode("utf-8", errors="replace").count("\ufffd")
    if nul >= 0 or replaced > max(8, len(head) // 100):
        kind = side_file_kind(path)
        what = f"it looks like {kind}" if kind else (
            f"a NUL byte at offset {nul}" if nul >= 0 else f"{replaced} bytes that are not UTF-8 text")
        raise InputError(name, f"binary data, not HLO text ({what}); {_HOW_TO_GET_HLO}")
    return _newlines(data.decode("utf-8", errors="replace"))


def _newlines(text: str) -> str:
    # XLA prints `\n`; a file that went through Windows has `\r\n`, which would otherwise
    # reach error messages (and the terminal) as carriage returns.
    return text.replace("\r\n", "\n") if "\r\n" in text[: 1 << 16] else text


def check_is_hlo(text: str, path: str = "<string>") -> None:
    """Raise a clear error for text that is certainly not an HLO module: StableHLO/MLIR (what
    a jax `Lowered` prints), or one of the files XLA dumps beside a module."""
    if text[:4096].lstrip()[:9] == "HloModule":
        return
    name = display_name(path)
    at = mlir_start(text)
    if at is not None:
        line, column = at
        source = text[: 1 << 16].splitlines()[line - 1]
        raise HloSyntaxError("this is StableHLO/MLIR text (what `jax.jit(f).lower(*args).as_text()` prints), "
                             f"not HLO: {_HOW_TO_GET_HLO}", line, column, source, name)
    kind = side_file_kind(path, text[:256])
    if kind is not None:
        beside = ""
        if "dump" in kind or "report" in kind:
            stem = os.path.basename(path).split(AFTER_OPTIMIZATIONS[:-4])[0]
            if stem != os.path.basename(path):
                beside = f" (`{stem}{AFTER_OPTIMIZATIONS}` beside it), or the dump directory"
        raise InputError(name, f"this is {kind}, not an HLO module: give the module it describes{beside}"
                         if beside else f"this is {kind}, not an HLO module; {_HOW_TO_GET_HLO}")


def load_all(path: str | os.PathLike, lazy: bool = False, progress=None) -> list[Module]:
    """Read a file (plain or gzipped; `-` for standard input) and parse every module in it.

    With `lazy`, bodies are read on first use, and the module's outline is kept in
    hloscope's cache (see hloscope.speed.cache) so that the next load of the same text is
    instant. Modules loaded from a file carry the text's hash, under which analyses keep
    their results. Raises InputError or HloSyntaxError, naming the file.
    """
    path = os.fspath(path)
    if path != STDIN and os.path.isdir(path):  # an XLA dump directory: its main module
        return [m for inp in resolve_inputs([path]).inputs for m in load_all(inp.path, lazy, progress)]
    name = display_name(path)
    key = None
    if lazy and path != STDIN:
        # Hashed before (by the read-ahead child, or by an earlier command, the file
        # unchanged since): not read here unless a computation is asked for.
        key = _read_ahead_keys.get(path) or speed.known_key(path)
    if key is not None:
        modules = speed.kept_modules(lambda: _text_as_hashed(path, key), name, key)
        if modules is not None:
            return adopt(modules)
    state = speed.file_state(path) if path != STDIN else None
    data = read_bytes(path)
    # Hashed as bytes: encoding the decoded text again to hash it took twice as long.
    key = speed.content_key(data)
    if key is not None:
        speed.note_key(state, key)
    if lazy and key is not None:
        # The text is decoded only if a module's computations are asked for.
        modules = speed.kept_modules(lambda: decode_text(data, path), name, key)
        if modules is not None:
            return adopt(modules)
    text = decode_text(data, path)
    del data
    modules = parse_all(text, name, lazy=lazy, progress=progress)
    if key is not None:
        speed.keep_modules(text, modules, key, lazy)
    return modules


def _text_as_hashed(path: str, key: str) -> str:
    """The text of `path`, found before to hash to `key`; InputError if the file has changed
    since."""
    data = read_bytes(path)
    if speed.content_key(data) != key:
        raise InputError(display_name(path), "the file changed while hloscope read it; run the command again")
    return decode_text(data, path)


# ─── inputs: files, standard input, XLA dump directories ───────────────────────────────


@dataclass(frozen=True, slots=True)
class Input:
    """One input resolved: what to read, under which name, and which of its modules."""

    path: str
    """The file to read (`-`: standard input)."""
    modules: re.Pattern[str] | None = None
    """Only the modules whose name this matches (`--module`); None: every module."""
    buffer_assignment: str | None = None
    """XLA's `*-buffer-assignment.txt` for this module, when the dump has one beside it."""

    @property
    def name(self) -> str:
        """As messages and JSON's `file` name it."""
        return display_name(self.path)


@dataclass(frozen=True, slots=True)
class Resolved:
    inputs: tuple[Input, ...]
    notes: tuple[str, ...]
    """What the resolution chose or passed over, for the user to read (stderr)."""


def module_pattern(regex: str | None) -> re.Pattern[str] | None:
    """`--module REGEX` compiled; raises ValueError for a malformed expression."""
    if regex is None:
        return None
    try:
        return re.compile(regex)
    except re.error as e:
        raise ValueError(f"{regex!r} is not a regular expression: {e}") from None


def resolve_inputs(paths, module: str | None = None) -> Resolved:
    """The inputs that `paths` name: a file, `-`, or an XLA dump directory, whose optimized
    module matching `module` (re.search on `module_NNNN.NAME`) is read, by default its largest
    `jit_*` module, with XLA's buffer assignment beside it. Among several paths, the files a
    dump writes beside a module (`dump/*.txt`) are passed over with a note. Raises InputError."""
    pattern = module_pattern(module)
    paths = [os.fspath(p) for p in paths]
    inputs: list[Input] = []
    notes: list[str] = []
    skipped: list[str] = []
    unoptimized: list[str] = []
    if paths.count(STDIN) > 1:
        raise InputError(STDIN_NAME, "standard input (`-`) can be read only once")
    for path in paths:
        if path != STDIN and os.path.isdir(path):
            inputs += _dump_inputs(path, pattern, notes)
            continue
        if path != STDIN and not os.path.exists(path):
            raise _missing(path, path, "no such file or directory")
        if len(paths) > 1 and path != STDIN and AFTER_OPTIMIZATIONS[:-4] + "-" in os.path.basename(path):
            skipped.append(path)  # `*after_optimizations-buffer-assignment.txt` and its kin
            continue
        if len(paths) > 1 and path != STDIN and _before_optimizations(path):
            unoptimized.append(path)
            continue
        beside = buffer_assignment_beside(path) if path.endswith((AFTER_OPTIMIZATIONS, AFTER_OPTIMIZATIONS + ".gz")) \
            else None
        inputs.append(Input(path, pattern, beside))
    if skipped:
        notes.append(f"passed over {len(skipped)} file{'s' if len(skipped) != 1 else ''} XLA dumps beside a "
                     f"module, which are not modules: {', '.join(os.path.basename(p) for p in skipped[:3])}"
                     + (", ..." if len(skipped) > 3 else ""))
    if unoptimized:
        notes.append(f"passed over {len(unoptimized)} module{'s' if len(unoptimized) != 1 else ''} before XLA's "
                     f"optimizations (not partitioned or scheduled; hloscope reads the *{AFTER_OPTIMIZATIONS} "
                     f"beside them): {', '.join(os.path.basename(p) for p in unoptimized[:3])}"
                     + (", ..." if len(unoptimized) > 3 else ""))
    if not inputs:
        if unoptimized:
            raise InputError(paths[0] if len(paths) == 1 else ", ".join(paths),
                             f"only modules before XLA's optimizations (*{BEFORE_OPTIMIZATIONS}); give the "
                             f"*{AFTER_OPTIMIZATIONS} files of the dump, or `jax.jit(f).lower(*args).compile()"
                             ".as_text()`")
        raise InputError(paths[0] if len(paths) == 1 else ", ".join(paths), "no HLO module among these files")
    return Resolved(tuple(inputs), tuple(notes))


def _missing(name: str, path: str, what: str) -> InputError:
    """The error for a path that is not there, with a hint when its gzipped file is."""
    if os.path.exists(path + ".gz"):
        return InputError(name, f"{what} (but {os.path.basename(path)}.gz is: did you mean it?)")
    return InputError(name, what)


def _before_optimizations(path: str) -> bool:
    """Whether `path` is a dump's module before XLA's optimizations (`*.before_optimizations.txt`),
    which the devices never run."""
    return os.path.basename(path).endswith((BEFORE_OPTIMIZATIONS, BEFORE_OPTIMIZATIONS + ".gz"))


_ROUGHLY = {"KiB": 0, "MiB": 0, "GiB": 1}
"""How a dump directory's listing writes its modules' sizes: roughly, to tell them apart."""


def _dump_inputs(directory: str, pattern, notes: list[str]) -> list[Input]:
    found = dump_modules(directory)
    if not found:
        raise InputError(directory, f"a directory without XLA dump modules (no *{AFTER_OPTIMIZATIONS} in it); "
                         "give an HLO file, or a directory written by "
                         "`XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text`")
    listing = ", ".join(f"{m.label} ({human_bytes(m.size, _ROUGHLY)})" for m in found)
    if pattern is not None:
        chosen = [m for m in found if pattern.search(m.label)]
        if not chosen:
            raise InputError(directory, f"no module of this dump matches --module {pattern.pattern!r}; "
                             f"its modules: {listing}")
    else:
        best = default_dump_module(found)
        chosen = [best]
        if len(found) > 1:
            notes.append(f"{directory}: {len(found)} modules: {listing}; reading {best.label} "
                         f"(the largest{' jit_*' if best.name.startswith('jit_') else ''} module); "
                         "choose another with --module REGEX")
    return [Input(m.path, None, m.buffer_assignment) for m in chosen]


def load_input(inp: Input, lazy: bool = False, progress=None) -> list[Module]:
    """The modules of one input (those `inp.modules` matches). Raises InputError when the
    pattern matches none of them."""
    modules = load_all(inp.path, lazy=lazy, progress=progress)
    if inp.modules is None:
        return modules
    chosen = [m for m in modules if inp.modules.search(m.name)]
    if not chosen:
        raise InputError(inp.name, f"no module matches --module {inp.modules.pattern!r}; "
                         f"its modules: {', '.join(m.name for m in modules)}")
    return chosen


READ_AHEAD_MIN_BYTES = 4 << 20
"""From this size of file on, `reading_ahead` reads it in a child: below, the child would
cost about what it saves."""


class ReadAhead:
    """The child `reading_ahead` started (or none): it sends one message once the inputs'
    outlines are in the cache and, working out `then` as well, a second once that is done."""

    def __init__(self, job, working_out: bool):
        self._job = job
        self._stored: bool | None = None if job is not None else False  # None: not heard yet
        self._keys: dict[str, str] = {}
        self.working_out = job is not None and working_out
        """Whether the child goes on with `then` after the outlines."""

    def stored(self) -> bool:
        """Wait until the child has kept the outlines; False when it failed (or none ran).
        Until the block ends, loading those inputs then takes the hash of each file the
        child found, and reads the file only if a computation is asked for."""
        if self._stored is None:
            keys = self._job.receive()
            self._stored = keys is not None
            self.working_out = self.working_out and self._stored
            if keys:
                self._keys = keys
                _read_ahead_keys.update(keys)
        return self._stored

    def worked_out(self) -> bool:
        """Wait until the child has worked `then` out; False when it failed (or does not)."""
        if not (self.working_out and self.stored()):
            return False
        self.working_out = False
        return self._job.result() is not None

    def stop(self) -> None:
        if self._job is not None:
            self._job.cancel()
        for path in self._keys:
            _read_ahead_keys.pop(path, None)


@contextlib.contextmanager
def reading_ahead(paths, module: str | None = None, then: Callable[[Module], object] | None = None):
    """While the block runs (reading other inputs), a forked child reads the inputs `paths`
    name into the cache: loading those inputs then reads their outlines from the cache, under
    the hash the child found, instead of reading, hashing and parsing them. The two texts are
    parsed at once, each on its own CPU (a large text's parse in two halves gains little over
    that, at a third more CPU).

    With `then`, when the inputs hold one module (of those `module` picks), the child goes
    on with `then(that module)`: work that keeps its results in the cache (a diff's side of
    B, worked out on the CPU that parsed it while this process works out A's). The block
    gets a `ReadAhead` to wait for either; leaving the block waits for the outlines and stops
    the child if it still works (its results were not asked for).

    Nothing is read ahead where the cache is off, no child can start, or the files are
    small; a child that fails (an input the resolution rejects, a text with an error) leaves
    nothing, and loading the inputs later meets what it met, in the command's own order."""
    inputs, found = (), []
    if paths and speed.caching():
        try:
            inputs = resolve_inputs(paths, module).inputs
            found = [inp for inp in inputs
                     if inp.path != STDIN and os.path.getsize(inp.path) >= READ_AHEAD_MIN_BYTES]
        except (HloscopeError, ValueError, OSError):
            inputs = ()  # reported when the inputs are loaded
        # `then` only where the child reads every input: its one module is then the inputs' one.
        if len(found) < len(inputs):
            then = None
    with speed.ahead(_read_ahead, found, then) if found else contextlib.nullcontext() as job:
        ahead = ReadAhead(job, then is not None)
        try:
            yield ahead
            ahead.stored()
        finally:
            ahead.stop()


_read_ahead_keys: dict[str, str] = {}
"""The hash of each file a `reading_ahead` child has read into the cache, while its block
runs: what `load_all` takes instead of reading and hashing the file again."""


def _read_ahead(send, inputs: list[Input], then: Callable[[Module], object] | None) -> None:
    # (The parent's CPU is taken meanwhile: each text here is parsed in one part.)
    loaded = [(inp, load_input(inp, lazy=True)) for inp in inputs]
    send({inp.path: key for inp, ms in loaded for key in [speed.text_key(ms[0])] if key is not None})
    modules = [m for _, ms in loaded for m in ms]
    if then is not None and len(modules) == 1:
        then(modules[0])
        send(True)


def xla_figures(inp: Input) -> BufferAssignmentFigures | None:
    """XLA's memory figures from the buffer assignment beside a dumped module, or None."""
    if inp.buffer_assignment is None:
        return None
    try:
        text = decode_text(read_bytes(inp.buffer_assignment), inp.buffer_assignment)
    except InputError:
        return None  # an unreadable side file takes nothing away from the module's analysis
    return buffer_assignment_figures(text)


def load(path: str | os.PathLike, lazy: bool = False) -> Module:
    """Read a file (or `-`, or an XLA dump directory) and parse its (first) module."""
    return load_all(path, lazy)[0]


def from_compiled(compiled) -> Module:
    """The Module of a `jax.jit(f).lower(...).compile()` result (its optimized HLO).

    Raises NotCompiledError (a TypeError) for anything else, saying what to call: a jax
    `Lowered` prints StableHLO, before XLA has optimized, partitioned or scheduled it."""
    if isinstance(compiled, (str, bytes)):
        raise NotCompiledError("from_compiled takes a jax Compiled; for HLO text use hloscope.parse(text)")
    if callable(getattr(compiled, "compile", None)):
        raise NotCompiledError(f"from_compiled got a jax {type(compiled).__name__}, which is not compiled yet: "
                               "call .compile() first: hloscope.from_compiled(jax.jit(f).lower(*args).compile())")
    if callable(getattr(compiled, "lower", None)):
        raise NotCompiledError(f"from_compiled got a {type(compiled).__name__} (a jitted function?): call "
                               ".lower(*args).compile() first: hloscope.from_compiled(jax.jit(f).lower(*args).compile())")
    as_text = getattr(compiled, "as_text", None)
    if not callable(as_text):
        raise NotCompiledError(f"from_compiled takes a jax Compiled (`jax.jit(f).lower(*args).compile()`), "
                               f"not a {type(compiled).__name__}")
    text = as_text()
    if not isinstance(text, str):
        raise NotCompiledError(f"{type(compiled).__name__}.as_text() gave no HLO text")
    return parse(text, "<compiled>")
