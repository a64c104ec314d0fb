"""Questions analyses ask of a computation's body before, or instead of, walking it.

The answers here come from the instructions. A loader that keeps the text answers the same
questions from it without reading every body (hloscope.speed.facts), and must answer them
equally (tests/test_seam.py); an analysis takes either and cannot tell them apart.
"""

from __future__ import annotations

from ..ir.module import Computation, Module


class Facts:
    """The plain answers, from the instructions."""

    def same_as(self, comp: Computation) -> Computation:
        """A computation whose instructions are `comp`'s up to names (of instructions and of
        the computations they call): what is found of one holds for the other. `comp` here."""
        return comp

    def same_but_metadata(self, comp: Computation) -> Computation:
        """A computation whose instructions are `comp`'s up to names and the values of their
        `metadata` attributes: what is found of one holds for the other where the metadata
        does not count (a price, unless an op recomputes). `comp` here."""
        return comp

    def writes_any(self, comp: Computation, literals: tuple[str, ...]) -> bool:
        """False only when `comp`'s text certainly writes none of `literals`; True when
        unsure, as here: the caller then looks at the instructions."""
        return True

    def module_writes_any(self, module: Module, literals: tuple[str, ...]) -> bool:
        """False only when no computation of `module` writes any of `literals` (`writes_any`
        would say so of each); True when unsure, as here."""
        return True

    def holds_any(self, comp: Computation, opcodes: tuple[str, ...]) -> bool:
        """Whether an instruction of `comp` has one of `opcodes` (as the text spells them:
        `reduce-scatter-start`, not `async-start`); True when unsure."""
        return any(inst.opcode in opcodes for inst in comp.instructions)

    def fusion_in_place_operands(self, fused: Computation) -> list[tuple[tuple, int, tuple]] | None:
        """The in-place pairs of a fusion calling `fused` (hloscope.analysis.dataflow), or
        None: the caller works them out from the instructions."""
        return None

    def elementwise_parameters(self, fused: Computation) -> frozenset[int] | None:
        """The parameters of `fused` every transitive user reads element by element
        (hloscope.analysis.sharing), or None: the caller works them out."""
        return None


PLAIN = Facts()
"""Answers from the instructions alone."""


class Alike:
    """The computation to read for what another does: the one it repeats (`Facts.same_as`;
    `but_metadata`: `Facts.same_but_metadata`), unless that one calls computations (then the
    other itself: the callees it calls are its own). Analyses ask this of thousands of fused
    computations: whether a computation calls any is found once."""

    def __init__(self, facts: Facts, but_metadata: bool = False):
        self.facts = facts
        self._same = facts.same_but_metadata if but_metadata else facts.same_as
        self._calls: dict[int, bool] = {}

    def __call__(self, comp: Computation) -> Computation:
        original = self._same(comp)
        if original is comp:
            return comp
        calls = self._calls.get(id(original))
        if calls is None:
            calls = self._calls[id(original)] = any(i.called_computation_names for i in original.instructions)
        return comp if calls else original
