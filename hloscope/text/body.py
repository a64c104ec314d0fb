"""Cutting a computation's printed text: its name, signature and body (`printed_parts`), and the
body, a span of the text left uncut until asked (bodies are most of a large file), into
instructions, single instructions and operations (`BodyText`). One cutter does all of it,
cutting where the grammar's INSTRUCTION terminal does."""

from __future__ import annotations

import re

from ..errors import HloSyntaxError
from ..ir.attributes import COMPUTATION_ATTRIBUTES, Attributes, writes_any_key
from ..ir.module import Instruction
from ..ir.shape import ShapeError, parse_shape
from .checks import check_literal, check_result
from .cuts import LAYOUTS, cuts, start_of
from .link import link
from .location import attach_source, place


class BodyText:
    """A computation's body as one BODY token, a span of the whole text (not a copy), cut
    into instructions on demand.

    The grammar's BODY terminal has checked that the body is a sequence of INSTRUCTION
    lines; one cutter (`_step`, walked by `_cut`) takes them one at a time, each where the
    INSTRUCTION terminal ends. It first tries one match of `Cuts.instruction_line`: the
    parts (name, shape, opcode, operand list), then the attributes the grammar's ATTRIBUTE
    terminal takes first, possessively, as INSTRUCTION takes them, then the line's end;
    where that does not match, the INSTRUCTION terminal itself. tests/test_parser.py holds
    the cutter to the terminal on every fixture and corpus body, and on instructions that
    go on past their line."""

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
        return cls(*span_of(token, source), token.line, token.column)

    @property
    def text(self) -> str:
        return self.source[self.start : self.end]

    # ─── the cutter ───────────────────────────────────────────────────────────────────

    def _cut(self, make) -> list:
        """`make(parts match, attribute text, line, column)` of each instruction, in order:
        `_step` from the first line on (its first match written out here, as most
        instructions take it)."""
        source, end = self.source, self.end
        match, count = cuts().instruction_line.match, source.count
        pos = source.index("\n", self.start, end) + 1
        line = self.line + 1
        out = []
        while True:
            m = match(source, pos, end)
            if m is not None:
                # The column of `start_of(m)`.
                out.append(make(m, m.group(6), line, (m.start(2) if m.start(1) < 0 else m.start(1)) - pos + 1))
                after = m.end()
            else:
                found = self._by_terminal(pos)
                if found is None:
                    first = _BLANKS.match(source, pos, end).end()
                    if first >= end - 1:  # the closing brace
                        return out
                    # Cannot happen for text the BODY terminal matched.
                    raise HloSyntaxError("malformed instruction", line, first - pos + 1)
                m, tail, column, after = found
                out.append(make(m, tail, line, column))
            line += count("\n", pos, after)
            pos = after

    def _step(self, pos: int):
        """The instruction on the line that starts at `pos`: (a match of `Cuts.parts` or
        `Cuts.instruction_line` in `source`, its attribute text, its column, where the next
        line starts); None where no instruction starts there."""
        m = cuts().instruction_line.match(self.source, pos, self.end)
        if m is not None:
            return m, m.group(6), start_of(m) - pos + 1, m.end()
        return self._by_terminal(pos)

    def _by_terminal(self, pos: int):
        """`_step` where `Cuts.instruction_line` does not match: the INSTRUCTION terminal."""
        source, end = self.source, self.end
        first = _BLANKS.match(source, pos, end).end()
        whole = cuts().instruction.match(source, first, end)
        if whole is None:
            return None
        m = cuts().parts.match(source, first, whole.end())
        after = source.find("\n", whole.end(), end)
        if m is None or after < 0:
            return None
        return m, source[m.end() : whole.end()], first - pos + 1, after + 1

    # ─── what is cut ──────────────────────────────────────────────────────────────────

    def instructions(self) -> list[Instruction]:
        """The body's instructions, unlinked. Never a body with an inline callee: the parse
        reads those itself (`Builder`), from `instruction_texts`."""
        # A body without a `#` writes no tuple element `t#i`, and one that writes no
        # computation attribute calls nothing (one search of the body each, not one per line).
        names = cuts().operand_names.findall if self.source.find("#", self.start, self.end) < 0 else None
        called = None if writes_any_key(self.source, COMPUTATION_ATTRIBUTES, self.start, self.end) else ()
        if names is None and called is None:
            return self._cut(instruction_of)
        return self._cut(lambda m, tail, line, column: instruction_of(m, tail, line, column, names, called))

    def instruction_texts(self) -> list[tuple[str, int, int]]:
        """(text, line, column) of each instruction, in order: what an INSTRUCTION token holds."""
        source = self.source
        return self._cut(lambda m, tail, line, column: (source[start_of(m) : m.end(5)] + tail, line, column))

    def operations(self) -> list[tuple[str, str, list[str]]]:
        """`(name, opcode, operand names)` of every instruction in text order, cut as a whole
        read cuts them but with nothing else built (no shapes, attributes or links): what a
        question about the body's dataflow alone needs. A parameter's one "operand" is its
        number."""
        return self.operations_marked()[0]

    def operations_marked(self) -> tuple[list[tuple[str, str, list[str]]], bool]:
        """(`operations()`, whether every name they hold is written with its `%`): then a
        body alike up to its `%name`s, one name for one, has the same operations renamed."""
        out = []
        marked = True
        for m in self._cut(lambda m, tail, line, column: m):
            name, opcode, group = m.group(2, 4, 5)
            opcode = opcode.rstrip()
            if opcode == "parameter":
                operands = [group[1:-1].strip()]
            elif opcode == "constant" or len(group) <= 2:
                operands = []
            else:
                inner = group[1:-1]
                if "{" in inner:
                    inner = LAYOUTS.sub("", inner)
                written = operand_names(inner)
                operands = [o.lstrip("%") for o in written]
                marked = marked and all(o[0] == "%" for o in written)
            marked = marked and name[0] == "%"
            out.append((name.lstrip("%"), opcode, operands))
        return out, marked

    def instruction_named(self, name: str) -> Instruction | None:
        """The instruction `name`, cut from its line as a whole read would cut it, operands
        left as names (unlinked); None where no line starts it. Names are found by their
        text: a body with a repeated name is read whole (`finish_module` reads every body
        then)."""
        pos = self._line_of(name.lstrip("%"))
        step = self._step(pos) if pos is not None else None
        if step is None:
            return None
        m, tail, column, _ = step
        return instruction_of(m, tail, self.line + self.source.count("\n", self.start, pos), column)

    def read(self, computation, users: bool = True) -> tuple[list[Instruction], Instruction]:
        """(instructions, root) of `computation`'s body, linked (with `users`: each operand
        knows its users); raises the HloSyntaxError a full parse would report of it."""
        try:
            instructions = self.instructions()
            root = link(instructions, computation.name, computation.line, users, self.may_write_controls())
            check_result(computation.signature, root, computation.name, computation.line)
        except HloSyntaxError as e:
            module = computation.module
            # The whole text when the body is a span of it (the header's line too), else
            # the body placed at its line.
            whole = self.source.count("\n", 0, self.start) + 1 == self.line
            raise attach_source(e, self.source if whole else "\n" * (self.line - 1) + self.text,
                                module.source_path if module and module.source_path else "<string>") from None
        return instructions, root

    # ─── looks at the text, without cutting ───────────────────────────────────────────

    def names(self) -> list[str]:
        """The instruction names, without reading the instructions."""
        return _NAME_AT_LINE_START.findall(self.source, self.start, self.end)

    def mentions(self, literals: tuple[str, ...]) -> bool:
        """Whether one of `literals` occurs in the body's text."""
        find, start, end = self.source.find, self.start, self.end
        return any(find(literal, start, end) >= 0 for literal in literals)

    def may_write_controls(self) -> bool:
        """False only when no instruction of the body writes control-predecessors (`link`
        then asks none of them)."""
        return self.mentions(_CONTROLS)

    def root_name(self) -> str | None:
        """The name the body's one ROOT line defines; None without one, or with two (a read
        reports it). A body holding no inline callee only (the parse reads those at once)."""
        m = _ROOT_LINE.search(self.source, self.start, self.end)
        if m is None or _ROOT_LINE.search(self.source, m.end(), self.end) is not None:
            return None
        return m.group(1)

    def _line_of(self, name: str) -> int | None:
        """Where the line defining `name` starts: a line that starts an instruction named
        `name`."""
        source, start, end = self.source, self.start, self.end
        starts = cuts().instruction_start
        i = source.find(name, start, end)
        while i >= 0:
            line = source.rfind("\n", start, i) + 1
            if line > start:
                m = starts.match(source, line, end)
                if m is not None and m.end(1) == i + len(name) and m.group(1).lstrip("%") == name:
                    return line
            i = source.find(name, i + len(name), end)
        return None


