"""`hloscope diff`: the temp gap between two compilations, checked against XLA.

- The gap is XLA's: `delta_temp_bytes` within 2% of the difference of the two compilations'
  `temp_size_in_bytes` (fixtures/*/memory_analysis.json).
- The causes add up to the gap exactly.
- The leading cause is what XLA itself holds more of at its peak: derived here from XLA's dump
  files alone (the values live at XLA's peak step, by XLA's buffer assignment and live ranges,
  grouped by what the metadata of their defining instruction says: a gathered weight, a
  backward-pass value, a forward-pass value, or other).
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

import hloscope

from .conftest import FIXTURES, fixture_dirs
from .test_gathers import _Xla, _xla_peak
from .xla_reference import read_dump

PAIRS = [
    ("cpu_hsdp_accum1", "cpu_hsdp_accum2"),   # accumulation 1 vs 2
    ("cpu_hsdp_accum1", "cpu_hsdp_accum4"),
    ("gpu_hsdp_accum1", "gpu_hsdp_accum2"),
    ("cpu_remat_full", "cpu_remat_dots"),     # two remat policies
    ("cpu_fsdp", "cpu_hsdp_accum1"),          # FSDP vs HSDP
    ("cpu_hsdp_accum1", "cpu_remat_full"),    # with and without jax.checkpoint
    ("gpu_hsdp_large_accum1", "gpu_hsdp_large_accum2"),  # the real-scale H100 step
    ("gpu_remat_full", "gpu_remat_dots"),     # two remat policies, H100
    ("gpu_fsdp", "gpu_hsdp_accum1"),          # FSDP vs HSDP, H100
    ("tpu_hsdp_large_accum1", "tpu_hsdp_large_accum2"),  # the real-scale TPU v5e step
    ("tpu_hsdp_accum1", "tpu_hsdp_accum2"),   # TPU: both temps 0, as libtpu says
    ("gpu_hsdp_large_accum1", "jax-0.12/gpu_hsdp_large_accum1"),  # jax 0.10.2 vs 0.12.0.1, H100
    ("tpu_hsdp_large_accum1", "jax-0.12/tpu_hsdp_large_accum1"),  # one TPU step, jax 0.10.2 vs 0.12.0.1
]
# hloscope's TPU temp follows libtpu's rule (twice the HBM temp allocation less its peak
# buffers: tests/test_memory.py), within 1% at real scale, not to the byte.
METADATA_PAIRS = [p for p in PAIRS if not p[0].startswith("tpu_") and not p[1].startswith("jax-0.12/")]
"""The pairs whose leading cause the metadata alone can check: at XLA's TPU peak most bytes
are values of memory-space moves (copy-start, slice-start) that carry no metadata, and the
small TPU steps report no temp at all. (The check reads the dumped module with jaxlib
0.10.2's parser, which refuses the newest jax's texts.)"""

UPGRADE = ("gpu_hsdp_large_accum1", "jax-0.12/gpu_hsdp_large_accum1")
"""One real-scale H100 step compiled by jax 0.10.2 and by 0.12.0.1."""


def _xla_temp(name: str) -> int:
    return json.loads((FIXTURES / name / "memory_analysis.json").read_text())["temp_size_in_bytes"]


def _load(name: str):
    plain = FIXTURES / name / "module.hlo.txt"
    return hloscope.load(plain if plain.exists() else plain.with_suffix(".txt.gz"))


@pytest.fixture(scope="module")
def diffs():
    return {(a, b): hloscope.diff(_load(a), _load(b)) for a, b in PAIRS}


@pytest.mark.parametrize("pair", PAIRS, ids="-vs-".join)
def test_the_gap_is_xlas(pair, diffs):
    d = diffs[pair]
    xla = _xla_temp(pair[1]) - _xla_temp(pair[0])
    assert abs(d.delta_temp_bytes - xla) <= 0.02 * abs(xla), (d.delta_temp_bytes, xla)


@pytest.mark.parametrize("pair", PAIRS, ids="-vs-".join)
def test_the_causes_add_up_to_the_gap(pair, diffs):
    d = diffs[pair]
    assert d.explained_bytes == d.delta_temp_bytes
    assert sum(c["bytes"] for c in d.to_dict()["causes"]) == d.to_dict()["delta_temp_bytes"]


def _primitives(name: str) -> dict[str, str]:
    """The op each instruction's metadata names (its op_name's last component), read off the
    module's text."""
    plain = FIXTURES / name / "module.hlo.txt"
    text = plain.read_text() if plain.exists() else read_dump(plain.with_suffix(".txt.gz"))
    return {m.group(1): m.group(2).rsplit("/", 1)[-1]
            for m in re.finditer(r'^\s*(?:ROOT )?%?([\w.\-]+) = .*?op_name="([^"]*)"', text, re.MULTILINE)}


