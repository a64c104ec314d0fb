"""Computations alike up to names.

A compilation repeats computations: a model's layers fuse into the same fusions, and each is
printed once per call site under fresh names (on a 32-layer train step, 14,490 computations
of which 1,981 are distinct). An analysis that looks at what a computation computes can do so
once per `structure`. A computation read as a copy of another (`Computation.copy_of`) has its
structure.
"""

from __future__ import annotations

from collections.abc import Hashable

from .module import Computation


def structure(comp: Computation) -> Hashable:
    """Equal for two computations only when they hold the same instructions in the same order
    (opcode, shape, operands by position, attributes and literal as written, parameter number,
    root), whatever the instructions are named. Callees keep their names (in the attributes):
    computations alike call the same ones.

    An operand written inline (not an instruction of the computation) has no position: such a
    computation is alike only to itself."""
    instructions = comp.instructions
    position = {id(inst): k for k, inst in enumerate(instructions)}
    key = []
    for inst in instructions:
        operands = tuple([position.get(id(o), -1) for o in inst.operands])
        if -1 in operands:
            return comp
        key.append((inst.opcode, inst.shape.text, operands, inst.attributes.as_written(), inst.literal,
                    inst.parameter_number, inst.is_root))
    return tuple(key)
