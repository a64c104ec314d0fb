"""XLA's own answers, for tests to compare hloscope with (imports jax lazily)."""

from __future__ import annotations

import re

# XLA opcode enum names whose text spelling is not the plain kebab-case of the enum.
_SPELLING_EXCEPTIONS = {
    "kExpm1": "exponential-minus-one",
    "kLog1p": "log-plus-one",
    "kOptimizationBarrier": "opt-barrier",
    "kTopK": "topk",
    "kPopulationCount": "popcnt",
    "kSin": "sine",
    "kCos": "cosine",
    "kExp": "exponential",
}


def opcode_spelling(enum_value) -> str:
    """`HloOpcode.kAllGatherStart` → `all-gather-start`."""
    name = str(enum_value).rsplit(".", 1)[-1]
    if name in _SPELLING_EXCEPTIONS:
        return _SPELLING_EXCEPTIONS[name]
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name[1:]).lower()


def xla_parse(text: str):
    """XLA's C++ parser: {computation: [(name, opcode, [operand names])]} in XLA's order.

    Raises the parser's exception for text XLA rejects."""
    from jax._src.lib import xla_client as xc

    module = xc.hlo.hlo_module_from_text(text)
    out = {}
    for comp in module.computations():
        out[comp.name] = [
            (inst.name, opcode_spelling(inst.opcode), [o.name for o in inst.operands()])
            for inst in comp.instructions()
        ]
    return out