def test_buffers_of_one_op_match_across_sizes(diffs):
    """The accumulation pair scales the sequence length, so the same op has another shape in B.
    A matched buffer's partner is the same op of the program (the op its metadata names, read
    off the text, at the same source line), and buffers of different sizes do match."""
    pair = ("gpu_hsdp_large_accum1", "gpu_hsdp_large_accum2")
    meta = {"a": _primitives(pair[0]), "b": _primitives(pair[1])}
    resized = 0
    for cause in diffs[pair].to_dict()["causes"]:
        rows = cause.get("instructions") or {}
        for side, other in (("a", "b"), ("b", "a")):
            for row in rows.get(side, ()):
                if row["matched"] is None or row["instruction"] not in meta[side]:
                    continue
                assert meta[side][row["instruction"]] == meta[other][row["matched"]], row
                partner = next((r for r in rows.get(other, ()) if r["instruction"] == row["matched"]), None)
                if partner is not None:
                    assert partner["source"] == row["source"], (row, partner)
                    resized += partner["bytes"] != row["bytes"]
    assert resized, "no buffer matched its op at another size"


def _calls(text: str) -> str | None:
    m = re.search(r"calls=%?([\w.\-]+)", text)
    return m.group(1) if m else None


def _xla_held_at_peak(name: str) -> dict[str, int]:
    """Bytes live at XLA's own peak step, by what the defining instruction's metadata says."""
    _, at_peak = _xla_peak(FIXTURES / name)
    x = _Xla(read_dump(FIXTURES / name / "after_optimizations.txt.gz"))
    out: dict[str, int] = {}
    for (_, _, size), names in at_peak.items():
        inst = names[0].split("{", 1)[0]
        op, text = x.opcode.get(inst), x.text.get(inst, "")
        op_name = x.op_name(inst) if inst in x.text else None
        if op is not None and (op.startswith("all-gather") or (
                op == "fusion" and any(x.opcode[j] == "all-gather" for j in x.comps.get(_calls(text), [])))):
            group = "gathered"
        elif op_name and "transpose(" in op_name:
            group = "backward"
        elif op_name and "jvp(" in op_name:
            group = "forward"
        else:
            group = "other"
        out[group] = out.get(group, 0) + size
    return out


_GROUP_OF_ROLE = {"gathered_parameters": "gathered", "gradients": "backward", "activations": "forward"}


@pytest.mark.xla
@pytest.mark.parametrize("pair", METADATA_PAIRS, ids="-vs-".join)
def test_the_leading_cause_is_what_xla_holds_more_of(pair, diffs):
    d = diffs[pair]
    held_a, held_b = _xla_held_at_peak(pair[0]), _xla_held_at_peak(pair[1])
    change = {g: held_b.get(g, 0) - held_a.get(g, 0) for g in set(held_a) | set(held_b)}
    gap = d.delta_temp_bytes
    lead = next(c for c in d.causes if (c.bytes > 0) == (gap > 0))
    if lead.kind == "packing":
        # Nothing that XLA holds at its peak moved as much as the packing did.
        assert max(abs(v) for v in change.values()) < abs(lead.bytes)
        return
    group = _GROUP_OF_ROLE.get(lead.role)
    if group is None:  # a role of either pass (temporaries): by the pass holding most of its bytes
        side = d.b if gap > 0 else d.a
        by_pass: dict[str, int] = {}
        for r in side.roles.buffers:
            if r.where == "temp" and r.role == lead.role:
                g = "backward" if "transpose(" in (r.op_name or "") else "forward" if "jvp(" in (
                    r.op_name or "") else "other"
                by_pass[g] = by_pass.get(g, 0) + r.bytes
        group = max(by_pass, key=by_pass.get)
    moved = max(change, key=lambda g: change[g] if gap > 0 else -change[g])
    assert group == moved, (lead.role, change)


def test_an_upgrade_that_moves_nothing_raises_no_alarm(diffs):
    # XLA: temp +9 KiB, its peak +4 KiB (peak_memory_in_bytes; the static part is the same).
    # The diff's roles move as XLA's peak does, all one way, and the rest is packing: no role
    # swings against another (the same buffer read as a gradient on one side and as a
    # temporary on the other, or an all-reduce's operand taken for a gradient buffer of its
    # own, as before hloscope read the newest jax's wrapped collectives).
    d = diffs[UPGRADE]
    peak = [json.loads((FIXTURES / n / "memory_analysis.json").read_text())["peak_memory_in_bytes"] for n in UPGRADE]
    moved = [c.bytes for c in d.causes if c.kind != "packing"]
    assert sum(moved) == sum(abs(b) for b in moved) == peak[1] - peak[0]
    assert d.delta_temp_bytes == _xla_temp(UPGRADE[1]) - _xla_temp(UPGRADE[0])
    assert "gradient" not in d.summary and "temporaries" not in d.summary


def test_the_summary_names_the_leading_cause(diffs):
    d = diffs[("gpu_hsdp_accum1", "gpu_hsdp_accum2")]
    assert d.summary.startswith("B needs ") and "more temp memory than A" in d.summary
    assert d.causes[0].role == "gradients" and "gradient buffers" in d.summary


@pytest.mark.parametrize("path", fixture_dirs(), ids=lambda p: p.name)
def test_roles_add_up_to_what_is_live_at_the_peak(path):
    module = hloscope.load(path / "module.hlo.txt")
    memory, roles = module.memory(), module.roles()
    assert sum(roles.temp_by_role.values()) == memory.temp_max_live_bytes
    assert roles.total == sum(roles.by_role.values())
    static = memory.argument_bytes + memory.output_bytes - memory.alias_bytes
    assert roles.total == static + memory.temp_max_live_bytes


@pytest.mark.parametrize("name", ["cpu_hsdp_accum1", "gpu_hsdp_accum1"])
def test_the_largest_buffers_roles_follow_from_the_metadata(name):
    """Derived here from the text alone: a buffer an all-gather defines is a gathered
    parameter; a forward-pass value read by the backward pass is an activation; an entry
    parameter the program donates and the forward pass reads is a parameter."""
    module = _load(name)
    x = _Xla((FIXTURES / name / "module.hlo.txt").read_text())
    donated = {int(n) for n in re.findall(r"\(\s*(\d+)\s*,\s*\{", module.attributes.get("input_output_alias", ""))}
    checked = 0
    for row in module.roles().buffers[:40]:
        inst = row.instruction.split("{", 1)[0]
        if row.where == "argument":
            number = int(re.search(r"parameter\((\d+)\)", x.text[inst]).group(1))
            if number in donated and row.role in ("parameters", "optimizer_state"):
                checked += 1
            assert number in donated or row.role in ("inputs", "unknown")
        elif x.opcode[inst].startswith("all-gather"):
            assert row.role == "gathered_parameters"
            checked += 1
        elif "jvp(" in (x.op_name(inst) or "") and "transpose(" not in (x.op_name(inst) or "") and any(
                "transpose(" in (x.op_name(u) or "") for u in x.users[inst]):
            assert row.role in ("activations", "gathered_parameters")
            checked += 1
    assert checked >= 5


def test_check_against_a_baseline_fails_with_the_explanation():
    old, new = _load("cpu_hsdp_accum1"), _load("cpu_hsdp_accum2")
    with pytest.raises(AssertionError) as err:
        hloscope.assert_budget(new, baseline=old, max_growth="5%")
    assert "grew past the budget" in str(err.value)
    m = re.search(r"This compilation needs ([\d.]+) MiB \(\d+%\) more temp memory than the baseline", str(err.value))
    xla_growth = (_xla_temp("cpu_hsdp_accum2") - _xla_temp("cpu_hsdp_accum1")) / 2**20
    assert m and abs(float(m.group(1)) - xla_growth) <= 0.02 * xla_growth + 0.05
    hloscope.assert_budget(new, baseline=old, max_growth="100%")  # +88%: within
    assert hloscope.check(old, baseline=new, max_growth=0) == ()  # it shrank


