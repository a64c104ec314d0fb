"""XLA's FastMerge heap (ConstrainedGlobalDecreasingSizeBestFitHeap, `kFastMerge`): the
packing of TPU's HBM temp heap under libtpu's fast buffer assignment."""

from __future__ import annotations

import heapq
import operator
from bisect import bisect_left, insort

from .algorithm import Group, Packing


class FastMerge:
    """`fast_merge` as a heap algorithm: one pass in allocation order, which no bound stops."""

    name = "merge"

    def pack(self, groups: list[Group], alignment: int, lower_bound: int = 0,
             limit: int | None = None) -> Packing:
        size, offsets = fast_merge(groups, alignment)
        return Packing(size, offsets, self.name)


FAST_MERGE = FastMerge()


def fast_merge(groups: list[Group], alignment: int) -> tuple[int, dict[int, int]]:
    """XLA's FastMerge heap (ConstrainedGlobalDecreasingSizeBestFitHeap, `kFastMerge`), the
    packing of TPU's HBM temp: groups in the order of their first allocation event, each into
    the free chunk just large enough for it (the least usable bytes, then the lowest offset),
    at that chunk's first aligned offset. A group's chunk is free again for every group first
    allocated after its last value's FREE, merged with its free neighbours. Chunks begin where
    the one below ends, unaligned, so a chunk's usable size is its end less its first aligned
    offset::

        alignment 4     0   3 4  6
        a (3 bytes)     [aaa]          a at 0; free chunk [3, inf), usable from 4
        b (2 bytes)         .[bb]      b at 4, chunk [3, 6) taken; free [6, inf)
        a freed, c (3)  [ccc]          [0, 3) holds 3 usable bytes: c at 0, not at 8
    """
    free = _FreeChunks(alignment)
    pending: list[tuple[int, int, int]] = []   # (the group's last FREE event, chunk start, end)
    offsets: dict[int, int] = {}
    heap_size = 0
    for g in sorted(groups, key=_born):
        while pending and pending[0][0] < g.born:
            _, start, end = heapq.heappop(pending)
            free.release(start, end)
        start, at = free.take(g.size)
        offsets[id(g)] = at
        heap_size = max(heap_size, at + g.size)
        heapq.heappush(pending, (g.dies, start, at + g.size))
    return heap_size, offsets


_born = operator.attrgetter("born")


class _FreeChunks:
    """XLA's FreeChunksManager: the free chunks of an unbounded heap, by offset and by usable
    size (the chunk's end less its first aligned offset)."""

    __slots__ = ("alignment", "by_usable", "ends", "starts")

    def __init__(self, alignment: int):
        self.alignment = alignment
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.by_usable: list[tuple[int, int]] = []
        self._add(0, 1 << 62)

    def take(self, size: int) -> tuple[int, int]:
        """The chunk just large enough for `size` bytes: (its start, the aligned offset given
        out); what is left above the `size` bytes stays free."""
        _, start = self.by_usable[bisect_left(self.by_usable, (size, -1))]
        k = bisect_left(self.starts, start)
        end = self.ends[k]
        self._remove(k)
        at = self._aligned(start)
        if end > at + size:
            self._add(at + size, end)
        return start, at

    def release(self, start: int, end: int) -> None:
        """`[start, end)` free again, merged with a free chunk just above or below it."""
        k = bisect_left(self.starts, start)
        if k < len(self.starts) and self.starts[k] == end:
            end = self.ends[k]
            self._remove(k)
        if k and self.ends[k - 1] >= start:
            start, end = self.starts[k - 1], max(end, self.ends[k - 1])
            self._remove(k - 1)
        self._add(start, end)

    def _aligned(self, offset: int) -> int:
        return -(-offset // self.alignment) * self.alignment

    def _add(self, start: int, end: int) -> None:
        k = bisect_left(self.starts, start)
        self.starts.insert(k, start)
        self.ends.insert(k, end)
        usable = end - self._aligned(start)
        if usable > 0:
            insort(self.by_usable, (usable, start))

    def _remove(self, k: int) -> None:
        start, end = self.starts.pop(k), self.ends.pop(k)
        usable = end - self._aligned(start)
        if usable > 0:
            del self.by_usable[bisect_left(self.by_usable, (usable, start))]

