"""Attribute values read token by token, as XLA's lexer (xla/hlo/parser/hlo_lexer.cc) reads them.

Most attribute values are kept as text; the few hloscope checks when a module is read are
decoded with this lexer, so that what they accept is what XLA accepts: whitespace and
comments between any two tokens, integers as XLA lexes them (up to 2^64 - 1, read as
int64 the way XLA reads them), strings in either quote, `name=` as one token.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..errors import HloscopeError


class AttributeValueError(HloscopeError, ValueError):
    """An attribute's value is not what XLA's parser reads for that attribute; `offset` is
    where in the value text it goes wrong."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset


_UINT64 = 1 << 64
_INT64 = 1 << 63


def xla_int(digits: str) -> int | None:
    """The int64 XLA's lexer reads from `-?[0-9]+`: a non-negative number up to 2^64 - 1 is
    read as its bits (18446744073709551615 is -1), a negative one down to -2^63; None past
    those (XLA: a lexing error)."""
    value = int(digits)
    if value < 0:
        return value if value >= -_INT64 else None
    if value >= _UINT64:
        return None
    return value - _UINT64 if value >= _INT64 else value


class Token(NamedTuple):
    kind: str
    """`int`, `string`, `ident`, `attr` (`name=`), `name` (`name:`), `percent` (`%name`),
    `leq` (`<=`), a punctuation character, or `end`."""
    text: str
    """An int's digits, a string's content (escapes resolved), an ident's or name's text."""
    at: int
    """Where the token starts in the value text."""


# One token at a time, whitespace and comments skipped before it. An integer is only an
# integer when no float (`1.5`, `1e5`), `2x2` or `1_2` pattern of XLA's lexer goes on from
# its digits (`1E(` is an integer and a name).
_TOKEN = re.compile(r"""
    (?:\s+|/\*.*?\*/|//[^\n]*)*
    (?:
      (?P<int>-?[0-9]+)(?![0-9.]|[eE][+-]?[0-9]|x[0-9]|_-?[0-9])
    | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<word>[A-Za-z_][A-Za-z0-9_.\-]*)(?P<after>[=:])?
    | %(?P<percent>[A-Za-z_][A-Za-z0-9_.\-]*)
    | (?P<leq><=)
    | (?P<punct>[\[\]{}(),=:?*\#+~])
    | (?P<end>\Z)
    )""", re.S | re.X)


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body
    return body.encode("latin-1", "backslashreplace").decode("unicode_escape")


def tokens(text: str) -> list[Token]:
    """The tokens of `text`, ending with an `end` token; AttributeValueError at the first
    character XLA's lexer cannot read."""
    out: list[Token] = []
    pos = 0
    match = _TOKEN.match
    while True:
        m = match(text, pos)
        if m is None or m.end() == m.start() and m.lastgroup is None:
            at = pos + len(text[pos:]) - len(text[pos:].lstrip())
            raise AttributeValueError(f"unexpected {text[at:at + 10]!r}", at)
        kind = m.lastgroup
        if kind == "after":
            kind = "word"
        start = m.start(kind)
        if kind == "int":
            out.append(Token("int", m.group("int"), start))
        elif kind == "str":
            s = m.group("str")
            out.append(Token("string", _unescape(s[1:-1]), start))
        elif kind == "word":
            after = m.group("after")
            word = m.group("word")
            out.append(Token({"=": "attr", ":": "name"}.get(after or "", "ident"), word, start))
        elif kind == "percent":
            out.append(Token("percent", m.group("percent"), start - 1))
        elif kind == "leq":
            out.append(Token("leq", "<=", start))
        elif kind == "punct":
            out.append(Token(m.group("punct"), m.group("punct"), start))
        else:
            out.append(Token("end", "", start))
            return out
        pos = m.end()


class Reader:
    """A cursor over the tokens of one value, with XLA's small parsing steps."""

    __slots__ = ("pos", "text", "toks")

    def __init__(self, text: str):
        self.text = text
        self.toks = tokens(text)
        self.pos = 0

    @property
    def kind(self) -> str:
        return self.toks[self.pos].kind

    @property
    def token(self) -> Token:
        return self.toks[self.pos]

    def error(self, message: str) -> AttributeValueError:
        return AttributeValueError(message, self.token.at)

    def next(self) -> Token:
        t = self.toks[self.pos]
        if t.kind != "end":
            self.pos += 1
        return t

    def eat(self, kind: str) -> bool:
        if self.kind == kind:
            self.pos += 1
            return True
        return False

    def expect(self, kind: str, message: str) -> Token:
        if self.kind != kind:
            raise self.error(message)
        return self.next()

    def int64(self, what: str = "an integer") -> int:
        t = self.token
        value = xla_int(t.text) if t.kind == "int" else None
        if value is None:
            shown = t.text if t.kind != "end" else "the end"
            raise self.error(f"expects {what}, not {shown[:20]!r}")
        self.pos += 1
        return value

    def int_list(self, open_: str, close: str, what: str) -> list[int]:
        """`open int (, int)* close` or `open close` (XLA's ParseInt64List)."""
        self.expect(open_, f"expects '{open_}'")
        out = []
        if self.kind != close:
            out.append(self.int64(what))
            while self.eat(","):
                out.append(self.int64(what))
        self.expect(close, f"expects '{close}' to end the list")
        return out

    def nonempty_int_list(self, open_: str, close: str, what: str) -> list[int]:
        """`open int (, int)* close` (XLA's do-while loops over ints)."""
        self.expect(open_, f"expects '{open_}'")
        out = [self.int64(what)]
        while self.eat(","):
            out.append(self.int64(what))
        self.expect(close, f"expects '{close}' to end the list")
        return out

    def at_end(self) -> bool:
        return self.kind == "end"


def int_lists(text: str, what: str) -> list[list[int]]:
    """`{{0,1},{2,3}}`: XLA's ParseInt64ListList (`{}` and `{{}}` included)."""
    r = Reader(text.strip())
    r.expect("{", "expects '{'")
    out: list[list[int]] = []
    if r.kind != "}":
        out.append(r.int_list("{", "}", what))
        while r.eat(","):
            out.append(r.int_list("{", "}", what))
    r.expect("}", "expects '}' to end the list")
    if not r.at_end():
        raise r.error(f"unexpected {r.token.text[:20] or r.kind!r} after the list")
    return out


def name_list(text: str) -> list[str]:
    """`{a, %b}`: XLA's ParseInstructionNames (at least one name, `%` optional)."""
    r = Reader(text.strip())
    r.expect("{", "expects '{' at the beginning of instruction name list")
    out = []
    while True:
        t = r.token
        if t.kind in ("ident", "percent", "name"):  # XLA's ParseName: `a`, `%a`, `a:`
            out.append(t.text)
        else:
            raise r.error("expects an instruction name")
        r.next()
        if not r.eat(","):
            break
    r.expect("}", "expects '}' at the end of instruction name list")
    if not r.at_end():
        raise r.error(f"unexpected {r.token.text[:20] or r.kind!r} after the names")
    return out
