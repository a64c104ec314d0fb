"""Errors hloscope reports to people, with the place in their file."""

from __future__ import annotations


class HloscopeError(Exception):
    """Base of the errors hloscope reports as bad input (exit code 2)."""


_CONTROLS = {c: "?" for c in range(32)}


class HloSyntaxError(HloscopeError):
    """The text is not HLO that XLA's parser would accept.

    `str()` gives `FILE:LINE:COL: error: MESSAGE`, the source line and a caret, the form of
    XLA's parser and of compilers generally.
    """

    def __init__(self, message: str, line: int, column: int, source_line: str | None = None,
                 filename: str = "<string>", hint: str | None = None, hint_after: str | None = None,
                 hint_offset: int = 0):
        self.message = message
        # Where to point when the column is not known yet (column 0), found once the source
        # is at hand: the name `hint` among the instruction's operands, or after the text
        # `hint_after` (an attribute's `name=`), or `hint_offset` characters after it.
        self.hint = hint
        self.hint_after = hint_after
        self.hint_offset = hint_offset
        self.line = line
        self.column = column
        self.source_line = source_line
        self.filename = filename
        super().__init__(self.format())

    def format(self) -> str:
        head = f"{self.filename}:{self.line}:{self.column}: error: {self.message}"
        if self.source_line is None:
            return head
        # Control characters (a NUL in binary input) shown as `?`, one for one: the caret stays put.
        shown = self.source_line.rstrip("\n").expandtabs(1).translate(_CONTROLS)
        if len(shown) > 200:
            # Keep the caret's neighbourhood of very long lines (metadata can run to kilobytes).
            start = max(0, self.column - 100)
            shown = ("…" if start else "") + shown[start : start + 200]
            caret_at = self.column - start - (0 if start == 0 else -1)
        else:
            caret_at = self.column
        return f"{head}\n{shown}\n{' ' * max(0, caret_at - 1)}^"


class NotScheduledError(HloscopeError):
    """An analysis needs the scheduled module (`is_scheduled=true`), and this one is not."""
