"""Cost analysis against XLA's own: `compiled.cost_analysis()` of each fixture's compilation
(fixtures/*/cost_analysis.json), XLA's HloCostAnalysis run on a module's text where the target
gives none (H100), and XLA's C++ parser for collective bytes.

Trip counts come from what the fixture generator asked for (meta.json), never from hloscope.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

import hloscope
from hloscope.analysis.cost import analyze_cost
from hloscope.analysis.hardware import TARGETS
from hloscope.analysis.roofline import roofline
from hloscope.ir import opcodes
from hloscope.ir.opcodes import COLLECTIVE_KINDS
from hloscope.speed.lazy import read_all

from .conftest import FIXTURES, ROOT, needs_xla

ALL = sorted([p.parent for p in FIXTURES.glob("*/module.hlo.txt")]
             + [p.parent for p in FIXTURES.glob("*/module.hlo.txt.gz")])


def _text(path: Path) -> str:
    plain = path / "module.hlo.txt"
    if plain.exists():
        return plain.read_text()
    with gzip.open(path / "module.hlo.txt.gz", "rt") as f:
        return f.read()


def _meta(path: Path) -> dict:
    return json.loads((path / "meta.json").read_text())


def _trips(path: Path) -> int | None:
    """The trip count of the fixture's loops, as the generator asked for them; None: no loop."""
    model = _meta(path)["model"]
    if model.get("accum", 1) > 1:
        return model["accum"]
    if model.get("scan_layers"):
        return model["n_layers"]
    return None


LOOP_FREE = [p for p in ALL if _trips(p) is None]
LOOPS = [p for p in ALL if _trips(p) is not None]

_MODULES: dict[Path, object] = {}
_COSTS: dict[Path, object] = {}


def _cost(path: Path):
    if path not in _COSTS:
        _COSTS[path] = analyze_cost(hloscope.parse(_text(path)))
    return _COSTS[path]


def _xla_hlo_cost(text: str) -> dict:
    """XLA's HloCostAnalysis of a module's text, as the CPU client runs it for
    `compiled.cost_analysis()` (test_xla_hlo_cost_is_cost_analysis shows they agree)."""
    needs_xla()
    import jax
    from jax._src.lib import _jax
    from jax._src.lib import xla_client as xc

    client = jax.devices("cpu")[0].client
    return _jax.hlo_module_cost_analysis(client, xc.hlo.hlo_module_from_text(text))


_XLA: dict[Path, dict] = {}


def _xla_figures(path: Path) -> tuple[dict, str]:
    """XLA's cost of the fixture: `compiled.cost_analysis()` as recorded, else (H100, which
    gives None) XLA's HloCostAnalysis of the compiled text."""
    recorded = json.loads((path / "cost_analysis.json").read_text())
    if recorded is not None:
        return recorded, "compiled.cost_analysis()"
    if path not in _XLA:
        _XLA[path] = _xla_hlo_cost(_text(path))
    return _XLA[path], "HloCostAnalysis of the text"


def _close(ours: float, xla: float, tolerance: float = 0.02) -> bool:
    return abs(ours - xla) <= tolerance * abs(xla)


def test_bodies_read_as_copies_are_priced_as_read():
    """The cost prices a body read as a copy (`getattr(Computation, "copy_of", None)`) as its original: every
    figure and instruction is what it is when every body is read on its own (a full parse)."""
    from .conftest import fixture_dirs

    copies = 0
    for path in fixture_dirs():
        text = _text(path)
        lazy = hloscope.parse(text, lazy=True)
        read_all(lazy)
        copies += sum(getattr(c, "copy_of", None) is not None for c in lazy.computations)
        assert analyze_cost(lazy) == analyze_cost(hloscope.parse(text)), path.name
    assert copies  # the fixtures' layers repeat their fusions


_OWN_REDUCERS = """HloModule m

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

%exp_add (a: f32[], b: f32[]) -> f32[] {
  %a.x = f32[] parameter(0)
  %b.x = f32[] parameter(1)
  %e.x = f32[] exponential(f32[] %a.x)
  ROOT %t.x = f32[] add(f32[] %e.x, f32[] %b.x)
}

%r.1 (p: f32[64,32]) -> f32[64] {
  %p.1 = f32[64,32]{1,0} parameter(0)
  %z.1 = f32[] constant(0)
  ROOT %q.1 = f32[64]{0} reduce(f32[64,32]{1,0} %p.1, f32[] %z.1), dimensions={1}, to_apply=%add
}

%r.2 (p: f32[64,32]) -> f32[64] {
  %p.2 = f32[64,32]{1,0} parameter(0)
  %z.2 = f32[] constant(0)
  ROOT %q.2 = f32[64]{0} reduce(f32[64,32]{1,0} %p.2, f32[] %z.2), dimensions={1}, to_apply=%exp_add
}

ENTRY %e (a: f32[64,32]) -> f32[64] {
  %a = f32[64,32]{1,0} parameter(0)
  %u = f32[64]{0} fusion(f32[64,32]{1,0} %a), kind=kInput, calls=%r.1
  %v = f32[64]{0} fusion(f32[64,32]{1,0} %a), kind=kInput, calls=%r.2
  ROOT %w = f32[64]{0} add(f32[64]{0} %u, f32[64]{0} %v)
}
"""


