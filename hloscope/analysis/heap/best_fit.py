"""XLA's GlobalDecreasingSizeBestFitHeap, and its ChooseBestHeapAlgorithm over two orders:
the packing of CPU's and GPU's temp heaps (and TPU's, but for its fast HBM assignment)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import compress, islice
from operator import lt

from .algorithm import Group, Packing, merge_intervals


class BestFit:
    """Best fit of the groups taken in one order (`key`), as XLA's
    GlobalDecreasingSizeBestFitHeap with that order's buffer interval compare."""

    def __init__(self, name: str, key):
        self.name, self.key = name, key

    def pack(self, groups: list[Group], alignment: int, lower_bound: int = 0,
             limit: int | None = None) -> Packing | None:
        packed = best_fit(sorted(groups, key=self.key), alignment, limit)
        return None if packed is None else Packing(packed[0], packed[1], self.name)


class ChooseBest:
    """XLA's ChooseBestHeapAlgorithm: pack with each algorithm, keep the smallest heap (the
    first of equals). One that cannot beat the heap in hand stops early (`limit`), and none
    is tried once a heap is as small as the most bytes live at one step (`lower_bound`)."""

    def __init__(self, *algorithms):
        self.algorithms = algorithms
        self.name = "best of " + ", ".join(a.name for a in algorithms)

    def pack(self, groups: list[Group], alignment: int, lower_bound: int = 0,
             limit: int | None = None) -> Packing:
        best = None
        for algorithm in self.algorithms:
            if best is not None and best.size <= lower_bound:
                # No packing is smaller than the most bytes live at one step (groups live at
                # one step never share bytes): this one cannot do better, and a tie keeps the first.
                break
            # Given the heap to beat, the packing stops once it is no smaller (None).
            packed = algorithm.pack(groups, alignment, lower_bound, None if best is None else best.size)
            if packed is not None and (best is None or packed.size < best.size):
                best = packed
        return best if best is not None else Packing(0, {}, self.algorithms[0].name)


SPATIAL = BestFit("spatial", lambda g: (-g.size, g.own_span, g.first.id))
"""Largest first, then shortest first value (in event time): XLA's spatial order."""
TEMPORAL = BestFit("temporal", lambda g: (g.span, -g.size, g.first.id))
"""Longest group first (in event time), then largest: XLA's temporal order."""
BEST_OF_TWO = ChooseBest(SPATIAL, TEMPORAL)
"""XLA's default packing: both orders, the smaller heap kept."""


