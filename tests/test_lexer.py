"""The lexer whose scanners share the long terminals (hloscope.text.lexer) lexes as Lark's own:
the same trees, token for token (type, text, place), and the same errors."""

from __future__ import annotations

import functools

import lark
import pytest

from hloscope import grammar
from hloscope.text import lexer

from .conftest import corpus_texts_or_none, fixture_texts

_STARTS = ["start", "inline_body", "computations"]


@functools.lru_cache(maxsize=1)
def _larks() -> tuple[lark.Lark, lark.Lark]:
    """Lark's contextual lexer and ours, on the fast grammar, without a transformer."""
    common = {"parser": "lalr", "lexer": "contextual", "start": _STARTS, "maybe_placeholders": False}
    return (lark.Lark(grammar.fast_text(), **common),
            lark.Lark(grammar.fast_text(), **common, _plugins=lexer.PLUGINS))


def _outcome(parser: lark.Lark, text: str):
    """Every token of the tree (type, text, place), or the error (type, place, what was expected)."""
    try:
        tree = parser.parse(text, start="start")
    except lark.exceptions.UnexpectedInput as e:
        expected = getattr(e, "expected", None) or getattr(e, "allowed", None)
        return type(e).__name__, e.line, e.column, sorted(expected or ())
    return [(t.type, str(t), t.start_pos, t.end_pos, t.line, t.column) for t in tree.scan_values(lambda _: True)]


@functools.lru_cache(maxsize=1)
def _texts() -> list[str]:
    texts = fixture_texts()
    # Fixtures broken at a few places (a character dropped; a stray `@`, `}` or one no
    # terminal starts with): the errors' places and expected sets, or the trees where the
    # grammar still reads them.
    broken = []
    for text in texts[:4]:
        for at in (len(text) // 7, len(text) // 3, len(text) // 2):
            broken += [text[:at] + text[at + 1:]] + [text[:at] + stray + text[at:] for stray in (" @", "}", "\x07")]
    # Characters no terminal of the state (or of the grammar) starts with.
    small = "HloModule m, is_scheduled=true\n\nENTRY %e () -> f32[] {\n  ROOT %c = f32[] constant(1)\n}\n"
    broken += ["HloModule m\n\x07", small + "\x07", small.replace("ROOT", "ROOT \x07"), small.replace("()", "(\x07)")]
    corpus = corpus_texts_or_none()
    return texts + broken + corpus[::97]


def test_our_lexer_compiles_long_terminals_once_and_short_ones_together():
    """The split it relies on: a long terminal is an expression of its own, shared by
    every scanner that tries it; the runs between stay Lark's alternations."""
    ours = _larks()[1]
    scanners = [lx.scanner for lx in ours.parser.lexer.lexers.values()]
    alone = {}
    for scanner in scanners:
        for mre, name in scanner._mres:
            if name is not None:
                assert len(mre.pattern) >= lexer.LONG_PATTERN
                assert alone.setdefault(name, mre) is mre
    assert {"COMPUTATION", "INSTRUCTION", "ATTRIBUTE"} <= set(alone)


@pytest.mark.parametrize("index", range(len(_texts())))
def test_our_lexer_reads_what_larks_reads(index):
    text = _texts()[index]
    theirs, ours = _larks()
    assert _outcome(ours, text) == _outcome(theirs, text)