@pytest.mark.xla
def test_a_copy_calling_a_reducer_of_its_own_is_priced_as_xla_prices_it():
    """r.2 repeats r.1 up to names, so it is read as a copy of it (hloscope.speed.copies),
    but its reduce applies a computation of its own, with an exponential: its price is
    its own, as XLA's HloCostAnalysis counts it, not r.1's."""
    lazy = hloscope.parse(_OWN_REDUCERS, lazy=True)
    read_all(lazy)
    assert lazy.computation("r.2").copy_of is lazy.computation("r.1")
    xla, cost = _xla_hlo_cost(_OWN_REDUCERS), analyze_cost(lazy)
    assert xla.get("transcendentals", 0.0) > 0
    assert cost.flops_xla_convention == xla.get("flops", 0.0)
    assert cost.transcendentals_xla_convention == xla.get("transcendentals", 0.0)
    assert cost.bytes_accessed_xla_convention == xla.get("bytes accessed", 0.0)


def _dot_layer(k: int, op_name: str) -> str:
    return f"""
%f.{k} (p: f32[64,64]) -> f32[64,64] {{
  %p.{k} = f32[64,64]{{1,0}} parameter(0)
  ROOT %d.{k} = f32[64,64]{{1,0}} dot(f32[64,64]{{1,0}} %p.{k}, f32[64,64]{{1,0}} %p.{k}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, metadata={{op_name="{op_name}"}}
}}
"""


_LAYERS_ONE_REMATTED = ("HloModule m\n" + _dot_layer(1, "jit(step)/layers_0/dot")
                        + _dot_layer(2, "jit(step)/checkpoint/rematted_computation/layers_1/dot")
                        + _dot_layer(3, "jit(step)/layers_2/dot")
                        + "\nENTRY %e (a: f32[64,64]) -> (f32[64,64], f32[64,64], f32[64,64]) {\n"
                        + "  %a = f32[64,64]{1,0} parameter(0)\n"
                        + "".join(f"  %fusion.{k} = f32[64,64]{{1,0}} fusion(f32[64,64]{{1,0}} %a), kind=kOutput, calls=%f.{k}\n"
                                  for k in (1, 2, 3))
                        + "  ROOT %t = (f32[64,64]{1,0}, f32[64,64]{1,0}, f32[64,64]{1,0}) tuple(%fusion.1, %fusion.2, %fusion.3)\n}\n")


@pytest.mark.xla
def test_layers_alike_but_for_metadata_are_priced_each_by_its_own():
    """f.2 and f.3 repeat f.1 up to names and metadata, and are read as copies of it
    (hloscope.speed.copies), but f.2's metadata says its dot recomputes a forward op: the
    recomputed FLOPs are its dot's alone, as every body read on its own gives them, and the
    FLOPs are XLA's."""
    lazy = hloscope.parse(_LAYERS_ONE_REMATTED, lazy=True)
    cost, plain = lazy.cost(), hloscope.parse(_LAYERS_ONE_REMATTED).cost()  # the first reads every body
    assert lazy.computation("f.2").recipe.computation is lazy.computation("f.1")
    assert getattr(lazy.computation("f.2"), "copy_of", None) is None
    assert cost == plain
    assert cost.recompute_flops == 2 * 64 ** 3
    assert cost.flops_xla_convention == _xla_hlo_cost(_LAYERS_ONE_REMATTED).get("flops", 0.0) == 3 * 2 * 64 ** 3


def test_a_cost_listing_only_recomputing_instructions_is_the_whole_but_for_the_rest():
    """`recomputing_only` (what a diff's brief of a side's cost needs) gives the whole cost's
    totals and loops, and of its instructions those that recompute forward ops, in order."""
    import dataclasses

    from .conftest import fixture_dirs

    listed = left_out = 0
    for path in fixture_dirs():
        module = hloscope.parse(_text(path), lazy=True)
        whole, only = analyze_cost(module), analyze_cost(module, recomputing_only=True)
        recomputing = tuple(i for i in whole.instructions if i.recompute_flops)
        assert only == dataclasses.replace(whole, instructions=recomputing), path.name
        listed, left_out = listed + len(recomputing), left_out + len(whole.instructions) - len(recomputing)
    assert listed and left_out


def test_known_copies_leave_every_analysis_as_it_was():
    """`read_all` leaves the bodies that repeat one read before unmade, and the analyses ask
    their originals instead (`getattr(Computation, "copy_of", None)`): memory, roles at the peak, collectives
    and held gathers are what they are on the same module loaded lazily and left unread."""
    from .conftest import fixture_dirs

    known = 0
    for path in fixture_dirs():
        text = _text(path)
        plain, copied = hloscope.parse(text, lazy=True), hloscope.parse(text, lazy=True)
        read_all(copied)
        known += sum(getattr(c, "copy_of", None) is not None and not getattr(c, "is_read", True) for c in copied.computations)
        for analysis in ("memory", "roles", "collectives", "held_gathers"):
            ours, theirs = getattr(copied, analysis)(), getattr(plain, analysis)()
            assert ours.to_dict() == theirs.to_dict(), (path.name, analysis)
    assert known  # some copies were still unmade when the analyses ran


# ─── FLOPs as XLA counts them ──────────────────────────────────────────────────────────


