"""`hloscope diff`: the sentence, the causes, the details of each side."""

from __future__ import annotations

from rich.text import Text

from ..units import human_bytes
from .blocks import element_note, heading, table
from .table import FIGURE, PROSE, TRAIL, Column


def diff_report(d, top: int = 5) -> list:
    """`hloscope diff`: the one sentence, the causes, then the details of each side."""
    a, b = d.a.memory, d.b.memory
    out: list = [heading(d.summary)]
    for name, side, m in (("A", d.a, a), ("B", d.b, b)):
        out.append(Text(f"{name}: {side.label or m.name}: temp {human_bytes(m.temp_bytes)}, peak at position "
                        f"{m.peak_at['index']} of its schedule ({m.peak_at['instruction']})"))
    shown, small = _shown_causes(d)
    rows = [(human_bytes(c.bytes, sign=True), human_bytes(c.a_bytes), human_bytes(c.b_bytes),
             (c.role or c.label or c.kind).replace("_", " "), c.description) for c in shown]
    if small:
        rows.append((human_bytes(sum(c.bytes for c in small), sign=True), human_bytes(sum(c.a_bytes for c in small)),
                     human_bytes(sum(c.b_bytes for c in small)), f"{len(small)} smaller",
                     ", ".join((c.role or c.label or c.kind).replace("_", " ") for c in small)))
    rows.append((human_bytes(d.explained_bytes, sign=True), human_bytes(a.temp_bytes), human_bytes(b.temp_bytes),
                 "temp (sum)", "the causes add up to the gap"))
    out.extend(table("causes of the temp gap (B − A)",
                     [Column("change", FIGURE), Column("A", FIGURE), Column("B", FIGURE), Column("cause"),
                      Column("what", PROSE)], rows))
    for c in d.causes:
        if c.kind != "role" or not (c.instructions.get("a") or c.instructions.get("b")):
            continue
        detail = [(side.upper(), human_bytes(r["bytes"]), r["instruction"], r["matched"] or "—", r["op_name"] or "",
                   r["source"] or "")
                  for side in ("a", "b") for r in c.instructions.get(side, ())[:top]]
        out.extend(table(f"{c.role.replace('_', ' ')}: largest buffers at each peak",
                         [Column("side"), Column("bytes", FIGURE), Column("instruction"), Column("matches"),
                          Column("op_name", TRAIL), Column("source", TRAIL)], detail))
        out.extend(element_note(r[2] for r in detail))
    crow = [(kind, str(v["a"]), str(v["b"]), _count_change(v["b"] - v["a"]), human_bytes(v["a_bytes"]),
             human_bytes(v["b_bytes"]))
            for kind, v in d.collectives_delta().items()]
    if crow:
        out.extend(table("collective instructions (count in the text; bytes of their results)",
                         [Column("kind"), Column("A", FIGURE), Column("B", FIGURE), Column("change", FIGURE),
                          Column("A bytes", FIGURE), Column("B bytes", FIGURE)], crow))
    ga, gb = d.a.gathers, d.b.gathers
    out.append(Text(f"held all-gathered values (one all-gather instruction may return several): "
                    f"A {len(ga.held)} ({human_bytes(ga.held_bytes_at_peak)} live at its peak), "
                    f"B {len(gb.held)} ({human_bytes(gb.held_bytes_at_peak)} live at its peak)"))
    trade = d.trade()
    if trade is not None:
        out.append(Text(d.trade_sentence()))
        for side in ("a", "b"):
            if trade[side]["recomputed"]:
                out.append(Text(f"recomputed in {side.upper()}: {', '.join(trade[side]['recomputed'][:5])}"
                                + (", ..." if len(trade[side]["recomputed"]) > 5 else "")))
    return out


def _shown_causes(d) -> tuple[list, list]:
    """The causes worth a row, and those too small to (under 0.5% of the gap or its largest
    cause, and under 1 KiB), which share one row: their sum still closes the table."""
    scale = max([abs(d.delta_temp_bytes)] + [abs(c.bytes) for c in d.causes])
    shown, small = [], []
    for c in d.causes:
        (small if abs(c.bytes) * 200 < scale and abs(c.bytes) < 1024 else shown).append(c)
    return (shown, small) if len(small) > 1 else (d.causes, [])


def _count_change(n: int) -> str:
    """A change in a count, signed like the sizes: `+2`, `−1`, `±0`."""
    return f"+{n}" if n > 0 else f"−{-n}" if n < 0 else "±0"
