"""The IR builder: Lark's rule callbacks (`Builder`), embedded in the LALR parser so that each
rule makes IR objects as it is reduced and no parse tree is built. One builder serves both
engines, the specification's rules and the coarse tokens the fast grammar adds (a printed
instruction, body or computation, cut by hloscope.text.body)."""

from __future__ import annotations

import lark
from lark import Token, Transformer

from ..errors import HloSyntaxError
from ..ir.attributes import COMPUTATION_ATTRIBUTES, NO_ATTRIBUTES, Attributes
from ..ir.module import Computation, Instruction
from ..ir.shape import (
    UNKNOWN,
    Shape,
    ShapeError,
    TupleElementError,
    buffer_shape,
    parse_array_shape,
    tuple_shape,
)
from .body import BodyText, printed_parts, span_of, split_instruction
from .checks import check_literal, check_result
from .link import ELEMENT_MARK, link
from .location import error_at, place, shift, syntax_error
from .modules import Unfinished, module_from
from .names import xla_sanitized_name
from .references import INLINE_CALLEE, INLINE_NAME, has_inline_callee
from .unread import UnreadBodies

class _Op:
    """An operation while its instruction is being built: opcode, operand refs, literal."""

    __slots__ = ("literal", "nested", "opcode", "operands", "token")

    def __init__(self, opcode, operands, literal, nested, token):
        self.opcode = opcode
        self.operands = operands
        self.literal = literal
        self.nested = nested
        self.token = token


class _Nested:
    """A nested operand instruction, with the nested instructions to insert before its user."""

    __slots__ = ("instruction", "instructions")

    def __init__(self, instruction, instructions):
        self.instruction = instruction
        self.instructions = instructions


_NO_OPERAND = object()
"""A place in an operand list that holds no operand (grammars/hlo.lark, `operand`)."""


def _plain_name(token):
    """A NAME token for a name written with a colon glued to it (`x:`, a COLON_NAME): XLA's
    lexer reads it as the name alone."""
    if token.__class__ is Token and token.type == "COLON_NAME":
        return Token.new_borrow_pos("NAME", token[:-1], token)
    return token


def _operand_ref(name, elements) -> Token:
    """The reference `name#i#j...` to a tuple element written `name#i#j` (the specification's
    `_element`s: `#`, then an integer, blanks allowed between), placed at the name."""
    name = _plain_name(name)
    return Token.new_borrow_pos("NAME", str(name) + "".join("#" + str(e) for e in elements), name)


def _with_element_marks(operands) -> list:
    """The nested instructions of an operation's `operands` (in operand order), with a mark
    where a tuple element `t#i` is written: XLA adds its get-tuple-element while it reads
    the operands, so before the nested instructions of later operands (`link` makes it
    there, if the computation has none for `t#i` yet)."""
    out = []
    for o in operands:
        if o.__class__ is _Nested:
            out.extend(o.instructions)
        elif o.__class__ is Token and "#" in o:
            mark = Instruction(str(o).lstrip("%"), ELEMENT_MARK, UNKNOWN, [], Attributes(()), o.line)
            mark.nested = True
            out.append(mark)
    return out


