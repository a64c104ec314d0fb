"""The seam through which work may run elsewhere while the caller goes on.

An analysis that has independent work (the second of two packing orders, facts about fused
computations) hands it to an `Executor` and later asks the `Job` for the answer. `start`
may return None: then nothing runs elsewhere and the caller does the work itself, so no
answer ever depends on whether a job ran. `INLINE`, the default everywhere, always returns
None. The api layer hands analyses a forking executor (hloscope.api.runtime) on large inputs.
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


class Inline:
    """Runs nothing elsewhere: the caller does all the work, in order."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        return None

    def stream(self, fn: Callable[..., Any], *args: Any) -> None:
        return None


INLINE: Executor = Inline()
