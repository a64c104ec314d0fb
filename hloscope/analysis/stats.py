"""Counts of what a module holds: computations, instructions, opcodes."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ModuleStats:
    name: str
    computations: int
    instructions: int
    is_scheduled: bool
    opcodes: dict[str, int] = field(default_factory=dict)
    """Instructions per opcode (as written), over every computation."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "computations": self.computations,
            "instructions": self.instructions,
            "is_scheduled": self.is_scheduled,
            "opcodes": dict(sorted(self.opcodes.items(), key=lambda kv: (-kv[1], kv[0]))),
        }


@dataclass(frozen=True, slots=True)
class Stats:
    modules: tuple[ModuleStats, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"modules": [m.to_dict() for m in self.modules]}


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
