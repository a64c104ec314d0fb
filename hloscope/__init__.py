"""hloscope: memory and collective analysis of XLA's compiled HLO text.

Importing hloscope does not import jax; only `from_compiled` touches a jax object.
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .ir import Module

# Names are imported on first use (PEP 562): `hloscope memory` on a cached file should not
# pay for the parser's and the budget's imports before it knows it needs them.
_EXPORTS = {
    "assert_budget": "budget",
    "check": "budget",
    "HloscopeError": "errors",
    "HloSyntaxError": "errors",
    "Computation": "ir",
    "Instruction": "ir",
    "Module": "ir",
    "load": "parser",
    "load_all": "parser",
    "parse": "parser",
    "parse_all": "parser",
    "Shape": "shape",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hloscope' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "Computation",
    "HloSyntaxError",
    "HloscopeError",
    "Instruction",
    "Module",
    "Shape",
    "assert_budget",
    "check",
    "from_compiled",
    "load",
    "load_all",
    "parse",
    "parse_all",
]


def from_compiled(compiled) -> "Module":
    """The Module of a `jax.jit(f).lower(...).compile()` result (its optimized HLO)."""
    from .parser import parse

    return parse(compiled.as_text(), "<compiled>")