def test_cli_diff_json_is_the_contract():
    from hloscope.cli import cli

    a, b = (str(FIXTURES / n / "module.hlo.txt") for n in ("gpu_hsdp_accum1", "gpu_hsdp_accum2"))
    res = CliRunner().invoke(cli, ["diff", a, b, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert {"a", "b", "summary", "delta_temp_bytes", "delta_peak_bytes", "explained_bytes", "causes",
            "collectives", "held_gathers"} <= set(out)
    assert out["a"]["file"] == a and out["b"]["file"] == b
    assert {"kind", "role", "bytes", "description", "instructions"} <= set(out["causes"][0])
    assert out["explained_bytes"] == out["delta_temp_bytes"]
    text = CliRunner().invoke(cli, ["diff", a, b])
    assert text.exit_code == 0 and out["summary"].split(":")[0] in text.output


def test_two_dump_directories_are_compared_module_by_module(tmp_path):
    """Each dump holds the step and a small jit_ helper: with --module '.', every optimized
    module of A is compared with B's of the same name."""
    from hloscope.cli import cli

    from .test_inputs import make_dump

    make_dump(tmp_path / "a", FIXTURES / "cpu_hsdp_accum1")
    make_dump(tmp_path / "b", FIXTURES / "cpu_hsdp_accum2")
    res = CliRunner().invoke(cli, ["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--module", ".", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output[res.output.index("{"):])
    names = [m["name"] for m in out["modules"]]
    assert sorted(names) == ["jit_convert_element_type", "jit_train_step"]
    step = next(m for m in out["modules"] if m["name"] == "jit_train_step")
    expected = hloscope.diff(_load("cpu_hsdp_accum1"), _load("cpu_hsdp_accum2"))
    assert step["delta_temp_bytes"] == expected.delta_temp_bytes
    # Without --module each directory gives its largest jit_ module: one diff.
    res = CliRunner().invoke(cli, ["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json"])
    assert res.exit_code == 0
    assert json.loads(res.output[res.output.index("{"):])["name"] == "jit_train_step"


@pytest.mark.parametrize("plain,remat", [("cpu_hsdp_accum1", "cpu_remat_full"), ("cpu_remat_dots", "cpu_remat_full"),
                                         ("tpu_hsdp_accum1", "tpu_remat_full")])
def test_the_diff_prices_a_remat_change(plain, remat):
    """The memory change comes with its price: the FLOP increase against XLA's own
    cost_analysis() of the two (loop-free) compilations within 2%, and the recomputed ops of
    the remat side."""
    d = hloscope.diff(_load(plain), _load(remat))
    trade = d.to_dict()["cost"]
    xla = {n: json.loads((FIXTURES / n / "cost_analysis.json").read_text())["flops"] for n in (plain, remat)}
    xla_increase = xla[remat] - xla[plain]
    assert abs(trade["delta_flops"] - xla_increase) <= 0.02 * abs(xla_increase), (trade["delta_flops"], xla_increase)
    assert trade["b"]["recompute_flops"] > trade["a"]["recompute_flops"]
    assert trade["b"]["recomputed"]


def test_a_sides_cost_in_brief_is_what_the_whole_cost_says(monkeypatch, tmp_path):
    """A diff keeps of each side's cost its totals and most recomputing instructions
    (`CostResult.in_brief`), worked out without keeping the whole cost, or from the whole
    one when the cache keeps it: the trade the diff reports is the one the whole costs give."""
    import dataclasses

    from hloscope.api import module as api_module

    path = FIXTURES / "cpu_remat_full" / "module.hlo.txt"
    monkeypatch.setenv("HLOSCOPE_CACHE", "0")
    whole = hloscope.load(path, lazy=True).cost()
    assert whole.recomputed and len(whole.instructions) > len(whole.recomputed)
    monkeypatch.delenv("HLOSCOPE_CACHE")
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path))
    for keep_whole in (False, True):
        module = hloscope.load(path, lazy=True)
        assert api_module._cost.kept(module) == keep_whole
        brief = api_module.cost_in_brief(module)
        assert brief == whole.in_brief()
        if not keep_whole:
            assert not api_module._cost.kept(module)  # the whole cost was not written
            api_module._cost(module)
    assert brief.recomputed == whole.recomputed[:10]
    d = hloscope.diff(_load("cpu_hsdp_accum1"), _load("cpu_remat_full"))
    assert dataclasses.replace(d, b=dataclasses.replace(d.b, cost=whole)).trade() == d.trade()


_MOVED = """HloModule m, is_scheduled=true

ENTRY e {
  p = f32[1024] parameter(0)
  f = f32[1024] exponential(p), metadata={op_name="jit(step)/jvp(f)/exp"}
  MOVE
  g = f32[1024] negate(f), metadata={op_name="jit(step)/jvp(f)/neg"}
  b = f32[1024] multiply(d, g), metadata={op_name="jit(step)/transpose(jvp(f))/mul"}
  ROOT r = f32[1024] add(b, b), metadata={op_name="jit(step)/transpose(jvp(f))/add"}
}
"""


def _roles_of(text: str) -> dict[str, str]:
    from hloscope.analysis.memory import build_memory_model
    from hloscope.analysis.roles import assign_roles

    module = hloscope.parse(text)
    model = build_memory_model(module, "gpu")
    roles = assign_roles(module, model)
    return {f"{v.instruction.name}{list(v.index) if v.index else ''}": roles.of(v) for v in model.dataflow.values}


def test_a_move_without_metadata_plays_the_part_of_what_it_moves():
    """A forward value the backward pass reads only through a copy XLA added (an eviction and
    a fetch back, without metadata) is an activation, and so is the copy."""
    moved = _roles_of(_MOVED.replace("MOVE", "c = (f32[1024], f32[1024], u32[]) copy-start(f)\n"
                                             "  d = f32[1024] copy-done(c)"))
    assert moved["f"] == moved["c[0]"] == "activations"
    copied = _roles_of(_MOVED.replace("MOVE", "d = f32[1024] copy(f)"))
    assert copied["f"] == copied["d"] == "activations"


def test_an_op_without_metadata_takes_the_side_of_what_it_computes_from():
    """What an op without metadata computes is not what it reads (no move), but it is on the
    side of its operands: here a forward value the backward pass reads, an activation; its
    operand is read by the backward pass through no move, a temporary."""
    computed = _roles_of(_MOVED.replace("MOVE", "d = f32[1024] sine(f)"))
    assert computed["d"] == "activations"
    assert computed["f"] == "temporaries"


def test_a_value_nothing_tells_is_unknown_and_says_why():
    """Without metadata anywhere upstream, a computed value has no side: unknown, with why."""
    from hloscope.analysis.memory import build_memory_model
    from hloscope.analysis.roles import assign_roles

    module = hloscope.parse(_MOVED.replace("MOVE", "d = f32[1024] sine(p)").replace(
        'f = f32[1024] exponential(p), metadata={op_name="jit(step)/jvp(f)/exp"}', "f = f32[1024] exponential(p)"))
    model = build_memory_model(module, "gpu")
    roles = assign_roles(module, model)
    (d,) = [v for v in model.dataflow.values if v.instruction.name == "d"]
    assert roles.of(d) == "unknown" and "no metadata" in roles.why[d]


_DUMPED = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = .*? ([a-z][a-z0-9\-]*)\(([^)]*)\)", re.MULTILINE)


