"""Writing a file the way every output of hloscope is written: whole or not at all."""

from __future__ import annotations

import os
import tempfile


def write_whole(path: str | os.PathLike, text: str, make_directory: bool = False) -> None:
    """Write `text` to `path` only once complete: a reader (or an interrupted run) never finds
    half a file, and an existing file is replaced in one step. `make_directory`: create the
    file's directory first."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if make_directory:
        os.makedirs(directory, exist_ok=True)
    try:
        fd, partial = tempfile.mkstemp(prefix=".hloscope-", suffix=".part", dir=directory)
    except OSError as e:
        # Name the file asked for, not the temporary one beside it.
        raise type(e)(e.errno, e.strerror, path) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        # mkstemp creates the file private; an output is an ordinary file.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(partial, 0o666 & ~umask)
        os.replace(partial, path)
    except BaseException:
        try:
            os.unlink(partial)
        except FileNotFoundError:
            pass
        raise


__all__ = ["write_whole"]
