"""Everything hloscope knows about individual opcodes, in one table.

Analyses ask this table (`info(opcode)`) instead of testing opcode names themselves, the way
XLA keeps its facts in HLO_OPCODE_LIST. The text spelling is the key: `all-gather-start` is
native in XLA, while `reduce-scatter-start` is printing sugar for an `async-start` that wraps
a `reduce-scatter`; `info()` resolves both.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

COLLECTIVE_KINDS = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "all-to-all",
    "ragged-all-to-all",
    "collective-permute",
    "collective-broadcast",
)
"""Kinds of collective, in report order."""

POINT_TO_POINT_KINDS = ("send", "recv")
"""Host/device transfers and pipeline sends, reported apart from collectives."""


@dataclass(frozen=True, slots=True)
class OpInfo:
    """Facts about one opcode spelling."""

    name: str
    """The opcode as written in the text."""
    canonical: str
    """XLA's opcode for it: `async-start` for `reduce-scatter-start`, else the name itself."""
    collective: str | None = None
    """The collective kind this op performs (or starts, or wraps), if any."""
    async_role: str | None = None
    """`start`, `update` or `done` for one half of an asynchronous pair, else None."""
    wrapped: str | None = None
    """For an async op, the opcode it runs asynchronously (`all-gather` for `all-gather-start`)."""
    forwards_buffers: bool = False
    """Defines no new buffer: its result is (part of) an operand's or a callee's buffer."""
    thread_local_callees: bool = False
    """Its called computations run per element or inline (fusion, reduce, sort, ...): their
    values never get buffers of their own."""
    known: bool = True
    """False for an opcode this table has never heard of (kept, as newer XLA may print it)."""


def _op(name, **kw) -> OpInfo:
    return OpInfo(name=name, canonical=kw.pop("canonical", name), **kw)


_PLAIN = """
abs add after-all and atan2 batch-norm-grad batch-norm-inference batch-norm-training
bitcast-convert broadcast cbrt ceil cholesky clamp clz compare complex concatenate constant
convert convolution copy cosine divide dot dynamic-reshape dynamic-slice dynamic-update-slice
erf exponential exponential-minus-one fft floor gather get-dimension-size imag infeed iota
is-finite log log-plus-one logistic maximum minimum multiply negate not or outfeed pad
parameter partition-id popcnt power ragged-dot real reduce-precision remainder replica-id
reshape reverse rng rng-bit-generator rng-get-and-update-state round-nearest-afz
round-nearest-even rsqrt select set-dimension-size shift-left shift-right-arithmetic
shift-right-logical sign sine slice sqrt stochastic-convert subtract tan tanh topk transpose
triangular-solve tuple xor scaled-dot composite-call
""".split()

_TABLE: dict[str, OpInfo] = {name: _op(name) for name in _PLAIN}
_TABLE.update(
    {
        # Ops whose result is an operand's or a callee's buffer (XLA_MEMORY.md, "Values").
        "bitcast": _op("bitcast", forwards_buffers=True),
        "get-tuple-element": _op("get-tuple-element", forwards_buffers=True),
        "while": _op("while", forwards_buffers=True),
        "call": _op("call", forwards_buffers=True),
        "conditional": _op("conditional", forwards_buffers=True),
        "domain": _op("domain", forwards_buffers=True),
        "add-dependency": _op("add-dependency", forwards_buffers=True),
        "opt-barrier": _op("opt-barrier", forwards_buffers=True),
        # Ops whose callees are applied per element or fused: thread-local.
        "fusion": _op("fusion", thread_local_callees=True),
        "reduce": _op("reduce", thread_local_callees=True),
        "reduce-window": _op("reduce-window", thread_local_callees=True),
        "map": _op("map", thread_local_callees=True),
        "sort": _op("sort", thread_local_callees=True),
        "scatter": _op("scatter", thread_local_callees=True),
        "select-and-scatter": _op("select-and-scatter", thread_local_callees=True),
        "custom-call": _op("custom-call", thread_local_callees=True),
        # Async machinery.
        "async-start": _op("async-start", async_role="start"),
        "async-update": _op("async-update", async_role="update"),
        "async-done": _op("async-done", async_role="done"),
        "copy-start": _op("copy-start", async_role="start", wrapped="copy"),
        "copy-done": _op("copy-done", async_role="done", wrapped="copy", forwards_buffers=True),
        "send": _op("send", collective="send", async_role="start", wrapped="send"),
        "send-done": _op("send-done", collective="send", async_role="done", wrapped="send"),
        "recv": _op("recv", collective="recv", async_role="start", wrapped="recv"),
        "recv-done": _op("recv-done", collective="recv", async_role="done", wrapped="recv"),
    }
)
for _kind in COLLECTIVE_KINDS:
    _TABLE[_kind] = _op(_kind, collective=_kind, thread_local_callees=_kind in ("all-reduce", "reduce-scatter"))
# Collectives XLA has native start/done opcodes for (the rest use async-start sugar).
for _kind in ("all-gather", "all-reduce", "collective-permute"):
    _TABLE[f"{_kind}-start"] = _op(
        f"{_kind}-start", collective=_kind, async_role="start", wrapped=_kind,
        thread_local_callees=_kind == "all-reduce",
    )
    _TABLE[f"{_kind}-done"] = _op(
        f"{_kind}-done", collective=_kind, async_role="done", wrapped=_kind,
        forwards_buffers=_kind == "all-reduce",
    )

NATIVE_ASYNC = frozenset(name for name, op in _TABLE.items() if op.async_role)
"""Opcode spellings that are XLA opcodes of their own, not async sugar."""

_SUGAR_SUFFIXES = {"-start": "start", "-update": "update", "-done": "done"}
# `X-update` exists only as sugar; natively-async ops have no update form, send/recv no -start.
_NOT_SUGAR_BASES = frozenset({"all-gather", "all-reduce", "collective-permute", "copy", "send", "recv"})


@functools.lru_cache(maxsize=None)
def info(opcode: str) -> OpInfo:
    """What the table knows about an opcode spelling; unknown opcodes get `known=False`."""
    op = _TABLE.get(opcode)
    if op is not None:
        return op
    for suffix, role in _SUGAR_SUFFIXES.items():
        if opcode.endswith(suffix):
            base = opcode[: -len(suffix)]
            wrapped = _TABLE.get(base)
            if wrapped is not None and base not in _NOT_SUGAR_BASES and not wrapped.async_role:
                return OpInfo(
                    name=opcode,
                    canonical=f"async-{role}",
                    collective=wrapped.collective,
                    async_role=role,
                    wrapped=base,
                )
    return OpInfo(name=opcode, canonical=opcode, known=False)


def is_known(opcode: str) -> bool:
    return info(opcode).known


def all_known() -> list[str]:
    """Every opcode spelling in the table (sugar forms excluded)."""
    return sorted(_TABLE)
