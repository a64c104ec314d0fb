"""IR → HLO text: the way back from hloscope.text.parser, in the form XLA prints.

`module_to_text(module)` writes a Module as `HloModule::ToString()` lays it out: the header
with the module's attributes, the debug tables, then every computation in module order, one
instruction per line, operands by name, attributes as kept (their text, in text order). XLA's
C++ parser reads the result, and so does hloscope's, giving the same IR back.

Names are printed as the IR has them (as XLA names them, after making repeats unique), so a
second parse names everything the same; attributes that call a computation are rewritten to
the name it is printed under when that differs from the name the text used for it (a
computation written inline, or renamed by XLA's uniquifier). Not so `control-predecessors`:
the IR keeps no instruction's written name once the uniquifier renamed it, so a reference to
such an instruction is printed as written and no longer resolves. An operand the text wrote
as a tuple element, `t#0` (the newest XLA's dumps), is printed as the get-tuple-element the
parser made of it, as `HloModule::ToString()` prints one: both XLA releases read that, only
the newest reads `t#0`.
"""

from __future__ import annotations

from ..ir.attributes import COMPUTATION_ATTRIBUTES, decode_names
from ..ir.module import Computation, Instruction, Module
from ..ir.shape import Shape

_CALLING = frozenset(COMPUTATION_ATTRIBUTES)

_INDEX_EVERY = 5
"""XLA marks every fifth operand or tuple element with `/*index=N*/`."""


def module_to_text(module: Module) -> str:
    """`module` as HLO text that XLA's parser (and hloscope's) accepts."""
    blocks = ["HloModule " + module.name + _attributes(module.attributes.items())]
    for table, rows in module.tables.items():
        blocks.append("\n".join([table, *(f"{key} {value}" for key, value in rows.items())]))
    if module.tables:
        blocks[-1] += "\n"  # XLA leaves two blank lines after the tables
    renamed = {c.text_name: c.name for c in module.computations if c.text_name != c.name}
    for comp in module.computations:
        blocks.append(computation_to_text(comp, renamed))
    return "".join(block + "\n\n" for block in blocks)


def computation_to_text(comp: Computation, renamed: dict[str, str] | None = None) -> str:
    """One computation, `[ENTRY ]%name (signature) -> shape {` ... `}` and its attributes.

    `renamed`: computation names as the text wrote them → as they are printed, for the
    attributes that call computations (see `module_to_text`)."""
    renamed = renamed or {}
    signature = _signature(comp)
    head = ("ENTRY " if comp.is_entry else "") + "%" + comp.name + (f" {signature}" if signature else "") + " {"
    lines = [head]
    for inst in comp.instructions:
        if not inst.nested:  # written in place, as an operand of its user
            lines.append("  " + instruction_to_text(inst, renamed))
    lines.append("}" + _attributes(comp.attributes.items()))
    return "\n".join(lines)


def instruction_to_text(inst: Instruction, renamed: dict[str, str] | None = None) -> str:
    """`[ROOT ]%name = shape opcode(operands), name=value, ...`."""
    root = "ROOT " if inst.is_root else ""
    return f"{root}%{inst.name} = {_operation(inst)}{_instruction_attributes(inst, renamed or {})}"


def shape_to_text(shape: Shape) -> str:
    """A shape as XLA prints it: a tuple's elements marked `/*index=N*/` every fifth."""
    if not shape.is_tuple:
        return shape.text
    return "(" + ", ".join(_indexed(k, shape_to_text(s)) for k, s in enumerate(shape.tuple_shapes)) + ")"


def _indexed(k: int, text: str) -> str:
    return f"/*index={k}*/{text}" if k and k % _INDEX_EVERY == 0 else text


def _operation(inst: Instruction) -> str:
    """`shape opcode(operands)`: the part an operand written in place repeats."""
    if inst.opcode == "constant" and inst.literal is not None:
        inner = inst.literal
    elif inst.opcode == "parameter" and inst.parameter_number is not None:
        inner = str(inst.parameter_number)
    else:
        inner = ", ".join(_indexed(k, _operand(o)) for k, o in enumerate(inst.operands))
    shape = shape_to_text(inst.shape)
    call = f"{inst.opcode}({inner})"
    return f"{shape} {call}" if shape else call  # no shape written: XLA infers it


def _operand(operand: Instruction) -> str:
    # An instruction the text nested in its user's operands has no name to refer to it by
    # (the parser names it `<opcode>.anon`): it is written in place again.
    return _operation(operand) if operand.nested else "%" + operand.name


def _instruction_attributes(inst: Instruction, renamed: dict[str, str]) -> str:
    items = inst.attributes.items()
    if renamed and any(key in _CALLING for key, _ in items):
        items = [(key, _callees(value, renamed) if key in _CALLING else value) for key, value in items]
    return _attributes(items)


def _callees(value: str, renamed: dict[str, str]) -> str:
    """An attribute's computation names, as the computations are printed."""
    names = decode_names(value)
    printed = [renamed.get(n, n) for n in names]
    if printed == list(names):
        return value
    refs = ", ".join("%" + n for n in printed)
    return "{" + refs + "}" if value.lstrip().startswith("{") or len(printed) != 1 else refs


def _attributes(items) -> str:
    return "".join(f", {key}={value}" for key, value in items)


def _signature(comp: Computation) -> str | None:
    """The header's `(params) -> result`: as printed when the IR kept it so, else rebuilt
    from the parameter instructions and the root (None when a shape is unknown)."""
    signature = comp.signature
    if isinstance(signature, str):
        return signature
    params = comp.parameters
    shapes = [p.shape for p in params] + [comp.root.shape]
    if any(not s.text for s in shapes):
        return None
    inner = ", ".join(f"{p.name}: {_without_layout(p.shape)}" for p in params)
    return f"({inner}) -> {_without_layout(comp.root.shape)}"


def _without_layout(shape: Shape) -> str:
    """A shape as XLA prints it in a signature: no layouts."""
    if shape.is_tuple:
        return "(" + ", ".join(_indexed(k, _without_layout(s)) for k, s in enumerate(shape.tuple_shapes)) + ")"
    if shape.layout is None or not shape.is_array:
        return shape.text
    return shape.text[: shape.text.index("]") + 1]
