"""A module from its computations, as XLA's parser finishes one: one computation per name, one
entry (else the last), each header attribute once and well formed, names made unique, the
entry's aliases checked. A module read in parts (`Unfinished`) is finished once all its
computations are in."""

from __future__ import annotations

from typing import NamedTuple

from ..errors import HloSyntaxError
from ..ir.attributes import Attributes
from ..ir.module import Computation, Module
from .checks import check_aliases, check_module_attribute
from .location import place
from .names import NameFacts, Renames, uniquify_computation_names, uniquify_instruction_names
from .unread import UnreadBodies


class Unfinished(NamedTuple):
    """A module read up to some point, for `finish_module` once all its computations are in."""

    name: str | None
    attr_tokens: list
    computations: list
    tables: dict


def finish_module(part: Unfinished, more: list, renames: Renames | None = None,
                  unread: UnreadBodies | None = None) -> Module:
    """The module of `part` with the computations `more` after its own; `renames`: what
    making its instruction names unique renames (`Renames.of`), when known already."""
    return module_from(part.name, part.attr_tokens, part.computations + more, part.tables, renames, unread)


def module_from(name, attr_tokens, comps, tables, renames: Renames | None = None,
                unread: UnreadBodies | None = None) -> Module:
    """The module named `name` (None: no header) with header attributes `attr_tokens`,
    computations `comps` and debug `tables`, checked and named as XLA finishes one.
    `renames`: as for `finish_module`."""
    seen: set[str] = set()
    entry = None
    for comp in comps:
        if comp.text_name in seen:
            raise HloSyntaxError(f"computation already exists: {comp.name}", comp.line, 1)
        seen.add(comp.text_name)
        if comp.is_entry:
            if entry is not None:
                raise HloSyntaxError("expects only one ENTRY", comp.line, 1)
            entry = comp
    if entry is None:
        # XLA takes the last computation as the entry when none is marked.
        entry = comps[-1]
        entry.is_entry = True
    seen_attributes: set[str] = set()
    for token in attr_tokens:
        key = str(token).lstrip(", \t\r\n").partition("=")[0]
        if key in seen_attributes:  # XLA: "attribute ... already exists"
            raise HloSyntaxError(f"attribute {key} already exists", *place(str(token), 0, str(token).find(key),
                                                                          token.line, token.column))
        seen_attributes.add(key)
        check_module_attribute(token)
    uniquify_computation_names(comps)
    body_of = unread.body_of if unread is not None else _no_body
    plan = renames if renames is not None else Renames.of([NameFacts.of(comps, body_of)])
    renamed = []
    if plan.roots:  # names of some roots only: the computations that write them, read
        touched = [comps[k] for k in plan.computations]
        if unread is not None:
            try:
                for c in touched:
                    unread.read(c)
            except HloSyntaxError:
                for c in comps:
                    c.instructions  # the first error in text order, as a full parse reports it
                raise
        renamed = uniquify_instruction_names(touched, plan.roots)
    elif plan.roots is None:
        for c in comps:
            c.instructions  # read every body: names are made unique in text order
        if Renames.of([NameFacts.of(comps, body_of)]).roots != frozenset():
            renamed = uniquify_instruction_names(comps)
    if unread is not None:
        for c, names in renamed:
            unread.renamed(c, names)
    if name is None:
        # XLA names a module read without a header after its entry computation.
        name = f"module_{entry.name}"
    module = Module(name, Attributes([str(t) for t in attr_tokens]), comps, entry, tables)
    if body_of(entry) is None:
        check_aliases(module, entry.root, attr_tokens)
    if unread is not None:
        unread.finish(module)  # the entry's aliases are checked with its body, when it is
    return module


def _no_body(computation: Computation) -> None:
    return None
