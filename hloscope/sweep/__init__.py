"""`hloscope sweep`: compile the variants of a train step for a target without the device,
rank them, say why they differ.

`hloscope.sweep(factory, grid, target=...)` (hloscope.sweep.run) returns a SweepResult
(hloscope.sweep.result); the text table and the progress bar are in hloscope.sweep.report,
the HTML page in hloscope.sweep.page. Nothing heavy is imported until it is used.
"""

from __future__ import annotations

import importlib
import sys
import types

_EXPORTS = {"sweep": "run", "SweepError": "run", "SweepResult": "result", "Variant": "result",
            "parse_target": "targets", "parse_grid": "grid"}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hloscope.sweep' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


class _CallablePackage(types.ModuleType):
    """`hloscope.sweep(...)` is the function whichever way the package was first reached:
    importing a submodule (`hloscope.sweep.targets`) makes `hloscope.sweep` this package, not
    the function hloscope's root exports under the same name."""

    def __call__(self, *args, **kwargs):
        return __getattr__("sweep")(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage

__all__ = ["SweepError", "SweepResult", "Variant", "parse_grid", "parse_target", "sweep"]
