"""Terminal output: rich is imported in this package (and by the sweep's own text, which
builds on it) and nowhere else.

Formatters build renderables (tables, text) from analysis results; every table goes through
the one renderer (`table.render_table`), which never splits an identifier; `print_renderable`
prints them, without colour when stdout is not a terminal or NO_COLOR is set.

Words used one way everywhere (README, "Reading the output"): a *step* is a training step
(`per step`); a place in the compiled schedule is a *position* (`peak at position 226`);
counts are plain numbers and sizes carry units; an all-gather *instruction* may return several
all-gathered *values* (`all-gather-start{1,3}` is element {1,3} of its tuple result).
"""

from __future__ import annotations

from ..units import human_bytes, human_flops
from .blocks import element_note, heading, sparkline, table
from .check import check_report, github_annotations
from .collectives import collectives_report
from .cost import cost_report, human_seconds
from .diff import diff_report
from .gathers import gathers_report
from .memory import memory_report, memory_spaces_lines, roles_report, xla_figures_line, xla_memory_analysis_line
from .stats import stats_report
from .table import Column, render_table, shorten_middle
from .terminal import console, parse_progress, print_renderable, terminal_width

__all__ = [
    "Column", "check_report", "collectives_report", "console", "cost_report", "diff_report", "element_note",
    "gathers_report", "github_annotations", "heading", "human_bytes", "human_flops", "human_seconds",
    "memory_report", "memory_spaces_lines", "parse_progress", "print_renderable", "render_table", "roles_report",
    "shorten_middle", "sparkline", "stats_report", "table", "terminal_width", "xla_figures_line",
    "xla_memory_analysis_line",
]
