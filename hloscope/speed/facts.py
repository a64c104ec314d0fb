"""The analyses' questions about bodies (hloscope.analysis.facts), answered from the text.

An unread body answers from its text without being read; a body known to repeat another
(`LazyComputation.copy_of`) as that one. Every answer equals the plain one from the
instructions, or is "unsure" where the plain one is exact (tests/test_facts.py).
"""

from __future__ import annotations

from ..analysis.dataflow import in_place_operands_from
from ..analysis.facts import Facts
from ..analysis.sharing import elementwise_parameters_of
from ..ir.module import Computation
from .lazy import LazyComputation, holds_any


class TextFacts(Facts):
    """Answers from the unread text where there is one, else the plain ones."""

    def same_as(self, comp: Computation) -> Computation:
        if isinstance(comp, LazyComputation) and comp.copy_of is not None:
            return comp.copy_of
        return comp

    def writes_any(self, comp: Computation, literals: tuple[str, ...]) -> bool:
        return comp.mentions(literals) if isinstance(comp, LazyComputation) else True

    def holds_any(self, comp: Computation, opcodes: tuple[str, ...]) -> bool:
        return holds_any(comp, opcodes)

    def fusion_in_place_operands(self, fused: Computation):
        # The few instructions followed from the root, each cut from its own line.
        body = fused.unread_body() if isinstance(fused, LazyComputation) else None
        root = body.root_name() if body is not None else None
        if root is None:
            return None
        return in_place_operands_from(body.instruction_named(root), lambda i, k: body.instruction_named(i.operands[k]))

    def elementwise_parameters(self, fused: Computation):
        # The operations alone, cut from the text: a fraction of a read, and nothing kept.
        body = fused.unread_body() if isinstance(fused, LazyComputation) else None
        if body is None or body.root_name() is None:
            return None
        operations = body.operations()
        return elementwise_parameters_of(operations) if operations is not None else None


TEXT_FACTS = TextFacts()
