"""Where an error is, in words a person reads: a Lark error made an HloSyntaxError with its
line, column and what was expected, and an error found after the parse placed in its source
line (`attach_source`), so that every bad input reads `FILE:LINE:COL: error: ...`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import HloSyntaxError
from .cuts import cuts

if TYPE_CHECKING:
    import lark

# Token names as people would say them, for error messages.
TOKEN_WORDS = {
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


def describe_expected(expected) -> str:
    """`, expected a or b` for a few expected tokens; nothing for many (a list too long to help)."""
    words = sorted({TOKEN_WORDS.get(t, t.lower()) for t in expected})
    if len(words) > 6:
        return ""
    return ", expected " + " or ".join(words)


_UNKNOWN_TYPE = re.compile(r"([a-z][a-z0-9]*)[ \t]*\[")


def syntax_error(err: lark.exceptions.UnexpectedInput, text: str) -> HloSyntaxError:
    """The HloSyntaxError for Lark's `err` in `text`: what was found, what was expected, where."""
    import lark  # loaded: it raised `err`

    line, column = err.line, err.column
    if isinstance(err, lark.exceptions.UnexpectedCharacters):
        ch = text[err.pos_in_stream] if err.pos_in_stream < len(text) else ""
        message = f"unexpected character {ch!r}" + describe_expected(err.allowed or ())
    elif isinstance(err, lark.exceptions.UnexpectedEOF):
        message = "unexpected end of file" + describe_expected(err.expected)
        line = text.count("\n") + 1
        column = len(text) - text.rfind("\n")
    else:
        tok = err.token
        if tok.type == "$END":
            message = "unexpected end of file" + describe_expected(err.expected)
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
                message = f"unexpected {TOKEN_WORDS.get(tok.type, tok.type.lower())} {shown!r}"
                message += describe_expected(err.expected)
            else:
                # A token Lark found only with a lexer of every terminal: name the text alone.
                message = f"unexpected {shown!r}" + describe_expected(err.expected)
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
        line, column = locate(err, text, start)
    source_line = lines[line - 1] if 0 < line <= len(lines) else ""
    return HloSyntaxError(err.message, line, column or 1, source_line, filename)


# A closed `/*...*/` comment within one instruction (`/*index=5*/` in an operand list).
_OPERAND_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def locate(err: HloSyntaxError, text: str, start: int) -> tuple[int, int]:
    """Where `err`'s hint is in the instruction whose line starts at `start`: an operand's
    name in its operand list (comments such as `/*index=5*/` skipped), or what follows an
    attribute's `name=` (or the opcode's `(`). The line alone when it is not found."""
    first = start + len(text[start:start + 4096]) - len(text[start:start + 4096].lstrip(" \t"))
    parts = cuts().parts.match(text, first)
    pos = None
    if err.hint_after is None:
        lo = parts.start(5) if parts else text.find("(", start)
        hi = parts.end(5) if parts else text.find("\n", max(lo, start))
        if lo >= 0:
            segment = _OPERAND_COMMENT.sub(lambda c: " " * len(c.group()), text[lo:hi if hi >= 0 else None])
            found = name_pattern(err.hint).search(segment)
            pos = lo + found.start() if found else None
    else:
        begin = parts.start(4) if parts else start  # from the opcode on: `name(` or `key=` follows
        at = text.find(err.hint_after, begin, begin + (1 << 20))
        if at >= 0:
            at += len(err.hint_after)
            if err.hint:
                found = name_pattern(err.hint).search(text, at, at + (1 << 16))
                pos = found.start() if found else None
            else:
                pos = at + err.hint_offset
    if pos is None:
        return err.line, 1
    return place(text, start, pos, err.line, 1)


def name_pattern(name: str) -> re.Pattern[str]:
    """A name as a whole word, with or without its `%`."""
    return re.compile(r"(?<![\w.\-%])%?" + re.escape(name.lstrip("%")) + r"(?![\w.\-])")


def place(text: str, start: int, at: int, line: int, column: int) -> tuple[int, int]:
    """(line, column) of `text[at]`, when `text[start]` is at line:column."""
    newlines = text.count("\n", start, at)
    if not newlines:
        return line, column + at - start
    return line + newlines, at - text.rfind("\n", start, at)


def shift(err: HloSyntaxError, token, offset: int) -> HloSyntaxError:
    """Move an error found inside an attribute's value to its place in the whole text."""
    prefix = str(token)[:offset]
    line = token.line + prefix.count("\n")
    column = (len(prefix) - prefix.rfind("\n")) if "\n" in prefix else token.column + offset
    if err.line > 1:
        line, column = line + err.line - 1, err.column
    else:
        column += err.column - 1
    return HloSyntaxError(err.message, line, column)


def error_at(token, message: str) -> HloSyntaxError:
    """An error at `token` (line and column unknown, 0, for a token that has none)."""
    return HloSyntaxError(message, getattr(token, "line", 0) or 0, getattr(token, "column", 0) or 0)

