"""A compilation target's memory rules as XLA applies them by default; each backend (cpu,
gpu, tpu) overrides where its compiler differs, so that no analysis asks a target's name."""

from __future__ import annotations

from collections.abc import Callable

from ..alias_info import AliasInfo
from ..facts import PLAIN, Facts
from ..heap.best_fit import BEST_OF_TWO


class Backend(AliasInfo):
    """XLA's defaults, for a target of any name: alias rules (`AliasInfo`), sizes and
    alignment, how buffers are assigned and packed, where tuple tables go, and what temp
    is reported."""

    name = "generic"
    """`MemoryAnalysis.platform`: the target as the user names it (`platform=`)."""

    packing_name = "best-fit packing"
    """What packs its temp heap, in a sentence of the diff."""

    slack_label = "packing"
    """The diff's name for its temp allocation beyond the bytes live at the peak."""

    @classmethod
    def slack_words(cls, more: bool) -> str:
        """What that slack is, when one side has more of it (`more`) or less."""
        return (f"{cls.packing_name} leaves {'more' if more else 'less'} room around the live buffers "
                "(tuple tables included)")

    temp_figure = "packed"
    """What its `temp_size_in_bytes` is: "packed" (XLA's temp allocation, the heap's buffers
    packed with their fragmentation) or "libtpu" (libtpu's own figure for its HBM temp)."""

    records_heap_trace = True
    """Whether XLA records a heap trace (`peak_memory_in_bytes` then counts the most heap
    bytes live at once)."""

    byte_size: Callable | None = None
    """What it allocates for a shape where that is not XLA's ByteSizeOf (`Value.size`), or None."""

    must_not_live_out: Callable | None = None
    """The values that never share an allocation that may live out (an XLA BufferAssigner
    option), or None: any may."""

    reads_peak_buffers = False
    """Whether `reported_temp` reads `Heap.peak_buffers_bytes` (a replay of the heap trace)."""

    def __init__(self, name: str | None = None):
        if name is not None:
            self.name = name

    @classmethod
    def of(cls, module, facts: Facts = PLAIN) -> Backend:
        """This target's backend for `module` (one whose rules depend on what made the module
        reads it here)."""
        return cls()

    def alignment(self, space: int) -> int:
        """Byte alignment of buffers inside the temp allocation of memory space `space`."""
        return 1

    def assign(self, assign_and_pack) -> tuple[object, tuple[str, ...]]:
        """Buffer assignment and packing as the target runs them: `assign_and_pack(order,
        packing)` assigns buffers in `order` ("size": largest first, XLA's default; "start":
        by live range start) and packs the default memory space's heap by `packing` (a
        `HeapAlgorithm`). Returns its result and notes on what was assumed."""
        return assign_and_pack("size", BEST_OF_TWO), ()

    def trace_peaks(self, heaps: dict, live, dataflow) -> dict[int, int]:
        """The most bytes a memory space's heap trace holds at once, where XLA's trace is not
        the heap's buffers over their live ranges; by space."""
        return {}

    def combine_temp(self, heap_size: int, table_sizes: list[int], alignment: int) -> int:
        """Where tuple tables go, as XLA's CombineTempAllocations puts them: the temp
        allocations of a memory space end to end, each at the aligned end of the one before.
        Buffers are assigned largest first, so the tuple tables' allocations are made largest
        first, before the heap's; the unstable `std::partition` that gathers the temp
        allocations then leaves the heap first and the tables in reverse, the largest last
        (every CPU and GPU dump; TPU's put some tables below the heap, some above, a table
        last). Another order would change the total by less than the alignment: only the
        last allocation is not rounded up."""
        if not table_sizes:
            return heap_size
        *rest, last = sorted(table_sizes)
        size = round_up(heap_size, alignment)
        for t in rest:
            size += round_up(t, alignment)
        return size + last

    def reported_temp(self, heap, table_sizes: list[int]) -> tuple[int, str | None]:
        """`temp_size_in_bytes` for the default memory space's `heap` (its tables combined)
        and its tuple tables, and a note on how it was found (None: it is the allocation)."""
        return heap.size, None


def round_up(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment
