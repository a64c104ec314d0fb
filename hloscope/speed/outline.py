"""A lazily parsed module's outline: what a parse found of its computations without reading
their bodies, as plain data, and the computations rebuilt from it over the same text.

Two readers keep outlines: the cache (a second command on the same text starts from the
outline) and the two-part parse (the job parsing the head sends its outline back). Columns
rather than one record per computation: a large module has tens of thousands of them, and a
warm start reads them all.
"""

from __future__ import annotations

from typing import Any

from ..ir.attributes import NO_ATTRIBUTES, Attributes
from ..ir.module import Computation
from ..text.body import BodyText
from .lazy import LAZY, LazyComputation


def computations_outline(comps: list[Computation]) -> dict[str, Any] | None:
    """The outline of `comps`, or None when a body was read by the parse (not an outline)."""
    bodies = []
    alike: list[int] = []
    kinds: dict[int, int] = {}  # by id: the tokens live as long as `comps`
    for c in comps:
        body = c.body if isinstance(c, LazyComputation) else None
        if body is None:
            return None
        bodies += (body.start, body.end, body.line, body.column)
        alike.append(-1 if c.alike is None else kinds.setdefault(id(c.alike), len(kinds)))
    return {
        "names": [c.name for c in comps],
        "entry": next((i for i, c in enumerate(comps) if c.is_entry), None),
        "renamed": {str(i): c.text_name for i, c in enumerate(comps) if c.text_name != c.name},
        "instructions_renamed": {str(i): c.renamed for i, c in enumerate(comps) if c.renamed},
        "lines": [c.line for c in comps],
        "signatures": [c.signature if isinstance(c.signature, str) else None for c in comps],
        "attributes_of": {str(i): c.attributes.written() for i, c in enumerate(comps) if c.attributes},
        # start, end, line, column of each body, one after the other.
        "bodies": bodies,
        # Bodies of one text up to names (`LazyComputation.alike`): one number each, -1 for none.
        "alike": alike,
    }


def computations_from_outline(data: dict[str, Any], text: str) -> list[Computation]:
    """The computations an outline describes, bodies unread spans of `text`. Raises
    ValueError when the outline is malformed or does not fit the text."""
    names, lines, signatures, bodies = data["names"], data["lines"], data["signatures"], data["bodies"]
    n = len(names)
    if not (len(lines) == len(signatures) == n and len(bodies) == 4 * n
            and all(type(x) is str for x in names) and all(type(x) is int for x in lines)
            and all(x is None or type(x) is str for x in signatures) and all(type(x) is int for x in bodies)):
        raise ValueError("malformed outline")
    attributes_of = {int(i): Attributes([str(a) for a in tokens]) for i, tokens in data["attributes_of"].items()}
    alike = data.get("alike", [-1] * n)
    if not (len(alike) == n and all(type(k) is int for k in alike)):
        raise ValueError("malformed outline")
    tokens: dict[int, object] = {}
    starts, ends = bodies[0::4], bodies[1::4]
    # Every body must still be a braced span of this text (a check on the outline, not the hash).
    if not all(0 <= s < e <= len(text) and text[s] == "{" and text[e - 1] == "}" for s, e in zip(starts, ends)):
        raise ValueError("outline does not fit the text")
    comps = []
    add = comps.append
    for i, (name, line, signature, start, end, body_line, body_column, kind) in enumerate(
            zip(names, lines, signatures, starts, ends, bodies[2::4], bodies[3::4], alike)):
        token = tokens.get(kind)
        if token is None and kind != -1:
            token = tokens[kind] = object()
        add(LAZY.computation(name, False, attributes_of.get(i, NO_ATTRIBUTES), line, signature,
                             BodyText(text, start, end, body_line, body_column), token))
    for i, text_name in data["renamed"].items():
        comps[int(i)].text_name = str(text_name)
    for i, names in data.get("instructions_renamed", {}).items():
        if not all(type(k) is int and type(name) is str for k, name in names):
            raise ValueError("malformed outline")
        comps[int(i)].renamed = [(k, name) for k, name in names]
    entry = data["entry"]
    if entry is not None:
        comps[entry].is_entry = True
    return comps
