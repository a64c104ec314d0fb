"""`hloscope gathers`."""

from __future__ import annotations

from rich.text import Text

from ..units import human_bytes
from .blocks import element_note, heading, table
from .table import FIGURE, PROSE, Column


def gathers_report(results, memories=None) -> list:
    """`hloscope gathers`: per module the held all-gathers, largest at the peak first, what
    they cost at the peak, and the remedy where one is demonstrated (docs/gathers.md)."""
    out: list = []
    for k, g in enumerate(results):
        memory = memories[k] if memories else None
        out.append(heading(f"{g.name}: {len(g.held)} of {g.gathers} all-gathered values held, "
                           f"{human_bytes(g.held_bytes)} ({human_bytes(g.held_bytes_at_peak)} live at the peak, "
                           f"position {g.peak_step} of the schedule)"))
        if g.boundary == "schedule":
            where = (f"position {g.boundary_step}" if g.boundary_step is not None
                     else "nowhere (no gradient reduction)")
            out.append(Text("no JAX metadata tells forward from backward: the backward pass is taken to start "
                            f"at the first gradient reduction, {where}"))
        rows = []
        for h in g.held:
            sides: dict[str, int] = {}
            for u in h.users:
                sides[u.side] = sides.get(u.side, 0) + 1
            rows.append((human_bytes(h.bytes), human_bytes(h.bytes_at_peak), h.instruction,
                         h.parameter_path or h.parameter or "", ", ".join(r.replace("_", " ") for r in h.reasons),
                         f"{h.first_use.get('step', '?')}–{h.last_use.get('step', '?')}",
                         " ".join(f"{side} {n}" for side, n in sorted(sides.items())), h.origin))
        if rows:
            out.extend(table("held all-gathered values",
                             [Column("bytes", FIGURE), Column("at peak", FIGURE), Column("instruction"),
                              Column("parameter"), Column("why", PROSE), Column("used (positions)"),
                              Column("users"), Column("origin")], rows))
            out.extend(element_note(r[2] for r in rows))
            out.append(Text("a value is one all-gathered array: a combined all-gather instruction returns several",
                            style="dim"))
            out.extend(Text(line) for line in _gathers_advice(g, memory))
        for a in g.as_all_reduce:
            out.append(Text(f"all-gather done as an all-reduce: {a.instruction} ({human_bytes(a.bytes)}): "
                            "a zero-padded shard all-reduced, then sliced; an all-gather moves the same result"))
        out.append(Text(""))
    return out


def _gathers_advice(g, memory) -> list[str]:
    """What the held gathers cost at the peak, and the remedy demonstrated on hloscope's
    fixture pairs (docs/gathers.md) for the partitioner's gathers; for explicit ones, only
    what was found."""
    lines = []
    if g.held_bytes_at_peak == 0:
        lines.append("None of the held bytes is live at the peak: re-gathering them would not lower the peak, "
                     "and would add all-gathers.")
        return lines
    share = f" ({100 * g.held_bytes_at_peak / memory.temp_bytes:.0f}% of temp)" if memory and memory.temp_bytes else ""
    lines.append(f"Held gathers account for {human_bytes(g.held_bytes_at_peak)} at the peak{share}: the most "
                 "re-gathering them could save there.")
    if any(h.origin == "partitioner" and h.bytes_at_peak for h in g.held):
        lines.append("These gathers come from the SPMD partitioner, which a remat policy never sees "
                     "(jax-ml/jax#25010); wrapping each layer in jax.checkpoint keeps XLA from merging the "
                     "backward pass's gathers into the forward ones. On hloscope's fixture pairs it re-gathered all "
                     "but one held gather at the price of more all-gathers; XLA's temp fell on the H100 target but "
                     "rose on CPU, where other buffers set the peak (docs/gathers.md). Compare both compilations "
                     "with `hloscope diff` before adopting it.")
    if any("spans_backward_start" in h.reasons and h.bytes_at_peak for h in g.held):
        lines.append("Some are held because XLA's schedule gathers them early (a recomputation or a backward "
                     "pass's gather run during the forward pass): jax.checkpoint does not change that; on "
                     "hloscope's CPU fixture its re-gathers are the ones held.")
    if any(h.origin == "explicit" and h.bytes_at_peak for h in g.held):
        lines.append("Some held gathers are explicit all_gather calls of the program: no remedy is demonstrated "
                     "for those here.")
    return lines
