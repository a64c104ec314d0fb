"""Long regular expressions, compiled once per machine instead of once per process.

The grammar's terminals make expressions of 3-6 KB (a computation, an instruction, an
attribute), and `re` takes 7-16 ms to compile each: ~65 ms of every process that parses a
module. `re` compiles an expression in two steps: Python code turns it into a program (a
list of integers), and `_sre.compile` makes the pattern from that program. Here the program
is kept in the cache directory, beside Lark's tables, for this build of Python, and the next
process gives it to `_sre.compile` directly.

A program is kept only once the pattern made from it equals the one `re.compile` makes
(patterns compare their expression, flags and program), so what `compiled` returns is what
`re.compile` would. Anything unexpected (caching off, another Python, a file that does not
load, a program `_sre` rejects) falls back to `re.compile`.
"""

from __future__ import annotations

import marshal
import os
import re
import sys
from array import array
from typing import Any

from . import settings

try:
    import _sre
    from re import _compiler, _parser
except ImportError:  # a Python without CPython's regular-expression engine
    _sre = None

_CODE = next((t for t in "ILQ" if _sre is not None and array(t).itemsize == _sre.CODESIZE), None)
"""The array type of `_sre`'s code words."""
_made: dict[tuple[str, int], re.Pattern[str]] = {}
"""Patterns made in this process, by (expression, flags)."""
_kept: dict[tuple[str, int], tuple] | None = None
"""The programs read from the cache (None: not read yet)."""


def compiled(expression: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(expression, flags)`, from the program kept on this machine when it is."""
    key = (expression, flags)
    pattern = _made.get(key)
    if pattern is None:
        pattern = _made[key] = _from_program(expression, flags)
    return pattern


def _from_program(expression: str, flags: int) -> re.Pattern[str]:
    kept = _programs()
    program = kept.get((expression, flags))
    if program is not None:
        try:
            return _made_from(expression, program)
        except Exception:  # a program this engine rejects: compiled again below
            pass
    pattern = re.compile(expression, flags)
    program = _program(expression, flags)
    if program is not None and _cache_file() is not None:
        try:
            same = _made_from(expression, program) == pattern
        except Exception:
            same = False
        if same:
            kept[(expression, flags)] = program
            _write(kept)
    return pattern


def _made_from(expression: str, program: tuple) -> re.Pattern[str]:
    flags, code, groups, names, by_index = program
    return _sre.compile(expression, flags, array(_CODE, code).tolist(), groups, names, by_index)


def _program(expression: str, flags: int) -> tuple | None:
    """What `re._compiler.compile` hands `_sre.compile` after the expression: its flags, the
    program (as bytes: a list of ints would hold ~1.5 MB for the grammar's), the number of
    groups less one and the group names both ways."""
    if _sre is None or _CODE is None:
        return None
    try:
        parsed = _parser.parse(expression, flags)
        code = array(_CODE, _compiler._code(parsed, flags)).tobytes()
        names = dict(parsed.state.groupdict)
        by_index: list[str | None] = [None] * parsed.state.groups
        for name, index in names.items():
            by_index[index] = name
        return (int(flags | parsed.state.flags), code, parsed.state.groups - 1, names, tuple(by_index))
    except Exception:  # another Python's internals
        return None


def _cache_file() -> str | None:
    if _sre is None or _CODE is None:
        return None
    directory = settings.private_dir()
    if directory is None:
        return None
    return os.path.join(directory, f"regex-{sys.implementation.cache_tag}-{_sre.MAGIC}.programs")


def _programs() -> dict[tuple[str, int], tuple]:
    global _kept
    if _kept is None:
        _kept = {}
        path = _cache_file()
        if path is not None:
            try:
                with open(path, "rb") as f:
                    version, programs = marshal.load(f)
                if version == sys.version and isinstance(programs, dict):
                    _kept = programs
            except (OSError, EOFError, ValueError, TypeError):
                pass
    return _kept


def _write(programs: dict[tuple[str, int], Any]) -> None:
    """All the programs this process knows, in place of the file (written aside, then renamed:
    a reader sees the old file or the new one)."""
    path = _cache_file()
    if path is None:
        return
    aside = f"{path}.{os.getpid()}.tmp"
    try:
        with open(aside, "wb") as f:
            marshal.dump((sys.version, programs), f)
        os.replace(aside, path)
    except (OSError, ValueError):
        try:
            os.unlink(aside)
        except OSError:
            pass
