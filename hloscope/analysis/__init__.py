"""Analyses: read-only, each returning a frozen result with `to_dict()`.

Each imports only the IR and earlier analyses, and walks plain IR. What it asks of a body
before walking it goes through `facts.Facts` (plain answers by default); processes, caches
and the text are not theirs (hloscope.speed).
"""
