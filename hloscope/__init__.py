"""hloscope: memory and collective analysis of XLA's compiled HLO text.

Importing hloscope does not import jax; only `from_compiled` touches a jax object.
"""

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .api.module import Module

# Names are imported on first use (PEP 562): `hloscope memory` on a cached file should not
# pay for the parser's and the budget's imports before it knows it needs them.
_EXPORTS = {
    "assert_budget": "budget",
    "check": "budget",
    "diff": "api.compare",
    "HloscopeError": "errors",
    "HloSyntaxError": "errors",
    "InputError": "api.loading",
    "NotCompiledError": "api.loading",
    "Computation": "ir.module",
    "Instruction": "ir.module",
    "Module": "api.module",
    "from_compiled": "api.loading",
    "load": "api.loading",
    "load_all": "api.loading",
    "parse": "api.loading",
    "parse_all": "api.loading",
    "Shape": "ir.shape",
    "snapshot": "snapshots",
    "sweep": "sweeps.run",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hloscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # The API (loaded on first use, so not yet in globals()) and the module's dunders; not
    # the machinery of the lazy loading.
    return sorted(set(__all__) | {"__version__"} | {n for n in globals() if n.startswith("__") and n.endswith("__")})


__all__ = [
    "Computation",
    "HloSyntaxError",
    "HloscopeError",
    "InputError",
    "Instruction",
    "Module",
    "NotCompiledError",
    "Shape",
    "assert_budget",
    "check",
    "diff",
    "from_compiled",
    "load",
    "load_all",
    "parse",
    "parse_all",
    "snapshot",
    "sweep",
]
