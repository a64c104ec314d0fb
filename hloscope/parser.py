"""HLO text → IR, with grammars/hlo.lark and Lark's LALR parser.

The builder below is embedded in the parser (`transformer=`), so no parse tree is built:
each rule's callback makes IR objects directly. Operand names are resolved once a whole
computation is read, the way XLA's parser resolves them (within the computation).
"""

from __future__ import annotations

import functools
import os
from importlib import resources
from pathlib import Path

import lark
from lark import Token, Transformer

from . import opcodes
from .attributes import Attributes
from .errors import HloSyntaxError
from .ir import Computation, Instruction, Module
from .shape import UNKNOWN, Shape, ShapeError, buffer_shape, parse_array_shape, tuple_shape

GRAMMAR_NAME = "hlo.lark"


def grammar_path() -> Path:
    """The grammar file: inside the installed package, else the source tree's `grammars/`."""
    packaged = resources.files("hloscope").joinpath("grammars", GRAMMAR_NAME)
    if packaged.is_file():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "grammars" / GRAMMAR_NAME


@functools.lru_cache(maxsize=1)
def _lark() -> lark.Lark:
    return lark.Lark(
        grammar_path().read_text(),
        parser="lalr",
        lexer="contextual",
        transformer=_Builder(),
        maybe_placeholders=False,
    )


