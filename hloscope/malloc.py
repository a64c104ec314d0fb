"""Handing freed memory back to the operating system (glibc only; elsewhere a no-op).

Lark's lexer copies each token out of the text, and a printed computation is one token: a
lazy parse allocates, then frees, about the text's size again in strings of a few hundred
bytes to a few MB. glibc keeps such freed blocks in its heap for later `malloc` calls, but
Python's own small-object allocator takes its memory elsewhere (mmap'd arenas), so after a
parse tens of MB stay resident that nothing will reuse. `malloc_trim(0)` returns them.
"""

from __future__ import annotations

import functools
import sys


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        return libc.malloc_trim  # absent on musl: AttributeError
    except (OSError, AttributeError):
        return None


def trim() -> None:
    """Give the heap's free memory back to the system, where the C library can."""
    fn = _malloc_trim()
    if fn is not None:
        fn(0)
