"""What the environment asks of hloscope: whether to cache, where, and whether to fork.

`HLOSCOPE_CACHE=0` turns every cache off (parsed-module outlines, analysis results, Lark's
grammar tables); `HLOSCOPE_CACHE_DIR` puts them in a directory of the caller's choosing
(the tests use a temporary one), else `$XDG_CACHE_HOME/hloscope`, else `~/.cache/hloscope`;
`HLOSCOPE_JOBS=1` keeps all work in one process.
"""

from __future__ import annotations

import os


def cache_enabled() -> bool:
    return os.environ.get("HLOSCOPE_CACHE", "1") != "0"


def cache_root() -> str:
    explicit = os.environ.get("HLOSCOPE_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "hloscope")


def private_dir(*parts: str) -> str | None:
    """`cache_root()/<parts>`, created private to the user; None when caching is off or the
    directory cannot be made private (then nothing is cached)."""
    if not cache_enabled():
        return None
    root = cache_root()
    directory = os.path.join(root, *parts)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        for d in (root, directory):
            st = os.stat(d)
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None
    except OSError:
        return None
    return directory


def jobs_allowed() -> bool:
    """False when the user asked for one process (`HLOSCOPE_JOBS=1`)."""
    return os.environ.get("HLOSCOPE_JOBS") != "1"
