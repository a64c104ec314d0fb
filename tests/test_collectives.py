"""Collectives analysis, compared with XLA's own parser and with the fixtures' generator.

Static counts and bytes come from XLA's C++ parser (`xla_reference.xla_collectives`); loop
trip counts from each fixture's meta.json (what the generator asked for); the edge cases
from small inline modules whose answers are written next to them.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

import hloscope
from hloscope.analysis.callgraph import trip_count
from hloscope.ir.opcodes import COLLECTIVE_KINDS, POINT_TO_POINT_KINDS

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p.parent for p in (ROOT / "fixtures").glob("*/module.hlo.txt"))


def _xla():
    pytest.importorskip("jaxlib", reason="needs jaxlib for XLA's own answers")
    from .xla_reference import xla_collectives

    return xla_collectives


def _tallies(result):
    return {**result.by_kind, **result.point_to_point}


# ─── every fixture: static counts and bytes equal XLA's ─────────────────────────────────


@pytest.mark.xla
@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.name for p in FIXTURES])
def test_static_counts_and_bytes_match_xla(fixture):
    text = (fixture / "module.hlo.txt").read_text()
    xla = _xla()(text)
    want_counts = collections.Counter(kind for kind, *_ in xla)
    want_bytes = collections.Counter()
    for kind, _, _, nbytes in xla:
        want_bytes[kind] += nbytes

    result = hloscope.parse(text).collectives()
    tallies = _tallies(result)
    got_counts = {k: t.count for k, t in tallies.items() if t.count}
    got_bytes = {k: t.bytes for k, t in tallies.items() if t.count}
    assert got_counts == dict(want_counts)
    assert got_bytes == dict(want_bytes)
    assert result.total.count == sum(n for k, n in want_counts.items() if k in COLLECTIVE_KINDS)


@pytest.mark.xla
@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.name for p in FIXTURES])
def test_instances_are_xlas_instructions(fixture):
    """Same instructions, in the same computations (sugar aside: XLA names its synthesized
    wrapped op differently, so async-wrapped ones are matched by kind and bytes)."""
    text = (fixture / "module.hlo.txt").read_text()
    xla = _xla()(text)
    module = hloscope.parse(text)
    got = {(c.kind, c.computation, c.instruction, c.bytes) for c in module.collectives().instances}
    names = {c.name for c in module.computations}
    want_plain = {row for row in xla if row[1] in names}
    assert want_plain <= got
    rest_want = sorted((k, b) for k, comp, _, b in xla if comp not in names)
    rest_got = sorted((k, b) for k, comp, name, b in got if (k, comp, name, b) not in want_plain)
    assert rest_got == rest_want


# ─── loops: dynamic = static × the generator's trip count ───────────────────────────────


def _loop_fixtures():
    out = []
    for p in FIXTURES:
        model = json.loads((p / "meta.json").read_text())["model"]
        if model.get("accum", 1) > 1:
            out.append(pytest.param(p, model["accum"], id=p.name))
        elif model.get("scan_layers"):
            out.append(pytest.param(p, model["n_layers"], id=p.name))
    return out


def _under(comp, seen):
    """Computations reachable from `comp` through any call (fusions, calls, nested loops)."""
    if comp.name in seen:
        return
    seen.add(comp.name)
    for inst in comp.instructions:
        for callee in inst.called_computations:
            _under(callee, seen)


@pytest.mark.parametrize("fixture, trips", _loop_fixtures())
def test_dynamic_count_is_static_times_trip_count(fixture, trips):
    module = hloscope.load(fixture / "module.hlo.txt")
    whiles = [i for i in module.instructions() if i.opcode == "while"]
    assert whiles, "the generator made a loop here"
    in_loop: set[str] = set()
    for w in whiles:
        assert w.known_trip_count in (trips, None)
        for callee in w.called_computations:
            _under(callee, in_loop)
    known = all(trip_count(w) == trips for w in whiles)  # recorded, or inferred from the counter

    result = module.collectives()
    inside = collections.Counter(c.kind for c in result.instances if c.computation in in_loop)
    outside = collections.Counter(c.kind for c in result.instances if c.computation not in in_loop)
    assert sum(inside.values()) > 0, "some collective runs in the loop"
    for c in result.instances:
        if c.computation in in_loop:
            assert c.dynamic_count == (trips if known else None), c
            assert c.unknown_trip_count is (not known)
            assert c.loops
        else:
            assert c.dynamic_count == 1, c
            assert not c.unknown_trip_count
    for kind in COLLECTIVE_KINDS:
        t = result.by_kind[kind]
        assert t.count == inside[kind] + outside[kind]
        if known or not inside[kind]:
            assert t.dynamic_count == outside[kind] + trips * inside[kind]
        else:
            assert t.dynamic_count is None and t.unknown_trip_count


def test_tpu_loop_without_known_trip_count_gets_it_from_its_counter():
    fixture = ROOT / "fixtures" / "tpu_hsdp_accum2"
    module = hloscope.load(fixture / "module.hlo.txt")
    (loop,) = [i for i in module.instructions() if i.opcode == "while"]
    assert loop.known_trip_count is None  # TPU's as_text() leaves it out
    accum = json.loads((fixture / "meta.json").read_text())["model"]["accum"]  # the microbatch loop's length
    assert trip_count(loop) == accum
    result = module.collectives()
    assert result.to_dict()["collectives"]["all-gather"]["unknown_trip_count"] is False
    assert result.total.dynamic_count > result.total.count


# ─── small modules with written answers ────────────────────────────────────────────────

ADD = """
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
"""

ASYNC_PAIRS = "HloModule pairs, is_scheduled=true\n" + ADD + """
ENTRY %main (p: f32[8,4]) -> (f32[2,4], f32[32,4], f32[8,4], f32[8,4]) {
  %p = f32[8,4]{1,0} parameter(0)
  %rs-start = ((f32[8,4]{1,0}), f32[2,4]{1,0}) reduce-scatter-start(%p), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, dimensions={0}, to_apply=%add
  %rs-done = f32[2,4]{1,0} reduce-scatter-done(%rs-start)
  %ag-start = (f32[8,4]{1,0}, f32[32,4]{1,0}) all-gather-start(%p), channel_id=2, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true, metadata={op_name="jit(f)/all_gather"}
  %ag-done = f32[32,4]{1,0} all-gather-done(%ag-start)
  %ar-start = f32[8,4]{1,0} all-reduce-start(%p), channel_id=3, replica_groups={{0,1},{2,3}}, to_apply=%add
  %ar-done = f32[8,4]{1,0} all-reduce-done(%ar-start)
  %cp-start = (f32[8,4]{1,0}, f32[8,4]{1,0}, u32[], u32[]) collective-permute-start(%p), channel_id=4, source_target_pairs={{0,1},{1,0}}
  %cp-done = f32[8,4]{1,0} collective-permute-done(%cp-start)
  ROOT %t = (f32[2,4]{1,0}, f32[32,4]{1,0}, f32[8,4]{1,0}, f32[8,4]{1,0}) tuple(%rs-done, %ag-done, %ar-done, %cp-done)
}
"""


def test_async_pairs_count_once_at_the_start_with_the_result_bytes():
    result = hloscope.parse(ASYNC_PAIRS).collectives()
    by = {c.kind: c for c in result.instances}
    assert [c.instruction for c in result.instances] == ["rs-start", "ag-start", "ar-start", "cp-start"]
    assert {k: t.count for k, t in result.by_kind.items() if t.count} == {
        "reduce-scatter": 1, "all-gather": 1, "all-reduce": 1, "collective-permute": 1}
    # The result of the operation (the -done's shape), not the start's tuple.
    assert by["reduce-scatter"].bytes == 2 * 4 * 4
    assert by["all-gather"].bytes == 32 * 4 * 4
    assert by["all-reduce"].bytes == 8 * 4 * 4
    assert by["collective-permute"].bytes == 8 * 4 * 4
    assert all(c.is_async for c in result.instances)
    assert (by["all-gather"].group_size, by["all-gather"].num_groups) == (4, 1)
    assert (by["all-reduce"].group_size, by["all-reduce"].num_groups) == (2, 2)
    assert by["collective-permute"].group_size is None
    assert by["all-gather"].op_name == "jit(f)/all_gather"


@pytest.mark.xla
def test_async_pairs_agree_with_xla():
    xla = _xla()(ASYNC_PAIRS)
    got = hloscope.parse(ASYNC_PAIRS).collectives()
    assert sorted((k, b) for k, _, _, b in xla) == sorted((c.kind, c.bytes) for c in got.instances)


EXPLICIT_ASYNC_AND_FUSION = "HloModule wrapped\n" + ADD + """
%wrapped (x: f32[8,4]) -> f32[2,4] {
  %x = f32[8,4]{1,0} parameter(0)
  ROOT %rs = f32[2,4]{1,0} reduce-scatter(%x), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, dimensions={0}, to_apply=%add
}

