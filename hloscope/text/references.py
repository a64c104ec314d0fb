"""Where the text names computations: the computation-naming attributes (`calls=`,
`to_apply=`, ...) found by plain search, each reference checked as XLA's parser checks it,
and computations written inline in place of a name. One scan of the text serves both."""

from __future__ import annotations

import bisect
import re

from ..errors import HloSyntaxError
from ..ir.attributes import COMPUTATION_ATTRIBUTES, decode_names

INLINE_NAME = "_ inline "
"""How the name of a computation written inline starts (no name in a text can)."""

INLINE_CALLEE = re.compile(r"(?:" + "|".join(COMPUTATION_ATTRIBUTES) + r")=\s*\{")
"""A computation-naming attribute whose value is a computation written inline."""

SPACE_THEN_BRACE = re.compile(r"\s*\{")
"""What follows `name=` where the value is a computation written inline."""


def callee_references(text: str) -> list[tuple[int, int]]:
    """`(where the value starts, k)` for every `COMPUTATION_ATTRIBUTES[k]=` in `text`, in text
    order: candidates, `check_references` decides which are attributes. A search per name,
    for the reason `has_inline_callee` gives."""
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


def has_inline_callee(text: str, start: int = 0, end: int | None = None) -> bool:
    """`INLINE_CALLEE.search(text, start, end)` found something. Over a whole file the
    regex (an alternation, so no literal to skip ahead by) runs at ~50 MB/s; finding each
    `name=` and looking at what follows is ~10x faster, and most files have none."""
    end = len(text) if end is None else end
    for name in COMPUTATION_ATTRIBUTES:
        key = name + "="
        i = text.find(key, start, end)
        while i >= 0:
            i += len(key)
            m = SPACE_THEN_BRACE.match(text, i, end)
            if m is not None:
                return True
            i = text.find(key, i, end)
    return False


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
            if not comp.text_name.startswith(INLINE_NAME):
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
