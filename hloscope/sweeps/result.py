"""What a sweep answers: one ranked row per variant, frozen, with `to_dict()` in the JSON of
../shared/DESIGN.md ("sweep")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..analysis.diff import DiffResult
from ..analysis.roofline import ESTIMATE_NOTE
from ..encode import Encoded, as_json, extra

FIGURES = ("temp_bytes", "argument_bytes", "output_bytes", "alias_bytes", "total_bytes", "peak_bytes", "flops",
           "flops_xla_convention", "recompute_flops", "collective_bytes", "held_gathers", "held_bytes_at_peak",
           "fits", "step_time_estimate", "bound")
"""The keys a failed variant shows as null."""


@dataclass(frozen=True)
class Variant(Encoded):
    """One variant: its knobs, its rank, hloscope's reading of its compiled text, or its error.

    Sizes are bytes per device (`module.memory()`); `flops` × loop trip counts and
    `flops_xla_convention` as XLA's cost_analysis() counts them (each loop once)
    (`module.cost()`); `collective_bytes` result bytes per step; `held_gathers` and
    `held_bytes_at_peak` the all-gathers kept from forward into backward (`module.held_gathers()`);
    `step_time_estimate` a roofline ESTIMATE in seconds (None without a chip to estimate for)."""

    knobs: dict[str, Any] = field(hash=False)
    rank: int
    temp_bytes: int | None = None
    argument_bytes: int | None = None
    output_bytes: int | None = None
    alias_bytes: int | None = None
    total_bytes: int | None = None
    """argument + output − alias + temp: what the device holds for the step, checked against its memory."""
    peak_bytes: int | None = None
    flops: int | None = None
    flops_xla_convention: int | None = None
    recompute_flops: int | None = None
    collective_bytes: int | None = None
    held_gathers: int | None = None
    held_bytes_at_peak: int | None = None
    fits: bool | None = None
    step_time_estimate: float | None = None
    bound: str | None = None
    """What sets the estimate: `compute`, `memory` or `collective`."""
    why: str | None = None
    """The diff's sentence of this variant against its best neighbour (one knob apart)."""
    neighbour: dict[str, Any] | None = field(default=None, hash=False)
    """That neighbour's knobs."""
    hlo: str | None = None
    """The compiled text in the cache."""
    error: str | None = None
    xla: dict[str, Any] | None = field(default=None, hash=False)
    """What XLA itself reported in the worker: `memory_analysis` (every integer field),
    `cost_analysis`, versions, compile seconds: beside hloscope's figures, for comparison."""
    cached: bool = False
    """The text came from the cache: nothing was compiled for it in this run."""

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class SweepResult(Encoded):
    """A ranked sweep: rows best first (variants that fit, then by estimated step time)."""

    target: str
    hbm_bytes: int | None
    """The memory a device has, as `fits` checks it (the chip's, or `--hbm`); None: no limit."""
    roofline: str | None
    """The hardware entry of the step-time ESTIMATE (hloscope.analysis.hardware); None: none."""
    factory: str
    """`SCRIPT.py:FUNCTION`."""
    grid: dict[str, list] = field(hash=False)
    variants: tuple[Variant, ...]
    compiled: int = field(metadata=as_json(omit=True))
    """How many variants this run compiled (the rest came from the cache)."""
    seconds: float = field(default=0.0, metadata=as_json(omit=True))
    to_best: dict[int, DiffResult] = field(default_factory=dict, hash=False, metadata=as_json(omit=True))
    """Each variant's diff against the best (by its index in `variants`), when asked for."""
    notes: tuple[str, ...] = ()
    json_extra = (extra("estimate", lambda r: ESTIMATE_NOTE if r.roofline else None, after="roofline"),)

    @property
    def best(self) -> Variant | None:
        return self.variants[0] if self.variants and self.variants[0].ok else None


__all__ = ["FIGURES", "SweepResult", "Variant"]