@pytest.mark.xla
@pytest.mark.parametrize("fixture", [p for p in LOOP_FREE if p.name.startswith("cpu_")],
                         ids=lambda p: p.name)
def test_xla_hlo_cost_is_cost_analysis(fixture):
    """The HloCostAnalysis of the text (what stands in for H100's missing cost_analysis()) is
    what compiled.cost_analysis() reported for the compilation itself."""
    recorded = json.loads((fixture / "cost_analysis.json").read_text())
    again = _xla_hlo_cost(_text(fixture))
    for key in ("flops", "transcendentals", "bytes accessed"):
        assert again[key] == recorded[key], key


@pytest.mark.xla
@pytest.mark.parametrize("fixture", LOOP_FREE, ids=lambda p: p.name)
def test_loop_free_flops_within_2_percent_of_xla(fixture):
    xla, source = _xla_figures(fixture)
    cost = _cost(fixture)
    assert not cost.loops and not cost.unknown_trip_count
    assert cost.flops == cost.flops_xla_convention + cost.opaque  # no loop: one convention
    assert _close(cost.flops, xla["flops"]), (cost.flops, xla["flops"], source)
    assert _close(cost.transcendentals, xla["transcendentals"]), (cost.transcendentals, xla["transcendentals"])
    if not fixture.name.startswith("tpu_"):  # TPU's cost model sizes tiled, padded buffers
        assert _close(cost.bytes_accessed, xla["bytes accessed"]), (cost.bytes_accessed, xla["bytes accessed"])


def test_a_kernel_that_states_its_cost_is_priced_as_libtpu_prices_it():
    """Pallas flash attention's kernels state their cost (`CostEstimate`, in the
    tpu_custom_call's backend_config), and libtpu's cost analysis adds it: the compilation's
    own figures (cost_analysis.json), to parts in a million (XLA sums in float32). Priced as
    opaque, the four kernels' 4.3 GFLOP were 4% short."""
    fixture = FIXTURES / "tpu_llama_hsdp_unroll_flash"
    recorded = json.loads((fixture / "cost_analysis.json").read_text())
    text = _text(fixture)
    stated = text.count('"cost_estimate":{')
    assert stated == 4  # the forward kernels; the backward ones state none
    cost = _cost(fixture)
    assert abs(cost.flops_xla_convention - recorded["flops"]) <= 1e-6 * recorded["flops"]
    assert abs(cost.transcendentals_xla_convention - recorded["transcendentals"]) <= 1e-6 * recorded["transcendentals"]


@pytest.mark.xla
@pytest.mark.parametrize("fixture", LOOPS, ids=lambda p: p.name)
def test_xla_counts_a_loop_body_once(fixture):
    """Which convention XLA 0.10.2 follows (jax-ml/jax#18672): its figure for a module whose
    loops have known trip counts is the body counted once, not × the trip count."""
    trips = _trips(fixture)
    xla, source = _xla_figures(fixture)
    cost = _cost(fixture)
    assert cost.loops and all(loop.trip_count == trips for loop in cost.loops)
    assert not cost.unknown_trip_count
    assert _close(cost.flops_xla_convention, xla["flops"]), (cost.flops_xla_convention, xla["flops"], source)
    assert _close(cost.transcendentals_xla_convention, xla["transcendentals"])
    # The loops hold most of the work: × their trip count is far from XLA's figure.
    assert cost.flops > 1.5 * xla["flops"], (cost.flops, xla["flops"])
    in_loops = sum(loop.trip_flops * loop.runs for loop in cost.loops)
    assert cost.flops - cost.flops_xla_convention == pytest.approx((trips - 1) * in_loops, rel=0.01)


_COUNTED_LOOP = """HloModule counted_loop

body {{
  p = (s32[], f32[{m},{k}], f32[{k},{n}]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  a = f32[{m},{k}] get-tuple-element(p), index=1
  b = f32[{k},{n}] get-tuple-element(p), index=2
  d = f32[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[{m},{k}], f32[{k},{n}]) tuple(j, a, b)
}}

cond {{
  p = (s32[], f32[{m},{k}], f32[{k},{n}]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  limit = s32[] constant({trips})
  ROOT lt = pred[] compare(i, limit), direction=LT
}}

ENTRY e {{
  a = f32[{m},{k}] parameter(0)
  b = f32[{k},{n}] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[{m},{k}], f32[{k},{n}]) tuple(zero, a, b)
  ROOT w = (s32[], f32[{m},{k}], f32[{k},{n}]) while(init), condition=cond, body=body,
    backend_config={{"known_trip_count":{{"n":"{trips}"}}}}
}}
"""


@pytest.mark.xla
def test_xla_convention_on_a_counted_loop():
    """A loop of 5 trips around one dot: XLA counts the dot (and the counter's add and compare)
    once; hloscope's step count is 5 dots, 5 adds and 6 compares."""
    m, k, n, trips = 16, 32, 8, 5
    text = _COUNTED_LOOP.format(m=m, k=k, n=n, trips=trips)
    dot = 2 * m * n * k
    xla = _xla_hlo_cost(text)
    assert xla["flops"] == dot + 1 + 1  # one trip of the body (dot, add) and of the condition
    cost = analyze_cost(hloscope.parse(text))
    assert cost.flops_xla_convention == xla["flops"]
    assert cost.flops == trips * (dot + 1) + (trips + 1) * 1
    assert [(loop.instruction, loop.trip_count) for loop in cost.loops] == [("w", trips)]


