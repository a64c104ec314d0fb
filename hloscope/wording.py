"""Words shared by the text and the HTML reports, below both."""

from __future__ import annotations


def tidy_op_name(op_name: str) -> str:
    """An `op_name` with each run of one repeated `:`-joined part written once with a count:
    JAX joins the names of the ops a fusion merged with `:`, often the same name many times
    (`…/gather:jvp()/dot_general (×9)`)."""
    parts = op_name.split(":")
    if len(parts) < 3:
        return op_name
    out: list[str] = []
    counts: list[int] = []
    for part in parts:
        if out and part == out[-1]:
            counts[-1] += 1
        else:
            out.append(part)
            counts.append(1)
    if len(out) == len(parts):
        return op_name
    return ":".join(p if n == 1 else f"{p} (×{n})" for p, n in zip(out, counts))


__all__ = ["tidy_op_name"]
