"""Work done by a forked child meanwhile: the head of a large text's lazy parse, the check
of a lazily loaded module's unread bodies, B's text parsed into the cache while A's is
parsed and then B's side of a diff worked out into it (`loading.reading_ahead`), B's side of
a diff otherwise (`compare.sides`), and writing a large text's outline into the cache.
`FORKING` is the executor (hloscope.speed.executor) they run through; `trim()` hands freed
memory back to the system; `no_cyclic_gc()` is the one place the cyclic GC is switched.

`in_child(fn, *args)` runs `fn` in a forked process and returns a `Child`, whose `result()`
waits for what `fn` returns (plain data, sent back with marshal over a pipe; a child can
also send several messages, `in_child_sending`), or None where forking is not possible or
not wanted: not Linux, other threads running (`fork` copies only the caller's; a JAX
process has a dozen once it has a backend), one usable CPU (not counting those other work
of the command has taken, `taking_cpus`), or `HLOSCOPE_JOBS=1`. Callers then do the work
themselves, so results never depend on whether a child ran.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import marshal
import os
import select
import signal
import sys
import threading
import warnings
from typing import Any, Callable

from .. import settings


_taken = [0]
"""CPUs counted as busy with other work of this command (`taking_cpus`)."""


def can_fork() -> bool:
    if not settings.jobs_allowed():
        return False
    if not hasattr(os, "fork") or not sys.platform.startswith("linux") or other_threads():
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus - _taken[0] >= 2


def other_threads() -> bool:
    """Whether threads besides this one run in the process, Python's or native ones (JAX's
    runtime starts a dozen once it has a backend): a forked child gets none of them, and a
    lock one of them held stays held in the child."""
    try:
        return len(os.listdir("/proc/self/task")) > 1
    except OSError:
        return threading.active_count() > 1


@contextlib.contextmanager
def taking_cpus(n: int):
    """While the block runs, `n` CPUs more are busy with work of this command elsewhere (a
    forked child doing one half): this process, and children it forks meanwhile, start
    helpers only where a CPU is left for them."""
    _taken[0] += n
    try:
        yield
    finally:
        _taken[0] -= n


class Child:
    """A forked child at work, sending messages: `receive()` waits for the next one (None
    once the child has ended or failed); `result()` takes the first and lets the child go;
    `cancel()` stops it when nothing more it sends is needed. Only the process that started
    it talks to it: in a process forked since, it has ended (its messages are not ours)."""

    __slots__ = ("owner", "pid", "stream")

    def __init__(self, pid: int, read_fd: int):
        self.pid, self.stream = pid, os.fdopen(read_fd, "rb")
        self.owner = os.getpid()

    def receive(self) -> Any:
        stream = self.stream
        if stream.closed or self.owner != os.getpid():
            return None  # a job of the process this one was forked from: not ours to read
        try:
            head = stream.read(8)
            size = int.from_bytes(head, "little") if len(head) == 8 else -1
            data = stream.read(size) if size >= 0 else b""
            if len(data) == size:
                with no_cyclic_gc():
                    message = marshal.loads(data)
                if size >= TRIM_AFTER:
                    del data
                    trim()  # the message's bytes: as large as what they give
                return message
        except (OSError, EOFError, ValueError, TypeError):
            pass
        self.cancel()  # ended, failed or sent garbage: nothing more comes
        return None

    def ready(self) -> bool:
        """Whether `receive()` would return without waiting (a message, or the child's end)."""
        if self.stream.closed or self.owner != os.getpid():
            return True
        return bool(select.select([self.stream], [], [], 0)[0])

    def result(self) -> Any:
        message = self.receive()
        self.cancel()
        return message

    def cancel(self) -> None:
        if self.stream.closed or self.owner != os.getpid():
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        self.stream.close()
        os.waitpid(self.pid, 0)


def in_child(fn: Callable[..., Any], *args: Any) -> Child | None:
    """Start `fn(*args)` in a forked child, which sends back what it returns (see `Child`);
    None where no child was started."""
    return in_child_sending(_send_result, fn, *args)


def _send_result(send: Callable[[Any], None], fn: Callable[..., Any], *args: Any) -> None:
    send(fn(*args))


def _fork() -> int:
    """os.fork, once `can_fork` said yes."""
    with warnings.catch_warnings():
        # JAX's at-fork hook warns whenever it has a backend, threads or not; can_fork has just
        # seen this process hold one thread, which is all a fork needs to be safe.
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
        return os.fork()


def in_child_sending(fn: Callable[..., Any], *args: Any) -> Child | None:
    """Start `fn(send, *args)` in a forked child: each `send(message)` (plain data) reaches
    the parent's `Child.receive()` in turn. None where no child was started."""
    if not can_fork():
        return None
    read_fd, write_fd = os.pipe()
    try:
        pid = _fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the child: compute, send, leave at once (no atexit, no finally of the caller)
        os.close(read_fd)
        # One job, then gone: the cyclic collector would only scan the inherited heap (a
        # parsed module is millions of objects) again and again as the job allocates.
        gc.disable()
        try:
            with os.fdopen(write_fd, "wb") as out:
                def send(message: Any) -> None:
                    data = marshal.dumps(message)
                    out.write(len(data).to_bytes(8, "little") + data)
                    out.flush()

                fn(send, *args)
        except BaseException:  # noqa: BLE001, S110 - the parent gets no more messages and does the work itself
            pass
        finally:
            os._exit(0)
    os.close(write_fd)
    return Child(pid, read_fd)


_background: list[int] = []


def in_background(fn: Callable[..., Any], *args: Any) -> bool:
    """Start `fn(*args)` in a forked child and return at once, False where no child was
    started (the caller then does the work itself). The child is waited for when this
    process exits (`wait_for_background`): what it writes is there for the next one."""
    if not can_fork():
        return False
    try:
        pid = _fork()
    except OSError:
        return False
    if pid == 0:
        try:
            fn(*args)
        except BaseException:  # noqa: BLE001, S110 - nothing to report to: the work is optional
            pass
        finally:
            os._exit(0)
    if not _background:
        atexit.register(wait_for_background)
    _background.append(pid)
    return True


def wait_for_background() -> None:
    """Wait for every child `in_background` started."""
    while _background:
        try:
            os.waitpid(_background.pop(), 0)
        except ChildProcessError:
            pass




class Forking:
    """The executor (hloscope.speed.executor) that runs jobs in forked children, where it can."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> Child | None:
        return in_child(fn, *args)

    def stream(self, fn: Callable[..., Any], *args: Any) -> Child | None:
        return in_child_sending(fn, *args)


FORKING = Forking()


# Handing freed memory back to the operating system (glibc only; elsewhere a no-op).
#
# Lark's lexer copies each token out of the text, and a printed computation is one token: a
# lazy parse allocates, then frees, about the text's size again in strings of a few hundred
# bytes to a few MB. glibc keeps such freed blocks in its heap for later `malloc` calls, but
# Python's own small-object allocator takes its memory elsewhere (mmap'd arenas), so after a
# parse tens of MB stay resident that nothing will reuse. `malloc_trim(0)` returns them.


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # here: only a parse trims, and the import costs every command ~3 ms

    try:
        libc = ctypes.CDLL(None)
        return libc.malloc_trim  # absent on musl: AttributeError
    except (OSError, AttributeError):
        return None


TRIM_AFTER = 1 << 20
"""A child's message from this size on is given back (`trim`) once decoded: the C library
would keep its bytes for later requests, and the process's peak would include them."""


def trim() -> None:
    """Give the heap's free memory back to the system, where the C library can."""
    fn = _malloc_trim()
    if fn is not None:
        fn(0)


def no_cyclic_gc_from_now() -> None:
    """No cyclic garbage collection from now on: for a process that runs one command and
    exits, whose millions of IR objects, live until then, the collector would only scan again
    and again."""
    gc.disable()


@contextlib.contextmanager
def no_cyclic_gc():
    """No cyclic garbage collection while the block runs: an analysis makes hundreds of
    thousands of small objects, none garbage while it runs, and the collector would scan the
    growing heap again and again. (The IR holds cycles, instructions and their users: what
    is dropped later is freed by the collector once it is on.)"""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                # What the block made goes to the oldest generation at once (`freeze` moves
                # every tracked object to the permanent one, `unfreeze` from there to the
                # oldest), not through the young ones, whose next collections would each
                # scan all of it. It stays collectable, by the full collections that would
                # reach it anyway. (Not where the program froze objects of its own.)
                gc.freeze()
                gc.unfreeze()
            gc.enable()