_CONTROLS = ("control-predecessors",)
_BLANKS = re.compile(r"[ \t]*")
_NAME_AT_LINE_START = re.compile(r"\n[ \t]*(?:ROOT[ \t]+)?%?([A-Za-z_][\w.\-]*)[ \t]*=")
_ROOT_LINE = re.compile(r"\n[ \t]*ROOT[ \t]+%?([A-Za-z_][\w.\-]*)[ \t]*=")


# ─── single instructions ──────────────────────────────────────────────────────────────

def split_instruction(text: str, line: int, column: int) -> Instruction:
    """An Instruction from the text of one INSTRUCTION token that starts at line:column."""
    m = cuts().parts.match(text)
    if m is None:  # cannot happen for text the INSTRUCTION terminal matched
        raise HloSyntaxError("malformed instruction", line, column)
    return instruction_of(m, text[m.end():], line, column)


def instruction_of(m: re.Match[str], tail: str, line: int, column: int, names=None,
                   called: tuple[str, ...] | None = None) -> Instruction:
    """An Instruction from a match of `Cuts.parts` (or `Cuts.instruction_line`) at
    line:column, with `tail`, its attribute text. `names`: how to find the operand
    references in the operand list (`operand_names`; a faster one where no operand can be
    a tuple element). `called`: the computations it calls, when known (else found on use)."""
    root, name, shape_text, opcode, group = m.group(1, 2, 3, 4, 5)
    try:
        shape = parse_shape(shape_text)
    except ShapeError as e:
        raise HloSyntaxError(str(e), *place(m.string, start_of(m), m.start(3) + e.offset, line, column)) from None
    opcode = opcode.rstrip()
    literal = None
    parameter_number = None
    operands: list = []
    if opcode == "constant":
        literal = group[1:-1].strip()
        check_literal(group[1:-1], line, column + m.start(5) + 1 - start_of(m))
    elif opcode == "parameter":
        number = _PARAMETER_NUMBER.fullmatch(group, 1, len(group) - 1)
        if number is None:
            raise HloSyntaxError("expects a parameter number (N >= 0)",
                                 *place(m.string, start_of(m), m.start(5) + 1, line, column)) from None
        parameter_number = int(number.group(1))
    elif len(group) > 2:
        # Each operand ends in its name just before a comma or the closing parenthesis.
        inner = group[1:-1]
        if "{" in inner:
            inner = LAYOUTS.sub("", inner)  # layouts hold digits and commas of their own
        operands = (names or operand_names)(inner)
    inst = Instruction(name.lstrip("%"), opcode, shape, operands, Attributes((), tail), line, called)
    inst.is_root = root is not None
    inst.literal = literal
    inst.parameter_number = parameter_number
    return inst


