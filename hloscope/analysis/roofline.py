"""A lower bound on a step's time on an accelerator, from the step's cost and the target's
published peaks (`hardware.TARGETS`): an estimate, labelled as one, never a measurement."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..encode import Encoded, as_json, extra
from .cost import CostResult
from .hardware import TARGETS


ESTIMATE_NOTE = ("roofline ESTIMATE from published peak figures, not a measurement: each matmul's FLOPs at the "
                 "dense peak of its arithmetic (bf16, tf32 or f32 as its precision asks, int8, fp8), other FLOPs "
                 "at the dense bf16 peak, bytes accessed at the HBM bandwidth, collective wire bytes at half the "
                 "published bidirectional interconnect bandwidth; the step takes at least the largest of the three")


def _peaks_json(peaks) -> list[dict]:
    return [{"arithmetic": a, "flops": f, "peak_flops": p, "counted_as": w} for a, f, p, w in peaks]


@dataclass(frozen=True, slots=True)
class Roofline(Encoded):
    """A lower bound on one step's time on a target, from its published peaks."""

    target: str
    compute_seconds: float
    memory_seconds: float
    collective_seconds: float
    seconds: float
    """The largest of the three: the step cannot be faster, whatever overlaps."""
    bound: str
    """`compute`, `memory` or `collective`: which term sets `seconds`."""
    serial_seconds: float
    """The three added: the time with no overlap at all."""
    source: str
    compute_peaks: tuple[tuple[str, int, float, str], ...] = field(default=(), metadata=as_json(value=_peaks_json))
    """How the compute term was reached: (arithmetic, FLOPs, the peak used, what that peak is),
    the matmuls' arithmetics first, then `other` (the rest of the FLOPs, at the bf16 peak)."""
    json_extra = (extra("estimate", lambda _: True, after="target"),
                  extra("note", lambda _: ESTIMATE_NOTE, after="estimate"))


def roofline(cost: CostResult, target: str) -> Roofline:
    """The roofline estimate of `cost` on one of TARGETS."""
    t = TARGETS.get(target)
    if t is None:
        raise ValueError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")
    peaks = []
    for arithmetic, flops in cost.matmul_flops.items():
        peak, what = t.matmul_peak(arithmetic)
        peaks.append((arithmetic, flops, peak, what))
    other = max(0, cost.flops - sum(cost.matmul_flops.values()))
    if other:
        peaks.append(("other", other, t.peak_flops, "bf16"))
    by_peak: dict[float, int] = {}
    for _, flops, peak, _ in peaks:
        by_peak[peak] = by_peak.get(peak, 0) + flops
    terms = {
        "compute": sum(flops / peak for peak, flops in by_peak.items()),
        "memory": cost.bytes_accessed / t.hbm_bytes_per_second,
        "collective": cost.collective_wire_bytes / (t.interconnect_bytes_per_second / 2),
    }
    bound = max(terms, key=lambda k: terms[k])
    return Roofline(target=t.name, compute_seconds=terms["compute"], memory_seconds=terms["memory"],
                    collective_seconds=terms["collective"], seconds=terms[bound], bound=bound,
                    serial_seconds=sum(terms.values()), source=t.source, compute_peaks=tuple(peaks))


__all__ = ["ESTIMATE_NOTE", "Roofline", "roofline"]
