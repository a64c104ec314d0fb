"""Which pass of a training step an op belongs to: forward, backward, or neither (the optimizer),
and whether it recomputes the forward pass (remat).

JAX's metadata names them: the backward pass of `jvp(f)` is `transpose(jvp(f))`, the forward
pass keeps `jvp(`, a remat's recomputation runs under `rematted_computation`; XLA's own
rematerialization pass names its clones `NAME.remat`. Analyses that need a pass (gathers,
roles, cost) ask here.
"""

from __future__ import annotations

import re

from ..ir.module import Instruction

FORWARD, BACKWARD, OTHER = "forward", "backward", "other"

REMAT_SEGMENT = "rematted_computation"
XLA_REMAT_NAME = re.compile(r"\.remat\d*(?:\.|$)")


def side_of(op_name: str | None) -> str | None:
    """The side JAX's metadata puts an op on, None without JAX metadata."""
    if not op_name:
        return None
    if "transpose(" in op_name:
        return BACKWARD
    if "jvp(" in op_name:
        return FORWARD
    return OTHER


def recomputes(inst: Instruction) -> bool:
    """Whether an instruction recomputes a forward op: JAX's remat primal in its op_name, or a
    clone made by XLA's rematerialization pass."""
    if XLA_REMAT_NAME.search(inst.name):
        return True
    if not inst.attributes.mentions(REMAT_SEGMENT):
        return False  # most instructions: their metadata need not be decoded to know
    op_name = inst.op_name
    return bool(op_name and REMAT_SEGMENT in op_name.split("/"))
