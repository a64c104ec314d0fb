"""A large text parsed lazily in two parts at once, joined into the module a sequential
parse gives.

A lazy parse leaves each computation as an outline (its name, header and where its body
lies in the text), so what the job parsing the head finds is small to send back: a few
numbers and names per computation, not instructions. The job reads the head of the text;
the caller reads the tail, where the entry is, then the bodies the schedule runs until the
job is done, rebuilds the job's computations over its own copy of the text, and finishes the
module as a sequential parse would (same names, same checks): the result is the same module.
Anything unusual falls back to the sequential parse, which then gives the answer or the
error: a text under `MIN_CHARS`, more than one module, no computation boundary near the
split, a body the grammar's printed form does not cover (read at once, so not an outline),
a syntax error on either side, or a job that failed or did not start (the executor runs
jobs elsewhere only where it can: hloscope.speed.executor).
"""

from __future__ import annotations

import re

from lark import Token

from ..errors import HloSyntaxError
from ..ir.module import Computation
from ..text.names import NameFacts, Renames, may_write_sugar
from ..text.location import attach_source
from ..text.modules import Unfinished, finish_module
from ..text.parser import parse_part
from ..text.references import check_references
from .executor import Executor, Job
from .lazy import LAZY
from .outline import computations_from_outline, computations_outline
from .runtime import trim

MIN_CHARS = 4 << 20
"""Below this a second job, and rebuilding its computations, gains too little (measured:
10-25% off a cold command from 5 MB on, smaller and mixed at 2-3 MB; docs/speed.md)."""

# A body's closing brace, blank lines, then the header of the next computation.
_BOUNDARY = re.compile(r"\n\}[ \t]*\r?\n(?:[ \t]*\r?\n)*(?=(?:ENTRY[ \t]+)?%?[A-Za-z_][\w.\-]*[ \t]+\()")


def parse_in_two(text: str, filename: str, executor: Executor, progress=None):
    """The modules of `text` parsed lazily in two processes, or None to parse sequentially.

    The child reads the head of the text, the parent the tail, which holds the entry (XLA
    prints callees first). The parent's part is the smaller: while the child is still at
    work, it reads the bodies the schedule runs (`_read_schedule`), which every analysis
    reads first."""
    split = _split_point(text)
    if split is None:
        return None
    head = executor.submit(_outline_of_head, text, split)
    if head is None:
        return None
    tail = tail_facts = None
    references: list[tuple[int, int]] = []
    try:
        tail = _tail(text, split, filename, progress, references)
        trim()  # the part's copy of the text, freed: given back before the names and reads
        if tail is not None:
            # What the join's rename check reads of this part (where the module may write
            # async sugar, the names its hidden ones could take too: one pass, not two).
            tail_facts = NameFacts.of(tail, LAZY.body_of, may_write_sugar(text), hashed=True)
            _read_schedule(tail, head)
    finally:
        outline = head.result()
    if tail is None or outline is None:
        return None
    return [_join(outline, tail, tail_facts, text, filename, references)]