# Token names as people would say them, for error messages.
_TOKEN_WORDS = {
    "NAME": "a name",
    "OPCODE": "an opcode",
    "CONSTANT": "an opcode",
    "ARRAY_SHAPE": "a shape",
    "ATTRIBUTE": "an attribute",
    "INT": "an integer",
    "STRING": "a string",
    "GROUP": "a braced value",
    "LITERAL": "a literal",
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

    __slots__ = ("opcode", "operands", "literal", "nested", "token")

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


class _Builder(Transformer):
    """Rule callbacks that build the IR while Lark reduces (no parse tree)."""

    def __init__(self):
        super().__init__(visit_tokens=False)

    # shapes

    @staticmethod
    def _shape(item) -> Shape:
        if isinstance(item, Shape):
            return item
        try:
            return parse_array_shape(str(item))
        except ShapeError as e:
            raise HloSyntaxError(str(e), item.line, item.column) from None

    def tuple_shape(self, children):
        return tuple_shape([self._shape(c) for c in children])

    def buffer_shape(self, children):
        return buffer_shape(self._shape(children[-1]))

    # operands

    def typed_operand(self, children):
        return children[1]

    def bare_operand(self, children):
        return children[0]

    def int_operand(self, children):
        return int(children[0])

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
            else:
                operands.append(o)
        return _Op(token[:-1].rstrip(), operands, None, nested, token)

    def constant(self, children):
        token, literal = children
        return _Op("constant", [], str(literal).strip(), [], token)

    # instructions and computations

    def instruction(self, children):
        is_root = children[0].__class__ is Token and children[0].type == "ROOT"
        if is_root:
            children = children[1:]
        name = children[0]
        if children[1].__class__ is _Op:
            shape, op, attrs = UNKNOWN, children[1], children[2:]
        else:
            shape, op, attrs = self._shape(children[1]), children[2], children[3:]
        inst = _instruction(name, op.token, shape, op, attrs)
        inst.is_root = is_root
        if op.nested:
            return op.nested + [inst]
        return inst

    def parameter(self, children):
        return (str(children[0]).lstrip("%"), self._shape(children[-1]))

    def signature(self, children):
        return ([c for c in children[:-1]], self._shape(children[-1]))

    def computation(self, children):
        is_entry = False
        i = 0
        if children[0].__class__ is Token and children[0].type == "ENTRY":
            is_entry = True
            i = 1
        name_token = children[i]
        i += 1
        signature = None
        if i < len(children) and isinstance(children[i], tuple):
            signature = children[i]
            i += 1
        instructions: list[Instruction] = []
        attrs = []
        for c in children[i:]:
            if c.__class__ is Instruction:
                instructions.append(c)
            elif c.__class__ is list:
                instructions.extend(c)
            else:
                attrs.append(str(c))
        return _finish_computation(name_token, instructions, is_entry, Attributes(attrs), signature)

    def table_row(self, children):
        return (int(children[0]), str(children[1]))

    def table(self, children):
        return (str(children[0]), dict(children[1:]))

    def module_body(self, children):
        tables, comps = {}, []
        for c in children:
            if c.__class__ is Computation:
                comps.append(c)
            else:
                tables[c[0]] = c[1]
        return (tables, comps)

    def module(self, children):
        name = str(children[0]).lstrip("%")
        tables, comps = children[-1]
        return _finish_module(name, Attributes([str(c) for c in children[1:-1]]), comps, tables)

    def headerless(self, children):
        tables, comps = children[0]
        return [_finish_module(None, Attributes(()), comps, tables)]

    def start(self, children):
        return children


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
    elif op.operands and op.operands[0].__class__ is int:
        inst.parameter_number = op.operands[0]
        inst.operands = [o for o in op.operands if o.__class__ is not int]
    return inst


def _error_at(token, message: str) -> HloSyntaxError:
    return HloSyntaxError(message, getattr(token, "line", 0) or 0, getattr(token, "column", 0) or 0)


def _finish_computation(name_token, instructions, is_entry, attrs, signature) -> Computation:
    by_name: dict[str, Instruction] = {}
    root = None
    for inst in instructions:
        if inst.nested:
            continue  # anonymous: named by the module-wide uniquer, never referred to by name
        if inst.name in by_name:
            raise HloSyntaxError(f"instruction '{inst.name}' is defined twice", inst.line, 1)
        by_name[inst.name] = inst
        if inst.is_root:
            if root is not None:
                raise HloSyntaxError("one computation should have only one ROOT", inst.line, 1)
            root = inst
    for inst in instructions:
        ops = inst.operands
        if not ops:
            continue
        resolved = []
        for ref in ops:
            if ref.__class__ is Instruction:
                resolved.append(ref)
                continue
            target = by_name.get(ref.lstrip("%"))
            if target is None:
                raise _error_at(ref, f"instruction '{ref.lstrip('%')}' is not defined")
            resolved.append(target)
        inst.operands = resolved
        for o in resolved:
            o.users.append(inst)
    if not instructions:
        raise _error_at(name_token, f"computation '{str(name_token).lstrip('%')}' has no instructions")
    if root is None:
        root = instructions[-1]
        root.is_root = True
    comp = Computation(str(name_token).lstrip("%"), instructions, is_entry, root, attrs, name_token.line, signature)
    for inst in instructions:
        inst.computation = comp
    return comp


def _finish_module(name, attrs, comps, tables) -> Module:
    seen: set[str] = set()
    entry = None
    for comp in comps:
        if comp.name in seen:
            raise HloSyntaxError(f"computation already exists: {comp.name}", comp.line, 1)
        seen.add(comp.name)
        if comp.is_entry:
            if entry is not None:
                raise HloSyntaxError("expects only one ENTRY", comp.line, 1)
            entry = comp
    if entry is None:
        # XLA takes the last computation as the entry when none is marked.
        entry = comps[-1]
        entry.is_entry = True
    _uniquify_instruction_names(comps)
    if name is None:
        # XLA names a module read without a header after its entry computation.
        name = f"module_{entry.name}"
    return Module(name, attrs, comps, entry, tables)


class _SequentialIds:
    """The numeric suffixes taken for one name root (XLA's SequentialIdGenerator)."""

    __slots__ = ("used", "next")

    def __init__(self):
        self.used: set[int] = set()
        self.next = 0

    def register(self, wanted: int) -> int:
        if wanted not in self.used:
            self.used.add(wanted)
            return wanted
        while self.next in self.used:
            self.next += 1
        self.used.add(self.next)
        self.next += 1
        return self.next - 1


def _uniquify_instruction_names(comps) -> None:
    """Rename instructions whose names repeat across the module, as XLA's parser does.

    Instruction names are unique per module in XLA: a second `x` becomes `x.1`, and a
    written `x.1` that is then taken becomes the next free suffix. Computations are visited
    in text order, instructions in text order; the first holder keeps its name.
    """
    roots: dict[str, _SequentialIds] = {}

    def register(name: str) -> str:
        root, sep, suffix = name.rpartition(".")
        if sep and root and suffix.isdigit():
            wanted, has_suffix = int(suffix), True
        else:
            root, wanted, has_suffix = name, 0, False
        ids = roots.get(root)
        if ids is None:
            ids = roots[root] = _SequentialIds()
        got = ids.register(wanted)
        if got != wanted or (got == 0 and has_suffix and suffix != "0"):
            return f"{root}.{got}"
        return name

    for comp in comps:
        # Async sugar (`call-start`, `reduce-scatter-start`, ...) makes XLA build a wrapped
        # computation while it reads the enclosing one; its names are taken first.
        for inst in comp.instructions:
            op = opcodes.info(inst.opcode)
            if op.async_role == "start" and op.canonical == "async-start" and op.wrapped:
                for _ in inst.operands:
                    register("async_param")
                register(op.wrapped)
        for inst in comp.instructions:
            inst.name = register(inst.name)


def _describe_expected(expected) -> str:
    words = sorted({_TOKEN_WORDS.get(t, t.lower()) for t in expected})
    if len(words) > 6:
        return ""
    return ", expected " + " or ".join(words)


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
            shown = str(tok)
            if len(shown) > 40:
                shown = shown[:37] + "..."
            message = f"unexpected {_TOKEN_WORDS.get(tok.type, tok.type.lower())} {shown.strip()!r}"
            message += _describe_expected(err.expected)
            # A coarse attribute token starts at its comma; point at the name after it.
            if tok.type == "ATTRIBUTE":
                skipped = len(tok) - len(tok.lstrip(", \t\r\n"))
                pre = str(tok)[:skipped]
                if "\n" in pre:
                    line += pre.count("\n")
                    column = len(pre) - pre.rfind("\n")
                else:
                    column += skipped
    return HloSyntaxError(message, line or 1, column or 1)


def _attach_source(err: HloSyntaxError, text: str, filename: str) -> HloSyntaxError:
    lines = text.split("\n")
    source_line = lines[err.line - 1] if 0 < err.line <= len(lines) else ""
    return HloSyntaxError(err.message, err.line, err.column, source_line, filename)


def parse_all(text: str, filename: str = "<string>") -> list[Module]:
    """Parse HLO text holding one or more modules. Raises HloSyntaxError."""
    try:
        modules = _lark().parse(text)
    except lark.exceptions.UnexpectedInput as e:
        raise _attach_source(_syntax_error(e, text), text, filename) from None
    except lark.exceptions.VisitError as e:  # an error raised inside a builder callback
        inner = e.orig_exc
        if isinstance(inner, HloSyntaxError):
            raise _attach_source(inner, text, filename) from None
        raise
    except HloSyntaxError as e:
        raise _attach_source(e, text, filename) from None
    if filename != "<string>":
        for m in modules:
            m.source_path = filename
    return modules


def parse(text: str, filename: str = "<string>") -> Module:
    """Parse HLO text holding exactly one module (the first, if there are several)."""
    return parse_all(text, filename)[0]


def load_all(path: str | os.PathLike) -> list[Module]:
    """Read a file (plain or .gz) and parse every module in it."""
    path = os.fspath(path)
    if path.endswith(".gz"):
        import gzip

        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            text = f.read()
    else:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    return parse_all(text, path)


def load(path: str | os.PathLike) -> Module:
    """Read a file and parse its (first) module."""
    return load_all(path)[0]
