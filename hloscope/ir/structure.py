"""Computations alike up to names.

A compilation repeats computations: a model's layers fuse into the same fusions, and each is
printed once per call site under fresh names (on a 32-layer train step, 14,490 computations
of which 1,981 are distinct). An analysis that looks at what a computation computes can do so
once per `structure`; computations alike up to names have one structure up to the
computations they call, which are their own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable

from .module import Computation, Instruction

PERCENT_NAME = re.compile(r"%[A-Za-z_][\w.\-]*", re.ASCII)
"""A name written with its `%` (the grammar's NAME). Were the grammar to allow more in a
name, a name this cuts short would not be its instruction's, and the copies' recipe would
not fit (hloscope.speed.copies): such a body is read, not copied."""


def name_pattern(names: list[str]) -> tuple[int, ...]:
    """Where each of `names` first stands among them: two lists of names stand one for one,
    place by place (each always for the same other, no two for one), exactly when their
    patterns are equal. Two bodies of one text up to their `%name`s whose names do are the
    same body renamed."""
    first: dict[str, int] = {}
    return tuple([first.setdefault(name, len(first)) for name in names])


def structure(comp: Computation, callee_key: Callable[[Computation], Hashable] | None = None) -> Hashable:
    """Equal for two computations only when they hold the same instructions in the same order
    (opcode, shape, operands by position, attributes and literal as written, parameter number,
    root), whatever the instructions are named. Callees keep their names (in the attributes):
    computations alike call the same ones.

    With `callee_key`, callees are compared by it instead: an instruction whose attributes
    write a `%name` only for each computation it calls has them compared with those names
    taken out, and its callees' keys in the order the text writes them (a layer's reduce
    fusions, each with its own adder, are then alike). Anything else is compared as written.

    An operand written inline (not an instruction of the computation) has no position: such a
    computation is alike only to itself."""
    instructions = comp.instructions
    position = {id(inst): k for k, inst in enumerate(instructions)}
    key = []
    for inst in instructions:
        operands = tuple([position.get(id(o), -1) for o in inst.operands])
        if -1 in operands:
            return comp
        attributes = inst.attributes.as_written()
        callees: tuple = ()
        if callee_key is not None and inst.called_computation_names:
            found = _up_to_callees(inst, callee_key)
            if found is not None:
                attributes, callees = found
        key.append((inst.opcode, inst.shape.text, operands, attributes, inst.literal,
                    inst.parameter_number, inst.is_root, callees))
    return tuple(key)


def _up_to_callees(inst: Instruction, callee_key) -> tuple[str, tuple] | None:
    """(`inst`'s attributes with the callees' names taken out, their keys in text order), when
    its attributes are one uncut text whose `%name`s are exactly its callees; else None."""
    names = callees_written(inst)
    if names is None or inst.computation is None or inst.computation.module is None:
        return None
    callee = inst.computation.module.callee
    called = [callee(name) for name in names]
    if None in called:
        return None
    return PERCENT_NAME.sub("%", inst.attributes.tail), tuple(map(callee_key, called))


def callees_written(inst: Instruction) -> list[str] | None:
    """The `%name`s `inst`'s attributes write, in text order, when they are one uncut text in
    which every `%` starts a name and those names are exactly the computations it calls;
    else None."""
    tail, cut, tokens, raw = inst.attributes.as_written()
    if cut or tokens or raw:
        return None
    written = PERCENT_NAME.findall(tail)
    if tail.count("%") != len(written) or sorted(n[1:] for n in written) != sorted(inst.called_computation_names):
        return None
    return written
