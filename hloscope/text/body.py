"""Cutting a computation's printed text: its name, signature and body (`printed_parts`), and
the body into instructions, single instructions and operations (`BodyText`).

A body is most of a large file's bytes and is often never read whole, so it is kept as a
span of the text and cut when something asks."""

from __future__ import annotations

import re

from lark import Token

from ..errors import HloSyntaxError
from ..ir.attributes import Attributes
from ..ir.module import Instruction
from ..ir.shape import ShapeError, parse_shape
from .checks import check_literal, check_result
from .cuts import LAYOUTS, cuts, start_of
from .link import link
from .location import attach_source, place
from .references import has_inline_callee


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
        return cls(*span_of(token, source), token.line, token.column)

    @property
    def text(self) -> str:
        return self.source[self.start : self.end]

    def lines(self):
        """(instruction text, line, column) of each instruction, in order.

        The grammar's BODY terminal has checked that the body is a sequence of INSTRUCTION
        lines, so the instructions are cut where each one starts (a name, `=`, a shape at a
        line's start). A body holding inline computations is cut by the INSTRUCTION
        terminal itself, since their lines start that way too."""
        if has_inline_callee(self.source, self.start, self.end):
            return self._exact_lines()
        text = self.text
        starts = [m.start() for m in cuts().instruction_start.finditer(text)]
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
        if not all(cuts().parts.match(t) for t, _, _ in pieces):
            # A line that only looks like an instruction's start (inside a shape left open,
            # `a = f32[` then the next line): cut exactly, by the INSTRUCTION terminal.
            pieces = self._exact_lines()
        return [split_instruction(t, ln, col) for t, ln, col in pieces]

    def _instructions_by_line(self) -> list[Instruction] | None:
        """One `parts_line` match per line, or None when the matches do not tile the body
        line by line (an instruction spanning lines, or text the pattern does not take)."""
        lines = self._line_matches()
        if lines is None:
            return None
        build, line = instruction_of, self.line + 1
        # A body without a `#` writes no tuple element `t#i` (one search of the body, not one per line).
        plain = cuts().operand_names.findall if self.source.find("#", self.start, self.end) < 0 else None
        return [build(m, tail, line + k, start_of(m) - m.start() + 1, plain) for k, (m, tail) in enumerate(lines)]

    def _line_matches(self) -> list[tuple[re.Match[str], str]] | None:
        """Each instruction's `parts_line` match and attribute text, one per line; None when
        they do not tile the body so."""
        source, end = self.source, self.end - 1  # the closing brace
        pos = source.index("\n", self.start, end) + 1
        out = []
        for m in cuts().parts_line.finditer(source, pos, end):
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
        match = cuts().instruction.match
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
            root = link(instructions, computation.name, computation.line, users)
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
        repeated name is read whole (`finish_module` reads every body then)."""
        pos = self._line_of(name.lstrip("%"))
        if pos is None:
            return None
        m = cuts().parts_line.match(self.source, pos, self.end)
        if m is None:
            return None
        tail = m.group(6).rstrip()
        end = m.end()
        next_line_starts = (cuts().instruction_start.match(self.source, end, self.end)
                            or _CLOSING.match(self.source, end, self.end))
        if tail.endswith(",") or not next_line_starts:
            return None  # the instruction goes on past its line
        line = self.line + self.source.count("\n", self.start, pos)
        return instruction_of(m, tail, line, start_of(m) - pos + 1)

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
                    inner = LAYOUTS.sub("", inner)
                operands = [o.lstrip("%") for o in operand_names(inner)]
            out.append((name.lstrip("%"), opcode, operands))
        return out

    def _line_of(self, name: str) -> int | None:
        """Where the line defining `name` starts: a line that starts an instruction (as
        `lines` cuts them) named `name`."""
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


_CLOSING = re.compile(r"[ \t]*\}")

_NAME_AT_LINE_START = re.compile(r"\n[ \t]*(?:ROOT[ \t]+)?%?([A-Za-z_][\w.\-]*)[ \t]*=")
_ROOT_LINE = re.compile(r"\n[ \t]*ROOT[ \t]+%?([A-Za-z_][\w.\-]*)[ \t]*=")


# ─── single instructions ──────────────────────────────────────────────────────────────

def split_instruction(text: str, line: int, column: int) -> Instruction:
    """An Instruction from the text of one INSTRUCTION token that starts at line:column."""
    m = cuts().parts.match(text)
    if m is None:  # cannot happen for text the INSTRUCTION terminal matched
        raise HloSyntaxError("malformed instruction", line, column)
    return instruction_of(m, text[m.end():], line, column)


def instruction_of(m: re.Match[str], tail: str, line: int, column: int, names=None) -> Instruction:
    """An Instruction from a match of `Cuts.parts` (or `Cuts.parts_line`) at
    line:column, with `tail`, its attribute text. `names`: how to find the operand
    references in the operand list (`operand_names`; a faster one where no operand can be
    a tuple element)."""
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
        check_literal(Token("LITERAL", group[1:-1], line=line, column=column + m.start(5) + 1 - start_of(m)))
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
    inst = Instruction(name.lstrip("%"), opcode, shape, operands, Attributes((), tail), line)
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
