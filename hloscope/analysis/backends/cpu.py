"""XLA's CPU backend: its generic alias rules, 64-byte alignment, no heap trace."""

from __future__ import annotations

from .base import Backend


class Cpu(Backend):
    name = "cpu"
    records_heap_trace = False
    """XLA's CPU compiler records no heap trace: its `peak_memory_in_bytes` is the static part only."""

    def alignment(self, space: int) -> int:
        # cpu_function_runtime's MinAlign, as the fixtures' buffer-assignment dumps place buffers.
        return 64
