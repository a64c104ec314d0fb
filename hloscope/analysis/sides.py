"""Which pass of a training step an op belongs to: forward, backward, or neither (the optimizer),
and whether it recomputes the forward pass (remat).

JAX's metadata names them: the backward pass of `jvp(f)` is `transpose(jvp(f))`, the forward
pass keeps `jvp(`, a remat's recomputation runs under `rematted_computation`; XLA's own
rematerialization pass names its clones `NAME.remat`. Analyses that need a pass (gathers,
roles, cost) ask here.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping

from ..ir.module import Instruction

FORWARD, BACKWARD, OTHER = "forward", "backward", "other"

REMAT_SEGMENT = "rematted_computation"
XLA_REMAT_NAME = re.compile(r"\.remat\d*(?:\.|$)")
XLA_REMAT_TEXT = ".remat"
"""What the text of a body writes when XLA's rematerialization pass cloned an op of it."""


def side_of(op_name: str | None) -> str | None:
    """The side JAX's metadata puts an op on, None without JAX metadata."""
    if not op_name:
        return None
    if "transpose(" in op_name:
        return BACKWARD
    if "jvp(" in op_name:
        return FORWARD
    return OTHER


REMAT_LITERALS = (XLA_REMAT_TEXT, REMAT_SEGMENT)
"""What the text of a body writes when an instruction of it may recompute (`may_recompute`)."""


def remat_clone(inst: Instruction) -> bool:
    """Whether `inst` is a clone made by XLA's rematerialization pass (its name says so)."""
    return XLA_REMAT_NAME.search(inst.name) is not None


def may_recompute(inst: Instruction) -> bool:
    """False when `inst` certainly does not recompute (`recomputes`): known from its name and
    its attributes' text, without decoding its metadata."""
    return remat_clone(inst) or inst.attributes.mentions(REMAT_SEGMENT)


def recomputes(inst: Instruction) -> bool:
    """Whether an instruction recomputes a forward op: JAX's remat primal in its op_name, or a
    clone made by XLA's rematerialization pass."""
    if remat_clone(inst):
        return True
    if not inst.attributes.mentions(REMAT_SEGMENT):
        return False  # most instructions: their metadata need not be decoded to know
    op_name = inst.op_name
    return bool(op_name and REMAT_SEGMENT in op_name.split("/"))


def backward_start_step(time: Mapping[Instruction, int]) -> int | None:
    """The step of a schedule (`time`: instruction → step) where the backward pass starts: the
    first op JAX puts in it that recomputes nothing and reads a value the forward pass made.
    XLA may schedule at any time what depends on nothing the forward pass computes (zeros a
    gradient is later added into, the one-hot of the labels, weights gathered for later, a
    remat's recomputation): those do not start it. None without such metadata. (Steps in
    order, up to the first such op: the backward pass is half a step's ops.)"""
    for inst, t in sorted(time.items(), key=_step):
        if side_of(inst.op_name) == BACKWARD and not recomputes(inst) and any(_of_forward(o) for o in inst.operands):
            return t
    return None


_step = operator.itemgetter(1)


def _of_forward(inst: Instruction, depth: int = 0) -> bool:
    """Whether `inst` is an op of the forward pass, or an op without metadata made from one
    (a bitcast, a tuple element). A recomputation is not."""
    if side_of(inst.op_name) == FORWARD:
        return True
    return inst.op_name is None and depth < 4 and any(_of_forward(o, depth + 1) for o in inst.operands)
