"""What a packing algorithm is given and gives back, as XLA's `HeapAlgorithm`: groups of
values that share bytes, each over its live intervals, placed at offsets in one heap."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..dataflow import Value


class Group:
    """Values that take the same bytes of the heap (one buffer's, and those written over an
    operand's slot as it dies): XLA's BufferInterval, with what the packing orders read."""

    __slots__ = ("values", "intervals", "size", "first", "own_span", "span", "born", "dies")

    def __init__(self, v: Value, rng: tuple[int, int]):
        self.first = v
        self.values = [v]
        self.intervals = [rng]
        self.size = v.size
        self.own_span = self.span = 0
        """In event time, as the packing orders' keys: minus the first value's duration, and
        minus the whole group's."""
        self.born = self.dies = 0
        """In event time: the group's first allocation and its last free."""


@dataclass(frozen=True)
class Packing:
    """Where an algorithm put the groups: the heap's size in bytes and each group's offset,
    by `id(group)`."""

    size: int
    offsets: dict[int, int]
    strategy: str
    """The algorithm (of several tried, the one kept) that packed them: `Heap.strategy`."""


class HeapAlgorithm(Protocol):
    """A packing of the heap's groups (XLA's `HeapAlgorithm`, which `HeapSimulator::Run` takes)."""

    name: str

    def pack(self, groups: list[Group], alignment: int, lower_bound: int = 0,
             limit: int | None = None) -> Packing | None:
        """Offsets for `groups`, each at a multiple of `alignment`. `lower_bound`: no packing
        is smaller (the most bytes live at one step), so one choosing among several may stop
        there; `limit`: None as soon as the heap reaches it."""


def merge_intervals(intervals):
    """Closed intervals, overlapping or adjacent ones joined, in order (not to be mutated:
    a lone interval comes back in the list it came in, as most groups have one)."""
    if len(intervals) == 1:
        return intervals
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out
