"""What XLA's parser checks of a module beyond the grammar, besides each instruction's own
rules (instruction_checks) and references to computations (references): a computation's
result, the entry's aliases and the header's attributes, a constant's literal, control
predecessors. Only rules XLA enforces when it reads a module are here."""

from __future__ import annotations

import re

from ..errors import HloSyntaxError
from ..ir.attributes import (
    SHAPE_INDEX,
    AliasSyntaxError,
    AttributeValueError,
    decode_input_output_alias,
    input_output_alias_offsets,
)
from ..ir.module import Instruction, Module
from ..ir.shape import Shape, ShapeError, parse_shape
from ..ir.values import name_list, xla_int
from .instruction_checks import at_attribute
from .location import error_at, place

def check_result(signature, root: Instruction, name: str, line: int) -> None:
    """The result shape a computation's header declares is its root's (up to layouts), as
    XLA's parser requires."""
    if signature is None:
        return
    if isinstance(signature, tuple):
        declared = signature[1]
    else:
        written = signature.rpartition("->")[2].strip()
        if written == root.shape.text:
            return  # as XLA prints it: the same text
        try:
            declared = parse_shape(written)
        except ShapeError as e:
            raise HloSyntaxError(f"the result shape of '{name}': {e}", line, 0, hint_after="->",
                                 hint_offset=e.offset) from None
    if not _compatible(declared, root.shape):
        raise HloSyntaxError(f"the header of '{name}' declares the result {declared}, its root '{root.name}' is "
                             f"{root.shape}", line, 0, hint_after="->", hint_offset=1)


def _compatible(a: Shape, b: Shape) -> bool:
    """The same shape up to layouts (XLA ShapeUtil::Compatible); a shape left out (unknown)
    is compatible with any. Shapes are interned, so each pair is compared once."""
    if a is b:
        return True
    key = (a, b)
    known = _COMPATIBLE.get(key)
    if known is None:
        if a.element_type == "unknown" or b.element_type == "unknown":
            known = True
        elif a.is_tuple or b.is_tuple:
            known = (a.is_tuple and b.is_tuple and len(a.tuple_shapes) == len(b.tuple_shapes)
                     and all(_compatible(x, y) for x, y in zip(a.tuple_shapes, b.tuple_shapes)))
        else:
            known = a.element_type == b.element_type and a.dimensions == b.dimensions
        if len(_COMPATIBLE) < 1 << 16:
            _COMPATIBLE[key] = known
    return known


_COMPATIBLE: dict[tuple[Shape, Shape], bool] = {}


def check_aliases(module: Module, root: Instruction, attr_tokens=None, first_body=None) -> None:
    """Each output index input_output_alias names is an index of the entry's result shape,
    as XLA's parser checks it (HloInputOutputAliasConfig::SetUpAlias). XLA does not check
    the parameter side when it reads a module (its verifier does): neither does this; the
    analyses take an alias whose parameter is missing as no alias. The error points into
    the header's attribute: its token when `attr_tokens` are given, else in the text before
    `first_body`, the BodyText of the module's first body (a module read lazily)."""
    value = module.attributes.get("input_output_alias")
    if value is None:
        return
    offsets = input_output_alias_offsets(value)
    for alias, offset in zip(decode_input_output_alias(value, keep_repeats=True), offsets):
        if _is_index_of(root.shape, alias.output_index):
            continue
        problem = (f"input_output_alias: {{{','.join(map(str, alias.output_index))}}} is not an index of the "
                   f"entry's result shape {root.shape}")
        raise _header_error(module, problem, "input_output_alias=", offset, attr_tokens, first_body)


def _is_index_of(shape: Shape, index: tuple[int, ...]) -> bool:
    for i in index:
        if shape.element_type == "unknown":
            return True
        if not shape.is_tuple or not 0 <= i < len(shape.tuple_shapes):
            return False
        shape = shape.tuple_shapes[i]
    return True


