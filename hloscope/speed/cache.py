"""A content-hash cache of parsed modules and of analysis results, so that a second command
on the same file starts at once.

What is kept is a module's outline as the lazy parser leaves it: the header, the debug
tables, and for each computation its name, flags and where its body lies in the text. The
text itself is read again (it has to be, to hash it), and bodies are cut into instructions
on use exactly as after a fresh parse. Only modules whose every body is in XLA's printed
form, with no instruction renamed, have such an outline; others are simply not cached. The
file's first line holds the modules' headers, its second their computations, which are read
and made only when first asked for (`deferred.DeferredModule`): a command whose results are
kept reads the first line alone.

Analyses that are pure functions of a module (`memory`, `collectives`) keep their frozen
results too, keyed by the text's hash, the module's place in the file, the analysis and its
arguments (`memoized`). They are written as JSON of their fields and rebuilt as the same
dataclasses, of the types the analysis names and no other; a value of any other type is not
cached at all.

The format is JSON (nothing a file could make Python execute), stamped with a hash of
hloscope's own source and grammar (any change to the code is a new stamp, so no result
outlives the code that computed it), in a private directory of the user's
(`$XDG_CACHE_HOME/hloscope/{modules,results}`, else under `~/.cache`). `HLOSCOPE_CACHE=0`
(or `hloscope --no-cache`) turns it off. A file that does not read back as expected is
ignored and removed.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import time
import weakref
from collections.abc import Callable
from typing import Any

from .. import grammar
from ..ir.attributes import Attributes
from ..ir.module import Module
from ..settings import cache_enabled as enabled
from ..settings import private_dir
from . import plain, runtime
from .deferred import DeferredModule
from .lazy import LazyComputation
from .outline import computations_from_outline, computations_outline

FORMAT = 4
KEEP = (32, 256 << 20)
"""Most outlines kept, and their most bytes together; the least recently written go first."""
KEEP_RESULTS = (256, 256 << 20)
"""The same for analysis results (a memory result of a 100 MB module is a few MB)."""
KEEP_FILE_KEYS = (1024, 1 << 20)
"""The same for the keys of files seen (`file_key`), a few hundred bytes each."""
SETTLED_SECONDS = 2.0
"""A file's key is noted only once it has not changed for this long (`file_state`)."""


@functools.lru_cache(maxsize=1)
def _stamp() -> str:
    """The format and a hash of hloscope's source files and grammar (which the package's
    version is a name for: no import of the package root, which sits above this layer)."""
    h = hashlib.blake2b(digest_size=10)
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for root, dirs, files in os.walk(package):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                h.update(os.path.relpath(path, package).encode())
                with open(path, "rb") as f:
                    h.update(f.read())
    for path in (grammar.path(), grammar.fast_path()):
        with open(path, "rb") as f:
            h.update(f.read())
    return f"{FORMAT}-{h.hexdigest()}"


