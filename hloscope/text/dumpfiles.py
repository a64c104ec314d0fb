"""XLA's dump directories (`XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text`) and the text
of files that are not HLO modules.

A dump names each compiled module `module_NNNN.NAME.` and writes beside its optimized module
(`…after_optimizations.txt`) files about it: `…after_optimizations-buffer-assignment.txt`
(every allocation XLA made, with its size and kind), `-live-range.txt`,
`-memory-usage-report.txt`, LLVM IR, object files. Only the module is HLO; the others are
recognised here so that a reader can say what a file is instead of failing on its syntax.

The dumped module and `compiled.as_text()` can print the same module differently (GPU's
async reduce-scatter is an `async-start` with its `%async_computation` in the dump, the
sugared `reduce-scatter-start` in as_text(); TPU's as_text() is the module after codegen):
the dump's files name what the dump's module holds, so a dump's figures go with its module.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..encode import Encoded, as_json, by_key

AFTER_OPTIMIZATIONS = "after_optimizations.txt"
BEFORE_OPTIMIZATIONS = "before_optimizations.txt"
"""The module before XLA's optimizations that a dump writes beside the optimized one."""
"""The ending of the optimized module's file: `module_0000.jit_f.cpu_after_optimizations.txt`,
`….sm_9.0a_gpu_after_optimizations.txt`, `….cl_933746096.after_optimizations.txt`. (TPU's
`after_optimizations_after_buffer_assignment.txt` and `after_codegen.txt` end otherwise.)"""

_DUMP_NAME = re.compile(r"^module_(\d+)\.([^.]+)\.")

# A dump's files that describe a module without being one, by the ending XLA gives them;
# the first that matches names the file.
_SIDE_FILES = (
    ("-buffer-assignment-values.txt", "XLA's buffer-assignment values dump"),
    ("-buffer-assignment.txt", "XLA's buffer-assignment dump"),
    ("-live-range.txt", "XLA's live-range dump"),
    ("-memory-usage-report.txt", "XLA's memory-usage report"),
    (".debug_options", "XLA's debug options dump"),
    (".ll", "LLVM IR"),
    (".o", "an object file"),
    (".ptx", "PTX assembly"),
    (".pb", "a serialized protocol buffer (dump with --xla_dump_hlo_as_text for text)"),
    (".mlir", "MLIR text"),
    (".html", "an HTML page"),
    (".dot", "a Graphviz graph"),
)

# What a text that is not an HLO module begins with, and what it then is.
_SIDE_TEXTS = (
    ("BufferAssignment:", "XLA's buffer-assignment dump"),
    ("HloLiveRange", "XLA's live-range dump"),
    ("Memory Space:", "XLA's memory-usage report"),
    ("; ModuleID =", "LLVM IR"),
)

_MLIR_START = re.compile(r'(?:module\b|func\.func\b|#loc\d*\s*=|"builtin\.module"|#map\d*\s*=)')


@dataclass(frozen=True, slots=True)
class DumpModule:
    """One optimized module of a dump directory."""

    name: str
    """The module's name as the file names it (`jit_train_step`)."""
    number: str
    """XLA's module id in the dump (`0003` of `module_0003.…`)."""
    path: str
    """Its `…after_optimizations.txt`."""
    size: int
    """The file's size in bytes (the default pick is the largest `jit_*` module)."""
    buffer_assignment: str | None
    """The `…after_optimizations-buffer-assignment.txt` beside it, when the dump has one."""

    @property
    def label(self) -> str:
        return f"module_{self.number}.{self.name}" if self.number else self.name


def buffer_assignment_beside(path: str) -> str | None:
    """The buffer-assignment file XLA writes beside an `…after_optimizations.txt`, if there."""
    base = path.removesuffix(".gz")
    if not base.endswith(".txt"):
        return None
    for candidate in (base[:-4] + "-buffer-assignment.txt", base[:-4] + "-buffer-assignment.txt.gz"):
        if os.path.isfile(candidate):
            return candidate
    return None