def _xla_peak_values(name: str) -> tuple[dict, list[dict]]:
    """From a fixture's dump files alone: each instruction's (opcode, operand names), and the
    arrays of XLA's HBM temp allocation live at the step where the most of its bytes are."""
    from .xla_reference import xla_temp_at_peak

    path = FIXTURES / name
    text = read_dump(path / "after_optimizations.txt.gz")
    # The dump writes an async slice as an async-start of a computation whose ROOT is a slice.
    slicing = set(re.findall(r"^%([\w.\-]+) .*\{\n(?:.*\n)*?\s*ROOT %[\w.\-]+ = \S+ slice\(", text, re.MULTILINE))
    # A fusion of conversions alone (and views) converts: a weight's bfloat16 copy.
    bodies = {m.group(1): set(re.findall(r"^\s*(?:ROOT )?%[\w.\-]+ = .*? ([a-z][a-z0-9\-]*)\(", m.group(2), re.MULTILINE))
              for m in re.finditer(r"^%([\w.\-]+) .*\{\n((?:.*\n)*?)\}", text, re.MULTILINE)}
    converting = {c for c, body in bodies.items() if "convert" in body
                  and body <= {"parameter", "convert", "bitcast", "copy", "reshape", "transpose"}}
    ops = {}
    for m in _DUMPED.finditer(text):
        op, rest = m.group(2), text[m.end():text.find("\n", m.end())]
        if op == "fusion" and (c := re.search(r"calls=%([\w.\-]+)", rest)) and c.group(1) in converting:
            op = "convert"
        if op == "custom-call" and 'custom_call_target="ConcatBitcast"' in rest:
            op = "ConcatBitcast"
        elif op == "async-start" and (c := re.search(r"calls=%([\w.\-]+)", rest)) and c.group(1) in slicing:
            op = "slice-start"
        operands = [o.strip().lstrip("%").split("#")[0] for o in m.group(3).split(",") if o.strip().startswith("%")]
        if op == "async-done" and operands and ops.get(operands[0], ("",))[0] == "slice-start":
            op = "slice-done"
        ops[m.group(1)] = (op, operands)
    return ops, xla_temp_at_peak(path)


