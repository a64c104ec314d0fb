"""HLO text → IR, with grammars/hlo.lark + grammars/hlo_fast.lark and Lark's LALR parser:
the fast engine, hloscope's default.

The builder below (`Builder`) is embedded in the parser (`transformer=`), so no parse tree
is built: each rule's callback makes IR objects directly. Operand names are resolved once a
whole computation is read, the way XLA's parser resolves them (within the computation).
The same builder serves the reference engine (hloscope.text.lark_engine), which reads the
specification alone: the fast grammar's coarse tokens only add callbacks of their own
(`instruction_line`, printed bodies and computations). A lazy parse reads the computations
printed after the first with the grammar's COMPUTATION terminal alone (`_parse_printed`).
"""

from __future__ import annotations

import bisect
import functools
import re
from typing import NamedTuple, Protocol

import lark
from lark import Token, Transformer

from .. import grammar
from ..errors import HloSyntaxError
from ..ir.attributes import (
    COMPUTATION_ATTRIBUTES,
    AttributeValueError,
    SHAPE_INDEX,
    AliasSyntaxError,
    Attributes,
    decode_input_output_alias,
    decode_names,
    input_output_alias_offsets,
)
from ..ir.module import Computation, Instruction, Module
from ..ir.structure import PERCENT_NAME
from ..ir.values import name_list, xla_int
from ..ir.shape import (
    UNKNOWN,
    Shape,
    ShapeError,
    TupleElementError,
    buffer_shape,
    parse_array_shape,
    parse_shape,
    tuple_shape,
)
from . import lexer
from .instruction_checks import RULES, at_attribute
from .names import (
    NameFacts,
    renames_needed,
    uniquify_computation_names,
    uniquify_instruction_names,
    xla_sanitized_name,
)


def _on_body(token):
    """Lexer callback: report how far the parse has come (a BODY is most of a large file)."""
    report = _lark().options.transformer.progress
    if report is not None:
        report(token.end_pos)
    return token


@functools.lru_cache(maxsize=1)
def _lark() -> lark.Lark:
    return lark.Lark(
        grammar.fast_text(),
        cache=grammar.lark_cache_file("parser"),
        lexer_callbacks={"BODY": _on_body, "COMPUTATION": _on_body},
        parser="lalr",
        lexer="contextual",
        start=["start", "inline_body", "computations"],
        transformer=Builder(),
        maybe_placeholders=False,
        _plugins=lexer.PLUGINS,
    )