class Builder(Transformer):
    """Rule callbacks that build the IR while Lark reduces (no parse tree), for the rules of
    the specification (grammars/hlo.lark) and the alternatives the fast grammar adds.
    `inline_parser`: makes the Lark parser this builder is embedded in (computations written
    inline are read with it)."""

    def __init__(self, inline_parser):
        super().__init__(visit_tokens=False)
        # Makes the parser (with this builder) that reads a computation written inline.
        self._inline_parser = inline_parser
        # Computations written inline in an attribute, waiting for the computation that
        # holds them to be finished (XLA adds them to the module before their holder).
        self.pending_inline: list[Computation] = []
        # How many computations written inline this parse has named (their names then
        # depend on the text alone).
        self.inlined = 0
        # Leave printed bodies unread, made into computations by it (`UnreadBodies`).
        self.unread: UnreadBodies | None = None
        # Whether the text has any computation written inline (one search per parse).
        self.inline_possible = True
        # The whole text being parsed: lazy bodies are spans of it.
        self.source: str | None = None
        # Leave modules unfinished (Unfinished): more computations are to join them.
        self.unfinished = False
        # Called with the number of characters read so far, when someone shows progress.
        self.progress = None

    # shapes

    @staticmethod
    def _shape(item) -> Shape:
        if isinstance(item, Shape):
            return item
        try:
            return parse_array_shape(str(item))
        except ShapeError as e:
            raise HloSyntaxError(str(e), *place(str(item), 0, e.offset, item.line, item.column)) from None

    def tuple_shape(self, children):
        elements = [self._shape(c) for c in children]
        try:
            return tuple_shape(elements)
        except TupleElementError as e:
            bad = children[e.element]
            token = bad if isinstance(bad, Token) else next((c for c in children if isinstance(c, Token)), None)
            raise HloSyntaxError(str(e), getattr(token, "line", 1) or 1, getattr(token, "column", 1) or 1) from None

    def buffer_shape(self, children):
        return buffer_shape(self._shape(children[-1]))

    # operands

    def typed_operand(self, children):
        return _operand_ref(children[1], children[2:]) if len(children) > 2 else _plain_name(children[1])

    def bare_operand(self, children):
        return _operand_ref(children[0], children[1:]) if len(children) > 1 else _plain_name(children[0])

    def int_operand(self, children):
        return int(children[0])

    def no_operand(self, children):
        return _NO_OPERAND

    def nested_operand(self, children):
        op = children[-1]
        shape = self._shape(children[0]) if len(children) == 2 else UNKNOWN
        inst = _instruction(None, op.token, shape, op, ())
        inst.nested = True
        # The nested instruction's own nested operands come before it in the computation.
        return _Nested(inst, op.nested + [inst])

    def operation(self, children):
        token = children[0]
        operands, nested = [], []
        for o in children[1:]:
            if o.__class__ is _Nested:
                operands.append(o.instruction)
                nested.extend(o.instructions)
            elif o is not _NO_OPERAND:
                operands.append(o)
        opcode = token[:-1].rstrip()
        if opcode == "parameter" and operands and len(operands) + 1 != len(children):
            raise error_at(token, "parameter expects one number, parameter(N)")  # read apart in XLA
        if nested and any(o.__class__ is Token and "#" in o for o in operands):
            nested = _with_element_marks(children[1:])
        return _Op(opcode, operands, None, nested, token)

    def literal_group(self, children):
        """A parenthesized part of a literal, as written (its runs keep their blanks)."""
        return "(" + "".join(children) + ")"

    def constant(self, children):
        token, parts = children[0], children[1:]
        first = next((p for p in parts if p.__class__ is Token), token)
        literal = Token.new_borrow_pos("LITERAL", "".join(parts), first)
        if first is not parts[0]:  # it starts with a group: placed after the opcode's `(`
            literal = Token("LITERAL", str(literal), line=token.end_line, column=token.end_column)
        check_literal(str(literal), literal.line, literal.column)
        return _Op("constant", [], str(literal).strip(), [], token)

    # instructions and computations

    def instruction(self, children):
        is_root = children[0].__class__ is Token and children[0].type == "ROOT"
        if is_root:
            children = children[1:]
        name = children[0]
        if name.type == "COLON_NAME":
            name = _plain_name(name)
            if xla_sanitized_name(name) != name:  # `pred:`: a name no instruction may have
                raise error_at(name, f"illegal instruction name: {name}; XLA suggests "
                                     f"{xla_sanitized_name(name)}")
        if children[1].__class__ is _Op:
            shape, op, attrs = UNKNOWN, children[1], children[2:]
        else:
            shape, op, attrs = self._shape(children[1]), children[2], children[3:]
        if attrs:
            attrs = [self._inline_callees(a) for a in attrs]
        inst = _instruction(name, op.token, shape, op, attrs)
        inst.is_root = is_root
        if op.nested:
            return op.nested + [inst]
        return inst

    def attribute(self, children):
        """An attribute read as its key and value (the specification's two tokens): one
        ATTRIBUTE token, as the fast grammar reads it (nothing lies between the two)."""
        key, value = children
        return Token("ATTRIBUTE", key + value, start_pos=key.start_pos, line=key.line, column=key.column,
                     end_line=value.end_line, end_column=value.end_column, end_pos=value.end_pos)

    def inline_parser(self) -> lark.Lark:
        """The parser (with this builder) that reads a computation written inline."""
        return self._inline_parser()

    def instruction_line(self, children):
        token = children[0]
        return self._instruction_from_text(str(token), token.line, token.column)

    def instruction_line_continued(self, children):
        """A printed instruction whose attributes go on over the next lines: one instruction
        from the line's token and the attributes after it, as XLA reads them."""
        token = children[0]
        inst = self._instruction_from_text(str(token), token.line, token.column)
        attrs = inst.attributes
        written = [piece for piece, _ in attrs.split_tail()] if attrs.tail else list(attrs.written())
        inst.attributes = Attributes(written
                                     + [str(self._inline_callees(a)) for a in children[1:]])
        return inst

    def _instruction_from_text(self, text: str, line: int, column: int) -> Instruction:
        inst = split_instruction(text, line, column)
        attrs = inst.attributes
        if self.inline_possible and attrs.tail and INLINE_CALLEE.search(attrs.tail):
            # A computation written inline in an attribute: take the general path.
            base = column + len(text) - len(attrs.tail)  # the tail's column
            tokens = [self._inline_callees(Token("ATTRIBUTE", piece, line=line, column=base + at))
                      for piece, at in attrs.split_tail()]
            inst.attributes = Attributes(tokens)
        return inst

    def _inline_callees(self, token):
        """Read a computation written as an attribute's value; the attribute then names it."""
        name, _, value = token.lstrip(", \t\r\n").partition("=")
        if name not in COMPUTATION_ATTRIBUTES:
            return token
        body = value.lstrip()
        if not body.startswith("{") or "=" not in body:
            return token
        value_start = len(token) - len(value)
        offset = value_start + len(value) - len(body)
        held = self.pending_inline
        self.pending_inline = []
        try:
            comps = self.inline_parser().parse(body, start="inline_body")
        except lark.exceptions.UnexpectedInput as e:
            raise shift(syntax_error(e, body), token, offset) from None
        except lark.exceptions.VisitError as e:
            if isinstance(e.orig_exc, HloSyntaxError):
                raise shift(e.orig_exc, token, offset) from None
            raise
        finally:
            inner, self.pending_inline = self.pending_inline, held
        if comps.__class__ is not list:
            comps = [comps]
        self.pending_inline.extend(inner)
        self.pending_inline.extend(comps)
        return f", {name}=%{comps[-1].text_name}"

    def parameter(self, children):
        return (str(_plain_name(children[0])).lstrip("%"), self._shape(children[-1]))

    def signature(self, children):
        return ([c for c in children[:-1]], self._shape(children[-1]))

    def computation(self, children):
        is_entry = False
        i = 0
        if children[0].__class__ is Token and children[0].type == "ENTRY":
            is_entry = True
            i = 1
        first = children[i]
        if first.type == "COMPUTATION":
            name, signature, body = self._printed_computation(first)
            name_token = Token("NAME", name, start_pos=first.start_pos, line=first.line, column=first.column)
            return self._computation_with_body(name_token, signature, body, children[i + 1:], is_entry)
        name_token = _plain_name(first)
        i += 1
        signature = None
        if i < len(children) and (isinstance(children[i], tuple) or getattr(children[i], "type", "") == "SIGNATURE"):
            signature = children[i] if isinstance(children[i], tuple) else str(children[i])
            i += 1
        rest = children[i:]
        if rest and rest[0].__class__ is Token and rest[0].type == "BODY":
            body = BodyText.of_token(rest[0], self.source)
            return self._computation_with_body(name_token, signature, body, rest[1:], is_entry)
        instructions, attrs = _split_body(rest)
        comp = _finish_computation(name_token, instructions, is_entry, Attributes(attrs), signature)
        return self._with_inline(comp)

    def _printed_computation(self, token):
        """(name, signature, body) of a COMPUTATION token: a span of the source when the token
        lies in it, else of the token itself (as inside an inline body)."""
        return printed_parts(*span_of(token, self.source), token.line, token.column)

    def _computation_with_body(self, name_token, signature, body, attr_tokens, is_entry):
        attrs = Attributes([str(a) for a in attr_tokens])
        if self.unread is not None and not (self.inline_possible and has_inline_callee(body.source, body.start, body.end)):
            name = str(name_token).lstrip("%")
            return self.unread.computation(name, is_entry, attrs, name_token.line, signature, body)
        # Read now: eagerly, or because an inline computation must join the module here.
        if self.inline_possible and has_inline_callee(body.source, body.start, body.end):
            instructions = [self._instruction_from_text(t, ln, col) for t, ln, col in body.instruction_texts()]
            comp = _finish_computation(name_token, instructions, is_entry, attrs, signature)
        else:
            comp = computation_read_now(name_token, signature, body, is_entry, attrs)
        return self._with_inline(comp)

    def inline_body(self, children):
        instructions, _ = _split_body(children)
        token = Token("NAME", "_", line=1, column=1)
        comp = _finish_computation(token, instructions, False, Attributes(()), None)
        self.inlined += 1
        comp.text_name = f"{INLINE_NAME}{self.inlined}"  # cannot clash with a name in the text
        return self._with_inline(comp)

    def _with_inline(self, comp):
        if not self.pending_inline:
            return comp
        comps, self.pending_inline = self.pending_inline + [comp], []
        return comps

    def table_row(self, children):
        return (int(children[0]), str(children[1]))

    def table(self, children):
        return (str(children[0]), dict(children[1:]))

    def module_body(self, children):
        tables, comps = {}, []
        for c in children:
            if c.__class__ is list:
                comps.extend(c)
            elif c.__class__ is tuple:
                tables[c[0]] = c[1]
            else:
                comps.append(c)
        return (tables, comps)

    def module(self, children):
        name = str(_plain_name(children[0])).lstrip("%")
        tables, comps = children[-1]
        if self.unfinished:
            return Unfinished(name, children[1:-1], comps, tables)
        return module_from(name, [c for c in children[1:-1]], comps, tables, unread=self.unread)

    def headerless(self, children):
        tables, comps = children[0]
        if self.unfinished:
            return [Unfinished(None, [], comps, tables)]
        return [module_from(None, [], comps, tables, unread=self.unread)]

    def computations(self, children):
        comps = []
        for c in children:
            comps.extend(c) if c.__class__ is list else comps.append(c)
        return comps

    def start(self, children):
        return children


