"""Lark's contextual lexer, with the grammar's long terminals compiled once per process.

Lark's contextual lexer has one scanner per set of terminals a parser state accepts, and
each scanner compiles the alternation of its terminals as one regular expression. The fast
grammar's composite terminals (COMPUTATION, BODY, INSTRUCTION, ATTRIBUTE, ATTR_VALUE) are
4-5 KB expressions taking ~10 ms each to compile, and they recur in most states' sets:
reading a module's head compiled them again and again, ~0.1 s per process before its
first token.

Here a scanner tries, in Lark's order, each long terminal alone (compiled once, through
`re`'s own cache, which also serves `grammar.attribute_pattern` and Lark's checks of which
string terminals a pattern covers) and the runs of short terminals between them as one
alternation. A regular expression alternation takes the first alternative that matches, so
trying the parts in turn finds the token the whole would: the same terminal, the same text.

Installed through Lark's `_plugins` option, its hook for a lexer of one's own (as
lark-cython's); `_build_scanner` repeats Lark 1.3's, which pyproject.toml requires.
"""

from __future__ import annotations

import re

from lark.lexer import BasicLexer, CallChain, ContextualLexer, Scanner, _create_unless

from .. import patterns

LONG_PATTERN = 1000
"""Terminals with an expression this long or longer are compiled alone."""


class _SharingScanner(Scanner):
    """Lark's scanner, its expression cut before and after each long terminal."""

    def _build_mres(self, terminals, max_size):
        parts, run = [], []
        for t in terminals:
            pattern = t.pattern.to_regexp()
            if len(pattern) < LONG_PATTERN:
                run.append(t)
                continue
            if run:
                parts += self._alternation(run, max_size)
                run = []
            if self.use_bytes:
                pattern = pattern.encode("latin-1")
            if self.re_ is re and isinstance(pattern, str):
                mre = patterns.compiled(pattern, self.g_regex_flags)  # kept from an earlier process
            else:
                mre = self.re_.compile(pattern, self.g_regex_flags)
            parts.append((mre, t.name))
        if run:
            parts += self._alternation(run, max_size)
        return parts

    def _alternation(self, terminals, max_size):
        # Lark's own, for a run of short terminals: its groups name the terminal matched.
        return [(mre, None) for mre in super()._build_mres(terminals, max_size)]

    def match(self, text, pos):
        for mre, name in self._mres:
            m = mre.match(text.text, pos, text.end)
            if m:
                return m.group(0), name or m.lastgroup
        return None

    def fullmatch(self, text):
        for mre, name in self._mres:
            m = mre.fullmatch(text)
            if m:
                return name or m.lastgroup
        return None


class _SharingBasicLexer(BasicLexer):
    def _build_scanner(self):
        # Lark's BasicLexer._build_scanner, building the scanner above instead of its own.
        terminals, self.callback = _create_unless(self.terminals, self.g_regex_flags, self.re, self.use_bytes)
        for type_, f in self.user_callbacks.items():
            if type_ in self.callback:
                self.callback[type_] = CallChain(self.callback[type_], f, lambda t, type_=type_: t.type == type_)
            else:
                self.callback[type_] = f
        return _SharingScanner(terminals, self.g_regex_flags, self.re, self.use_bytes)


class SharingContextualLexer(ContextualLexer):
    """Lark's contextual lexer whose scanners share their long terminals' expressions."""

    BasicLexer = _SharingBasicLexer


PLUGINS = {"ContextualLexer": SharingContextualLexer}
"""For `lark.Lark(..., lexer="contextual", _plugins=PLUGINS)`."""
