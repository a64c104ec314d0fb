"""The seam through which work may run elsewhere while the caller goes on.

Work that can go on while the caller goes on (the verdict on unread bodies, the head of a
two-part parse) is handed to an `Executor`, and the `Job` asked for the answer later.
`submit` may return None: then nothing runs elsewhere and the caller does the work itself,
so no answer ever depends on whether a job ran. `FORKING` (hloscope.speed.runtime) forks
where it can.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol


class Job(Protocol):
    """Work started elsewhere, sending plain data back."""

    def ready(self) -> bool:
        """Whether `receive()` would return without waiting."""

    def receive(self) -> Any:
        """The next message (None once the job has ended or failed)."""

    def result(self) -> Any:
        """The first message; the job is let go."""

    def cancel(self) -> None:
        """Stop the job: nothing more it sends is needed."""


class Executor(Protocol):
    def submit(self, fn: Callable[..., Any], *args: Any) -> Job | None:
        """Start `fn(*args)` elsewhere; its return value is the job's result. None: do it yourself."""

    def stream(self, fn: Callable[..., Any], *args: Any) -> Job | None:
        """Start `fn(send, *args)` elsewhere; each `send(message)` is one `receive()`. None: do it yourself."""
