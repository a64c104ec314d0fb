"""A content-hash cache of parsed modules, so a second command on the same file starts at once.

What is kept is a module's outline as the lazy parser leaves it: the header, the debug
tables, and for each computation its name, flags and where its body lies in the text. The
text itself is read again (it has to be, to hash it), and bodies are cut into instructions
on use exactly as after a fresh parse. Only modules whose every body is in XLA's printed
form, with no instruction renamed, have such an outline; others are simply not cached.

The format is JSON (nothing a file could make Python execute), stamped with hloscope's
version and the grammar's hash, in a private directory of the user's
(`$XDG_CACHE_HOME/hloscope/modules`, else `~/.cache/hloscope/modules`). `HLOSCOPE_CACHE=0`
(or `hloscope --no-cache`) turns it off. A file that does not read back as expected is
ignored and removed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from typing import Any

from . import __version__

FORMAT = 1
KEEP = 32
"""Most outlines kept; the least recently written go first."""


def enabled() -> bool:
    return os.environ.get("HLOSCOPE_CACHE", "1") != "0"


def private_dir(*parts: str) -> str | None:
    """`$XDG_CACHE_HOME/hloscope/<parts>`, created private to the user; None when it cannot
    be made so (then nothing is cached)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    directory = os.path.join(base, "hloscope", *parts)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        for d in (os.path.join(base, "hloscope"), directory):
            st = os.stat(d)
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None
    except OSError:
        return None
    return directory


@functools.lru_cache(maxsize=1)
def _stamp() -> str:
    from .parser import grammar_path

    grammar = hashlib.blake2b(grammar_path().read_bytes(), digest_size=8).hexdigest()
    return f"{FORMAT}-{__version__}-{grammar}"


def _path(text: str) -> str | None:
    directory = private_dir("modules")
    if directory is None:
        return None
    h = hashlib.blake2b(digest_size=20)
    for start in range(0, len(text), 1 << 22):  # in pieces: no second copy of a large text
        h.update(text[start : start + (1 << 22)].encode("utf-8", "surrogatepass"))
    digest = h.hexdigest()
    return os.path.join(directory, f"{digest}.json")


def lookup(text: str, filename: str):
    """The modules of `text` from their kept outline, or None."""
    if not enabled():
        return None
    path = _path(text)
    if path is None or not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("stamp") != _stamp():
            return None
        return [_module(m, text, filename) for m in data["modules"]]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        try:
            os.remove(path)
        except OSError:
            pass
        return None


def store(text: str, modules) -> None:
    """Keep the outline of `modules` (parsed lazily from `text`) when they have one."""
    if not enabled() or not modules:
        return
    if any(c.is_read or c._body is None for m in modules for c in m.computations):
        return
    path = _path(text)
    if path is None:
        return
    data = {"stamp": _stamp(), "modules": [_outline(m) for m in modules]}
    directory = os.path.dirname(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, separators=(",", ":"))
        os.replace(tmp, path)
        _trim(directory)
    except OSError:
        pass


def _outline(module) -> dict[str, Any]:
    return {
        "name": module.name,
        "attributes": list(module.attributes._tokens) if module.attributes._raw is None else
        [f", {k}={v}" for k, v in module.attributes.raw.items()],
        "tables": {kind: {str(k): v for k, v in rows.items()} for kind, rows in module.tables.items()},
        "computations": [
            {
                "name": c.name,
                "text_name": c.text_name,
                "entry": c.is_entry,
                "line": c.line,
                "signature": c.signature if isinstance(c.signature, str) or c.signature is None else None,
                "attributes": [f", {k}={v}" for k, v in c.attributes.raw.items()],
                "body": [c._body.offset, len(c._body.text), c._body.line, c._body.column],
            }
            for c in module.computations
        ],
    }


def _module(data: dict[str, Any], text: str, filename: str):
    from .attributes import Attributes
    from .ir import Computation, Module
    from .parser import _Body

    comps = []
    for c in data["computations"]:
        offset, length, line, column = c["body"]
        body = _Body(text[offset : offset + length], int(line), int(column), int(offset))
        if not (body.text.startswith("{") and body.text.endswith("}")):
            raise ValueError("outline does not fit the text")
        comp = Computation(str(c["name"]), None, bool(c["entry"]), None, Attributes(list(c["attributes"])),
                           int(c["line"]), c["signature"], body=body)
        comp.text_name = str(c["text_name"])
        comps.append(comp)
    entry = next(c for c in comps if c.is_entry)
    tables = {kind: {int(k): str(v) for k, v in rows.items()} for kind, rows in data["tables"].items()}
    module = Module(str(data["name"]), Attributes(list(data["attributes"])), comps, entry, tables)
    if filename != "<string>":
        module.source_path = filename
    return module


def _trim(directory: str) -> None:
    entries = [os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(".json")]
    if len(entries) <= KEEP:
        return
    entries.sort(key=lambda p: os.path.getmtime(p))
    for p in entries[: len(entries) - KEEP]:
        try:
            os.remove(p)
        except OSError:
            pass
