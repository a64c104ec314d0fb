"""hloscope: memory and collective analysis of XLA's compiled HLO text.

Importing hloscope does not import jax; only `from_compiled` touches a jax object.
"""

__version__ = "0.1.0"

from .budget import assert_budget, check  # noqa: E402  (after __version__, which submodules read)
from .errors import HloscopeError, HloSyntaxError
from .ir import Computation, Instruction, Module
from .parser import load, load_all, parse, parse_all
from .shape import Shape

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


def from_compiled(compiled) -> Module:
    """The Module of a `jax.jit(f).lower(...).compile()` result (its optimized HLO)."""
    text = compiled.as_text()
    return parse(text, "<compiled>")