_MOVES = ("copy", "copy-start", "copy-done", "bitcast", "get-tuple-element", "slice-start", "slice-done",
          "ConcatBitcast")
"""Instructions that only move their operand's bytes (TPU slices a parameter into VMEM and
puts it back together with a ConcatBitcast, a view)."""


def _copies_a_parameter(ops: dict, name: str, depth: int = 0) -> bool:
    """Whether an instruction only moves an entry parameter (`_MOVES`) or converts it to
    another element type (a weight's bfloat16 copy is the weight, in ZeRO's words)."""
    op, operands = ops.get(name, ("?", []))
    if op == "parameter":
        return depth > 0
    return op in (*_MOVES, "convert") and depth < 16 and any(
        _copies_a_parameter(ops, o, depth + 1) for o in operands)


def test_the_newer_jax_keeps_parameter_copies_in_tpu_temp(diffs):
    # The upgrade: one TPU v5e step, jax 0.10.2 then 0.12.0.1, XLA's temp 28% up
    # (545 -> 698 MB). libtpu 0.0.50 assigns buffers without reusing a donated argument's
    # allocation, so the parameters' copies it makes for the step live in the temp heap.
    # XLA's own dumps, at each side's peak: the bytes of parameter copies (moved, or converted
    # to bfloat16) are the diff's (38 and 183 MiB), the two largest buffers it names among them.
    a, b = "tpu_hsdp_large_accum1", "jax-0.12/tpu_hsdp_large_accum1"
    d = diffs[(a, b)]
    assert d.delta_temp_bytes == _xla_temp(b) - _xla_temp(a)
    lead = d.causes[0]
    assert lead.role == "parameters" and lead.bytes > 0.8 * d.delta_temp_bytes
    assert "parameters" in d.summary and "more temp memory" in d.summary
    held = {}
    for side in (a, b):
        ops, values = _xla_peak_values(side)
        held[side] = (ops, {(v["name"], v["index"]) for v in values},
                      sum(v["size"] for v in values if _copies_a_parameter(ops, v["name"])))
    assert (lead.a_bytes, lead.b_bytes) == (held[a][2], held[b][2])
    ops_b, peak_b, _ = held[b]
    for row in lead.instructions["b"][:2]:
        name, _, index = row["instruction"].partition("{")
        assert (name, "{" + index if index else "{}") in peak_b
        assert _copies_a_parameter(ops_b, name)


def test_modules_are_paired_by_name_and_baselines_matched():
    """diff pairs modules of one name (one of each: those two); check --baseline takes the
    baseline's module of the same name, else its first."""
    from types import SimpleNamespace as M

    from hloscope.api.compare import match_baselines, pair_modules

    a = [M(name="step"), M(name="helper"), M(name="step"), M(name="only_a")]
    b = [M(name="other"), M(name="helper"), M(name="step"), M(name="step")]

    def at(side, module):  # by identity: modules of one name compare equal here
        return next(k for k, m in enumerate(side) if m is module)

    pairing = pair_modules(a, b)
    assert [(at(a, x), at(b, y)) for x, y in pairing.pairs] == [(0, 2), (1, 1)]
    assert pairing.only_a == ("only_a",) and pairing.only_b == ("other",)
    one = pair_modules([a[3]], [b[0]])
    assert [(x is a[3], y is b[0]) for x, y in one.pairs] == [(True, True)] and one.only_a == one.only_b == ()
    assert not pair_modules(a[3:], b[:2]).pairs
    assert [at(b, m) for m in match_baselines(a, b)] == [3, 1, 3, 0]


def test_the_sentence_begins_with_a_capital_but_never_changes_a_name():
    from hloscope.analysis.diff import sentence_case

    assert sentence_case("this compilation needs 2 MiB more") == "This compilation needs 2 MiB more"
    assert sentence_case("accum=2 needs 2 MiB more") == "accum=2 needs 2 MiB more"
    assert sentence_case("gpu_hsdp_accum1 holds") == "gpu_hsdp_accum1 holds"
    assert sentence_case("A holds") == "A holds"