_UNCOUNTED_LOOP = """HloModule uncounted_loop

body {
  p = (s32[], s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  x = f32[64] get-tuple-element(p), index=2
  y = f32[64] multiply(x, x)
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], s32[], f32[64]) tuple(j, n, y)
}

cond {
  p = (s32[], s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY e {
  n = s32[] parameter(0)
  x = f32[64] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], s32[], f32[64]) tuple(zero, n, x)
  ROOT w = (s32[], s32[], f32[64]) while(init), condition=cond, body=body
}
"""


def test_a_loop_of_unknown_trip_count_counts_once_and_says_so():
    """The trip count depends on a parameter: nothing tells it, nothing is guessed."""
    cost = analyze_cost(hloscope.parse(_UNCOUNTED_LOOP))
    assert cost.unknown_trip_count
    assert [(loop.instruction, loop.trip_count) for loop in cost.loops] == [("w", None)]
    assert cost.flops == cost.flops_xla_convention == 64 + 1 + 1


# ─── one op at a time, against XLA's HloCostAnalysis ──────────────────────────────────

_ADD = "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
_MAX = "max {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] maximum(x, y)\n}\n"

OPS = {
    "dot_batch": """
  a = f32[4,16,32]{2,1,0} parameter(0)
  b = f32[4,32,8]{2,1,0} parameter(1)
  ROOT d = f32[4,16,8]{2,1,0} dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}""",
    "conv_padded_strided": """
  a = f32[2,17,17,8]{3,2,1,0} parameter(0)
  b = f32[3,3,8,16]{3,2,1,0} parameter(1)
  ROOT c = f32[2,9,9,16]{3,2,1,0} convolution(a, b), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f""",
    "conv_dilated_grouped": """
  a = f32[2,12,12,8]{3,2,1,0} parameter(0)
  b = f32[3,3,4,8]{3,2,1,0} parameter(1)
  ROOT c = f32[2,8,8,8]{3,2,1,0} convolution(a, b), window={size=3x3 rhs_dilate=2x2}, dim_labels=b01f_01io->b01f, feature_group_count=2""",
    "conv_base_dilated_batch": """
  a = bf16[4,64,64]{2,1,0} parameter(0)
  b = bf16[4,64,32]{2,1,0} parameter(1)
  ROOT c = bf16[4,64,32]{2,1,0} convolution(a, b), window={size=4 stride=3 lhs_dilate=4}, dim_labels=0bf_0io->0bf""",
    "reduce": """
  a = f32[64,128]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[64]{0} reduce(a, z), dimensions={1}, to_apply=add""",
    "reduce_window": """
  a = f32[8,32]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[8,16]{1,0} reduce-window(a, z), window={size=1x3 stride=1x2 pad=0_0x1_0}, to_apply=max""",
    "reduce_window_as_broadcast": """
  a = f32[8,32]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[8,32]{1,0} reduce-window(a, z), window={size=1x63 pad=0_0x31_31}, to_apply=add""",
    "elementwise_and_transcendentals": """
  a = f32[64,32]{1,0} parameter(0)
  b = f32[64,32]{1,0} parameter(1)
  e = f32[64,32]{1,0} exponential(a)
  t = f32[64,32]{1,0} tanh(b)
  m = f32[64,32]{1,0} multiply(e, t)
  c = pred[64,32]{1,0} compare(a, b), direction=GT
  n = pred[64,32]{1,0} and(c, c)
  s = f32[64,32]{1,0} select(n, m, a)
  k = f32[64,32]{1,0} copy(s)
  k2 = f32[64,32]{1,0} copy(k)
  ROOT r = f32[64,32]{1,0} rsqrt(k2)""",
    "sort": """
  a = f32[1000]{0} parameter(0)
  ROOT s = f32[1000]{0} sort(a), dimensions={0}, to_apply=lt""",
    "gather_scatter": """
  a = f32[512,128]{1,0} parameter(0)
  i = s32[64,1]{1,0} parameter(1)
  g = f32[64,128]{1,0} gather(a, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,128}
  ROOT s = f32[512,128]{1,0} scatter(a, i, g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add""",
    "slices_and_tuples": """
  a = f32[64,128]{1,0} parameter(0)
  i = s32[] parameter(1)
  s = f32[32,128]{1,0} slice(a), slice={[0:32], [0:128]}
  z = s32[] constant(0)
  d = f32[8,128]{1,0} dynamic-slice(a, i, z), dynamic_slice_sizes={8,128}
  u = f32[64,128]{1,0} dynamic-update-slice(a, d, i, z)
  t = (f32[32,128]{1,0}, f32[64,128]{1,0}) tuple(s, u)
  o = (f32[32,128]{1,0}, f32[64,128]{1,0}) opt-barrier(t)
  ROOT g = f32[64,128]{1,0} get-tuple-element(o), index=1""",
    "fusion_boundary": """
  a = f32[64,128]{1,0} parameter(0)
  b = f32[128]{0} parameter(1)
  i = s32[] parameter(2)
  ROOT f = (f32[64,128]{1,0}, f32[64,128]{1,0}) fusion(a, b, i), kind=kLoop, calls=fused""",
    "custom_fusion_gather": """
  a = f32[64,128]{1,0} parameter(0)
  i = s32[8,1]{1,0} parameter(1)
  ROOT f = f32[8,128]{1,0} fusion(a, i), kind=kCustom, calls=gathering""",
    "all_reduce_tuple": """
  a = f32[1024]{0} parameter(0)
  b = f32[256,4]{1,0} parameter(1)
  ROOT r = (f32[1024]{0}, f32[256,4]{1,0}) all-reduce(a, b), replica_groups={{0,1}}, to_apply=add""",
    "count_leading_zeros": """
  a = s32[1024]{0} parameter(0)
  ROOT c = s32[1024]{0} count-leading-zeros(a)""",
    "custom_call": """
  a = f32[1024]{0} parameter(0)
  c = f32[1024]{0} custom-call(a), custom_call_target="foo"
  ROOT n = f32[1024]{0} negate(c)""",
    "conditional_costliest_branch": """
  p = pred[] parameter(0)
  a = f32[256]{0} parameter(1)
  ROOT c = f32[256]{0} conditional(p, a, a), true_computation=cheap, false_computation=dear""",
}