def _header_error(module: Module, message: str, written: str, offset: int, attr_tokens=None,
                  first_body=None) -> HloSyntaxError:
    """An error `offset` characters into the value of the header attribute `written`."""
    for token in attr_tokens or ():
        text = str(token)
        at = text.find(written)
        if at >= 0:
            at += len(written) + offset
            return HloSyntaxError(message, *place(text, 0, at, token.line, token.column))
    # Read lazily: the module's header is the last before its first body.
    if first_body is not None:
        source, first = first_body.source, first_body.start
        header = source.rfind("HloModule", 0, first)
        at = source.find(written, max(header, 0), first)
        if at >= 0:
            at += len(written) + offset
            line_start = source.rfind("\n", 0, at) + 1
            line = source.count("\n", 0, at) + 1
            end = source.find("\n", at)
            return HloSyntaxError(message, line, at - line_start + 1, source[line_start:end if end >= 0 else None],
                                  module.source_path or "<string>")
    return HloSyntaxError(message, 1, 1, None, module.source_path or "<string>")


# A buffer donor entry (XLA reads one whose parameter number is missing, as for aliases).
_DONOR_ENTRY = re.compile(r"\s*\(\s*(\d+\s*)?,\s*" + SHAPE_INDEX + r"\s*\)\s*(?:,|\Z)")


def check_module_attribute(token) -> None:
    """input_output_alias and buffer_donor are structure the memory figures rest on: their
    syntax is checked when the module is read, as XLA does."""
    written = str(token)
    name, _, value = written.lstrip(", \t\r\n").partition("=")
    value_at = written.find("=") + 1  # where `value` starts in the token
    if name == "input_output_alias":
        try:
            decode_input_output_alias(value, strict=True)
        except AliasSyntaxError as e:
            raise HloSyntaxError(str(e), token.line, token.column + value_at + e.offset) from None
        return
    if name != "buffer_donor":
        return
    body = value.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise error_at(token, f"expects '{{' to start {name}")
    inner = body[1:-1]
    pos = 0
    while inner[pos:].strip():
        m = _DONOR_ENTRY.match(inner, pos)
        if m is not None and m.group(1) is not None and (xla_int(m.group(1).strip()) or 0) < 0:
            m = None  # XLA: param_number >= 0 (2^64 - 1 reads as -1)
        if m is None:
            k = written.find(body) + 1 + pos + (len(inner[pos:]) - len(inner[pos:].lstrip()))
            raise HloSyntaxError(f"malformed {name} entry", token.line, token.column + k)
        pos = m.end()


def check_literal(text: str, line: int, column: int) -> None:
    """Braces in a constant's literal, `text` at `line`:`column`, must balance (XLA:
    "unexpected '}' token")."""
    if "}" not in text:
        return
    depth = 0
    if text.count("{") == text.count("}") and text.find("}") > text.find("{"):
        return
    for k, c in enumerate(text):
        depth += (c == "{") - (c == "}")
        if depth < 0:
            break
    prefix = text[:k]
    column = len(prefix) - prefix.rfind("\n") if "\n" in prefix else column + k
    line += prefix.count("\n")
    raise HloSyntaxError("unexpected '}' in literal" if depth < 0 else "unbalanced '{' in literal", line, column)


def check_control_predecessors(inst, value: str, by_name, instructions) -> None:
    """Each control predecessor `value` names is defined before `inst` (`by_name`: those
    that are), as XLA's parser requires of them."""
    try:
        refs = name_list(value)  # as XLA's ParseInstructionNames reads the value
    except AttributeValueError as e:
        raise at_attribute(inst, f"control-predecessors: {e}", "control-predecessors=",
                           e.offset + len(value) - len(value.lstrip())) from None
    for ref in refs:
        if ref not in by_name:
            # The column is found in the source line (HloSyntaxError.hint), as for operands.
            message = (f"control predecessor '{ref}' is used before it is defined"
                       if any(i.name == ref for i in instructions) else f"instruction '{ref}' is not defined")
            raise HloSyntaxError(message, inst.line, 0, hint=ref, hint_after="control-predecessors=")