def _split_point(text: str) -> int | None:
    """A computation boundary placed so that the parent, parsing the tail and then reading
    the entry's body (about as fast as parsing it), is done about when the child is done
    with the head. Loop bodies lie anywhere: those in the tail fill the time left
    (`_read_schedule`)."""
    if len(text) < MIN_CHARS:
        return None
    first_header = text.find("HloModule")
    if first_header >= 0 and text.find("\nHloModule", first_header + 1) >= 0:
        return None  # several modules
    entry = text.rfind("\nENTRY ")
    entry_chars = len(text) - entry if entry >= 0 else 0
    at = int(len(text) * (1 - max(0.35, (1 - entry_chars / len(text)) / 2)))
    m = _BOUNDARY.search(text, at)
    if m is None:  # the entry's body runs past that point: the last boundary before it
        before = list(_BOUNDARY.finditer(text, len(text) // 4, at))
        m = before[-1] if before else None
    return m.end() if m else None


def _tail(text: str, split: int, filename: str, progress, references: list):
    """The computations of `text[split:]`, lazy bodies placed in the whole text; None if a
    body is not an outline (read at once) or the part does not parse. The part's references
    to computations (`callee_references`, placed in the whole text) go to `references`."""
    scaled = None
    if progress is not None:
        def scaled(position: int) -> None:
            progress(position * len(text) // (len(text) - split))
    found: list[tuple[int, int]] = []
    try:
        comps = parse_part(text[split:], filename, unread=LAZY, progress=scaled, start="computations",
                           references=found)
    except (HloSyntaxError, ValueError):
        return None
    references.extend((at + split, k) for at, k in found)
    lines_before = text.count("\n", 0, split)
    for c in comps:
        body = LAZY.body_of(c)
        if body is None:
            return None  # read at once: fine for a sequential parse, which this becomes
        body.source, body.start, body.end = text, body.start + split, body.end + split
        body.line += lines_before
        c.line += lines_before
    return comps


def _read_schedule(comps: list[Computation], child: Job) -> None:
    """Read the bodies of the entry in `comps` and of what it runs through control flow (in
    `comps` too), until `child` is done. A body that does not read stays unread: its error
    is the read's on first use, as in a sequential parse. With time left, find the names of
    the computations their instructions call, which every analysis asks for."""
    by_name = {c.text_name: c for c in comps}
    stack = [c for c in comps if c.is_entry]
    seen: set[str] = set()
    read = []
    while stack and not child.ready():
        comp = stack.pop()
        if comp.text_name in seen:
            continue
        seen.add(comp.text_name)
        try:
            comp.read_keeping_outline()
        except HloSyntaxError:
            continue
        read.append(comp)
        for inst in comp.instructions:
            if inst.info.runs_callees:
                stack.extend(c for c in map(by_name.get, (n.lstrip("%") for n in inst.called_computation_names))
                             if c is not None)
    for comp in read:
        instructions = comp.instructions
        for start in range(0, len(instructions), 512):
            if child.ready():
                return
            for inst in instructions[start:start + 512]:
                inst.called_computation_names  # noqa: B018 - found once, kept on the instruction


def _outline_of_head(text: str, split: int):
    """What the caller needs of `text[:split]`: the module's name, header attributes as
    (text, line, column), debug tables, the computations' outline (hloscope.speed.outline),
    and the part's `NameFacts`; None if the part has no outline."""
    references: list[tuple[int, int]] = []
    try:
        (part,) = parse_part(text[:split], unread=LAZY, source=text, unfinished=True, references=references)
    except (HloSyntaxError, ValueError):
        return None
    trim()  # the part's copy of the text, freed: given back before the names are hashed
    outline = computations_outline(part.computations)
    if outline is None or outline["renamed"] or None in outline["signatures"]:
        return None
    header = (part.name, [(str(t), t.line, t.column) for t in part.attr_tokens], part.tables)
    # Hidden names of async sugar could meet the head's: looked for (in one pass) if the
    # module may write any.
    facts = NameFacts.of(part.computations, LAZY.body_of, may_write_sugar(text), hashed=True)
    return header, outline, facts.plain(), references


def _join(head, tail: list[Computation], tail_facts, text: str, filename: str, references: list):
    (name, attr_tokens, tables), outline, head_facts, head_references = head
    head_facts = NameFacts(*head_facts)
    if head_facts.wrapped and tail_facts.sugar is None:
        # The head writes async sugar: the tail's names that its hidden ones could take, too.
        tail_facts = NameFacts.of(tail, LAZY.body_of, sugar_elsewhere=True, hashed=True)
    renames = Renames.of([head_facts, tail_facts])
    trim()  # its sets of hashes (a few MB): given back before the head's computations are made
    comps = computations_from_outline(outline, text)
    tokens = [Token("ATTRIBUTE", t, line=line, column=column) for t, line, column in attr_tokens]
    try:
        module = finish_module(Unfinished(name, tokens, comps, tables), tail, renames, LAZY)
        # The references of both parts, as the sequential parse checks them.
        check_references([module], text, head_references + references)
    except HloSyntaxError as e:
        # Checks across the parts (a repeated computation name, two entries) as the
        # sequential parse words them, with the line shown.
        raise attach_source(e, text, filename) from None
    if filename != "<string>":
        module.source_path = filename
    return module
