"""Counts of what a module holds: computations, instructions, opcodes."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..encode import Encoded, as_json


def _most_first(counts: dict[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass(frozen=True, slots=True)
class ModuleStats(Encoded):
    name: str
    computations: int
    instructions: int
    is_scheduled: bool
    opcodes: dict[str, int] = field(default_factory=dict, metadata=as_json(value=_most_first))
    """Instructions per opcode (as written), over every computation; the JSON lists the most
    frequent first."""


@dataclass(frozen=True, slots=True)
class Stats(Encoded):
    modules: tuple[ModuleStats, ...]


def module_stats(module) -> ModuleStats:
    counts = Counter(inst.opcode for inst in module.instructions())
    return ModuleStats(
        name=module.name,
        computations=len(module.computations),
        instructions=sum(counts.values()),
        is_scheduled=module.is_scheduled,
        opcodes=dict(counts),
    )


def stats(modules) -> Stats:
    return Stats(tuple(module_stats(m) for m in modules))