def dump_modules(directory: str) -> list[DumpModule]:
    """The optimized modules of a dump directory, by module number (empty when none)."""
    found = []
    for entry in sorted(os.listdir(directory)):
        plain = entry.removesuffix(".gz")
        if not plain.endswith(AFTER_OPTIMIZATIONS):
            continue
        path = os.path.join(directory, entry)
        if not os.path.isfile(path):
            continue
        m = _DUMP_NAME.match(entry)
        name, number = (m.group(2), m.group(1)) if m else (plain[: -len(AFTER_OPTIMIZATIONS)].rstrip("._"), "")
        found.append(DumpModule(name=name, number=number, path=path, size=os.path.getsize(path),
                                buffer_assignment=buffer_assignment_beside(path)))
    return found


def default_dump_module(modules: list[DumpModule]) -> DumpModule | None:
    """The module a user most likely means: the largest `jit_*` one (JAX names a jitted
    function's module `jit_<name>`; the small ones around it are JAX's own helpers), else the
    largest."""
    if not modules:
        return None
    jitted = [m for m in modules if m.name.startswith("jit_")] or modules
    return max(jitted, key=lambda m: m.size)


def side_file_kind(path: str, head: str = "") -> str | None:
    """What a file that is not an HLO module is, from its name or its first characters;
    None when it may be HLO."""
    name = os.path.basename(path)
    name = name.removesuffix(".gz")
    for ending, kind in _SIDE_FILES:
        if name.endswith(ending):
            return kind
    start = head.lstrip()
    for prefix, kind in _SIDE_TEXTS:
        if start.startswith(prefix):
            return kind
    return None


def mlir_start(text: str) -> tuple[int, int] | None:
    """(line, column) where MLIR text (StableHLO, what `jax.jit(f).lower(...).as_text()`
    prints) begins, when the text is MLIR rather than HLO; else None. Only the first line that
    is neither blank nor a comment is looked at: HLO begins with `HloModule`."""
    for number, line in enumerate(text[: 1 << 16].splitlines()[:200], start=1):
        stripped = line.lstrip()
        if not stripped or stripped.startswith("//"):
            continue
        if _MLIR_START.match(stripped):
            return number, len(line) - len(stripped) + 1
        return None
    return None


# ─── buffer assignment: XLA's own memory figures ───────────────────────────────────────

_ALLOCATION = re.compile(r"allocation \d+: size (\d+)(?:, (.*))?:\s*$")
_PARAMETER = re.compile(r"(?:^|, )parameter \d+")
_COLOR = re.compile(r"(?:^|, )color (\d+)")


@dataclass(frozen=True, slots=True)
class BufferAssignmentFigures(Encoded):
    """The figures of `compiled.memory_analysis()`, summed from a buffer-assignment dump's
    allocations the way XLA sums them: arguments are the entry parameters' allocations,
    outputs the maybe-live-out ones, aliased those that are both, temp the preallocated temp
    allocation of memory space 0. (TPU reports its temp through other means: there its
    `temp_size_in_bytes` can be 0 while the dump has a temp allocation.)"""

    temp_bytes: int
    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    other_memory_space_temp_bytes: dict[int, int] = field(default_factory=dict,
                                                          metadata=as_json(key="memory_spaces", value=by_key))
    """Preallocated temp of memory spaces (XLA's colors) other than 0."""


def buffer_assignment_figures(text: str) -> BufferAssignmentFigures:
    """Sum the allocations of a `*-buffer-assignment.txt` (see BufferAssignmentFigures)."""
    temp = argument = output = alias = 0
    other: dict[int, int] = {}
    for line in text.splitlines():
        m = _ALLOCATION.match(line)
        if m is None:
            continue
        size, kinds = int(m.group(1)), m.group(2) or ""
        is_parameter = _PARAMETER.search(kinds) is not None
        live_out = "maybe-live-out" in kinds
        if is_parameter:
            argument += size
        if live_out:
            output += size
        if is_parameter and live_out:
            alias += size
        if "preallocated-temp" in kinds:
            color = _COLOR.search(kinds)
            if color is None or color.group(1) == "0":
                temp += size
            else:
                other[int(color.group(1))] = other.get(int(color.group(1)), 0) + size
    return BufferAssignmentFigures(temp, argument, output, alias, other)
