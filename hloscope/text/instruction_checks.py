"""What XLA's parser checks of one instruction, by its opcode: operand counts, the callees
a loop, conditional, call or fusion names, parameter numbers, tuple indices, and the
attributes of collectives. Each opcode's check comes from the opcode table's facts
(`RULES`); the parser runs it on every instruction it links (hloscope.text.link).
Errors point into the instruction's source line, found there later (HloSyntaxError hints).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import HloSyntaxError
from ..ir import opcodes
from ..ir.attributes import (
    AttributeValueError,
    decode_int,
    decode_names,
    decode_pairs,
    decode_replica_groups,
)
from ..ir.values import xla_int
from ..ir.module import Instruction


def _at_opcode(inst: Instruction, message: str) -> HloSyntaxError:
    """An error pointing at `inst`'s opcode (found in the source line later)."""
    return HloSyntaxError(message, inst.line, 0, hint_after=inst.opcode + "(", hint_offset=-len(inst.opcode) - 1)


def at_attribute(inst: Instruction, message: str, written: str, offset: int = 0) -> HloSyntaxError:
    """An error pointing `offset` characters into what follows `written` (`channel_id=`)."""
    return HloSyntaxError(message, inst.line, 0, hint_after=written, hint_offset=offset)


def _one_callee(inst: Instruction, key: str) -> None:
    tail = inst.attributes.tail
    at = tail.find(key + "=") if tail else -1
    if at > 0 and tail[at - 1] in ", \t" and tail[at + len(key) + 1:at + len(key) + 2] not in ("{", ",", ""):
        return  # written, as one name (most instructions: no need to cut the attributes apart)
    value = inst.attributes.uncached(key)
    if value is None:
        raise _at_opcode(inst, f"{inst.opcode} expects {key}=")
    if len(decode_names(value)) != 1:
        raise at_attribute(inst, f"{key}= names one computation", key + "=")


def _operand_count(inst: Instruction, expected: int, what: str) -> None:
    if len(inst.operands) != expected:
        # At the operand list's `(`, as XLA points.
        raise at_attribute(inst, f"{inst.opcode} expects {expected} operand{'s' if expected != 1 else ''} "
                                 f"({what}), but has {len(inst.operands)}", inst.opcode + "(", -1)


def _check_tuple(inst: Instruction) -> None:
    if inst.shape.is_tuple:
        _operand_count(inst, len(inst.shape.tuple_shapes), "one per element of its shape")


def _check_while(inst: Instruction) -> None:
    _operand_count(inst, 1, "the loop state")
    _one_callee(inst, "condition")
    _one_callee(inst, "body")


def _check_conditional(inst: Instruction) -> None:
    branches = inst.attributes.uncached("branch_computations")
    if branches is not None:
        count = len(decode_names(branches))
        if count == 0:
            raise at_attribute(inst, "branch_computations= names no computation", "branch_computations=")
    else:
        _one_callee(inst, "true_computation")
        _one_callee(inst, "false_computation")
        count = 2
    _operand_count(inst, count + 1, "the branch index, then one per branch")


def _check_get_tuple_element(inst: Instruction) -> None:
    """One operand and an integer `index=`, as XLA reads them. XLA checks the index against
    the operand only where it looks the element up: when the shape is left out (it infers
    it: a failed CHECK past the end) and when the operand is a `tuple` instruction (the
    element's original value: a failed CHECK past its operands)."""
    if len(inst.operands) != 1:
        _operand_count(inst, 1, "a tuple")
    tail = inst.attributes.tail
    first = _LEADING_INDEX.match(tail) if tail else None  # as XLA prints it, the first attribute
    index = first.group(1) if first else inst.attributes.uncached("index")
    if index is None:
        raise _at_opcode(inst, "get-tuple-element expects index=")
    number = xla_int(index) if _TUPLE_INDEX.fullmatch(index) else None
    if number is None:
        raise at_attribute(inst, f"index= expects an integer, not {index[:20]!r}", "index=")
    operand = inst.operands[0]
    if operand.opcode == "tuple":
        count = len(operand.operands)
    elif inst.shape.element_type == "unknown" and operand.shape.element_type != "unknown":
        count = len(operand.shape.tuple_shapes)
    else:
        return
    if not 0 <= number < count:
        raise at_attribute(inst, f"index={index} is not an element of {operand.shape}", "index=")


def _check_collective(inst: Instruction) -> None:
    """The attributes the collectives analysis decodes, decoded once here as XLA reads them."""
    attributes = inst.attributes
    for key, decode in (("channel_id", decode_int), ("replica_groups", decode_replica_groups),
                        ("source_target_pairs", decode_pairs)):
        value = attributes.uncached(key)
        if value is not None:
            try:
                decode(value)
            except AttributeValueError as e:
                raise at_attribute(inst, f"{key}: {e}", key + "=", e.offset + len(value) - len(value.lstrip())) from None


def _check_parameter(inst: Instruction) -> None:
    if inst.parameter_number is None or inst.parameter_number < 0 or inst.operands:
        raise _at_opcode(inst, "parameter expects its number, parameter(N) with N >= 0")


def _needs_calls(inst: Instruction) -> None:
    _one_callee(inst, "calls")


def _needs_to_apply(inst: Instruction) -> None:
    _one_callee(inst, "to_apply")


_TUPLE_INDEX = re.compile(r"-?[0-9]+")
_LEADING_INDEX = re.compile(r",[ \t]*index=(-?[0-9]+)(?=[,\s]|\Z)")


def _rule_for(opcode: str):
    """The check of one opcode's structure (None for most), from the opcode table's facts."""
    op = opcodes.info(opcode)
    checks = []
    if opcode == "parameter":
        checks.append(_check_parameter)
    rule = op.value_rule
    if rule == "while":
        checks.append(_check_while)
    elif rule == "call":
        checks.append(_needs_to_apply)
    elif rule == "conditional":
        checks.append(_check_conditional)
    elif rule == "tuple":
        checks.append(_check_tuple)
    elif rule == "element" and op.start_element is None:
        checks.append(_check_get_tuple_element)
    if op.calls_kind == "fused" or (op.canonical == "async-start" and not op.sugar):
        checks.append(_needs_calls)
    if op.collective is not None:
        checks.append(_check_collective)
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]

    def check_all(inst: Instruction) -> None:
        for check in checks:
            check(inst)

    return check_all


class _Rules(dict):
    def __missing__(self, opcode: str):
        rule = self[opcode] = _rule_for(opcode)
        return rule


RULES: dict[str, Callable[[Instruction], None] | None] = _Rules()
"""Each opcode's check, or None: `RULES[opcode]`, found on first sight of the opcode."""
