"""`hloscope cost`, with a roofline ESTIMATE when a target is given."""

from __future__ import annotations

from rich.text import Text

from ..units import human_bytes, human_flops
from .blocks import heading, table
from .table import FIGURE, NAME, TRAIL, Column


def human_seconds(s: float) -> str:
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale or unit == "µs":
            return f"{s / scale:.3g} {unit}"
    return f"{s:.3g} s"


def cost_report(results, by: str | None = None, top: int = 10, labels=None, estimates=None) -> list:
    """`hloscope cost`: per module the step's FLOPs, bytes and collective bytes (loops × their
    trip counts), XLA's convention beside them when loops make it differ, the recomputed forward
    ops, the costliest instructions (or groups), and with `estimates` a labelled roofline ESTIMATE."""
    out: list = []
    for n, r in enumerate(results):
        prefix = f"{labels[n]}: " if labels else ""
        out.append(heading(f"{prefix}{r.module}: {human_flops(r.flops)} per step · "
                           f"{human_bytes(r.bytes_accessed)} accessed · "
                           f"{human_bytes(r.collective_bytes)} collective results"))
        out.append(Text(f"transcendentals {r.transcendentals:,} · XLA's convention (each loop one trip): "
                        f"{human_flops(r.flops_xla_convention)}, {human_bytes(r.bytes_accessed_xla_convention)}"))
        for loop in r.loops:
            trips = "unknown trip count, counted once" if loop.trip_count is None else f"× {loop.trip_count}"
            out.append(Text(f"loop {loop.instruction} ({loop.computation}): {trips}, "
                            f"one trip {human_flops(loop.trip_flops)}"))
        kinds = [f"{kind} {human_bytes(b)} (wire ≈ {human_bytes(r.collective_wire_bytes_by_kind[kind])})"
                 for kind, b in r.collective_bytes_by_kind.items() if b]
        if kinds:
            out.append(Text("collectives per step: " + " · ".join(kinds)))
        recomputed = r.recomputed
        if r.recompute_flops:
            share = 100 * r.recompute_flops / r.flops if r.flops else 0.0
            out.append(Text(f"recomputation: {human_flops(r.recompute_flops)} ({share:.1f}% of the step) in "
                            f"{len(recomputed)} instructions that replay forward ops"))
        else:
            out.append(Text("recomputation: none found (no rematted_computation metadata, no .remat clones)"))
        if by:
            groups = r.group_by(by)
            rows = [(human_flops(g.flops), f"{100 * g.flops / r.flops:.1f}%" if r.flops else "-",
                     human_bytes(g.bytes_accessed), human_bytes(g.collective_bytes),
                     human_flops(g.recompute_flops) if g.recompute_flops else "", str(g.instructions),
                     g.key if g.key is not None else "-")
                    for g in groups[:top]]
            out.extend(table(f"top {len(rows)} of {len(groups)} by {by}",
                             [Column("flops", FIGURE), Column("share", FIGURE), Column("bytes", FIGURE),
                              Column("collective", FIGURE), Column("recompute", FIGURE),
                              Column("instructions", FIGURE), Column(by, TRAIL if by in ("op_name", "source") else NAME)],
                             rows))
        else:
            rows = [(human_flops(i.total_flops), f"{100 * i.total_flops / r.flops:.1f}%" if r.flops else "-",
                     str(i.runs), human_bytes(i.total_bytes_accessed),
                     human_flops(i.total_recompute_flops) if i.recompute_flops else "", i.instruction, i.opcode,
                     i.op_name or "")
                    for i in r.top(top)]
            if rows:
                out.extend(table(f"top {len(rows)} of {len(r.instructions)} instructions by FLOPs",
                                 [Column("flops", FIGURE), Column("share", FIGURE), Column("runs", FIGURE),
                                  Column("bytes", FIGURE), Column("recompute", FIGURE), Column("instruction"),
                                  Column("opcode"), Column("op_name", TRAIL)], rows))
        if estimates:
            e = estimates[n]
            out.append(heading(f"roofline ESTIMATE on {e.target} (published peaks, not a measurement): "
                               f"≥ {human_seconds(e.seconds)} per step, {e.bound}-bound"))
            out.append(Text(f"compute {human_seconds(e.compute_seconds)} · memory {human_seconds(e.memory_seconds)} · "
                            f"collectives {human_seconds(e.collective_seconds)} · all serialized "
                            f"{human_seconds(e.serial_seconds)}", style="dim"))
            if e.compute_peaks:
                total = sum(f for _, f, _, _ in e.compute_peaks) or 1
                out.append(Text("compute at: " + " · ".join(
                    f"{arithmetic} {100 * flops / total:.0f}% of FLOPs at {peak / 1e12:.4g} TFLOP/s ({what})"
                    for arithmetic, flops, peak, what in e.compute_peaks), style="dim"))
            out.append(Text(f"source: {e.source}", style="dim"))
        out.append(Text(""))
    return out