# Token names as people would say them, for error messages.
_TOKEN_WORDS = {
    "NAME": "a name",
    "COLON_NAME": "a name",
    "HASH": "'#'",
    "OPCODE": "an opcode",
    "CONSTANT": "an opcode",
    "ARRAY_SHAPE": "a shape",
    "ATTRIBUTE": "an attribute",
    "ATTR_KEY": "an attribute",
    "ATTR_VALUE": "an attribute value",
    "INT": "an integer",
    "STRING": "a string",
    "GROUP": "a braced value",
    "LITERAL": "a literal",
    "INSTRUCTION": "an instruction",
    "BODY": "'{'",
    "COMPUTATION": "a computation",
    "SIGNATURE": "a signature",
    "ENTRY": "ENTRY",
    "ROOT": "ROOT",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "EQUAL": "'='",
    "COLON": "':'",
    "__ANON_0": "'->'",
    "HLOMODULE": "'HloModule'",
    "$END": "end of file",
}


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
    the operands, so before the nested instructions of later operands (`_link` makes it
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


ELEMENT_MARK = "#"
"""The opcode of a mark `_with_element_marks` leaves among nested instructions (no opcode
is spelled so); `_link` replaces it by the get-tuple-element it stands for."""


class Builder(Transformer):
    """Rule callbacks that build the IR while Lark reduces (no parse tree), for the rules of
    the specification (grammars/hlo.lark) and the alternatives the fast grammar adds."""

    def __init__(self):
        super().__init__(visit_tokens=False)
        # Computations written inline in an attribute, waiting for the computation that
        # holds them to be finished (XLA adds them to the module before their holder).
        self.pending_inline: list[Computation] = []
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
            raise HloSyntaxError(str(e), *_place(str(item), 0, e.offset, item.line, item.column)) from None

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
            raise _error_at(token, "parameter expects one number, parameter(N)")  # read apart in XLA
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
        _check_literal(literal)
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
                raise _error_at(name, f"illegal instruction name: {name}; XLA suggests "
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
        return _lark()

    def instruction_line(self, children):
        token = children[0]
        return self._instruction_from_text(str(token), token.line, token.column)

    def instruction_line_continued(self, children):
        """A printed instruction whose attributes go on over the next lines: one instruction
        from the line's token and the attributes after it, as XLA reads them."""
        token = children[0]
        inst = self._instruction_from_text(str(token), token.line, token.column)
        attrs = inst.attributes
        written = attrs.split_tail(token) if attrs.tail else list(attrs.written())
        inst.attributes = Attributes([str(a) for a in written]
                                     + [str(self._inline_callees(a)) for a in children[1:]])
        return inst

    def _instruction_from_text(self, text: str, line: int, column: int) -> Instruction:
        inst = _split_instruction(text, line, column)
        attrs = inst.attributes
        if self.inline_possible and attrs.tail and _INLINE_CALLEE.search(attrs.tail):
            # A computation written inline in an attribute: take the general path.
            token = Token("INSTRUCTION", text, line=line, column=column)
            tokens = [self._inline_callees(a) for a in attrs.split_tail(token)]
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
            raise _shift(_syntax_error(e, body), token, offset) from None
        except lark.exceptions.VisitError as e:
            if isinstance(e.orig_exc, HloSyntaxError):
                raise _shift(e.orig_exc, token, offset) from None
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
        return printed_parts(*_span_of(token, self.source), token.line, token.column)

    def _computation_with_body(self, name_token, signature, body, attr_tokens, is_entry):
        attrs = Attributes([str(a) for a in attr_tokens])
        if self.unread is not None and not (self.inline_possible and _has_inline_callee(body.source, body.start, body.end)):
            name = str(name_token).lstrip("%")
            return self.unread.computation(name, is_entry, attrs, name_token.line, signature, body)
        # Read now: eagerly, or because an inline computation must join the module here.
        if self.inline_possible and _has_inline_callee(body.source, body.start, body.end):
            instructions = [self._instruction_from_text(t, ln, col) for t, ln, col in body.lines()]
        else:
            instructions = body.instructions()
        comp = _finish_computation(name_token, instructions, is_entry, attrs, signature)
        return self._with_inline(comp)

    def inline_body(self, children):
        instructions, _ = _split_body(children)
        token = Token("NAME", "_", line=1, column=1)
        comp = _finish_computation(token, instructions, False, Attributes(()), None)
        comp.text_name = f"{_INLINE_NAME}{id(comp)}"  # cannot clash with a name in the text
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
        return _finish_module(name, [c for c in children[1:-1]], comps, tables, unread=self.unread)

    def headerless(self, children):
        tables, comps = children[0]
        if self.unfinished:
            return [Unfinished(None, [], comps, tables)]
        return [_finish_module(None, [], comps, tables, unread=self.unread)]

    def computations(self, children):
        comps = []
        for c in children:
            comps.extend(c) if c.__class__ is list else comps.append(c)
        return comps

    def start(self, children):
        return children


_INLINE_NAME = "_ inline "
"""How the name of a computation written inline starts (no name in a text can)."""


class Unfinished(NamedTuple):
    """A module read up to some point, for `finish_module` once all its computations are in."""

    name: str | None
    attr_tokens: list
    computations: list
    tables: dict


class UnreadBodies(Protocol):
    """What makes computations whose bodies a parse leaves unread (hloscope.speed): the
    parser knows them only through this."""

    def computation(self, name: str, is_entry: bool, attributes: Attributes, line: int, signature,
                    body: "BodyText", alike: object | None = None) -> Computation:
        """A computation whose instructions are `body`'s, read when first asked for. `alike`:
        a token the bodies equal up to names share, where the parse found so."""

    def body_of(self, computation: Computation) -> "BodyText | None":
        """The unread body of `computation`, or None once read (or never unread)."""

    def forget(self, computation: Computation) -> None:
        """Its text no longer says what `computation` holds (its instructions were renamed)."""

    def finish(self, module: Module) -> None:
        """`module` is whole: its unread bodies answer for what a full parse says of them."""


def finish_module(part: Unfinished, more: list, known: list[NameFacts] | None = None,
                  unread: UnreadBodies | None = None) -> Module:
    """The module of `part` with the computations `more` after its own; `known`: the names
    of all its computations, in runs (`NameFacts`), found already."""
    return _finish_module(part.name, part.attr_tokens, part.computations + more, part.tables, known, unread)


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


def _shift(err: HloSyntaxError, token, offset: int) -> HloSyntaxError:
    """Move an error found inside an attribute's value to its place in the whole text."""
    prefix = str(token)[:offset]
    line = token.line + prefix.count("\n")
    column = (len(prefix) - prefix.rfind("\n")) if "\n" in prefix else token.column + offset
    if err.line > 1:
        line, column = line + err.line - 1, err.column
    else:
        column += err.column - 1
    return HloSyntaxError(err.message, line, column)


def _check_literal(token) -> None:
    """Braces in a constant's literal must balance (XLA: "unexpected '}' token")."""
    text = str(token)
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
    line = token.line + prefix.count("\n")
    column = len(prefix) - prefix.rfind("\n") if "\n" in prefix else token.column + k
    raise HloSyntaxError("unexpected '}' in literal" if depth < 0 else "unbalanced '{' in literal", line, column)


# Splitting an INSTRUCTION token. The grammar has already checked the whole line, so these
# patterns only cut it where the grammar says; they are built from the grammar's own
# terminals so the two cannot drift apart.
class _Cuts:
    def __init__(self, grammar: lark.Lark):
        def terminal(name: str) -> str:
            return grammar.get_terminal(name).pattern.to_regexp()

        name, array = terminal("NAME"), terminal("ARRAY_SHAPE")
        # A balanced group of parentheses, four deep: the grammar's _PARENS_4 (an inlined
        # helper terminal Lark does not expose), for tuple shapes and operand lists.
        self.group = re.compile(r"\((?:[^()]++|\((?:[^()]++|\((?:[^()]++|\([^()]*+\))*+\))*+\))*+\)")
        # The parts of an instruction up to its attributes, in one match: ROOT, name, shape,
        # opcode (with the spaces before its parenthesis) and the parenthesized operand list
        # or literal. The line form adds the rest of the line (the attributes) and its end.
        parts = (r"(ROOT[ \t]+)?(" + name + r")[ \t]*=[ \t]*(" + self.group.pattern + "|" + array
                 + r")[ \t]+(" + terminal("OPCODE")[:-2] + r")(" + self.group.pattern + ")")
        self.parts = re.compile(parts)
        self.parts_line = re.compile(r"[ \t]*" + parts + r"([^\n]*)\n")
        # In an operand list with its layouts removed, a name directly before `,` or the end
        # is an operand: inside shapes only `]`, `}` and `)` come before a comma. A name may
        # go on with `#i#j...` (a tuple element: the reference keeps them); in a body
        # without a `#`, none does, and the plain pattern is used.
        self.operand_names = re.compile(r"(?<![\w.\-%])(" + name + r")(?=[ \t]*(?:,|\Z))")
        self.element_operand_names = re.compile(r"(?<![\w.\-%])(" + name + r"(?:#[0-9]+)*)(?=[ \t]*(?:,|\Z))")
        # Where each instruction of a printed body starts: a name, `=`, then a shape.
        self.instruction_start = re.compile(
            r"^[ \t]*(?:ROOT[ \t]+)?(" + name + r")[ \t]*=[ \t]*(?=\(|[a-z][a-z0-9]*[ \t]*\[)", re.M)


@functools.lru_cache(maxsize=1)
def _cuts() -> _Cuts:
    return _Cuts(_lark())


_WHITESPACE = re.compile(r"\s")
_BODY_OPEN = re.compile(r"\{[ \t]*\r?\n")
_INLINE_CALLEE = re.compile(r"(?:" + "|".join(COMPUTATION_ATTRIBUTES) + r")=\s*\{")
_SPACE_THEN_BRACE = re.compile(r"\s*\{")


def callee_references(text: str) -> list[tuple[int, int]]:
    """`(where the value starts, k)` for every `COMPUTATION_ATTRIBUTES[k]=` in `text`, in text
    order: candidates, `check_references` decides which are attributes. A search per name,
    for the reason `_has_inline_callee` gives."""
    hits = []
    for k, name in enumerate(COMPUTATION_ATTRIBUTES):
        key = name + "="
        i = text.find(key)
        while i >= 0:
            i += len(key)
            hits.append((i, k))
            i = text.find(key, i)
    hits.sort()
    return hits


# From a line's start, what lies outside strings and comments: plain characters (a `/` that
# starts no comment), whole strings and whole `/*...*/` comments.
_OUTSIDE_STRINGS = re.compile(
    r"""(?:[^"'/\n]++|/(?![/*])|"(?:[^"\\\n]++|\\.)*+"|'(?:[^'\\\n]++|\\.)*+'|/\*(?:[^*\n]++|\*(?!/))*+\*/)*+""")
_CALLEE_VALUE = re.compile(r"\s*(\{[^{}]*\}|%?[A-Za-z_][\w.\-]*)")
# A computation written in place: braces holding an instruction (`name = ...`), as the
# builder reads them (`Builder._inline_callees`); other braces hold names.
_INLINE_VALUE = re.compile(r"\s*\{[^{}=]*=")


# What XLA's lexer takes whole, in text order: a string (a `/*` inside one opens no comment),
# a `//` comment to the end of its line, and a `/*...*/` comment (group 1; an unclosed one
# runs to the end of the text).
_LEXED_WHOLE = re.compile(r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|//[^\n]*|(/\*.*?(?:\*/|\Z))""", re.DOTALL)
# From each `/*` on to its `*/`, strings and `//` comments not looked at: a superset of the
# comments, found fast (one search) where a module has no comment that spans lines.
_MAYBE_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)


def _comments_spanning_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each `/*...*/` comment that spans lines (XLA prints none: its index
    comments close on their line), in text order: a reference inside one is no reference."""
    if "/*" not in text or not any("\n" in m.group() for m in _MAYBE_COMMENT.finditer(text)):
        return []  # every comment spanning lines is inside one of these
    return [m.span(1) for m in _LEXED_WHOLE.finditer(text) if m.group(1) and "\n" in m.group(1)]


def check_references(modules, text: str, hits: list[tuple[int, int]]) -> None:
    """Every computation an attribute names (`calls=%f`, `to_apply=add`, `body=`, ...) is one
    of its module's, defined before the computation that names it, as XLA's parser requires
    (so no computation calls itself, directly or not). `hits`: `callee_references(text)`.
    Checked on the text, once per parse, lazily read bodies included: references are the
    structure every command starts from."""
    heads: list[tuple[int, int, int]] = []  # (header line, module, index in the module), text order
    index: list[dict[str, int]] = []
    for mi, module in enumerate(modules):
        names: dict[str, int] = {}
        for ci, comp in enumerate(module.computations):
            names.setdefault(comp.text_name, ci)
            if not comp.text_name.startswith(_INLINE_NAME):
                heads.append((comp.line, mi, ci))
        index.append(names)
    lines = [h[0] for h in heads]
    line, counted = 1, 0
    spanning = _comments_spanning_lines(text)  # found once
    span_starts = [s for s, _ in spanning]
    for at, k in hits:
        key_at = at - len(COMPUTATION_ATTRIBUTES[k]) - 1
        if not _is_attribute_key(text, key_at) or _INLINE_VALUE.match(text, at):
            continue  # not an attribute, or a computation written in place
        line_start = text.rfind("\n", 0, at) + 1
        if spanning:
            c = bisect.bisect_right(span_starts, at) - 1
            if c >= 0 and spanning[c][0] < line_start and at < spanning[c][1]:
                continue  # inside a comment begun on an earlier line
        line += text.count("\n", counted, at)
        counted = at
        h = bisect.bisect_right(lines, line) - 1
        if h < 0:
            continue
        _, mi, ci = heads[h]
        value = _CALLEE_VALUE.match(text, at)
        if value is None:
            raise HloSyntaxError(f"expects a computation name after '{COMPUTATION_ATTRIBUTES[k]}='", line,
                                 at - line_start + 1)
        written = value.group(1)
        for name in decode_names(written) if written[0] == "{" else (written.lstrip("%"),):
            j = index[mi].get(name)
            if j is not None and j < ci:
                continue
            comp_name = modules[mi].computations[ci].text_name
            if j is None:
                message = f"computation '{name}' is not defined"
            elif j == ci:
                message = f"computation '{name}' calls itself"
            else:
                message = f"computation '{name}' is used before it is defined (in '{comp_name}')"
            found = re.search(r"%?" + re.escape(name) + r"(?![\w.\-])", written)
            column = value.start(1) + (found.start() if found else 0) - line_start + 1
            raise HloSyntaxError(message, line, column)


def _is_attribute_key(text: str, at: int) -> bool:
    """Whether the name starting at `at` is an attribute's: after `,` and blanks, and not
    inside a string."""
    i = at - 1
    while i >= 0 and text[i] in " \t\r\n":
        i -= 1
    if i < 0 or text[i] != ",":
        return False
    line_start = text.rfind("\n", 0, at) + 1
    return _OUTSIDE_STRINGS.match(text, line_start, at).end() == at


def _has_inline_callee(text: str, start: int = 0, end: int | None = None) -> bool:
    """`_INLINE_CALLEE.search(text, start, end)` found something. Over a whole file the
    regex (an alternation, so no literal to skip ahead by) runs at ~50 MB/s; finding each
    `name=` and looking at what follows is ~10x faster, and most files have none."""
    end = len(text) if end is None else end
    for name in COMPUTATION_ATTRIBUTES:
        key = name + "="
        i = text.find(key, start, end)
        while i >= 0:
            i += len(key)
            m = _SPACE_THEN_BRACE.match(text, i, end)
            if m is not None:
                return True
            i = text.find(key, i, end)
    return False

_LAYOUTS = re.compile(r"\{(?:[^{}]|\{[^{}]*\})*\}")


def _split_instruction(text: str, line: int, column: int) -> Instruction:
    """An Instruction from the text of one INSTRUCTION token that starts at line:column."""
    m = _cuts().parts.match(text)
    if m is None:  # cannot happen for text the INSTRUCTION terminal matched
        raise HloSyntaxError("malformed instruction", line, column)
    return _instruction_of(m, text[m.end():], line, column)


def _place(text: str, start: int, at: int, line: int, column: int) -> tuple[int, int]:
    """(line, column) of `text[at]`, when `text[start]` is at line:column."""
    newlines = text.count("\n", start, at)
    if not newlines:
        return line, column + at - start
    return line + newlines, at - text.rfind("\n", start, at)


def _instruction_of(m: re.Match[str], tail: str, line: int, column: int, operand_names=None) -> Instruction:
    """An Instruction from a match of `_Cuts.parts` (or `parts_line`) at line:column, with
    `tail`, its attribute text. `operand_names`: how to find the operand references in the
    operand list (`_operand_names`; a faster one where no operand can be a tuple element)."""
    root, name, shape_text, opcode, group = m.group(1, 2, 3, 4, 5)
    try:
        shape = parse_shape(shape_text)
    except ShapeError as e:
        raise HloSyntaxError(str(e), *_place(m.string, _start_of(m), m.start(3) + e.offset, line, column)) from None
    opcode = opcode.rstrip()
    literal = None
    parameter_number = None
    operands: list = []
    if opcode == "constant":
        literal = group[1:-1].strip()
        _check_literal(Token("LITERAL", group[1:-1], line=line, column=column + m.start(5) + 1 - _start_of(m)))
    elif opcode == "parameter":
        number = _PARAMETER_NUMBER.fullmatch(group, 1, len(group) - 1)
        if number is None:
            raise HloSyntaxError("expects a parameter number (N >= 0)",
                                 *_place(m.string, _start_of(m), m.start(5) + 1, line, column)) from None
        parameter_number = int(number.group(1))
    elif len(group) > 2:
        # Each operand ends in its name just before a comma or the closing parenthesis.
        inner = group[1:-1]
        if "{" in inner:
            inner = _LAYOUTS.sub("", inner)  # layouts hold digits and commas of their own
        operands = (operand_names or _operand_names)(inner)
    inst = Instruction(name.lstrip("%"), opcode, shape, operands, Attributes((), tail), line)
    inst.is_root = root is not None
    inst.literal = literal
    inst.parameter_number = parameter_number
    return inst


_PARAMETER_NUMBER = re.compile(r"\s*([0-9]+)\s*")


def _start_of(m: re.Match[str]) -> int:
    """Where the instruction of a `_Cuts.parts` match starts (at ROOT, else its name)."""
    return m.start(1) if m.group(1) is not None else m.start(2)


def _span_of(token, source: str | None) -> tuple[str, int, int]:
    """(text, start, end) of a token: a span of `source` when the token lies in it (bodies
    are most of a large file's bytes: not copied), else the token itself (inside an inline
    body, which is parsed as a text of its own)."""
    if source is not None and source.startswith(token, token.start_pos):
        return source, token.start_pos, token.start_pos + len(token)
    return str(token), 0, len(token)


def printed_parts(source: str, start: int, end: int, line: int, column: int):
    """(name, signature, body) of the computation as printed (the grammar's COMPUTATION
    terminal) that `source[start:end]` is, starting at `line`:`column`."""
    name_end, brace = _name_end_and_brace(source, start)
    signature = source[name_end:brace].strip()
    newlines = source.count("\n", start, brace)
    # Columns are 1-based: the brace's distance from the newline before it.
    body_column = brace - source.rfind("\n", start, brace) if newlines else column + brace - start
    return source[start:name_end], signature, BodyText(source, brace, end, line + newlines, body_column)


def _name_end_and_brace(source: str, start: int) -> tuple[int, int]:
    """Where the name of the computation printed at `start` ends, and its body's brace."""
    name_end = _WHITESPACE.search(source, start).start()
    return name_end, _BODY_OPEN.search(source, name_end).start()


def _operand_names(inner: str) -> list[str]:
    return _cuts().element_operand_names.findall(inner)


class BodyText:
    """A computation's body as one BODY token, cut into instructions. It is held as a span
    of the whole text, not a copy: bodies are most of a large file's bytes."""

    __slots__ = ("column", "end", "line", "source", "start")

    def __init__(self, source: str, start: int, end: int, line: int, column: int):
        self.source = source
        self.start = start
        """Where the body starts in `source` (the whole text; kept by hloscope.speed.cache)."""
        self.end = end
        self.line = line
        self.column = column
    @classmethod
    def of_token(cls, token, source: str | None) -> "BodyText":
        """The body that is `token` (a BODY): a span of `source` when the token lies in it,
        else of the token itself (as inside an inline body)."""
        return cls(*_span_of(token, source), token.line, token.column)

    @property
    def text(self) -> str:
        return self.source[self.start : self.end]

    def lines(self):
        """(instruction text, line, column) of each instruction, in order.

        The grammar's BODY terminal has checked that the body is a sequence of INSTRUCTION
        lines, so the instructions are cut where each one starts (a name, `=`, a shape at a
        line's start). A body holding inline computations is cut by the INSTRUCTION
        terminal itself, since their lines start that way too."""
        if _has_inline_callee(self.source, self.start, self.end):
            return self._exact_lines()
        text = self.text
        starts = [m.start() for m in _cuts().instruction_start.finditer(text)]
        if not starts or text.count("\n", 0, starts[0]) != 1:
            return self._exact_lines()  # the first instruction is not where a line starts one
        starts.append(len(text) - 1)  # the closing brace
        line = self.line + text.count("\n", 0, starts[0])
        pieces = []
        for k in range(len(starts) - 1):
            begin, end = starts[k], starts[k + 1]
            piece = text[begin:end]
            stripped = piece.lstrip(" \t")
            instruction = stripped.rstrip()
            if instruction[-1] == ",":
                # An attribute continued on the next line, which merely looks like the start
                # of an instruction (`outfeed_shape=(f32[2], ...)`): cut exactly instead.
                return self._exact_lines()
            pieces.append((instruction, line, len(piece) - len(stripped) + 1))
            line += piece.count("\n")
        return pieces

    def instructions(self) -> list[Instruction]:
        """The body's instructions, unlinked. A body as XLA prints it (one instruction per
        line) is cut by one regex pass over its lines; anything else goes through `lines()`.
        Never a body with an inline callee: the parse reads those itself (`Builder`)."""
        fast = self._instructions_by_line()
        if fast is not None:
            return fast
        pieces = self.lines()
        if not all(_cuts().parts.match(t) for t, _, _ in pieces):
            # A line that only looks like an instruction's start (inside a shape left open,
            # `a = f32[` then the next line): cut exactly, by the INSTRUCTION terminal.
            pieces = self._exact_lines()
        return [_split_instruction(t, ln, col) for t, ln, col in pieces]

    def _instructions_by_line(self) -> list[Instruction] | None:
        """One `parts_line` match per line, or None when the matches do not tile the body
        line by line (an instruction spanning lines, or text the pattern does not take)."""
        lines = self._line_matches()
        if lines is None:
            return None
        build, line = _instruction_of, self.line + 1
        # A body without a `#` writes no tuple element `t#i` (one search of the body, not one per line).
        plain = _cuts().operand_names.findall if self.source.find("#", self.start, self.end) < 0 else None
        return [build(m, tail, line + k, _start_of(m) - m.start() + 1, plain) for k, (m, tail) in enumerate(lines)]

    def _line_matches(self) -> list[tuple[re.Match[str], str]] | None:
        """Each instruction's `parts_line` match and attribute text, one per line; None when
        they do not tile the body so."""
        source, end = self.source, self.end - 1  # the closing brace
        pos = source.index("\n", self.start, end) + 1
        out = []
        for m in _cuts().parts_line.finditer(source, pos, end):
            if m.start() != pos:
                return None
            pos = m.end()
            tail = m.group(6)
            if tail and tail[-1] in " \t\r":
                tail = tail.rstrip()
            if tail.endswith(","):
                return None  # attributes continued on the next line
            out.append((m, tail))
        # Every line taken, each by one match: the body's newlines are one per instruction
        # and the one after its opening brace.
        if source[pos:end].strip(" \t") or source.count("\n", self.start, end) != len(out) + 1:
            return None
        return out

    def _exact_lines(self) -> list:
        return list(self._exact_line_iter())

    def _exact_line_iter(self):
        text = self.text
        match = _instruction_pattern().match
        pos = text.index("\n") + 1
        line = self.line + 1
        end = len(text) - 1  # the closing brace
        while True:
            start = pos
            while text[pos] in " \t":
                pos += 1
            if pos >= end:
                return
            m = match(text, pos)
            if m is None:  # cannot happen for text the BODY terminal matched
                raise HloSyntaxError("malformed instruction", line, pos - start + 1)
            yield m.group(0), line, pos - start + 1
            line += text.count("\n", pos, m.end())
            pos = text.index("\n", m.end()) + 1
            line += 1

    def read(self, computation, users: bool = True) -> tuple[list[Instruction], Instruction]:
        """(instructions, root) of `computation`'s body, linked (with `users`: each operand
        knows its users); raises the HloSyntaxError a full parse would report of it."""
        try:
            instructions = self.instructions()
            root = _link(instructions, computation.name, computation.line, users)
            check_result(computation.signature, root, computation.name, computation.line)
        except HloSyntaxError as e:
            module = computation.module
            # The whole text when the body is a span of it (the header's line too), else
            # the body placed at its line.
            whole = self.source.count("\n", 0, self.start) + 1 == self.line
            raise attach_source(e, self.source if whole else "\n" * (self.line - 1) + self.text,
                                 module.source_path if module and module.source_path else "<string>") from None
        return instructions, root

    def names(self) -> list[str]:
        """The instruction names, without reading the instructions."""
        return _NAME_AT_LINE_START.findall(self.source, self.start, self.end)

    def mentions(self, literals: tuple[str, ...]) -> bool:
        """Whether one of `literals` occurs in the body's text."""
        find, start, end = self.source.find, self.start, self.end
        return any(find(literal, start, end) >= 0 for literal in literals)

    def root_name(self) -> str | None:
        """The name the body's one ROOT line defines; None without one, or with two (a read
        reports it). A body holding no inline callee only (the parse reads those at once)."""
        m = _ROOT_LINE.search(self.source, self.start, self.end)
        if m is None or _ROOT_LINE.search(self.source, m.end(), self.end) is not None:
            return None
        return m.group(1)

    def instruction_named(self, name: str) -> Instruction | None:
        """The instruction `name`, cut from its line as a whole read would cut it, operands
        left as names (unlinked); None where its line does not hold it whole (continued on
        the next) or no line starts it. Names are found by their text: a body with a
        repeated name is read whole (`_finish_module` reads every body then)."""
        pos = self._line_of(name.lstrip("%"))
        if pos is None:
            return None
        m = _cuts().parts_line.match(self.source, pos, self.end)
        if m is None:
            return None
        tail = m.group(6).rstrip()
        end = m.end()
        next_line_starts = (_cuts().instruction_start.match(self.source, end, self.end)
                            or _CLOSING.match(self.source, end, self.end))
        if tail.endswith(",") or not next_line_starts:
            return None  # the instruction goes on past its line
        line = self.line + self.source.count("\n", self.start, pos)
        return _instruction_of(m, tail, line, _start_of(m) - pos + 1)

    def operations(self) -> list[tuple[str, str, list[str]]] | None:
        """`(name, opcode, operand names)` of every instruction in text order, cut as a whole
        read cuts them but with nothing else built (no shapes, attributes or links): what a
        question about the body's dataflow alone needs. A parameter's one "operand" is its
        number. None where the lines do not hold one instruction each."""
        lines = self._line_matches()
        if lines is None:
            return None
        out = []
        for m in lines:
            name, opcode, group = m[0].group(2, 4, 5)
            opcode = opcode.rstrip()
            if opcode == "parameter":
                operands = [group[1:-1].strip()]
            elif opcode == "constant" or len(group) <= 2:
                operands = []
            else:
                inner = group[1:-1]
                if "{" in inner:
                    inner = _LAYOUTS.sub("", inner)
                operands = [o.lstrip("%") for o in _operand_names(inner)]
            out.append((name.lstrip("%"), opcode, operands))
        return out

    def _line_of(self, name: str) -> int | None:
        """Where the line defining `name` starts: a line that starts an instruction (as
        `lines` cuts them) named `name`."""
        source, start, end = self.source, self.start, self.end
        starts = _cuts().instruction_start
        i = source.find(name, start, end)
        while i >= 0:
            line = source.rfind("\n", start, i) + 1
            if line > start:
                m = starts.match(source, line, end)
                if m is not None and m.end(1) == i + len(name) and m.group(1).lstrip("%") == name:
                    return line
            i = source.find(name, i + len(name), end)
        return None


_NAME_AT_LINE_START = re.compile(r"\n[ \t]*(?:ROOT[ \t]+)?%?([A-Za-z_][\w.\-]*)[ \t]*=")
_ROOT_LINE = re.compile(r"\n[ \t]*ROOT[ \t]+%?([A-Za-z_][\w.\-]*)[ \t]*=")
_CLOSING = re.compile(r"[ \t]*\}")


@functools.lru_cache(maxsize=1)
def _instruction_pattern() -> "re.Pattern[str]":
    return re.compile(_lark().get_terminal("INSTRUCTION").pattern.to_regexp())


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
            raise _error_at(op_token, f"{op.opcode} takes instructions as operands, not numbers"
                            if op.opcode != "parameter" else "parameter expects one number, parameter(N)")
        inst.parameter_number = op.operands[0]
        inst.operands = []
    return inst


def _error_at(token, message: str) -> HloSyntaxError:
    return HloSyntaxError(message, getattr(token, "line", 0) or 0, getattr(token, "column", 0) or 0)


def _finish_computation(name_token, instructions, is_entry, attrs, signature) -> Computation:
    name = str(name_token).lstrip("%")
    if not instructions:
        raise _error_at(name_token, f"computation '{name}' has no instructions")
    root = _link(instructions, name, name_token.line)
    check_result(signature, root, name, name_token.line)
    comp = Computation(name, instructions, is_entry, root, attrs, name_token.line, signature)
    for inst in instructions:
        inst.computation = comp
    return comp


def _link(instructions, name: str, line: int, users: bool = True) -> Instruction:
    """Resolve operand names within one computation, fill users (unless `users` is False: a
    check that keeps nothing), find the root; and check what XLA's parser checks of a
    computation and of each instruction (hloscope.text.instruction_checks). As in XLA,
    every operand and control predecessor is defined before its use, which also rules out
    cycles."""
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
        if attributes.mentions("control-predecessors"):
            control = attributes.get("control-predecessors")
            if control is not None:
                _check_control_predecessors(inst, control, by_name, instructions)
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
    instruction it was made for, and without `_with_element_marks`' marks."""
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
        return _error_at(ref, message)
    return HloSyntaxError(message, user.line, 0, hint=str(ref))


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
        return _error_at(ref, message)
    # From an INSTRUCTION token: the column is found in the source line later.
    return HloSyntaxError(message, inst.line, 0, hint=str(ref))


def _check_control_predecessors(inst, value: str, by_name, instructions) -> None:
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


def _finish_module(name, attr_tokens, comps, tables, known: list[NameFacts] | None = None,
                   unread: UnreadBodies | None = None) -> Module:
    seen: set[str] = set()
    entry = None
    for comp in comps:
        if comp.text_name in seen:
            raise HloSyntaxError(f"computation already exists: {comp.name}", comp.line, 1)
        seen.add(comp.text_name)
        if comp.is_entry:
            if entry is not None:
                raise HloSyntaxError("expects only one ENTRY", comp.line, 1)
            entry = comp
    if entry is None:
        # XLA takes the last computation as the entry when none is marked.
        entry = comps[-1]
        entry.is_entry = True
    seen_attributes: set[str] = set()
    for token in attr_tokens:
        key = str(token).lstrip(", \t\r\n").partition("=")[0]
        if key in seen_attributes:  # XLA: "attribute ... already exists"
            raise HloSyntaxError(f"attribute {key} already exists", *_place(str(token), 0, str(token).find(key),
                                                                           token.line, token.column))
        seen_attributes.add(key)
        _check_module_attribute(token)
    uniquify_computation_names(comps)
    body_of = unread.body_of if unread is not None else _no_body
    if any(body_of(c) is not None for c in comps) and renames_needed(known or [NameFacts.of(comps, body_of)]):
        for c in comps:
            c.instructions  # read every body: names are made unique in text order
    if all(body_of(c) is None for c in comps) and renames_needed([NameFacts.of(comps, body_of)]):
        uniquify_instruction_names(comps)
        if unread is not None:
            for c in comps:
                unread.forget(c)  # renamed: the text no longer says what they are
    if name is None:
        # XLA names a module read without a header after its entry computation.
        name = f"module_{entry.name}"
    module = Module(name, Attributes([str(t) for t in attr_tokens]), comps, entry, tables)
    if body_of(entry) is None:
        check_aliases(module, entry.root, attr_tokens)
    if unread is not None:
        unread.finish(module)  # the entry's aliases are checked with its body, when it is
    return module


def _no_body(computation: Computation) -> None:
    return None


def check_aliases(module: Module, root: Instruction, attr_tokens=None, first_body: "BodyText | None" = None) -> None:
    """Each output index input_output_alias names is an index of the entry's result shape,
    as XLA's parser checks it (HloInputOutputAliasConfig::SetUpAlias). XLA does not check
    the parameter side when it reads a module (its verifier does): neither does this; the
    analyses take an alias whose parameter is missing as no alias. The error points into
    the header's attribute: its token when `attr_tokens` are given, else in the text before
    `first_body` (a module read lazily)."""
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
                  first_body: "BodyText | None" = None) -> HloSyntaxError:
    """An error `offset` characters into the value of the header attribute `written`."""
    for token in attr_tokens or ():
        text = str(token)
        at = text.find(written)
        if at >= 0:
            at += len(written) + offset
            return HloSyntaxError(message, *_place(text, 0, at, token.line, token.column))
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


def _check_module_attribute(token) -> None:
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
        raise _error_at(token, f"expects '{{' to start {name}")
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


def _describe_expected(expected) -> str:
    words = sorted({_TOKEN_WORDS.get(t, t.lower()) for t in expected})
    if len(words) > 6:
        return ""
    return ", expected " + " or ".join(words)


_UNKNOWN_TYPE = re.compile(r"([a-z][a-z0-9]*)[ \t]*\[")


def _syntax_error(err: lark.exceptions.UnexpectedInput, text: str) -> HloSyntaxError:
    line, column = err.line, err.column
    if isinstance(err, lark.exceptions.UnexpectedCharacters):
        ch = text[err.pos_in_stream] if err.pos_in_stream < len(text) else ""
        message = f"unexpected character {ch!r}" + _describe_expected(err.allowed or ())
    elif isinstance(err, lark.exceptions.UnexpectedEOF):
        message = "unexpected end of file" + _describe_expected(err.expected)
        line = text.count("\n") + 1
        column = len(text) - text.rfind("\n")
    else:
        tok = err.token
        if tok.type == "$END":
            message = "unexpected end of file" + _describe_expected(err.expected)
            line = text.count("\n") + 1
            column = len(text) - text.rfind("\n")
        else:
            shown = str(tok).strip().split("\n")[0]
            if len(shown) > 40:
                shown = shown[:37] + "..."
            bad_type = _UNKNOWN_TYPE.match(str(tok))
            if "ARRAY_SHAPE" in err.expected and bad_type:
                message = f"unknown element type {bad_type.group(1)!r}"
            elif tok.type in err.expected or tok.type in ("NAME", "OPCODE", "ARRAY_SHAPE", "ATTRIBUTE", "ATTR_KEY"):
                message = f"unexpected {_TOKEN_WORDS.get(tok.type, tok.type.lower())} {shown!r}"
                message += _describe_expected(err.expected)
            else:
                # A token Lark found only with a lexer of every terminal: name the text alone.
                message = f"unexpected {shown!r}" + _describe_expected(err.expected)
            # A coarse attribute token starts at its comma; point at the name after it.
            if tok.type in ("ATTRIBUTE", "ATTR_KEY"):
                skipped = len(tok) - len(tok.lstrip(", \t\r\n"))
                pre = str(tok)[:skipped]
                if "\n" in pre:
                    line += pre.count("\n")
                    column = len(pre) - pre.rfind("\n")
                else:
                    column += skipped
    return HloSyntaxError(message, line or 1, column or 1)


def attach_source(err: HloSyntaxError, text: str, filename: str) -> HloSyntaxError:
    """`err` with the source line it points at and `filename`; a column still unknown (0)
    is found in the text from the error's hint."""
    lines = text.split("\n")
    line, column = err.line, err.column
    if not column and (err.hint or err.hint_after) and 0 < line <= len(lines):
        start = sum(len(lines[k]) + 1 for k in range(line - 1))
        line, column = _locate(err, text, start)
    source_line = lines[line - 1] if 0 < line <= len(lines) else ""
    return HloSyntaxError(err.message, line, column or 1, source_line, filename)


# A closed `/*...*/` comment within one instruction (`/*index=5*/` in an operand list).
_OPERAND_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def _locate(err: HloSyntaxError, text: str, start: int) -> tuple[int, int]:
    """Where `err`'s hint is in the instruction whose line starts at `start`: an operand's
    name in its operand list (comments such as `/*index=5*/` skipped), or what follows an
    attribute's `name=` (or the opcode's `(`). The line alone when it is not found."""
    first = start + len(text[start:start + 4096]) - len(text[start:start + 4096].lstrip(" \t"))
    parts = _cuts().parts.match(text, first)
    pos = None
    if err.hint_after is None:
        lo = parts.start(5) if parts else text.find("(", start)
        hi = parts.end(5) if parts else text.find("\n", max(lo, start))
        if lo >= 0:
            segment = _OPERAND_COMMENT.sub(lambda c: " " * len(c.group()), text[lo:hi if hi >= 0 else None])
            found = _name_pattern(err.hint).search(segment)
            pos = lo + found.start() if found else None
    else:
        begin = parts.start(4) if parts else start  # from the opcode on: `name(` or `key=` follows
        at = text.find(err.hint_after, begin, begin + (1 << 20))
        if at >= 0:
            at += len(err.hint_after)
            if err.hint:
                found = _name_pattern(err.hint).search(text, at, at + (1 << 16))
                pos = found.start() if found else None
            else:
                pos = at + err.hint_offset
    if pos is None:
        return err.line, 1
    return _place(text, start, pos, err.line, 1)


def _name_pattern(name: str) -> re.Pattern[str]:
    """A name as a whole word, with or without its `%`."""
    return re.compile(r"(?<![\w.\-%])%?" + re.escape(name.lstrip("%")) + r"(?![\w.\-])")


# ─── computations as printed, found without the parser ────────────────────────────────
#
# A large text is mostly computations printed one after another. Each is one COMPUTATION
# token, which the grammar's own terminal matches in one regex match; the parser's work per
# token (lexer, LALR tables, callbacks) then costs as much again. A lazy parse reads the
# text up to the end of its first computation with the parser (the module's header and
# tables), and the rest computation by computation with the terminal alone: at each place
# the parser's lexer would try COMPUTATION first (its highest priority) and, where it
# matches, take exactly that token; only whitespace may lie between two (what the grammar
# ignores, comments aside). Anything else anywhere in the rest, or an error in the head,
# and the parser reads the whole text, reporting what it reports.

def up_to_names(text: str) -> str | None:
    """`text` with each `%name` written `%`: what bodies alike up to names have in common;
    None when a `%` in it starts no name (two texts would then share it that differ in more
    than names: `f(%a)` and `f(%)`)."""
    key, names = PERCENT_NAME.subn("%", text)
    return key if text.count("%") == names else None


# A body's closing brace, then whitespace up to what may start the next computation.
_AFTER_FIRST = re.compile(r"\n\}[ \t]*\r?\n\s*(?=(?:ENTRY\s+)?%?[A-Za-z_])")
_WHITESPACE_RUN = re.compile(r"\s*")


@functools.lru_cache(maxsize=1)
def _printed_computation_pattern() -> re.Pattern[str]:
    """`[ENTRY] COMPUTATION`, then the whitespace after it (the grammar ignores `\\s+`)."""
    return re.compile(r"(ENTRY\s+)?(" + _lark().get_terminal("COMPUTATION").pattern.to_regexp() + r")\s*")


def _parse_printed(parser: lark.Lark, text: str, start: str, unfinished: bool):
    """What `parser.parse(text, start=start)` gives when the text is computations as printed
    after its head (see above); None where it is not, or may not be."""
    builder = parser.options.transformer
    if start == "computations":
        return _printed_computations(text, _WHITESPACE_RUN.match(text).end(), 1, builder.progress, builder.unread)
    if start != "start":
        return None
    cut = _AFTER_FIRST.search(text)
    if cut is None:
        return None
    # Progress is reported from the rest on: were the whole text parsed after all, it would
    # otherwise go back.
    progress, was_unfinished = builder.progress, builder.unfinished
    builder.progress, builder.unfinished = None, True
    try:
        (head,) = parser.parse(text[: cut.end()], start="start")
    except (lark.exceptions.LarkError, HloSyntaxError, ValueError):
        return None  # the whole text's parse says what is wrong
    finally:
        builder.progress, builder.unfinished = progress, was_unfinished
    rest = _printed_computations(text, cut.end(), text.count("\n", 0, cut.end()) + 1, progress, builder.unread)
    if rest is None:
        return None
    whole = Unfinished(head.name, head.attr_tokens, head.computations + rest, head.tables)
    return [whole] if unfinished else [finish_module(whole, [], unread=builder.unread)]


# Most computations of a large module repeat an earlier one up to `%name`s (a model's layers,
# fused alike). A body whose text is one the pattern matched before, up to its `%name`s (and
# in which, as in that one, every `%` starts a name), is taken without matching it again:
# the pattern matches it too, ending at the same place. A name stands where the pattern
# takes a whole name (an instruction's, an operand's) or inside a run it takes whatever its
# characters (an attribute value, a string, a literal), where any name is as good as
# another; and the body ends at its first line that is `}` (no instruction line starts so),
# as the body it repeats does, which could not otherwise repeat it. Its header is matched as
# the pattern's head, which a body must follow (tests/test_parser.py's edges, test_fuzz.py).
_BODY_CLOSE = re.compile(r"\n[ \t]*\}")


@functools.lru_cache(maxsize=1)
def _printed_head_pattern() -> re.Pattern[str]:
    """`_printed_computation_pattern` up to its body: `[ENTRY] NAME SIGNATURE`, then a body's
    opening brace (COMPUTATION is `NAME [ \\t]+ SIGNATURE [ \\t]* BODY`)."""
    name, signature = (_lark().get_terminal(t).pattern.to_regexp() for t in ("NAME", "SIGNATURE"))
    return re.compile(r"(ENTRY\s+)?(" + name + r"[ \t]+" + signature + r"[ \t]*)(?=\{[ \t]*\r?\n)")


def _printed_computations(text: str, pos: int, line: int, progress, unread: UnreadBodies) -> list[Computation] | None:
    """The computations printed in `text[pos:]` (`line`: the line at `pos`), each found by
    one match of `_printed_computation_pattern`, or as a body it matched before up to names
    (above); None unless they tile it to its end."""
    match = _printed_computation_pattern().match
    count, rfind = text.count, text.rfind
    matched: dict[str, object] = {}  # the bodies the pattern matched, each up to its names: a token
    comps = []
    while pos < len(text):
        found = _matched_before(text, pos, matched) if matched else None
        by_pattern = found is None
        if by_pattern:
            m = match(text, pos)
            if m is None:
                return None
            found = (m.start(2), m.end(2), m.end(), m.start(1) >= 0, None)
        begin, end, after, entry, alike = found
        line += count("\n", pos, begin)
        name, signature, body = printed_parts(text, begin, end, line, begin - rfind("\n", 0, begin))
        if by_pattern:
            key = up_to_names(text[body.start:end])
            if key is not None:
                alike = matched.setdefault(key, object())
        comps.append(unread.computation(name.lstrip("%"), entry, Attributes([]), line, signature, body, alike))
        if progress is not None:
            progress(end)
        line += count("\n", begin, after)
        pos = after
    return comps


def _matched_before(text: str, pos: int, matched: dict[str, object]) -> tuple[int, int, int, bool, object] | None:
    """(where the computation at `pos` begins and ends, where the whitespace after it ends,
    whether it is the entry, the token of the body it repeats) when the pattern's head
    matches there and its body is one of `matched` up to names (see above); else None."""
    h = _printed_head_pattern().match(text, pos)
    if h is None:
        return None
    brace = h.end()
    if _name_end_and_brace(text, h.start(2))[1] != brace:
        return None  # where `printed_parts` would not find the body: the pattern decides
    close = _BODY_CLOSE.search(text, brace)
    key = up_to_names(text[brace:close.end()]) if close is not None else None
    alike = matched.get(key) if key is not None else None
    if alike is None:
        return None
    return h.start(2), close.end(), _WHITESPACE_RUN.match(text, close.end()).end(), h.start(1) >= 0, alike


def parse_part(text: str, filename: str = "<string>", *, unread: UnreadBodies | None = None, progress=None,
               start: str = "start", source: str | None = None, unfinished: bool = False,
               references: list | None = None):
    """What the grammar's `start` symbol reads from `text`: a list of modules (Unfinished
    ones with `unfinished`), or of computations for `computations`. With `unread`, printed
    bodies are left unread, as spans of `source` when `text` is a prefix of it, else of
    `text`. Whole modules have their references to computations checked
    (`check_references`); a part's are added to `references` for the caller to check once
    the module is whole."""
    return parse_with(_lark(), text, filename, unread=unread, progress=progress, start=start, source=source,
                      unfinished=unfinished, references=references)


def parse_with(parser: lark.Lark, text: str, filename: str = "<string>", *, unread: UnreadBodies | None = None,
               progress=None, start: str = "start", source: str | None = None, unfinished: bool = False,
               references: list | None = None):
    """`parse_part` with `parser`, a Lark LALR parser of the specification (or of the fast
    grammar) whose transformer is a `Builder`: errors become HloSyntaxError with the line,
    column and source line."""
    builder = parser.options.transformer
    builder.progress = progress
    builder.pending_inline = []
    builder.source = source if source is not None else text
    builder.unread = unread
    builder.unfinished = unfinished
    # One scan for the computation-naming attributes (`to_apply=`, `calls=`, ...) finds both
    # the computations written inline and the references to check.
    hits = callee_references(text)
    builder.inline_possible = any(_SPACE_THEN_BRACE.match(text, at) for at, _ in hits)
    try:
        nul = text.find("\0")
        if nul >= 0:  # XLA reads text up to its first NUL; no HLO holds one
            raise HloSyntaxError("a NUL character: binary data, not HLO text", text.count("\n", 0, nul) + 1,
                                 nul - text.rfind("\n", 0, nul))
        parsed = None
        if unread is not None and not builder.inline_possible and parser is _lark():
            parsed = _parse_printed(parser, text, start, unfinished)
        if parsed is None:
            parsed = parser.parse(text, start=start)
        if references is not None:
            references.extend(hits)
        elif start == "start" and not unfinished:
            check_references(parsed, text, hits)
    except lark.exceptions.UnexpectedInput as e:
        raise attach_source(_syntax_error(e, text), text, filename) from None
    except lark.exceptions.VisitError as e:  # an error raised inside a builder callback
        inner = e.orig_exc
        if isinstance(inner, HloSyntaxError):
            raise attach_source(inner, text, filename) from None
        raise
    except HloSyntaxError as e:
        raise attach_source(e, text, filename) from None
    finally:
        builder.progress = None
        builder.source = None
        builder.unread = None
        builder.unfinished = False
    if filename != "<string>" and start == "start" and not unfinished:
        for m in parsed:
            m.source_path = filename
    return parsed
