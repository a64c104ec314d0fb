"""The printed-computations fast path: a lazy parse reads a large text's computations,
printed one after another, each with one match of the grammar's COMPUTATION terminal (or
as a body matched before, up to names) instead of the parser, whose work per token costs
as much again. The parse falls back to the parser wherever the text leaves that form."""

from __future__ import annotations

import functools
import re

import lark
from lark import Token

from .. import patterns
from ..errors import HloSyntaxError
from ..ir.attributes import NO_ATTRIBUTES
from ..ir.module import Computation
from ..ir.structure import PERCENT_NAME
from .body import name_end_and_brace, printed_parts
from .builder import computation_read_now
from .modules import Unfinished, finish_module
from .unread import UnreadBodies

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


class _Patterns:
    """A computation as printed, with the parser's own terminals."""

    def __init__(self, parser: lark.Lark):
        def terminal(name: str) -> str:
            return parser.get_terminal(name).pattern.to_regexp()

        # `[ENTRY] COMPUTATION`, then the whitespace after it (the grammar ignores `\s+`).
        self.computation = patterns.compiled(r"(ENTRY\s+)?(" + terminal("COMPUTATION") + r")\s*")
        # The same up to its body: `[ENTRY] NAME SIGNATURE`, then a body's opening brace
        # (COMPUTATION is `NAME [ \t]+ SIGNATURE [ \t]* BODY`).
        self.head = patterns.compiled(r"(ENTRY\s+)?(" + terminal("NAME") + r"[ \t]+" + terminal("SIGNATURE")
                               + r"[ \t]*)(?=\{[ \t]*\r?\n)")


@functools.lru_cache(maxsize=1)
def _patterns(parser: lark.Lark) -> _Patterns:
    return _Patterns(parser)


def parse_printed(parser: lark.Lark, text: str, start: str, unfinished: bool):
    """What `parser.parse(text, start=start)` gives when the text is computations as printed
    after its head (see above); None where it is not, or may not be."""
    builder = parser.options.transformer
    if start == "computations":
        return _printed_computations(_patterns(parser), text, _WHITESPACE_RUN.match(text).end(), 1, builder.progress,
                                     builder.unread)
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
    rest = _printed_computations(_patterns(parser), text, cut.end(), text.count("\n", 0, cut.end()) + 1, progress,
                                 builder.unread)
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


def _printed_computations(patterns: _Patterns, text: str, pos: int, line: int, progress,
                          unread: UnreadBodies | None) -> list[Computation] | None:
    """The computations printed in `text[pos:]` (`line`: the line at `pos`), each found by
    one match of `patterns.computation`, or as a body it matched before up to names
    (above); None unless they tile it to its end. With `unread`, their bodies are left
    unread; without, each is read once all are found, in text order, as the parser reads
    them (it reads a computation once the token after it is found: the text's first
    mistake of form is its error, before a mistake inside an earlier body)."""
    tiles = _tiles(patterns, text, pos, line, progress if unread is not None else None)
    if tiles is None:
        return None
    comps = []
    for name, entry, line, column, signature, body, alike, end in tiles:
        if unread is not None:
            comps.append(unread.computation(name.lstrip("%"), entry, NO_ATTRIBUTES, line, signature, body, alike))
            continue
        token = Token("NAME", name, line=line, column=column)
        comps.append(computation_read_now(token, signature, body, entry))
        if progress is not None:
            progress(end)
    return comps


def _tiles(patterns: _Patterns, text: str, pos: int, line: int, progress) -> list[tuple] | None:
    """(name, is_entry, line, column, signature, body, alike, end) of each computation that
    `_printed_computations` finds, bodies uncut; None unless they tile the text's rest."""
    match = patterns.computation.match
    count, rfind = text.count, text.rfind
    matched: dict[str, object] = {}  # the bodies the pattern matched, each up to its names: a token
    tiles = []
    while pos < len(text):
        found, span, key = _matched_before(patterns.head, text, pos, matched) if matched else (None, None, None)
        by_pattern = found is None
        if by_pattern:
            m = match(text, pos)
            if m is None:
                return None
            found = (m.start(2), m.end(2), m.end(), m.start(1) >= 0, None)
        begin, end, after, entry, alike = found
        line += count("\n", pos, begin)
        column = begin - rfind("\n", 0, begin)
        name, signature, body = printed_parts(text, begin, end, line, column)
        if by_pattern:
            if span != (body.start, end):  # the body's key, unless found for the same span
                key = up_to_names(text[body.start:end])
            if key is not None:
                alike = matched.setdefault(key, object())
        tiles.append((name, entry, line, column, signature, body, alike, end))
        if progress is not None:
            progress(end)
        line += count("\n", begin, after)
        pos = after
    return tiles


def _matched_before(head: re.Pattern[str], text: str, pos: int, matched: dict[str, object]):
    """(found, span, key): `found` is (where the computation at `pos` begins and ends, where
    the whitespace after it ends, whether it is the entry, the token of the body it repeats)
    when the pattern's `head` matches there and its body is one of `matched` up to names
    (see above), else None; `span` (start, end) and `key` are the body's and its text up to
    names where they were found (None, None where not)."""
    h = head.match(text, pos)
    if h is None:
        return None, None, None
    brace = h.end()
    if name_end_and_brace(text, h.start(2))[1] != brace:
        return None, None, None  # where `printed_parts` would not find the body: the pattern decides
    close = _BODY_CLOSE.search(text, brace)
    if close is None:
        return None, None, None
    key = up_to_names(text[brace:close.end()])
    alike = matched.get(key) if key is not None else None
    if alike is None:
        return None, (brace, close.end()), key
    return (h.start(2), close.end(), _WHITESPACE_RUN.match(text, close.end()).end(), h.start(1) >= 0, alike), None, None