_COMPUTATIONS = _ADD + _MAX + """
lt {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT c = pred[] compare(x, y), direction=LT
}

fused {
  p0 = f32[64,128]{1,0} parameter(0)
  p1 = f32[128]{0} parameter(1)
  p2 = s32[] parameter(2)
  bb = f32[64,128]{1,0} broadcast(p1), dimensions={1}
  m = f32[64,128]{1,0} multiply(p0, bb)
  z = s32[] constant(0)
  s = f32[16,128]{1,0} slice(m), slice={[0:16], [0:128]}
  k = f32[4,128]{1,0} constant({...})
  w = f32[16,128]{1,0} dynamic-update-slice(s, k, p2, z)
  u = f32[64,128]{1,0} dynamic-update-slice(p0, w, p2, z)
  ROOT t = (f32[64,128]{1,0}, f32[64,128]{1,0}) tuple(m, u)
}

gathering {
  p0 = f32[64,128]{1,0} parameter(0)
  p1 = s32[8,1]{1,0} parameter(1)
  e = f32[64,128]{1,0} exponential(p0)
  ROOT g = f32[8,128]{1,0} gather(e, p1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,128}
}

cheap {
  a = f32[256]{0} parameter(0)
  ROOT n = f32[256]{0} negate(a)
}

dear {
  a = f32[256]{0} parameter(0)
  e = f32[256]{0} exponential(a)
  m = f32[256]{0} multiply(e, a)
  ROOT s = f32[256]{0} add(m, a)
}
"""


@pytest.mark.xla
@pytest.mark.parametrize("name", sorted(OPS))
def test_each_op_as_xla_counts_it(name):
    text = f"HloModule {name}\n\n{_COMPUTATIONS}\nENTRY e {{{OPS[name]}\n}}\n"
    xla = _xla_hlo_cost(text)
    cost = analyze_cost(hloscope.parse(text))
    assert cost.flops_xla_convention == xla.get("flops", 0.0)
    assert cost.transcendentals_xla_convention == xla.get("transcendentals", 0.0)
    # XLA counts a custom-call's bytes as -1 (unknown); hloscope as none.
    assert cost.bytes_accessed_xla_convention - cost.opaque == xla.get("bytes accessed", 0.0)


_F, _S, _P, _C, _U = "f32[8]{0}", "s32[8]{0}", "pred[8]{0}", "c64[8]{0}", "u32[8]{0}"
_SIGNATURES = {  # opcode: (operand shapes, result shape, attributes); else f32 in and out
    "count-leading-zeros": ([_S], _S, ""), "popcnt": ([_S], _S, ""), "not": ([_S], _S, ""),
    **{op: ([_S, _S], _S, "") for op in ("and", "or", "xor", "shift-left", "shift-right-arithmetic",
                                         "shift-right-logical")},
    "is-finite": ([_F], _P, ""), "compare": ([_F, _F], _P, ", direction=LT"),
    "convert": ([_F], _S, ""), "bitcast-convert": ([_F], _S, ""),
    "complex": ([_F, _F], _C, ""), "real": ([_C], _F, ""), "imag": ([_C], _F, ""),
    "reduce-precision": ([_F], _F, ", exponent_bits=5, mantissa_bits=10"),
    "select": ([_P, _F, _F], _F, ""), "stochastic-convert": ([_F, _U], _S, ""),
}


@pytest.mark.xla
@pytest.mark.parametrize("opcode", sorted(opcodes.spellings(elementwise=True)))
def test_the_tables_cost_per_element_is_xlas(opcode):
    """Each elementwise op of the opcode table, alone on 8 elements: XLA's HloCostAnalysis
    counts a flop per element, or a transcendental, or (copy) neither, as the table says."""
    operands, result, attributes = _SIGNATURES.get(opcode, ([_F] * (opcodes.info(opcode).arity or 1), _F, ""))
    params = "".join(f"  p{i} = {shape} parameter({i})\n" for i, shape in enumerate(operands))
    names = ", ".join(f"p{i}" for i in range(len(operands)))
    text = f"HloModule m\n\nENTRY e {{\n{params}  ROOT r = {result} {opcode}({names}){attributes}\n}}\n"
    xla = _xla_hlo_cost(text)
    per_element = opcodes.info(opcode).cost_per_element
    assert (xla.get("flops", 0.0), xla.get("transcendentals", 0.0)) == (
        8 if per_element == "flop" else 0, 8 if per_element == "transcendental" else 0)
    cost = analyze_cost(hloscope.parse(text))
    assert (cost.flops, cost.transcendentals, cost.bytes_accessed) == (
        xla.get("flops", 0.0), xla.get("transcendentals", 0.0), xla.get("bytes accessed", 0.0))