def _split_body(children):
    instructions: list[Instruction] = []
    attrs = []
    for c in children:
        if c.__class__ is Instruction:
            instructions.append(c)
        elif c.__class__ is list:
            instructions.extend(c)
        else:
            attrs.append(str(c))
    return instructions, attrs


def _instruction(name_token, op_token, shape: Shape, op: _Op, attr_tokens) -> Instruction:
    if name_token is None:
        # XLA adds a nested instruction to the computation under the name `<opcode>.anon`.
        name = f"{op.opcode}.anon"
        line = op_token.line
    else:
        name = str(name_token).lstrip("%")
        line = name_token.line
    inst = Instruction(name, op.opcode, shape, op.operands, Attributes([str(a) for a in attr_tokens]), line)
    if op.literal is not None:
        inst.literal = op.literal
    elif any(o.__class__ is int for o in op.operands):
        if op.opcode != "parameter" or len(op.operands) != 1:
            raise error_at(op_token, f"{op.opcode} takes instructions as operands, not numbers"
                           if op.opcode != "parameter" else "parameter expects one number, parameter(N)")
        inst.parameter_number = op.operands[0]
        inst.operands = []
    return inst


def computation_read_now(name_token, signature, body: BodyText, is_entry: bool,
                         attrs: Attributes | None = None) -> Computation:
    """The computation of a printed body with no computation written inline in it, read and
    checked at once: what the parser's `computation` rule makes of a COMPUTATION token."""
    return _finish_computation(name_token, body.instructions(), is_entry,
                               NO_ATTRIBUTES if attrs is None else attrs, signature, body.may_write_controls())


def _finish_computation(name_token, instructions, is_entry, attrs, signature,
                        controls: bool = True) -> Computation:
    name = str(name_token).lstrip("%")
    if not instructions:
        raise error_at(name_token, f"computation '{name}' has no instructions")
    root = link(instructions, name, name_token.line, controls=controls)
    check_result(signature, root, name, name_token.line)
    comp = Computation(name, instructions, is_entry, root, attrs, name_token.line, signature)
    for inst in instructions:
        inst.computation = comp
    return comp
