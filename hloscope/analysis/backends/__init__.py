"""One object per compilation target (cpu, gpu, tpu), as XLA passes its backends' `AliasInfo`:
what each compiler does apart from XLA's generic rules, chosen once per module from its text
or the user's `platform=`, and handed to the analyses, which never ask a target's name."""

from __future__ import annotations

from ..callgraph import scheduled_computations
from ..facts import PLAIN, Facts
from . import gpu, tpu
from .base import Backend
from .cpu import Cpu
from .gpu import Gpu
from .tpu import Tpu

BACKENDS: dict[str, type[Backend]] = {b.name: b for b in (Cpu, Gpu, Tpu)}


def detect_platform(module, facts: Facts = PLAIN) -> str:
    """`tpu`, `gpu` or `cpu`, from what each backend leaves in its optimized HLO: tiled
    layouts in the entry's shapes (TPU); a GPU backend config or cuBLAS call in the schedule."""
    for comp in scheduled_computations(module):  # the entry first
        if comp is module.entry and tpu.tiles_shapes(comp):
            return "tpu"
        if gpu.marks(comp, facts):
            return "gpu"
    return "cpu"


def for_module(module, platform: str | None = None, facts: Facts = PLAIN) -> Backend:
    """The backend of the target `platform` names (else the one `module` was compiled for);
    a name none of them has gets XLA's generic rules under that name."""
    platform = platform or detect_platform(module, facts)
    kind = BACKENDS.get(platform)
    return kind.of(module, facts) if kind is not None else Backend(platform)


def named(platform: str) -> type[Backend]:
    """The kind of backend `MemoryAnalysis.platform` names."""
    return BACKENDS.get(platform, Backend)