_COSTS_NOTHING = {  # each op as the root of an entry; opt-barrier and copy, which cost bytes, for contrast
    "parameter": "  ROOT p0 = f32[8]{0} parameter(0)",
    "constant": "  p0 = f32[8]{0} parameter(0)\n  ROOT r = f32[8]{0} constant({1,2,3,4,5,6,7,8})",
    "get-tuple-element": "  p0 = (f32[8]{0}, f32[8]{0}) parameter(0)\n"
                         "  ROOT r = f32[8]{0} get-tuple-element(p0), index=1",
    "bitcast": "  p0 = f32[8]{0} parameter(0)\n  ROOT r = f32[2,4]{1,0} bitcast(p0)",
    "after-all": "  p0 = token[] parameter(0)\n  ROOT r = token[] after-all(p0, p0)",
    "add-dependency": "  p0 = f32[8]{0} parameter(0)\n  t = token[] after-all()\n"
                      "  ROOT r = f32[8]{0} add-dependency(p0, t)",
    "domain": '  p0 = f32[8]{0} parameter(0)\n  ROOT r = f32[8]{0} domain(p0), domain={kind="sharding", '
              'entry={maximal device=0}, exit={maximal device=1}}',
    "opt-barrier": "  p0 = f32[8]{0} parameter(0)\n  ROOT r = f32[8]{0} opt-barrier(p0)",
    "copy": "  p0 = f32[8]{0} parameter(0)\n  ROOT r = f32[8]{0} copy(p0)",
}


@pytest.mark.xla
@pytest.mark.parametrize("opcode", sorted(_COSTS_NOTHING))
def test_the_tables_ops_that_cost_nothing_are_xlas(opcode):
    """XLA's HloCostAnalysis counts neither flops nor bytes for exactly the ops the table
    marks `costs_nothing` (every one of them is here)."""
    assert opcodes.spellings(costs_nothing=True) <= set(_COSTS_NOTHING)
    text = f"HloModule m\n\nENTRY e {{\n{_COSTS_NOTHING[opcode]}\n}}\n"
    xla = _xla_hlo_cost(text)
    nothing = xla.get("flops", 0.0) == 0 and xla.get("bytes accessed", 0.0) == 0
    assert nothing == opcodes.info(opcode).costs_nothing
    cost = analyze_cost(hloscope.parse(text))
    assert (cost.flops, cost.bytes_accessed) == (xla.get("flops", 0.0), xla.get("bytes accessed", 0.0))


# ─── recomputation ────────────────────────────────────────────────────────────────────

REMAT_PAIRS = [
    ("cpu_hsdp_accum1", "cpu_remat_full"),
    ("cpu_hsdp_accum1", "cpu_remat_dots"),
    ("gpu_hsdp_accum1", "gpu_remat_full"),
    ("tpu_hsdp_accum1", "tpu_remat_full"),
]


@pytest.mark.xla
@pytest.mark.parametrize("base, remat", REMAT_PAIRS, ids=[r for _, r in REMAT_PAIRS])
def test_remat_flop_increase_matches_xla(base, remat):
    """The FLOPs a remat policy adds, against XLA's own figures for the two compilations; the
    recomputed forward ops are found on the remat side only, and account for that increase."""
    a, b = FIXTURES / base, FIXTURES / remat
    xla_increase = _xla_figures(b)[0]["flops"] - _xla_figures(a)[0]["flops"]
    ours_a, ours_b = _cost(a), _cost(b)
    increase = ours_b.flops - ours_a.flops
    assert xla_increase > 0
    assert _close(increase, xla_increase), (increase, xla_increase)
    assert ours_a.recompute_flops == 0 and not ours_a.recomputed
    assert ours_b.recompute_flops > 0 and ours_b.recomputed
    # Replaying the forward pass is what the policy adds: the two agree to within 10%.
    assert _close(ours_b.recompute_flops, increase, 0.10), (ours_b.recompute_flops, increase)


@pytest.mark.parametrize("fixture", [p for p in ALL if _meta(p)["model"].get("remat_policy") is None],
                         ids=lambda p: p.name)
def test_no_recomputation_without_a_remat_policy(fixture):
    cost = _cost(fixture)
    assert cost.recompute_flops == 0 and not cost.recomputed


