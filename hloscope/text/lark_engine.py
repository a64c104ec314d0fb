"""HLO text → IR with the grammar's specification alone: the reference engine.

`grammars/hlo.lark` is read by Lark's LALR parser as it is, with none of the fast engine's
composite tokens (grammars/hlo_fast.lark), so every instruction goes through the grammar's
rules: name, shape, opcode, operands, each attribute's key and value. The IR is built by the
fast engine's own builder (hloscope.text.builder.Builder), linked and named the same way: one
builder, two grammars. Several times slower than the default engine; it is there to show
(tests/test_engines.py) that the specification alone describes what hloscope reads.
"""

from __future__ import annotations

import functools

import lark

from .. import grammar
from ..ir.module import Module
from .builder import Builder
from .parser import parse_with

START = ["start", "inline_body", "computations"]


@functools.lru_cache(maxsize=1)
def reference_parser() -> lark.Lark:
    """A Lark LALR parser of the specification alone, building the IR as it reduces (and
    reading computations written inline with the specification too)."""
    return lark.Lark(
        grammar.spec_text(),
        cache=grammar.lark_cache_file("reference"),
        parser="lalr",
        lexer="contextual",
        start=START,
        transformer=Builder(reference_parser),
        maybe_placeholders=False,
    )


def parse_all(text: str, filename: str = "<string>") -> list[Module]:
    """Every module in `text`, read with the specification alone. Raises HloSyntaxError,
    with the line and column, as the fast engine does."""
    return parse_with(reference_parser(), text, filename)