%fused (y: f32[8,4]) -> f32[32,4] {
  %y = f32[8,4]{1,0} parameter(0)
  %ag = f32[32,4]{1,0} all-gather(%y), channel_id=2, replica_groups=[2,4]<=[8], dimensions={0}, use_global_device_ids=true
  ROOT %neg = f32[32,4]{1,0} negate(%ag)
}

ENTRY %main (p: f32[8,4]) -> (f32[2,4], f32[32,4]) {
  %p = f32[8,4]{1,0} parameter(0)
  %start = ((f32[8,4]{1,0}), f32[2,4]{1,0}, s32[]) async-start(%p), calls=%wrapped
  %done = f32[2,4]{1,0} async-done(%start)
  %f = f32[32,4]{1,0} fusion(%p), kind=kCustom, calls=%fused
  ROOT %t = (f32[2,4]{1,0}, f32[32,4]{1,0}) tuple(%done, %f)
}
"""


def test_explicit_async_start_counts_its_wrapped_op_once_and_fusions_count():
    result = hloscope.parse(EXPLICIT_ASYNC_AND_FUSION).collectives()
    rs, ag = result.instances
    assert (rs.kind, rs.instruction, rs.computation, rs.is_async, rs.bytes) == (
        "reduce-scatter", "rs", "wrapped", True, 2 * 4 * 4)
    assert (ag.kind, ag.instruction, ag.computation, ag.is_async, ag.bytes) == (
        "all-gather", "ag", "fused", False, 32 * 4 * 4)
    assert (ag.group_size, ag.num_groups, ag.group_form) == (4, 2, "iota")
    assert rs.dynamic_count == ag.dynamic_count == 1


# The newest jax's GPU dumps: an async-start wrapping a fusion of an all-reduce (as_text()
# prints it as `fusion-start(...), calls=%fused_all-reduce`, the fused computation its callee).
FUSION_IN_ASYNC = "HloModule wrapped_fusion\n" + ADD + """
%fused_all-reduce (y: f32[8,4]) -> f32[8,4] {
  %y = f32[8,4]{1,0} parameter(0)
  ROOT %ar = f32[8,4]{1,0} all-reduce(%y), channel_id=1, replica_groups={{0,1,2,3}}, to_apply=%add
}