_REMAT = """HloModule remat, is_scheduled=true

ENTRY e {
  x = f32[32,64]{1,0} parameter(0)
  w = f32[64,64]{1,0} parameter(1)
  g = f32[32,64]{1,0} parameter(2)
  h = f32[32,64]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/jvp(checkpoint)/dot_general"}
  y = f32[32,64]{1,0} tanh(h), metadata={op_name="jit(f)/jvp(checkpoint)/tanh"}
  h2 = f32[32,64]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/transpose(jvp(checkpoint))/checkpoint/rematted_computation/dot_general"}
  silent = f32[32,64]{1,0} multiply(h2, h2)
  y2 = f32[32,64]{1,0} tanh(silent), metadata={op_name="jit(f)/transpose(jvp(checkpoint))/checkpoint/rematted_computation/tanh"}
  dy = f32[32,64]{1,0} multiply(g, y2), metadata={op_name="jit(f)/transpose(jvp(checkpoint))/mul"}
  c = f32[32,64]{1,0} add(dy, y), metadata={op_name="jit(f)/jvp(checkpoint)/add"}
  c.remat = f32[32,64]{1,0} add(dy, y)
  mixed = f32[32,64]{1,0} add(c, y2)
  ROOT r = (f32[32,64]{1,0}, f32[32,64]{1,0}, f32[32,64]{1,0}) tuple(c, c.remat, mixed)
}
"""


def test_recomputation_is_found_by_metadata_name_and_dataflow():
    """JAX's rematted primal (by op_name), XLA's rematerialization clone (by name), and an op
    without metadata computed only from replayed values count; a backward op, a forward op
    and a silent op mixing replayed and other values do not."""
    cost = analyze_cost(hloscope.parse(_REMAT))
    found = {i.instruction: i.recompute_flops for i in cost.recomputed}
    dot = 2 * 32 * 64 * 64
    assert found == {"h2": dot, "silent": 32 * 64, "c.remat": 32 * 64}
    assert cost.recompute_flops == dot + 2 * 32 * 64  # tanh is a transcendental, not a flop


# ─── collective bytes, against XLA's parse ────────────────────────────────────────────

_CALLS = re.compile(r"\b(calls|to_apply|body|condition|true_computation|false_computation|branch_computations)="
                    r"(\{[^}]*\}|%?[\w.\-]+)")


def _xla_runs(text: str, trips: int | None) -> dict[str, int]:
    """How often each computation runs per step, from XLA's parse of the text: calls as XLA's
    instructions print them, every while loop `trips` times (its condition once more), an async
    start's synthesized computation as often as the start."""
    from jax._src.lib import xla_client as xc

    from .xla_reference import opcode_spelling

    module = xc.hlo.hlo_module_from_text(text)
    comps = list(module.computations())
    callers: dict[str, list[tuple[str, int]]] = defaultdict(list)
    wrapped_roots: dict[str, str] = {}
    for comp in comps:
        for inst in comp.instructions():
            spelling = opcode_spelling(inst.opcode)
            for key, value in _CALLS.findall(inst.to_string()):
                for name in re.findall(r"%?([\w.\-]+)", value):
                    times = 1
                    if spelling == "while":
                        assert trips is not None, "a loop the generator did not make"
                        times = trips if key == "body" else trips + 1 if key == "condition" else 1
                    callers[name].append((comp.name, times))
            if spelling == "async-start":
                wrapped_roots[inst.async_wrapped_root().name] = comp.name
    entry = comps[-1].name  # XLA lists the entry computation last
    for comp in comps:
        if comp.name not in callers and comp.name != entry:
            starts = {wrapped_roots[i.name] for i in comp.instructions() if i.name in wrapped_roots}
            callers[comp.name] = [(caller, 1) for caller in starts]
    runs: dict[str, int] = {}

    def run(name: str) -> int:
        if name not in runs:
            runs[name] = 1 if name == entry else sum(run(c) * t for c, t in callers.get(name, ()))
        return runs[name]

    return {c.name: run(c.name) for c in comps}


@pytest.mark.xla
@pytest.mark.parametrize("fixture", ALL, ids=lambda p: p.name)
def test_collective_bytes_per_step_match_xla_parse(fixture):
    needs_xla()
    from .xla_reference import xla_collectives

    text = _text(fixture)
    runs = _xla_runs(text, _trips(fixture))
    want: dict[str, int] = defaultdict(int)
    for kind, comp, _, nbytes in xla_collectives(text):
        if kind in COLLECTIVE_KINDS:
            want[kind] += nbytes * runs[comp]
    cost = _cost(fixture)
    got = {kind: b for kind, b in cost.collective_bytes_by_kind.items() if b}
    assert got == dict(want)
    assert cost.collective_bytes == sum(want.values())
    if _trips(fixture):
        assert sum(want.values()) > sum(nbytes for kind, _, _, nbytes in xla_collectives(text)
                                        if kind in COLLECTIVE_KINDS), "some collective runs in the loop"


_WIRE = """HloModule wire, is_scheduled=true

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY e {
  a = f32[256]{0} parameter(0)
  g = f32[1024]{0} all-gather(a), replica_groups={{0,1,2,3},{4,5,6,7}}, dimensions={0}
  r = f32[1024]{0} all-reduce(g), replica_groups={{0,1},{2,3},{4,5},{6,7}}, to_apply=add
  s = f32[128]{0} reduce-scatter(r), replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, to_apply=add
  ROOT p = f32[128]{0} collective-permute(s), source_target_pairs={{0,1},{1,0}}
}
"""


