"""The Module users get: the IR's Module, with its analyses one call away.

`module.memory()`, `module.collectives()`, `module.stats()` run the analyses (hloscope.analysis)
with what only this layer has: the cache of results by the text's hash, and the executor that
may fork. The IR itself knows no analysis, so a parsed IR module becomes one of these
(`adopt`): same object, same slots, one class more.
"""

from __future__ import annotations

from ..analysis.collectives import (
    Collective,
    CollectivesResult,
    Tally,
    analyze_collectives,
)
from ..analysis.memory import LiveBuffer, MemoryAnalysis, analyze_memory
from ..analysis.stats import module_stats
from ..ir import module as ir
from ..text.printer import module_to_text
from . import cache, runtime


def _memory(module, platform: str | None = None, alignment: int | None = None) -> MemoryAnalysis:
    with runtime.no_cyclic_gc():
        return analyze_memory(module, platform, alignment, executor=runtime.FORKING)


_memory = cache.memoized("memory", (MemoryAnalysis, LiveBuffer))(_memory)
_collectives = cache.memoized("collectives", (CollectivesResult, Collective, Tally))(analyze_collectives)


class Module(ir.Module):
    """One HloModule (see hloscope.ir.Module), with its analyses."""

    __slots__ = ()

    def collectives(self) -> CollectivesResult:
        """Every collective: kind, bytes, groups, loop trip counts (hloscope.analysis.collectives)."""
        return _collectives(self)

    def memory(self, platform: str | None = None, alignment: int | None = None) -> MemoryAnalysis:
        """XLA's memory figures, the peak and what is live at it (hloscope.analysis.memory)."""
        return _memory(self, platform, alignment)

    def stats(self):
        return module_stats(self)

    def to_text(self) -> str:
        """This module as HLO text (hloscope.text.printer)."""
        return module_to_text(self)


def adopt(modules: list[ir.Module]) -> list[Module]:
    """The same modules, as this layer's Module (no copy: the classes share their slots)."""
    for m in modules:
        m.__class__ = Module
    return modules  # type: ignore[return-value]
