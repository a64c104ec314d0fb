"""HLO text → IR with the fast engine: the grammar (grammars/hlo.lark, then hlo_fast.lark) read
by Lark's LALR parser with the IR builder embedded, and `parse_part`, the entry point every
parse goes through. Around the parser, errors get their source line, references to
computations are checked once per text, and a lazy parse takes computations as printed
without the parser where it can; bodies left unread it knows only as the `UnreadBodies` it is
handed (hloscope.speed)."""

from __future__ import annotations

import functools

import lark

from .. import grammar
from ..errors import HloSyntaxError
from . import lexer
from .builder import Builder
from .location import attach_source, syntax_error
from .printed import parse_printed
from .references import SPACE_THEN_BRACE, callee_references, check_references
from .unread import UnreadBodies


def _on_body(token):
    """Lexer callback: report how far the parse has come (a BODY is most of a large file)."""
    report = _lark().options.transformer.progress
    if report is not None:
        report(token.end_pos)
    return token


@functools.lru_cache(maxsize=1)
def _lark() -> lark.Lark:
    """The fast engine's parser, built once per process (from Lark's cache file when it can)."""
    return lark.Lark(
        grammar.fast_text(),
        cache=grammar.lark_cache_file("parser"),
        lexer_callbacks={"BODY": _on_body, "COMPUTATION": _on_body},
        parser="lalr",
        lexer="contextual",
        start=["start", "inline_body", "computations"],
        transformer=Builder(_lark),
        maybe_placeholders=False,
        _plugins=lexer.PLUGINS,
    )


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
    builder.inlined = 0
    builder.source = source if source is not None else text
    builder.unread = unread
    builder.unfinished = unfinished
    # One scan for the computation-naming attributes (`to_apply=`, `calls=`, ...) finds both
    # the computations written inline and the references to check.
    hits = callee_references(text)
    builder.inline_possible = any(SPACE_THEN_BRACE.match(text, at) for at, _ in hits)
    try:
        nul = text.find("\0")
        if nul >= 0:  # XLA reads text up to its first NUL; no HLO holds one
            raise HloSyntaxError("a NUL character: binary data, not HLO text", text.count("\n", 0, nul) + 1,
                                 nul - text.rfind("\n", 0, nul))
        parsed = None
        if not builder.inline_possible and parser is _lark():
            parsed = parse_printed(parser, text, start, unfinished)
        if parsed is None:
            parsed = parser.parse(text, start=start)
        if references is not None:
            references.extend(hits)
        elif start == "start" and not unfinished:
            check_references(parsed, text, hits)
    except lark.exceptions.UnexpectedInput as e:
        raise attach_source(syntax_error(e, text), text, filename) from None
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