_PARAMETER_NUMBER = re.compile(r"\s*([0-9]+)\s*")


def operand_names(inner: str) -> list[str]:
    """The operand references in an operand list, its layouts removed (`t#i` kept whole)."""
    return cuts().element_operand_names.findall(inner)


# ─── a computation as printed ─────────────────────────────────────────────────────────

def printed_parts(source: str, start: int, end: int, line: int, column: int):
    """(name, signature, body) of the computation as printed (the grammar's COMPUTATION
    terminal) that `source[start:end]` is, starting at `line`:`column`."""
    name_end, brace = name_end_and_brace(source, start)
    signature = source[name_end:brace].strip()
    newlines = source.count("\n", start, brace)
    # Columns are 1-based: the brace's distance from the newline before it.
    body_column = brace - source.rfind("\n", start, brace) if newlines else column + brace - start
    return source[start:name_end], signature, BodyText(source, brace, end, line + newlines, body_column)


def name_end_and_brace(source: str, start: int) -> tuple[int, int]:
    """Where the name of the computation printed at `start` ends, and its body's brace."""
    name_end = _WHITESPACE.search(source, start).start()
    return name_end, _BODY_OPEN.search(source, name_end).start()


_WHITESPACE = re.compile(r"\s")
_BODY_OPEN = re.compile(r"\{[ \t]*\r?\n")


def span_of(token, source: str | None) -> tuple[str, int, int]:
    """(text, start, end) of a token: a span of `source` when the token lies in it (bodies
    are most of a large file's bytes: not copied), else the token itself (inside an inline
    body, which is parsed as a text of its own)."""
    if source is not None and source.startswith(token, token.start_pos):
        return source, token.start_pos, token.start_pos + len(token)
    return str(token), 0, len(token)
