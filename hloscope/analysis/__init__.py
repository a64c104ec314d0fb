"""Analyses: read-only, each returning a frozen result with `to_dict()`.

Each imports only the IR and earlier analyses; work that may run elsewhere goes through the
executor it is handed (hloscope.executor), never a process of its own, a cache or raw text.
"""
