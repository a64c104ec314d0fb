"""Matching the buffers of two compilations of one program.

Instruction names do not survive recompilation; what does is what the program said: JAX's
`op_name` (with the control-flow wrappers a change of accumulation or remat adds around it,
`while/body/closed_call/`, `checkpoint/`, `remat(...)`, removed), the opcode family, and the
array's dimensions and element type (layouts may change). Buffers are matched by those
fingerprints, largest first, one to one. What is left is matched by the op_name and source
line alone: the same op of the program at another size (a sequence length or micro-batch
scaled with the accumulation), largest first. A buffer without an op_name is matched only
by the first rule; what finds no partner exists on one side only. Entry parameters carry
their pytree path as op_name, so they match by it.
"""

from __future__ import annotations

import re
from collections import defaultdict

_WRAPPERS = re.compile(r"(?:^|/)(?:while|body|cond|closed_call|checkpoint|remat|rematted_computation|"
                       r"scan|pjit|jit\([^()/]*\))(?=/|$)")
_LAYOUT = re.compile(r"\{[^{}]*\}")


def program_op_name(op_name: str | None) -> str | None:
    """The op_name without the wrappers that accumulation, remat or jit nesting put around it."""
    if op_name is None:
        return None
    stripped = _WRAPPERS.sub("", op_name).strip("/")
    return stripped or op_name


def fingerprint(row) -> tuple:
    """(program op_name, dimensions and element type) of a buffer row (instruction, shape,
    op_name)."""
    return program_op_name(row.op_name), _LAYOUT.sub("", row.shape)


def same_op(row) -> tuple | None:
    """(program op_name, source line) of a buffer row; None without an op_name."""
    name = program_op_name(row.op_name)
    return None if name is None else (name, row.source)


def match_buffers(rows_a, rows_b) -> dict[tuple[str, str], str]:
    """One-to-one matches between two lists of buffer rows, largest first: `("a", name) → the
    matched B name` and `("b", name) → the matched A name`."""
    out: dict[tuple[str, str], str] = {}
    for key in (fingerprint, same_op):
        waiting: dict[tuple, list] = defaultdict(list)
        for r in sorted(rows_b, key=lambda r: -r.bytes):
            k = key(r)
            if k is not None and ("b", r.instruction) not in out:
                waiting[k].append(r)
        for r in sorted(rows_a, key=lambda r: -r.bytes):
            k = key(r)
            candidates = waiting.get(k) if k is not None and ("a", r.instruction) not in out else None
            if candidates:
                partner = candidates.pop(0)
                out[("a", r.instruction)] = partner.instruction
                out[("b", partner.instruction)] = r.instruction
    return out
