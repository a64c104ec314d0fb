"""What the parser knows of bodies it leaves unread: the `UnreadBodies` it is handed (made by
hloscope.speed), so that laziness stays behind that seam and the parser reads the same with
it or without."""

from __future__ import annotations

from typing import Protocol

from ..ir.attributes import Attributes
from ..ir.module import Computation, Module
from .body import BodyText


class UnreadBodies(Protocol):
    """What makes computations whose bodies a parse leaves unread (hloscope.speed): the
    parser knows them only through this."""

    def computation(self, name: str, is_entry: bool, attributes: Attributes, line: int, signature,
                    body: BodyText, alike: object | None = None) -> Computation:
        """A computation whose instructions are `body`'s, read when first asked for. `alike`:
        a token the bodies equal up to names share, where the parse found so."""

    def body_of(self, computation: Computation) -> BodyText | None:
        """The unread body of `computation`, or None once read (or never unread)."""

    def read(self, computation: Computation) -> None:
        """Read `computation`'s body now, where it lies in the text still known (it can be
        outlined). Raises HloSyntaxError as its read would."""

    def renamed(self, computation: Computation, names: list[tuple[int, str]]) -> None:
        """`computation`'s instructions at these positions were renamed so (XLA's uniquer):
        its text says the rest."""

    def finish(self, module: Module) -> None:
        """`module` is whole: its unread bodies answer for what a full parse says of them."""
