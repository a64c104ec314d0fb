"""TPU's memory rules, as libtpu applies them: what TPU does apart from XLA's CPU and GPU
buffer assignment (sizes, alignment, alias hints, the order buffers are assigned in and which
allocations they may reuse, how the HBM temp heap is packed, what `temp_size_in_bytes`
reports), each with the evidence it was found from; the analyses ask it through `Tpu`.

Found from libtpu 0.0.42.1 (jax 0.10.2) and 0.0.50.1 (jax 0.12.0.1) compilations for v5e:
their buffer-assignment dumps, the heap trace of their `*.hlo.pb` dumps (XLA's
ComputePeakMemorySizes replayed), and libtpu's logs at `TPU_VMODULE=program_memory_allocator=5`
(`AllocateHloBuffer hbm ... size: S (original size: A) sum_buffer_sizes: P`) and
`heap_simulator=1` (`Number of heaps produced` from FinishFastMerge), read against XLA's
buffer_assignment.cc and heap_simulator.cc (FastMerge, FreeChunksManager).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ...ir.opcodes import custom_call, fusion_kinds
from ..callgraph import loop_parts, scheduled_computations
from ..facts import PLAIN, Facts
from ..heap.best_fit import BEST_OF_TWO
from ..heap.fast_merge import FAST_MERGE
from .base import Backend


ALIGNMENT = {0: 16384, 1: 4096, 2: 4}
"""TPU's alignment per memory space, as its buffer-assignment dumps place buffers (every
offset in HBM's preallocated temp is a multiple of 16 KiB, in VMEM (S(1)) of 4 KiB, sync
flags (S(2)) pack at 4 bytes); other spaces `DEFAULT_ALIGNMENT`."""

DEFAULT_ALIGNMENT = 512

HBM_PROGRAM_ALIGNMENT = 16384
"""libtpu rounds the HBM temp allocation up to this when it places it (`AllocateHloBuffer
hbm ... size: S (original size: A)` in its program_memory_allocator log, S the next 16 KiB
multiple of A, `alignment_bytes: 16384`)."""

UNTILED_MIN_ELEMENTS = 1024
"""TPU allocates an array without tiles (`u32[]`, `s32[2]{0:S(4)}`, outside the sync flag
space S(2)) as at least this many elements: 4096 bytes for a 32-bit scalar, 1024 for a pred,
in every TPU dump."""

SYNC_FLAG_SPACE = 2

TUPLE_TABLE_ENTRY_BYTES = 4
TUPLE_TABLE_GRANULE = 512
"""A tuple's pointer table: 4 bytes an element, in whole 512-byte granules. Every dump's
tables of 1 to 104 elements take 512 bytes, those of 139, 171 (a scanned step's loop state)
and 173 elements (a step's 173 outputs) 1024."""

FALLBACK_MARGIN = 5 << 29
"""libtpu assigns buffers with FAST_MERGE_WITH_FALLBACK (both versions' flags): when the
HBM allocations the fast pass makes exceed the device memory less this margin (2.5 GiB),
it assigns again with XLA's default (XLA BufferAssigner::RunAssignBuffersWithFallback)."""

V5E_DEVICE_MEMORY = 16909332480
"""The device memory libtpu gives buffer assignment for a v5e (15.75 GiB of its 16 GiB):
its fallback log at `TPU_VMODULE=buffer_assignment=1` reads `Primary BufferAssignment
exceeded memory limit for color 0 (16161489408 bytes vs limit of 14224977920 bytes)`, the
limit being this less `FALLBACK_MARGIN`. The text does not name the chip; v5e has the least
HBM of the TPUs in use, so it is the first to fall back."""

NEWER_LIBTPU_MARKER = '"dma_priority"'
"""A `backend_config` field libtpu 0.0.50 (jax 0.12) writes on every async copy, slice and
collective and 0.0.42 (jax 0.10) on none: the text's evidence of which buffer assignment
made it (`TpuRules.fast_merge_assignment`)."""


VMEM_SPACE = 1

def is_view(inst) -> bool:
    """A custom-call whose result is no buffer of its own but a view of its operands'
    (`CustomCallTarget.view_of_operands`: a dump puts `custom-call.12 = f32[8192,512]{...S(1)}
    custom-call(slice-done.12, ...), custom_call_target="ConcatBitcast"` at the offset of its
    first operand's buffer; the VMEM heap trace has no event for it)."""
    target = inst.attributes.get("custom_call_target", "") if inst.opcode == "custom-call" else ""
    return bool(target) and custom_call(target.strip('"')).view_of_operands


def vmem_trace_peak(values, live, dataflow) -> int:
    """The most bytes of VMEM (S(1)) values that XLA's `peak_memory_in_bytes` counts at
    once: it replays the heap trace memory-space assignment records for VMEM, an ALLOC and
    a FREE per value over the value's own live range, no value sharing another's bytes (an
    in-place update and the value it updates both count while both live). Found by
    replaying that trace from the `*.hlo.pb` dumps (XLA ComputePeakMemorySizes) of 18
    compilations of each version, exact on all of them, against the text's values:

    - a value counts from its definition to its own last use (a value of a buffer whose
      next value begins earlier ends there; one is not stretched to the next's start, as
      XLA's live ranges are);
    - a value at a computation's ROOT ends before the caller's step (a loop body's state is
      freed before the loop's results are allocated);
    - no event: a view's result (`is_view`: its operands count until it dies), a loop
      condition's parameter, a value nothing reads (live at its definition only).
    """
    ranges, own_end, span = live.ranges, live.own_end, live.schedule.span
    conditions = {loop_parts(inst)[0] for inst in dataflow.value_sets if inst.opcode == "while"}
    extended: dict = {}
    for v in values:
        if is_view(v.instruction):
            for operand in v.instruction.operands:
                for ov in dataflow.value_sets.get(operand, {}).values():
                    extended[ov] = max(extended.get(ov, -1), ranges[v][1])
    delta: dict[int, int] = {}
    for v in values:
        inst = v.instruction
        if is_view(inst) or (inst.opcode == "parameter" and inst.computation in conditions):
            continue
        start, end = ranges[v]
        end = min(end, own_end.get(v, end))
        end = max(end, extended.get(v, end))
        if start == end:
            continue
        if any(at.is_root and span.get(at.computation, (0, -1))[1] == end for at, _ in v.positions):
            end -= 1
        delta[start] = delta.get(start, 0) + v.size
        delta[end + 1] = delta.get(end + 1, 0) - v.size
    return max(itertools.accumulate(delta[t] for t in sorted(delta)), default=0)


def must_not_live_out(value) -> bool:
    """TPU's `must_not_live_out` (an XLA BufferAssigner option): a value a collective other
    than an all-reduce writes (an all-gather's result, a collective-permute's, ... directly
    or as an output of a fusion that runs one and hands out an array of its result's shape:
    TPU's async collective fusions, its collective matmuls) never shares an allocation that
    may live out of the program, a donated argument's or an output's. In libtpu 0.0.42's
    dumps all 1,925 such fusion outputs and every all-gather are in the temp heap, while 21
    other outputs of those fusions share such allocations; XLA tries the allocations first
    (its buffer_assignment=3 log assigns `all-gather.1101`, 4 MiB, before `copy-start.21{0}`,
    which then takes the donated argument's allocation free for both)."""
    inst = value.instruction
    kind = inst.info.collective
    if kind is not None:
        return kind != "all-reduce"
    if inst.opcode != "fusion":
        return False
    written = {i.shape.text for c in inst.called_computations for i in c.instructions
               if i.info.collective not in (None, "all-reduce")}
    return bool(written) and value.shape.text in written


ELEMENTWISE_SHARING_KINDS = fusion_kinds(tpu_shares_elementwise_operands=True)
"""Fusion kinds whose output may be written over an operand every fused user reads element by
element (`FusionKind.tpu_shares_elementwise_operands`)."""


def may_alias(operand, user, user_index: tuple) -> bool | None:
    """TPU's buffer-sharing hint (XLA's `AliasInfo::MayAlias`), None where it has none: an
    all-reduce's element i may be written over its operand i (or its only operand), as
    XLA's generic rule (elementwise ops only) would not allow. In the dumps of both versions
    every all-reduce result whose operand is in the HBM temp heap and dies there takes its
    offset (10 of 10 elements of a 29-operand all-reduce, the rest's operands being in
    donated arguments' allocations; a scalar loss all-reduce in every step of 0.0.50)."""
    if "tpu" not in user.info.in_place_on:
        return None
    ops = user.operands
    return len(ops) == 1 or (len(user_index) == 1 and user_index[0] < len(ops) and ops[user_index[0]] is operand)


def tuple_table_bytes(shape) -> int:
    """A tuple's pointer table on TPU (`TUPLE_TABLE_ENTRY_BYTES` an element, whole granules)."""
    n = len(shape.tuple_shapes)
    return max(1, -(-n * TUPLE_TABLE_ENTRY_BYTES // TUPLE_TABLE_GRANULE)) * TUPLE_TABLE_GRANULE


def byte_size(shape) -> int:
    """What TPU's buffer assignment allocates for a shape (its dumps' `size=`): the tiled size
    (`Shape.padded_byte_size`), a tuple's pointer table (`tuple_table_bytes`), an untiled
    array outside the sync flags at least `UNTILED_MIN_ELEMENTS` elements."""
    if shape.is_tuple:
        return tuple_table_bytes(shape)
    layout = shape.layout
    if shape.is_array and (layout is None or not layout.tiles) and shape.memory_space != SYNC_FLAG_SPACE:
        size = shape.padded_byte_size
        count = shape.element_count
        if 0 < count < UNTILED_MIN_ELEMENTS and size:
            return size // count * UNTILED_MIN_ELEMENTS
        return size
    return shape.padded_byte_size


@dataclass(frozen=True)
class TpuRules:
    """How libtpu assigns and reports one module's memory.

    `fast_merge_assignment`: libtpu 0.0.50 assigns buffers with XLA's FAST_MERGE allocation
    manager: buffers taken in order of their live range's start, an allocation reused only
    through an operand's (an output's never: it lives to the end); libtpu 0.0.42 takes them
    largest first and reuses any donated argument's or output's allocation free at the time.
    Both pack the HBM temp buffers with XLA's FastMerge heap; after a fallback
    (`FALLBACK_MARGIN`) both use XLA's default: largest first, best of the spatial and
    temporal best-fit packings.
    """

    fast_merge_assignment: bool
    evidence: str
    """Why: the marker found, or that none was."""

    @staticmethod
    def of(module, facts: Facts = PLAIN) -> "TpuRules":
        for comp in scheduled_computations(module):
            if facts.writes_any(comp, (NEWER_LIBTPU_MARKER,)) and any(
                    NEWER_LIBTPU_MARKER in inst.attributes.get("backend_config", "") for inst in comp.instructions):
                return TpuRules(True, f"its backend_configs have the field {NEWER_LIBTPU_MARKER}, "
                                      "which libtpu 0.0.50 (jax 0.12) writes")
        return TpuRules(False, f"no backend_config has the field {NEWER_LIBTPU_MARKER} libtpu 0.0.50 "
                               "writes on every async copy: assumed libtpu 0.0.42 (jax 0.10)")

    @property
    def assignment(self) -> str:
        """The buffer assignment's order: "start" (live range start) or "size" (largest first)."""
        return "start" if self.fast_merge_assignment else "size"

    @property
    def libtpu(self) -> str:
        return "0.0.50" if self.fast_merge_assignment else "0.0.42"

    def assign(self, assign_and_pack):
        """libtpu's buffer assignment: the fast one, and XLA's default instead where the fast
        one's HBM allocations pass a v5e's limit (`FALLBACK_MARGIN`). `assign_and_pack(order,
        packing)` assigns in that order and packs the HBM heap so (its result has `heaps`
        and `hbm_bytes`). Returns that result and the notes on what was assumed."""
        packed = assign_and_pack(self.assignment, FAST_MERGE)
        notes = [f"TPU: buffer assignment as libtpu {self.libtpu} does it ({self.evidence})"]
        if falls_back(packed.hbm_bytes, V5E_DEVICE_MEMORY):
            fast = packed
            packed = assign_and_pack("size", BEST_OF_TWO)
            notes.append(
                f"TPU: the fast buffer assignment's HBM allocations ({fast.hbm_bytes} bytes) pass a v5e's device "
                f"memory less 2.5 GiB, where libtpu assigns again with XLA's default (largest first, best-fit "
                f"packing): figures as on a v5e. The text does not name the chip: one of 32 GiB or more keeps "
                f"the fast assignment, its HBM temp allocation {_allocation(fast)} bytes where this one's is "
                f"{_allocation(packed)}")
        return packed, tuple(notes)


def _allocation(packed) -> int:
    heap = packed.heaps.get(0)
    return heap.size if heap is not None else 0


def falls_back(hbm_allocated: int, hbm_bytes: int) -> bool:
    """Whether libtpu's fast assignment gives way to XLA's default on a chip of `hbm_bytes`."""
    return hbm_allocated > max(0, hbm_bytes - FALLBACK_MARGIN)


def reported_temp(allocation: int, peak_buffers: int, has_arrays: bool, rules: TpuRules) -> tuple[int, str]:
    """libtpu's `temp_size_in_bytes` for an HBM temp allocation of `allocation` bytes whose
    peak buffers (XLA PeakMemoryLogicalBuffers: the heap trace's peak set, and each tuple
    table, an allocation of its own) take `peak_buffers` bytes.

    libtpu's program_memory_allocator places that allocation as one HLO buffer of `size` =
    the allocation rounded up to `HBM_PROGRAM_ALIGNMENT` and `sum_buffer_sizes` = the peak
    buffers' bytes, and reports `size + (size - sum_buffer_sizes)`: the allocation plus its
    fragmentation once more. Exact on every dump of both versions. An allocation of tuple
    tables only is no HLO buffer for libtpu 0.0.42 (it makes each table a global): 0; libtpu
    0.0.50 places it like any other (`AllocateHloBuffer hbm ... size: 2113536 ...
    sum_buffer_sizes: 66048` for 124 tables and 5 scalars: temp 4161024 where 0.0.42 reports
    0 for the step's tables alone)."""
    size = -(-allocation // HBM_PROGRAM_ALIGNMENT) * HBM_PROGRAM_ALIGNMENT
    if not has_arrays and not rules.fast_merge_assignment:
        return 0, (f"TPU: temp 0 as libtpu 0.0.42 reports it: the HBM temp allocation ({allocation} bytes) "
                   f"holds only tuple pointer tables; libtpu 0.0.50 reports {2 * size - peak_buffers} for it")
    return 2 * size - peak_buffers, (
        f"TPU: temp is libtpu's 2 x HBM temp allocation ({size} bytes, {HBM_PROGRAM_ALIGNMENT // 1024} KiB-aligned) "
        f"- its peak buffers ({peak_buffers} bytes): the allocation plus its fragmentation")


def tiles_shapes(comp) -> bool:
    """Whether a shape of `comp` has a tiled layout (`{1,0:T(8,128)}`): TPU's compiler
    writes them in its entry's shapes, CPU's and GPU's never."""
    return any(":T(" in inst.shape.text for inst in comp.instructions)


class Tpu(Backend):
    """TPU as libtpu compiles a module (`TpuRules`: which libtpu made it)."""

    name = "tpu"
    temp_figure = "libtpu"
    packing_name = "packing"
    slack_label = "allocation slack"

    @classmethod
    def slack_words(cls, more: bool) -> str:
        return (f"libtpu's HBM temp allocation has {'more' if more else 'less'} slack beyond the buffers live at "
                "its peak (how libtpu places them, rounded up to 16 KiB): memory the step reserves, no role holds")
    elementwise_sharing_kinds = ELEMENTWISE_SHARING_KINDS
    byte_size = staticmethod(byte_size)
    must_not_live_out = staticmethod(must_not_live_out)
    reads_peak_buffers = True

    def __init__(self, rules: TpuRules):
        super().__init__()
        self.rules = rules

    @classmethod
    def of(cls, module, facts: Facts = PLAIN) -> Tpu:
        return cls(TpuRules.of(module, facts))

    def alignment(self, space: int) -> int:
        return ALIGNMENT.get(space, DEFAULT_ALIGNMENT)

    def may_alias(self, operand, user, user_index: tuple, operand_number: int) -> bool | None:
        return may_alias(operand, user, user_index)

    def may_alias_any(self, user) -> bool:
        return self.name in user.info.in_place_on

    def assign(self, assign_and_pack):
        return self.rules.assign(assign_and_pack)

    def trace_peaks(self, heaps: dict, live, dataflow) -> dict[int, int]:
        vmem = heaps.get(VMEM_SPACE)
        return {VMEM_SPACE: vmem_trace_peak(list(vmem.offsets), live, dataflow)} if vmem is not None else {}

    def reported_temp(self, heap, table_sizes: list[int]) -> tuple[int, str | None]:
        return reported_temp(heap.size, heap.peak_buffers_bytes + sum(table_sizes), bool(heap.offsets), self.rules)