def digest(text: str) -> str:
    """The content hash that names everything kept for `text`: `digest_bytes` of its UTF-8
    encoding."""
    h = hashlib.sha256()
    for start in range(0, len(text), 1 << 22):  # in pieces: no second copy of a large text
        h.update(text[start : start + (1 << 22)].encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def digest_bytes(data: bytes) -> str:
    """The content hash of a file's bytes (SHA-256: with the CPU's SHA instructions, twice as
    fast as BLAKE2 on a large text)."""
    return hashlib.sha256(data).hexdigest()


def _read(path: str, object_hook=None) -> Any:
    """The payload of a kept file with the current stamp (its first line), its objects made
    by `object_hook`; None when absent or stale; a file that cannot be read as one is removed."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.loads(f.readline(), object_hook=object_hook)
        if data.get("stamp") != _stamp():
            return None
        return data["payload"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        _remove(path)
        return None


def _read_second_line(path: str) -> Any:
    """What a kept file holds after its payload (`_write`'s `then`). Raises OSError or
    ValueError when it cannot be read as JSON."""
    with open(path, encoding="utf-8") as f:
        f.readline()
        return json.loads(f.readline())


_writes = itertools.count()


def _write(path: str, payload: Any, keep: tuple[int, int], then: Any = None) -> None:
    """Write atomically (a reader never sees half a file), then trim the directory. `then`:
    JSON written on a second line, which `_read` leaves unread."""
    directory = os.path.dirname(path)
    try:
        # A name no other writer takes (the process, a count, the time; O_EXCL refuses a
        # clash), made without `tempfile`, whose import costs every command ~6 ms.
        tmp = f"{path}.{os.getpid()}.{next(_writes)}.{time.time_ns()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            # dumps, not dump: only dumps takes the C encoder (~5× faster on large outlines).
            # Either line is one line: dumps escapes the newlines of strings.
            f.write(json.dumps({"stamp": _stamp(), "payload": payload}, separators=(",", ":")))
            if then is not None:
                f.write("\n")
                f.write(json.dumps(then, separators=(",", ":")))
        os.replace(tmp, path)
        _trim(directory, keep)
    except OSError:
        pass


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


# ─── the keys of files seen ──────────────────────────────────────────────────────────
#
# A command on a file seen before finds the file's key from its status alone, as git's index
# does: the file's device, inode, size, modification and change times, one `stat` instead
# of reading and hashing it (~35 ms on a 22 MB text). Any write to the file changes its
# change time, which no program can set; a file changed within the clock's resolution of
# when its key was noted could keep its times, so a key is noted only once the file has
# been still for `SETTLED_SECONDS`.


def file_state(path: str) -> tuple | None:
    """What `file_key` recognizes the file at `path` by, when it has been still for
    `SETTLED_SECONDS`; else (or when it cannot be found) None: its key is then not noted."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if time.time() - max(st.st_mtime, st.st_ctime) < SETTLED_SECONDS:
        return None
    return (os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _file_key_path(state: tuple | None) -> str | None:
    directory = private_dir("files") if state is not None else None
    if directory is None:
        return None
    name = hashlib.blake2b(repr(state).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return os.path.join(directory, f"{name}.json")


def file_key(path: str) -> str | None:
    """The key noted for the file at `path` (`note_file_key`) if it has not changed since;
    else None."""
    where = _file_key_path(file_state(path)) if enabled() else None
    key = _read(where) if where is not None else None
    return key if isinstance(key, str) else None


def note_file_key(state: tuple | None, key: str) -> None:
    """Note that the file whose `file_state` was `state` (taken before it was read) has
    `key`."""
    where = _file_key_path(state) if enabled() else None
    if where is not None:
        _write(where, key, KEEP_FILE_KEYS)


def lookup(text_of: Callable[[], str], filename: str, key: str, parse: Callable[[str, str], list]):
    """The modules of the text whose `digest` is `key` from their kept outline, or None. Their
    computations are made when first asked for, over `text_of()` (called once, for the first);
    should the outline no longer read back by then, `parse(text, filename)` makes them."""
    if not enabled():
        return None
    directory = private_dir("modules")
    if directory is None:
        return None
    path = os.path.join(directory, f"{key}.json")
    headers = _read(path)
    if headers is None:
        return None
    text_of = functools.cache(text_of)
    try:
        modules = [_module(header, i, path, text_of, filename, parse) for i, header in enumerate(headers)]
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        _remove(path)
        return None
    attach(modules, key)
    return modules


def store(text: str, modules, key: str | None = None) -> None:
    """Keep the outline of `modules` (parsed lazily from `text`) when they have one."""
    if not enabled() or not modules:
        return
    if any(not isinstance(c, LazyComputation) or c.body is None for m in modules for c in m.computations):
        return  # read by the parse, or renamed: the text does not outline it
    directory = private_dir("modules")
    if directory is None:
        return
    path = os.path.join(directory, f"{key or digest(text)}.json")
    if len(text) >= BACKGROUND_MIN_CHARS:
        # The command goes on with the module while a child writes (a copy of) its outline.
        if runtime.in_background(_write_outlines, path, modules):
            return
    _write_outlines(path, modules)
    # The encoder's buffers were freed into the C heap, where only large allocations would
    # reuse them: several MB per 20 MB of text stay resident otherwise (see runtime.trim).
    runtime.trim()


BACKGROUND_MIN_CHARS = 4 << 20
"""From this size of text on, the outline is written by a child process (~0.3 s for 100 MB),
as a text is parsed in two (`split.MIN_CHARS`)."""


def _write_outlines(path: str, modules) -> None:
    _write(path, [_header(m) for m in modules], KEEP, then=[computations_outline(m.computations) for m in modules])


_keys: "weakref.WeakKeyDictionary[Module, str]" = weakref.WeakKeyDictionary()
"""Each loaded module's name in the cache: the hash of its text and its place in it."""


def attach(modules, key: str) -> None:
    """Name each module by the hash of its text and its place in it, for `memoized`."""
    for i, m in enumerate(modules):
        _keys[m] = f"{key}-{i}"


def text_key(module) -> str | None:
    """The hash of the text `module` was loaded from (`attach`), or None."""
    name = _keys.get(module)
    return None if name is None else name.rsplit("-", 1)[0]


# ─── analysis results ────────────────────────────────────────────────────────────────


def _result_path(module, name: str, args: tuple, kwargs: dict) -> str | None:
    """Where the result of analysis `name` of `module` at these arguments is kept; None when
    results are not kept (no cache, or a module `attach` did not name)."""
    key = _keys.get(module)
    directory = private_dir("results") if key is not None and enabled() else None
    if directory is None:
        return None
    call = hashlib.blake2b(repr((args, sorted(kwargs.items()))).encode(), digest_size=6).hexdigest()
    return os.path.join(directory, f"{key}-{name}-{call}.json")


def memoized(name: str, types: tuple[type, ...]) -> Callable:
    """Keep what `fn(module, *args)` returns, for modules that `attach` named. `types`: the
    frozen dataclasses the result is made of, the only ones it may be rebuilt as. The
    wrapper's `kept(module, *args)` says whether a call would find its result kept."""
    allowed = plain.allowing(types)
    rebuild = plain.rebuilding(allowed)

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(module, *args, **kwargs):
            path = _result_path(module, name, args, kwargs)
            if path is None:
                return fn(module, *args, **kwargs)
            with runtime.no_cyclic_gc():  # a result is tens of thousands of small objects
                kept = _read(path, rebuild)  # a file that does not rebuild is removed
                if kept is not None:
                    return kept
                result = fn(module, *args, **kwargs)
                try:
                    encoded = plain.encode(result, allowed)
                except TypeError:  # something other than plain data: not kept
                    return result
                _write(path, encoded, KEEP_RESULTS)
            return result

        def kept(module, *args, **kwargs) -> bool:
            """Whether `wrapper(module, *args, **kwargs)` would read its result back."""
            path = _result_path(module, name, args, kwargs)
            return path is not None and os.path.exists(path)

        wrapper.kept = kept
        return wrapper

    return decorate


def _header(module) -> dict[str, Any]:
    return {
        "name": module.name,
        "attributes": module.attributes.written(),
        "tables": {kind: {str(k): v for k, v in rows.items()} for kind, rows in module.tables.items()},
    }


def _module(header: dict[str, Any], index: int, path: str, text_of: Callable[[], str], filename: str,
            parse: Callable[[str, str], list]) -> Module:
    tables = {kind: {int(k): str(v) for k, v in rows.items()} for kind, rows in header["tables"].items()}

    def make() -> list:
        text = text_of()
        try:
            computations = computations_from_outline(_read_second_line(path)[index], text)
            if any(c.is_entry for c in computations):
                return computations
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            pass
        _remove(path)  # removed or damaged since its first line was read: parsed again
        return parse(text, filename)[index].computations

    module = DeferredModule.of(str(header["name"]), Attributes([str(a) for a in header["attributes"]]), tables, make)
    if filename != "<string>":
        module.source_path = filename
    return module


def _trim(directory: str, keep: tuple[int, int]) -> None:
    """Remove the least recently written files beyond `keep` = (count, total bytes)."""
    most, budget = keep
    entries = []
    for name in os.listdir(directory):
        if name.endswith(".tmp"):  # left by a process killed while writing
            path = os.path.join(directory, name)
            try:
                if os.stat(path).st_mtime < time.time() - 3600:
                    _remove(path)
            except OSError:
                pass
        elif name.endswith(".json"):
            path = os.path.join(directory, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            entries.append((st.st_mtime, st.st_size, path))
    entries.sort(reverse=True)
    total = 0
    for n, (_, size, path) in enumerate(entries):
        total += size
        if n >= most or (total > budget and n > 0):  # the newest stays, however large
            _remove(path)
