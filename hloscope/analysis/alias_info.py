"""Which buffers a backend lets share beyond XLA's generic rules, as XLA's `AliasInfo`
(xla/hlo/analysis/alias_info.h): the dataflow asks it, and each backend
(hloscope.analysis.backends) overrides what its compiler decides apart."""

from __future__ import annotations

from ..ir.module import Instruction
from ..ir.opcodes import fusion_kinds


class AliasInfo:
    """XLA's generic answers: no hint; loop and input fusions may write over an operand every
    fused user reads element by element."""

    elementwise_sharing_kinds: tuple[str, ...] = fusion_kinds(loop_or_input=True)
    """Fusion kinds whose output may be written over an operand read element by element
    (XLA CanShareOperandBufferWithUser: loop and input fusions)."""

    def may_alias(self, operand: Instruction, user: Instruction, user_index: tuple,
                  operand_number: int) -> bool | None:
        """The backend's buffer-sharing hint (XLA's `AliasInfo::MayAlias`): may output
        `user_index` of `user` be written over `operand`, its operand `operand_number`? None
        where it has none: the generic rules decide."""
        return None

    def may_alias_any(self, user: Instruction) -> bool:
        """Whether `may_alias` may say yes for some operand of `user`: when not, a caller
        need not ask about each."""
        return False


GENERIC = AliasInfo()
"""XLA's generic rules, with no backend's hints."""
