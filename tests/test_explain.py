"""The words after the numbers: levers shown by XLA, suspects ruled out by XLA's own peak.

Each lever `analysis.explain.LEVERS` offers names a fixture pair (lever off, lever on); XLA's
`memory_analysis()` of that pair, not hloscope, shows the lever lowers the temp size. Where a
diff rules out the held all-gathers, the bytes it gives for them at the peak are the bytes of
those all-gathers' values among the arrays XLA's own dump puts in its temp allocation at its
peak.
"""

from __future__ import annotations

import re

import pytest

import hloscope
from hloscope.analysis.explain import LEVERS

from .conftest import FIXTURES
from .test_diff import _calls, _load, _xla_held_at_peak, _xla_temp
from .xla_reference import xla_temp_at_peak


@pytest.mark.parametrize("lever", LEVERS, ids=lambda lv: lv.name)
def test_each_lever_lowers_xlas_temp_on_its_pair(lever):
    off, on = lever.shown_by
    assert _xla_temp(on) < _xla_temp(off), (lever.name, _xla_temp(off), _xla_temp(on))


@pytest.mark.xla
def test_the_sentence_names_the_lever_of_its_mechanism():
    """A diff whose leading cause is activations saved for the backward pass offers
    rematerialization: by XLA's dump, what grows most from A's peak to B's is values of the
    forward pass."""
    a, b = "gpu_hsdp_subaxes_accum1", "gpu_hsdp_subaxes_accum2"
    held_a, held_b = _xla_held_at_peak(a), _xla_held_at_peak(b)
    change = {g: held_b.get(g, 0) - held_a.get(g, 0) for g in set(held_a) | set(held_b)}
    assert max(change, key=change.get) == "forward", change
    d = hloscope.diff(_load(a), _load(b))
    assert d.explanation.mechanism == "saved_activations"
    assert d.explanation.lever.name == "rematerialization" and "jax.checkpoint" in d.summary


RULED_OUT = [("gpu_hsdp_optgrads_accum1", "gpu_hsdp_optgrads_accum2"), ("tpu_hsdp_optgrads_accum1", "tpu_hsdp_optgrads_accum2"), ("gpu_hsdp_accum1", "gpu_hsdp_accum2"), ("gpu_hsdp_subaxes_accum1", "gpu_hsdp_subaxes_accum2"),
             ("gpu_remat_dots", "gpu_remat_full")]


@pytest.mark.parametrize("pair", RULED_OUT, ids="-vs-".join)
def test_held_gathers_ruled_out_with_xlas_bytes_at_its_peak(pair):
    d = hloscope.diff(_load(pair[0]), _load(pair[1]))
    keeper, name = (d.b, pair[1]) if d.delta_temp_bytes > 0 else (d.a, pair[0])
    held = {h.instruction if "{" in h.instruction else h.instruction + "{}" for h in keeper.gathers.held}
    assert held and "not the" in d.explanation.words
    xla = sum(v["size"] for v in xla_temp_at_peak(FIXTURES / name) if v["name"] + v["index"] in held)
    assert keeper.gathers.held_bytes_at_peak == xla
    said = re.search(r"not the (?:held all-gather|\d+ held all-gathers): ([\d.]+ \w+) of", d.summary, re.I).group(1)
    assert said == hloscope.units.human_bytes(xla, digits=1)


SEEDS = [("gpu_hsdp_optgrads_accum1", "gpu_hsdp_optgrads_accum2"),
         ("tpu_hsdp_optgrads_accum1", "tpu_hsdp_optgrads_accum2")]
"""jax-ml/jax#24208 at equal micro-batch size, H100 and TPU v5e: accumulation 1 needs more."""