%async_computation (x: f32[8,4]) -> f32[8,4] {
  %x = f32[8,4]{1,0} parameter(0)
  ROOT %f = f32[8,4]{1,0} fusion(%x), kind=kCustom, calls=%fused_all-reduce
}

ENTRY %main (p: f32[8,4]) -> f32[8,4] {
  %p = f32[8,4]{1,0} parameter(0)
  %fusion-start = ((f32[8,4]{1,0}), f32[8,4]{1,0}) async-start(%p), calls=%async_computation
  ROOT %fusion-done = f32[8,4]{1,0} async-done(%fusion-start)
}
"""


def test_a_collective_fused_in_an_async_wrapped_computation_is_asynchronous():
    wrapped = hloscope.parse(FUSION_IN_ASYNC).collectives()
    sugar = hloscope.parse(FUSION_IN_ASYNC.replace(
        "async-start(%p), calls=%async_computation", "fusion-start(%p), kind=kCustom, calls=%fused_all-reduce").replace(
        "async-done(%fusion-start)", "fusion-done(%fusion-start)")).collectives()
    for result in (wrapped, sugar):
        (ar,) = result.instances
        assert (ar.kind, ar.instruction, ar.is_async, ar.dynamic_count) == ("all-reduce", "ar", True, 1)
        assert result.by_kind["all-reduce"].async_count == 1


@pytest.mark.xla
def test_explicit_async_and_fusion_agree_with_xla():
    xla = _xla()(EXPLICIT_ASYNC_AND_FUSION)
    got = hloscope.parse(EXPLICIT_ASYNC_AND_FUSION).collectives()
    assert sorted((k, c, n, b) for k, c, n, b in xla) == sorted(
        (c.kind, c.computation, c.instruction, c.bytes) for c in got.instances)


def _loop(name, trips, body_op, inner_while=""):
    """A while over (s32[], f32[8,4]) with `body_op` (producing %y from %x) in its body."""
    return f"""