def best_fit(groups: list[Group], alignment: int,
             limit: int | None = None) -> tuple[int, dict[int, int]] | None:
    """GlobalDecreasingSizeBestFitHeap: place each group, in order, in the smallest gap (over
    its whole lifetime) that fits it, lowest offset among equals; else above everything.
    With a `limit`, None as soon as the heap reaches it (it only grows).

    A gap is a hole in the union of the `[offset, aligned end)` ranges of the groups placed so
    far that meet the candidate in time (XLA finds those through an interval tree of chunks).
    Here that union is kept pre-merged, per node of two segment trees over the time axis, as
    one flat list `[start, end, start, end, ...]` of disjoint ranges (touching ranges merged,
    so the lists stay short where memory is densely packed; and strictly increasing, so one
    bisection finds a place in it):

    - `cover`: each placed interval at the nodes of its canonical decomposition (the nodes on
      one leaf's path to the root hold the intervals containing that step);
    - `starts`: each placed interval at every ancestor of its start's leaf.

    An interval meets `[a, b]` either by containing `a` or by starting in `(a, b]`, so the
    union for a candidate is that of O(log T) such lists, not of every chunk it meets. Only
    the order of interval ends matters for overlap, so time is compressed to their ranks.

    The `cover` lists on a leaf's path near the root hold the long-lived groups, which most
    candidates meet. For each node at the middle depth, the union of its and its ancestors'
    `cover` lists is kept merged (`_union`), and dropped when one of those lists grows: a
    candidate takes that one list for the upper half of its path.

    Offsets are counted in units of `alignment` inside: every placed range starts and ends
    on a multiple of it (a group goes at 0 or at an aligned end), so a gap fits a group
    exactly when it holds its aligned size. The numbers stay small: Python sorts and
    compares ints below 2**30 on a fast path, and heaps of several GB exceed that in bytes."""
    offsets: dict[int, int] = {}
    if not groups:
        return 0, offsets
    merged = [merge_intervals(g.intervals) for g in groups]
    points = sorted({p for ivs in merged for iv in ivs for p in iv})
    rank = {p: i for i, p in enumerate(points)}
    leaves, depth = 1, 0
    while leaves < len(points) + 1:
        leaves *= 2
        depth += 1
    # Per node: None, or the flat list of its disjoint ranges in offset order. Both trees
    # live in one list, `starts` after `cover`, so that one loop fills both.
    trees: list[list[int] | None] = [None] * (4 * leaves)
    starts_at = 2 * leaves
    # The middle depth's nodes are [middle, 2 * middle); a leaf's is `leaf >> below`.
    # `upper[node]`: the merged union of the `cover` lists from it to the root, or None.
    below = depth - depth // 2
    middle = 1 << (depth // 2)
    upper: list[list[int] | None] = [None] * (2 * middle)
    heap_size = 0
    for g, ivs in zip(groups, merged):
        size = -(-g.size // alignment)  # in units of the alignment (see the docstring)
        ivs = [(rank[s] + leaves, rank[e] + leaves) for s, e in ivs]
        # The merged ranges of every placed group that meets this one in time.
        lists = []
        add = lists.append
        for a, b in ivs:
            node, top = a, a >> below
            while node > top:
                found = trees[node]
                if found:
                    add(found)
                node >>= 1
            found = upper[top]
            if found is None:
                found = upper[top] = _union([trees[n] for n in _path(top) if trees[n]])
            if found:
                add(found)
            lo, hi = a + 1, b + 1
            while lo < hi:
                if lo & 1:
                    found = trees[lo + starts_at]
                    if found:
                        add(found)
                    lo += 1
                if hi & 1:
                    hi -= 1
                    found = trees[hi + starts_at]
                    if found:
                        add(found)
                lo >>= 1
                hi >>= 1
        # The smallest hole that fits, lowest offset among equals; else the top. With all the
        # starts S and all the ends E sorted each on its own, the holes of the union of the
        # ranges are exactly the non-empty [E[i], S[i + 1]) (and [0, S[0])): at any x in
        # one, as many ranges have ended as have begun.
        best_off = None
        if not lists:
            best_off = 0
        else:
            if len(lists) == 1:
                S, E = lists[0][0::2], lists[0][1::2]
            else:
                flat = []
                for node_ranges in lists:
                    flat += node_ranges
                # Every list has even length: the even places of the whole are the starts.
                S, E = flat[0::2], flat[1::2]
                S.sort()
                E.sort()
            best_gap = S[0]
            if best_gap >= size:
                best_off = 0
            # Holes come in offset order: the first that fits exactly is the answer (none is
            # smaller, none lower), and a third of the groups of a model's step find one.
            if best_gap != size:
                for i in compress(range(len(E)), map(lt, E, islice(S, 1, None))):
                    gap = S[i + 1] - E[i]
                    if gap >= size and (best_off is None or gap < best_gap):
                        best_off, best_gap = E[i], gap
                        if gap == size:
                            break
            if best_off is None:
                best_off = E[-1]
        offsets[id(g)] = best_off * alignment
        x, y = best_off, best_off + size
        # The nodes that take [x, y): each interval's canonical nodes in `cover`, and the
        # ancestors of its start's leaf in `starts`.
        targets = []
        put = targets.append
        for a, b in ivs:
            lo, hi = a, b + 1
            while lo < hi:
                if lo & 1:
                    put(lo)
                    lo += 1
                if hi & 1:
                    hi -= 1
                    put(hi)
                lo >>= 1
                hi >>= 1
            node = a
            while node:
                put(node + starts_at)
                node >>= 1
        for k in targets:
            if k < 2 * middle:  # at or above the middle depth: the unions below it are stale
                shift = middle.bit_length() - k.bit_length()
                first = k << shift
                upper[first : first + (1 << shift)] = [None] * (1 << shift)
            node_ranges = trees[k]
            if node_ranges is None:
                trees[k] = [x, y]
                continue
            # Merge [x, y) with the ranges it overlaps or touches, else insert it. In the
            # flat list, range r is [2r, 2r + 1]: the first range ending at or after x is
            # i (bisect_left(x) // 2, whether that lands on its start or its end), and
            # j - 1 the last one starting at or before y (j = (bisect_right(y) + 1) // 2).
            i = bisect_left(node_ranges, x) & -2
            j = (bisect_right(node_ranges, y, i) + 1) & -2
            if i == j:
                node_ranges[i:i] = (x, y)
            else:
                s, e = node_ranges[i], node_ranges[j - 1]
                node_ranges[i:j] = (s if s < x else x, e if e > y else y)
        top = best_off * alignment + g.size
        if top > heap_size:
            heap_size = top
            if limit is not None and heap_size >= limit:
                return None
    return heap_size, offsets


def _path(node: int):
    """`node` and its ancestors, up to the root (1)."""
    while node:
        yield node
        node >>= 1


def _union(lists: list[list[int]]) -> list[int]:
    """The union of flat range lists (as `best_fit` keeps them), merged the same way: ranges
    that overlap or touch become one. With the starts S and the ends E each sorted, the
    union's ranges break exactly where E[i] < S[i + 1] (as `best_fit` finds holes)."""
    flat: list[int] = []
    for ranges in lists:
        flat += ranges
    if not flat:
        return flat
    S, E = flat[0::2], flat[1::2]
    S.sort()
    E.sort()
    holes = list(compress(range(len(E) - 1), map(lt, E, islice(S, 1, None))))
    out = [0] * (2 * len(holes) + 2)
    out[0], out[-1] = S[0], E[-1]
    if holes:
        out[1:-1:2] = [E[i] for i in holes]
        out[2:-1:2] = [S[i + 1] for i in holes]
    return out