def _waiting_for_a_reduction(x, name: str, depth: int = 0) -> bool:
    """XLA's parse: whether a value is read, as it is or moved (a fusion of a concatenation,
    bitcasts, copies: XLA's combiner), by an all-reduce or a reduce-scatter."""
    for user in x.users.get(name, ()):
        op = x.opcode[user]
        if op.startswith(("all-reduce", "reduce-scatter")):
            return True
        if op == "tuple" and depth < 8 and any(
                x.opcode[u].startswith(("all-reduce", "reduce-scatter")) for u in x.users.get(user, ())):
            return True  # a combined all-reduce of a tuple's elements
        moved = op in ("bitcast", "copy", "concatenate") or (op == "fusion" and {
            x.opcode[i] for i in x.comps.get(_calls(x.text[user]), ())} <= {"parameter", "concatenate", "bitcast", "copy"})
        if moved and depth < 8 and _waiting_for_a_reduction(x, user, depth + 1):
            return True
    return False


def _backward(x, name: str, depth: int = 0) -> bool:
    """Whether a value is the backward pass's: its op_name says so, or it has none (XLA's
    combiner, bitcasts) and every operand is the backward pass's."""
    op_name = x.op_name(name)
    if op_name:
        return "transpose(" in op_name
    return bool(x.operands[name]) and depth < 8 and all(_backward(x, o, depth + 1) for o in x.operands[name])


@pytest.mark.xla
@pytest.mark.parametrize("seed", SEEDS, ids="-vs-".join)
def test_the_seed_pair_leads_with_gradients_waiting_for_a_reduction(seed):
    """From XLA's own dump of the accumulation-1 step: most of the bytes live at its peak are
    backward values in a gradient reduction or waiting for one (through the combiner's
    concatenation on H100; TPU's combined all-reduce of a tuple holds them).
    The diff says so, with those bytes, rules out the held gathers and offers accumulation."""
    from .test_gathers import _Xla
    from .xla_reference import read_dump

    a, b = seed
    assert _xla_temp(a) > _xla_temp(b)  # the seed's direction, by XLA
    x = _Xla(read_dump(FIXTURES / a / "after_optimizations.txt.gz"))
    peak = xla_temp_at_peak(FIXTURES / a)
    total = sum(v["size"] for v in peak)
    waiting = sum(v["size"] for v in peak if _backward(x, v["name"]) and (
        x.opcode[v["name"]].startswith(("all-reduce", "reduce-scatter")) or _waiting_for_a_reduction(x, v["name"])))
    assert waiting > total / 2
    d = hloscope.diff(_load(a), _load(b))
    assert d.delta_temp_bytes == _xla_temp(b) - _xla_temp(a)
    lead = d.causes[0]
    assert lead.role == "gradients" and lead.bytes < 0
    assert d.explanation.mechanism == "gradients_in_reductions"
    assert hloscope.units.human_bytes(waiting, digits=1) in d.explanation.words
    assert "not the" in d.explanation.words and d.explanation.lever.name == "gradient accumulation"


@pytest.mark.xla
def test_gradients_being_formed_are_backward_values_no_reduction_holds_yet():
    """The Quickstart's old pair (accumulation 2 at twice the sequence): B leads with gradients
    that no reduction or loop holds yet. XLA's dump and parse agree for every buffer the
    sentence counts: live at XLA's peak, made by the backward pass, not read by a reduction,
    not a loop's state."""
    from .test_gathers import _Xla
    from .xla_reference import read_dump

    a, b = "gpu_hsdp_accum1", "gpu_hsdp_accum2"
    d = hloscope.diff(_load(a), _load(b))
    assert d.explanation.mechanism == "gradients_being_formed"
    rows = [r for r in d.b.roles.buffers if r.where == "temp" and r.role == "gradients" and r.held_in is None]
    x = _Xla(read_dump(FIXTURES / b / "after_optimizations.txt.gz"))
    at_peak = {v["name"] + v["index"] for v in xla_temp_at_peak(FIXTURES / b)}
    for r in rows:
        name = r.instruction.split("{", 1)[0]
        assert (r.instruction if "{" in r.instruction else name + "{}") in at_peak, r
        assert _backward(x, name) and not _waiting_for_a_reduction(x, name), r
        assert x.opcode[name] != "parameter", r  # a loop body's parameter: a loop's state
    assert hloscope.units.human_bytes(sum(r.bytes for r in rows), digits=1) in d.explanation.words
