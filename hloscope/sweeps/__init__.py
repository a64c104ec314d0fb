"""`hloscope sweep`: compile the variants of a train step for a target without the device,
rank them, say why they differ.

`hloscope.sweep(factory, grid, target=...)` (hloscope.sweeps.run) returns a SweepResult
(hloscope.sweeps.result); the text table and the progress bar are in hloscope.sweeps.report,
the HTML page in hloscope.sweeps.page. The package is named in the plural so that
`hloscope.sweep` stays the function. Nothing heavy is imported until it is used.
"""

from __future__ import annotations

import importlib

_EXPORTS = {"sweep": "run", "SweepError": "run", "SweepResult": "result", "Variant": "result",
            "parse_target": "targets", "parse_grid": "grid"}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hloscope.sweeps' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = ["SweepError", "SweepResult", "Variant", "parse_grid", "parse_target", "sweep"]
