"""The regular expressions that cut HLO text where the grammar says, built from the grammar's
own terminals (hloscope.grammar) so that the two cannot drift apart."""

from __future__ import annotations

import functools
import re

from .. import grammar, patterns


class Cuts:
    """The patterns that cut a printed body into instructions and an instruction into parts."""

    def __init__(self, terminal):
        name, array = terminal("NAME"), terminal("ARRAY_SHAPE")
        # A balanced group of parentheses, four deep: the grammar's _PARENS_4 (an inlined
        # helper terminal Lark does not expose), for tuple shapes and operand lists.
        self.group = re.compile(r"\((?:[^()]++|\((?:[^()]++|\((?:[^()]++|\([^()]*+\))*+\))*+\))*+\)")
        # The parts of an instruction up to its attributes, in one match: ROOT, name, shape,
        # opcode (with the spaces before its parenthesis) and the parenthesized operand list
        # or literal.
        parts = (r"(ROOT[ \t]+)?(" + name + r")[ \t]*=[ \t]*(" + self.group.pattern + "|" + array
                 + r")[ \t]+(" + terminal("OPCODE")[:-2] + r")(" + self.group.pattern + ")")
        self.parts = patterns.compiled(parts)
        # An instruction as a body holds it, from its line's start: the parts, then its
        # attributes (group 6) as the grammar's ATTRIBUTE terminal reads them, however many
        # lines they take, then the end of its line. Possessive: the attributes are the ones
        # the INSTRUCTION terminal takes first (`BodyText` says why that is its cut).
        self.instruction_line = patterns.compiled(
            r"[ \t]*" + parts + r"((?:" + terminal("ATTRIBUTE") + r")*+)[ \t]*\r?\n")
        # The grammar's INSTRUCTION terminal: how a body is cut where the line above is not.
        self.instruction = patterns.compiled(terminal("INSTRUCTION"))
        # In an operand list with its layouts removed, a name directly before `,` or the end
        # is an operand: inside shapes only `]`, `}` and `)` come before a comma. A name may
        # go on with `#i#j...` (a tuple element: the reference keeps them); in a body
        # without a `#`, none does, and the plain pattern is used.
        self.operand_names = re.compile(r"(?<![\w.\-%])(" + name + r")(?=[ \t]*(?:,|\Z))")
        self.element_operand_names = re.compile(r"(?<![\w.\-%])(" + name + r"(?:#[0-9]+)*)(?=[ \t]*(?:,|\Z))")
        # Where an instruction of a printed body starts: a name, `=`, then a shape.
        self.instruction_start = re.compile(
            r"^[ \t]*(?:ROOT[ \t]+)?(" + name + r")[ \t]*=[ \t]*(?=\(|[a-z][a-z0-9]*[ \t]*\[)", re.M)


@functools.lru_cache(maxsize=1)
def cuts() -> Cuts:
    """The patterns, compiled once per process."""
    return Cuts(grammar.terminal_regex)


LAYOUTS = re.compile(r"\{(?:[^{}]|\{[^{}]*\})*\}")
"""A layout in an operand list (`{1,0}`, `{0:T(8,128)}`): it holds digits and commas of its own."""


def start_of(m: re.Match[str]) -> int:
    """Where the instruction of a `Cuts.parts` match starts (at ROOT, else its name)."""
    return m.start(1) if m.group(1) is not None else m.start(2)