%{name}_cond (s: (s32[], f32[8,4])) -> pred[] {{
  %s = (s32[], f32[8,4]{{1,0}}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant({trips})
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}}

%{name}_body (s: (s32[], f32[8,4])) -> (s32[], f32[8,4]) {{
  %s = (s32[], f32[8,4]{{1,0}}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  {inner_while}%x = f32[8,4]{{1,0}} get-tuple-element({'%w' if inner_while else '%s'}), index=1
  {body_op}
  ROOT %t = (s32[], f32[8,4]{{1,0}}) tuple(%i1, %y)
}}
"""


def _nested(outer_config: str, inner_config: str = ', backend_config={"known_trip_count":{"n":"5"}}') -> str:
    inner = _loop("inner", 5, "%y = f32[8,4]{1,0} all-reduce(%x), channel_id=1, replica_groups={{0,1},{2,3}}, to_apply=%add")
    outer = _loop(
        "outer", 3,
        "%y = f32[8,4]{1,0} collective-permute(%x), channel_id=2, source_target_pairs={{0,1},{1,0}}",
        inner_while=f"%w = (s32[], f32[8,4]{{1,0}}) while(%s), condition=%inner_cond, body=%inner_body{inner_config}\n  ",
    )
    return "HloModule nested\n" + ADD + inner + outer + f"""
ENTRY %main (p: f32[8,4]) -> f32[8,4] {{
  %p = f32[8,4]{{1,0}} parameter(0)
  %z = s32[] constant(0)
  %init = (s32[], f32[8,4]{{1,0}}) tuple(%z, %p)
  %loop = (s32[], f32[8,4]{{1,0}}) while(%init), condition=%outer_cond, body=%outer_body{outer_config}
  %out = f32[8,4]{{1,0}} get-tuple-element(%loop), index=1
  ROOT %last = f32[8,4]{{1,0}} all-reduce(%out), channel_id=3, replica_groups={{{{0,1,2,3}}}}, to_apply=%add
}}
"""


def test_nested_while_trip_counts_multiply():
    text = _nested(', backend_config={"known_trip_count":{"n":"3"}}')
    result = hloscope.parse(text).collectives()
    dyn = {(c.computation, c.kind): c.dynamic_count for c in result.instances}
    assert dyn == {("inner_body", "all-reduce"): 3 * 5, ("outer_body", "collective-permute"): 3,
                   ("main", "all-reduce"): 1}
    loops = {c.computation: c.loops for c in result.instances}
    assert loops == {"inner_body": ("loop", "w"), "outer_body": ("loop",), "main": ()}
    assert result.by_kind["all-reduce"].count == 2
    assert result.by_kind["all-reduce"].dynamic_count == 16
    assert result.by_kind["all-reduce"].dynamic_bytes == 16 * 8 * 4 * 4
    assert not result.total.unknown_trip_count


@pytest.mark.xla
def test_nested_while_module_is_valid_for_xla():
    xla = _xla()(_nested(', backend_config={"known_trip_count":{"n":"3"}}'))
    assert sorted(k for k, *_ in xla) == ["all-reduce", "all-reduce", "collective-permute"]


def test_unknown_trip_count_is_null_not_guessed():
    # The outer loop has no known_trip_count, and its condition tests data, not a counter.
    text = _nested("").replace(
        "  %n = s32[] constant(3)\n  ROOT %lt = pred[] compare(%i, %n), direction=LT",
        "  %x = f32[8,4]{1,0} get-tuple-element(%s), index=1\n  %x0 = f32[1,1]{1,0} slice(%x), slice={[0:1], [0:1]}\n"
        "  %v = f32[] reshape(%x0)\n  %t = f32[] constant(3)\n  ROOT %lt = pred[] compare(%v, %t), direction=LT")
    assert "compare(%v, %t)" in text
    result = hloscope.parse(text).collectives()
    dyn = {(c.computation, c.kind): (c.dynamic_count, c.unknown_trip_count) for c in result.instances}
    assert dyn == {("inner_body", "all-reduce"): (None, True), ("outer_body", "collective-permute"): (None, True),
                   ("main", "all-reduce"): (1, False)}
    d = result.to_dict()["collectives"]
    assert d["all-reduce"]["count"] == 2
    assert d["all-reduce"]["dynamic_count"] is None and d["all-reduce"]["dynamic_bytes"] is None
    assert d["all-reduce"]["unknown_trip_count"] is True
    assert d["all-gather"] == {"count": 0, "dynamic_count": 0, "bytes": 0, "dynamic_bytes": 0,
                               "async_count": 0, "group_sizes": [], "unknown_trip_count": False}


def test_inner_unknown_outer_known():
    result = hloscope.parse(_nested(', backend_config={"known_trip_count":{"n":"3"}}', inner_config="")).collectives()
    dyn = {(c.computation, c.kind): c.dynamic_count for c in result.instances}
    assert dyn == {("inner_body", "all-reduce"): None, ("outer_body", "collective-permute"): 3,
                   ("main", "all-reduce"): 1}


SHARED_CALLEE = "HloModule shared\n" + ADD + """
%callee (x: f32[8,4]) -> f32[8,4] {
  %x = f32[8,4]{1,0} parameter(0)
  ROOT %ar = f32[8,4]{1,0} all-reduce(%x), channel_id=1, replica_groups={}, to_apply=%add
}

ENTRY %main (p: f32[8,4]) -> f32[8,4] {
  %p = f32[8,4]{1,0} parameter(0)
  %c1 = f32[8,4]{1,0} call(%p), to_apply=%callee
  ROOT %c2 = f32[8,4]{1,0} call(%c1), to_apply=%callee
}
"""


def test_computation_called_twice_runs_twice():
    result = hloscope.parse(SHARED_CALLEE).collectives()
    (ar,) = result.instances
    assert ar.dynamic_count == 2
    assert (ar.group_size, ar.num_groups, ar.group_form) == (None, None, "empty")
    assert result.by_kind["all-reduce"].count == 1
    assert result.by_kind["all-reduce"].dynamic_count == 2


SEND_RECV = """HloModule p2p

ENTRY %main (p: f32[8,4]) -> f32[8,4] {
  %p = f32[8,4]{1,0} parameter(0)
  %tok = token[] after-all()
  %send = (f32[8,4]{1,0}, u32[], token[]) send(%p, %tok), channel_id=5
  %send-done = token[] send-done(%send), channel_id=5
  %recv = (f32[8,4]{1,0}, u32[], token[]) recv(%tok), channel_id=6
  %recv-done = (f32[8,4]{1,0}, token[]) recv-done(%recv), channel_id=6
  ROOT %data = f32[8,4]{1,0} get-tuple-element(%recv-done), index=0
}
"""


def test_send_recv_are_point_to_point_not_collectives():
    result = hloscope.parse(SEND_RECV).collectives()
    assert result.total.count == 0
    assert {k: t.count for k, t in result.point_to_point.items()} == {"send": 1, "recv": 1}
    assert [c.instruction for c in result.instances] == ["send", "recv"]
    assert result.point_to_point["recv"].bytes == 8 * 4 * 4
    d = result.to_dict()
    assert set(d["collectives"]) == set(COLLECTIVE_KINDS)
    assert set(d["point_to_point"]) == set(POINT_TO_POINT_KINDS)


@pytest.mark.xla
def test_send_recv_agree_with_xla():
    xla = _xla()(SEND_RECV)
    assert sorted(k for k, *_ in xla) == ["recv", "send"]


def test_group_by():
    result = hloscope.parse(_nested(', backend_config={"known_trip_count":{"n":"3"}}')).collectives()
    rows = {(key, kind): t.count for key, kind, t in result.group_by("computation")}
    assert rows == {("inner_body", "all-reduce"): 1, ("outer_body", "collective-permute"): 1,
                    ("main", "all-reduce"): 1}
    with pytest.raises(ValueError):
        result.group_by("nonsense")


def test_count_collectives_cli_json():
    from click.testing import CliRunner

    from hloscope.cli import cli

    path = ROOT / "fixtures" / "cpu_scan_layers" / "module.hlo.txt"
    res = CliRunner().invoke(cli, ["count-collectives", str(path), "--json", "--by", "computation"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.output)
    (mod,) = payload["modules"]
    assert mod["name"] == "jit_train_step"
    assert set(mod["collectives"]) == set(COLLECTIVE_KINDS)
    assert {"count", "dynamic_count", "bytes", "dynamic_bytes"} <= set(mod["collectives"]["all-gather"])
    assert sum(g["count"] for g in mod["groups"]) == mod["total"]["count"]
    res = CliRunner().invoke(cli, ["count-collectives", str(path), str(path)])
    assert res.exit_code == 0, res.output
    assert "all-gather" in res.output and "total" in res.output


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_lazy_loading_counts_the_same(path, monkeypatch):
    """The CLI reads bodies lazily and skips those that name no collective: same answer.
    No cache: the lazy path must work the answer out, not read back the eager one."""
    monkeypatch.setenv("HLOSCOPE_CACHE", "0")
    eager = hloscope.load(path / "module.hlo.txt").collectives().to_dict()
    lazy_module = hloscope.load(path / "module.hlo.txt", lazy=True)
    assert lazy_module.collectives().to_dict() == eager
    assert not all(getattr(c, "is_read", True) for c in lazy_module.computations)
