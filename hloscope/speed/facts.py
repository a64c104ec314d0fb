"""The analyses' questions about bodies (hloscope.analysis.facts), answered from the text.

An unread body answers from its text without being read; a body known to repeat another
(`LazyComputation.copy_of`, or its `recipe` up to metadata) as that one. Every answer equals
the plain one from the instructions, or is "unsure" where the plain one is exact
(tests/test_seam.py).
"""

from __future__ import annotations

from ..analysis.dataflow import in_place_operands_from
from ..analysis.facts import Facts
from ..analysis.sharing import elementwise_parameters_of
from ..ir.module import Computation
from ..ir.structure import PERCENT_NAME, name_pattern
from .lazy import LazyComputation, holds_any, module_writes_any


class TextFacts(Facts):
    """Answers from the unread text where there is one, else the plain ones; one per
    analysis, which keeps what it found of bodies alike (`holds_any`, `elementwise_parameters`)."""

    def __init__(self):
        self._elementwise: dict[tuple[object, tuple[int, ...]], frozenset[int] | None] = {}
        self._holds: dict[tuple[object, tuple[str, ...]], bool] = {}

    def same_as(self, comp: Computation) -> Computation:
        if isinstance(comp, LazyComputation) and comp.copy_of is not None:
            return comp.copy_of
        return comp

    def same_but_metadata(self, comp: Computation) -> Computation:
        if isinstance(comp, LazyComputation) and comp.recipe is not None:
            return comp.recipe.computation
        return comp

    def writes_any(self, comp: Computation, literals: tuple[str, ...]) -> bool:
        return comp.mentions(literals) if isinstance(comp, LazyComputation) else True

    def module_writes_any(self, module, literals: tuple[str, ...]) -> bool:
        return module_writes_any(module, literals)

    def holds_any(self, comp: Computation, opcodes: tuple[str, ...]) -> bool:
        # From an unread body's text: opcodes written after a blank, which no `%name` holds,
        # so bodies of one text up to names (the same token) answer alike.
        alike = comp.alike if isinstance(comp, LazyComputation) and comp.unread_body() is not None else None
        if alike is None:
            return holds_any(comp, opcodes)
        key = (alike, opcodes)
        found = self._holds.get(key)
        if found is None:
            found = self._holds[key] = holds_any(comp, opcodes)
        return found

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
        alike = fused.alike
        if alike is None:
            return elementwise_parameters_of(body.operations())
        # Bodies of one text up to their `%name`s (the same token), whose names stand one for
        # one (the same pattern), have the same operations renamed, where those write every
        # name with its `%`: the same parameters. The names are found in a fraction of the
        # time of cutting the body.
        key = (alike, name_pattern(PERCENT_NAME.findall(body.source, body.start, body.end)))
        answer = self._elementwise.get(key, _UNKNOWN)
        if answer is _UNKNOWN:
            operations, marked = body.operations_marked()
            answer = elementwise_parameters_of(operations)
            if marked:
                self._elementwise[key] = answer
        return answer


_UNKNOWN = object()

