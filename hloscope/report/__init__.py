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
