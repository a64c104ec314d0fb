"""Linking a computation: its operand names resolved to instructions within it, users filled
and the root found, with the checks XLA's parser makes as it does so (every operand defined
before its use, names and parameter numbers once each, `t#i` elements made as it makes them)."""

from __future__ import annotations

from ..errors import HloSyntaxError
from ..ir.attributes import Attributes
from ..ir.module import Instruction
from ..ir.shape import UNKNOWN
from ..ir.values import xla_int
from .checks import check_control_predecessors
from .instruction_checks import RULES, at_attribute
from .location import error_at
from .names import xla_sanitized_name

ELEMENT_MARK = "#"
"""The opcode of the mark the builder leaves among nested instructions where an operand
`t#i` is written before them (no opcode is spelled so); `link` makes the get-tuple-element
it stands for there."""

def link(instructions, name: str, line: int, users: bool = True, controls: bool = True) -> Instruction:
    """Resolve operand names within one computation, fill users (unless `users` is False: a
    check that keeps nothing), find the root; and check what XLA's parser checks of a
    computation and of each instruction (hloscope.text.instruction_checks). As in XLA,
    every operand and control predecessor is defined before its use, which also rules out
    cycles. `controls` False: no instruction writes control-predecessors (the body's text
    says so once, where each instruction's attributes would be asked)."""
    if not instructions:
        raise HloSyntaxError(f"computation '{name}' has no instructions", line, 1)
    by_name: dict[str, Instruction] = {}
    root = None
    numbers: dict[int, Instruction] = {}
    rules = RULES
    made = None  # the get-tuple-elements made for `t#i` operands, by the instruction they precede
    for inst in instructions:
        ops = inst.operands
        if ops:
            resolved = []
            for ref in ops:
                if ref.__class__ is Instruction:
                    resolved.append(ref)
                    continue
                target = by_name.get(ref.lstrip("%"))
                if target is None:
                    if "#" not in ref:
                        raise _undefined(ref, inst, instructions)
                    if made is None:
                        made = {}
                    target = _tuple_element(ref, inst, by_name, made, users, instructions)
                resolved.append(target)
            inst.operands = resolved
            if users:
                for o in resolved:
                    o.users.append(inst)
        attributes = inst.attributes
        if controls and attributes.mentions("control-predecessors"):
            control = attributes.get("control-predecessors")
            if control is not None:
                check_control_predecessors(inst, control, by_name, instructions)
        rule = rules[inst.opcode]
        if rule is not None:
            rule(inst)
            if inst.opcode == "parameter":
                number = inst.parameter_number
                if number in numbers:
                    raise at_attribute(inst, f"parameter number {number} is taken by '{numbers[number].name}'",
                                       "parameter(")
                numbers[number] = inst
        if inst.nested:
            if inst.opcode == ELEMENT_MARK:  # `t#i` written before a nested operand: made here
                if made is None:
                    made = {}
                _tuple_element(inst.name, inst, by_name, made, users, instructions)
            continue  # anonymous: named by the module-wide uniquer, never referred to by name
        if inst.name in by_name:
            raise HloSyntaxError(f"instruction '{inst.name}' is defined twice", inst.line, 1)
        by_name[inst.name] = inst
        if inst.is_root:
            if root is not None:
                raise HloSyntaxError("one computation should have only one ROOT", inst.line, 1)
            root = inst
    if numbers and len(numbers) - 1 != max(numbers):
        missing = min(set(range(len(numbers))) - numbers.keys())
        inst = numbers[max(numbers)]
        raise at_attribute(inst, f"parameter {max(numbers)} of '{name}' has no parameter {missing} before it",
                           "parameter(")
    if root is None:
        root = instructions[-1]
        root.is_root = True
    if made is not None:
        instructions[:] = _with_elements_made(instructions, made)
    return root


def _tuple_element(ref, user: Instruction, by_name: dict, made: dict, users: bool, instructions) -> Instruction:
    """The instruction an operand `t#i#j...` stands for, as the newest XLA's parser reads it:
    `t`'s element i (and of that, element j ...) through get-tuple-elements keyed `t#i`,
    `t#i#j` in the computation, each made at its first use, before `user` (`made`), and
    named as the key with `#` made `_` (`t_i_j`, then made unique with the module's names)."""
    base, *indices = ref.lstrip("%").split("#")
    target = by_name.get(base)
    if target is None:
        raise _undefined(base, user, instructions, where=ref)
    path = base
    for written in indices:
        index = xla_int(written)
        if index is None:
            raise _operand_error(ref, user, f"tuple index {written} is out of the range of int64")
        path += f"#{index}"
        existing = by_name.get(path)
        if existing is not None:
            target = existing
            continue
        shape = target.shape
        element = UNKNOWN
        if shape.element_type != "unknown":
            if not shape.is_tuple:
                raise _operand_error(ref, user, f"'{path}' takes an element of '{target.name}', which is no "
                                                f"tuple: {shape}")
            if not 0 <= index < len(shape.tuple_shapes):
                raise _operand_error(ref, user, f"'{path}': {shape} has no element {index}")
            element = shape.tuple_shapes[index]
        gte = Instruction(xla_sanitized_name(path), "get-tuple-element", element, [target],
                          Attributes((), f", index={index}"), user.line)
        if users:
            target.users.append(gte)
        by_name[path] = gte
        made.setdefault(id(user), []).append(gte)
        target = gte
    return target


def _with_elements_made(instructions: list[Instruction], made: dict) -> list[Instruction]:
    """`instructions` with the get-tuple-elements `_tuple_element` made each before the
    instruction it was made for, and without the builder's marks."""
    out = []
    for inst in instructions:
        before = made.get(id(inst))
        if before:
            out.extend(before)
        if not (inst.nested and inst.opcode == ELEMENT_MARK):
            out.append(inst)
    return out


def _operand_error(ref, user: Instruction, message: str) -> HloSyntaxError:
    """An error at the operand `ref` of `user` (its place found in the source line, when the
    reference does not know it)."""
    if getattr(ref, "line", None):
        return error_at(ref, message)
    return HloSyntaxError(message, user.line, 0, hint=str(ref))


def _undefined(ref, inst: Instruction, instructions, where=None) -> HloSyntaxError:
    """The error for an operand name not defined before `inst` uses it (`where`: the operand
    as written, when it is more than the name: `t#0`)."""
    wanted = ref.lstrip("%")
    ref = ref if where is None else where
    if wanted == inst.name and not inst.nested:
        message = f"instruction '{wanted}' is its own operand"
    elif any(i.name == wanted and not i.nested for i in instructions):
        message = f"instruction '{wanted}' is used before it is defined"
    else:
        message = f"instruction '{wanted}' is not defined"
    if getattr(ref, "line", None):
        return error_at(ref, message)
    # From an INSTRUCTION token: the column is found in the source line later.
    return HloSyntaxError(message, inst.line, 0, hint=str(ref))