def test_wire_bytes_follow_ring_algorithms():
    """What each device sends under ring algorithms, from the group size n and the result R:
    all-gather (n-1)/n R, all-reduce 2(n-1)/n R, reduce-scatter (n-1) R, a permute R."""
    cost = analyze_cost(hloscope.parse(_WIRE))
    assert cost.collective_bytes_by_kind["all-gather"] == 4096
    assert cost.collective_wire_bytes_by_kind["all-gather"] == 4096 * 3 // 4
    assert cost.collective_wire_bytes_by_kind["all-reduce"] == 4096 * 2 * 1 // 2
    assert cost.collective_wire_bytes_by_kind["reduce-scatter"] == 512 * 7
    assert cost.collective_wire_bytes_by_kind["collective-permute"] == 512
    assert cost.collective_wire_bytes == 3072 + 4096 + 3584 + 512


# ─── roofline, API and command line ───────────────────────────────────────────────────


def test_roofline_is_bounded_by_its_largest_term():
    cost = _cost(FIXTURES / "gpu_hsdp_accum1")
    h100 = TARGETS["h100"]
    r = roofline(cost, "h100")
    assert r.compute_seconds == cost.flops / h100.peak_flops
    assert r.memory_seconds == cost.bytes_accessed / h100.hbm_bytes_per_second
    assert r.seconds == max(r.compute_seconds, r.memory_seconds, r.collective_seconds)
    assert r.serial_seconds >= r.seconds
    assert all(t.source and t.hbm_bytes > 0 for t in TARGETS.values())
    with pytest.raises(ValueError):
        roofline(cost, "no-such-chip")


def test_module_cost_is_the_analysis_and_survives_the_cache(_cache_in_a_temporary_directory):
    path = FIXTURES / "cpu_hsdp_accum2" / "module.hlo.txt"
    first = hloscope.load(path).cost()
    kept = list(Path(_cache_in_a_temporary_directory).glob("results/*-cost-*.json"))
    assert kept, "module.cost() keeps its result"
    again = hloscope.load(path).cost()  # read back from the result cache
    assert again == first == _cost(path.parent)
    assert again.top(3) == first.top(3) and again.loops == first.loops


def _run(*args):
    return subprocess.run([sys.executable, "-m", "hloscope", *args], capture_output=True, text=True, cwd=ROOT,
                          check=False)


def test_cost_cli_json_contract():
    path = str(FIXTURES / "cpu_remat_full" / "module.hlo.txt")
    r = _run("cost", path, "--json", "--top", "3", "--by", "op_name", "--target", "tpu-v5e")
    assert r.returncode == 0, r.stderr
    (mod,) = json.loads(r.stdout)["modules"]
    cost = _cost(FIXTURES / "cpu_remat_full")
    assert mod["file"] == path and mod["name"] == cost.module
    assert {k: mod[k] for k in ("flops", "bytes_accessed", "collective_bytes", "recompute_flops")} == {
        "flops": cost.flops, "bytes_accessed": cost.bytes_accessed, "collective_bytes": cost.collective_bytes,
        "recompute_flops": cost.recompute_flops}
    assert len(mod["top"]) == 3 and set(mod["top"][0]) >= {"instruction", "flops", "op_name"}
    assert mod["top"][0]["flops"] == max(i.total_flops for i in cost.instructions)
    assert sum(g["flops"] for g in mod["groups"]) == cost.flops
    assert mod["roofline"]["estimate"] is True and mod["roofline"]["target"] == "tpu-v5e"
    assert "ESTIMATE" in mod["roofline"]["note"]


def test_cost_cli_text_labels_the_estimate_and_rejects_an_unknown_target():
    path = str(FIXTURES / "cpu_hsdp_accum2" / "module.hlo.txt")
    r = _run("cost", path, "--target", "h100")
    assert r.returncode == 0, r.stderr
    assert "roofline ESTIMATE on h100" in r.stdout and "XLA's convention" in r.stdout
    bad = _run("cost", path, "--target", "abacus")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


@pytest.mark.xla
@pytest.mark.parametrize(("dtype", "precision", "arithmetic", "peaks"), [
    ("float32", None, "f32", {"h100": 494.7e12, "tpu-v5e": 197e12}),
    ("float32", "HIGH", "f32/high", {"h100": 494.7e12, "tpu-v5e": 197e12 / 3}),
    ("float32", "HIGHEST", "f32/highest", {"h100": 66.9e12, "tpu-v5e": 197e12 / 6}),
    ("int8", None, "s8", {"h100": 1979e12, "tpu-v5e": 394e12}),
])
def test_the_roofline_prices_each_dot_at_the_peak_of_its_arithmetic(dtype, precision, arithmetic, peaks):
    """An f32 step is not priced at the bf16 tensor peak: a dot's FLOPs (XLA's) go at the
    published peak of what it computes in, its precision included (TF32 on an H100 unless
    HIGHEST asks for f32; 1, 3 or 6 bf16 passes on a TPU)."""
    needs_xla()
    import jax
    import jax.numpy as jnp

    x, y = jnp.ones((64, 128), dtype), jnp.ones((128, 32), dtype)
    out = jnp.int32 if dtype == "int8" else None
    compiled = jax.jit(lambda a, b: jnp.dot(a, b, precision=precision and getattr(jax.lax.Precision, precision),
                                            preferred_element_type=out)).lower(x, y).compile()
    flops = compiled.cost_analysis()["flops"]
    cost = analyze_cost(hloscope.parse(compiled.as_text()))
    assert cost.matmul_flops == {arithmetic: flops}
    for target, peak in peaks.items():
        assert roofline(cost, target).compute_seconds == pytest.approx(flops / peak, rel=1e-12)
