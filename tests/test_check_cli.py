"""`hloscope check`, budget files, `hloscope.check` and `hloscope.assert_budget`.

Budgets are derived from XLA's own count of a fixture's collectives (its C++ parser) or
from a small inline module whose counts are written next to it, never from hloscope.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

import pytest

import hloscope
from hloscope import budget as budget_mod

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "gpu_hsdp_accum2" / "module.hlo.txt"


def run(*args):
    return subprocess.run([sys.executable, "-m", "hloscope", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT)


@pytest.fixture(scope="module")
def xla_counts():
    """XLA's static count per kind for FIXTURE (async pairs once, sugar via its wrapped op)."""
    pytest.importorskip("jaxlib", reason="needs jaxlib for XLA's own answers")
    from .xla_reference import xla_collectives

    counts = collections.Counter(kind for kind, *_ in xla_collectives(FIXTURE.read_text()))
    assert counts["all-gather"] and counts["reduce-scatter"] and counts["all-reduce"]
    return counts


# A module with written answers: all-reduce ×1 in the entry and ×1 in a loop body that runs
# 4 times (static 2, dynamic 5), one all-gather (static 1, dynamic 1).
INLINE = """HloModule budget_test

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%cond (s: (s32[], f32[8])) -> pred[] {
  %s = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (s: (s32[], f32[8])) -> (s32[], f32[8]) {
  %s = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[8]{0} get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %y = f32[8]{0} all-reduce(%x), channel_id=1, replica_groups={{0,1}}, to_apply=%add
  ROOT %t = (s32[], f32[8]{0}) tuple(%i1, %y)
}

ENTRY %main (p: f32[4]) -> f32[8] {
  %p = f32[4]{0} parameter(0)
  %g = f32[8]{0} all-gather(%p), channel_id=2, replica_groups={{0,1}}, dimensions={0}
  %z = s32[] constant(0)
  %init = (s32[], f32[8]{0}) tuple(%z, %g)
  %w = (s32[], f32[8]{0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"4"}}
  %out = f32[8]{0} get-tuple-element(%w), index=1
  ROOT %r = f32[8]{0} all-reduce(%out), channel_id=3, replica_groups={{0,1}}, to_apply=%add
}
"""


@pytest.fixture
def inline_file(tmp_path):
    path = tmp_path / "inline.hlo.txt"
    path.write_text(INLINE)
    return path


# ─── exit codes ───────────────────────────────────────────────────────────────────────


def test_within_budget_exits_0(xla_counts):
    r = run("check", FIXTURE, "--max", f"all-gather={xla_counts['all-gather']}",
            "--expect", f"reduce-scatter={xla_counts['reduce-scatter']}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok" in r.stdout


def test_over_budget_exits_1_listing_each_violation(xla_counts):
    ag, rs = xla_counts["all-gather"], xla_counts["reduce-scatter"]
    r = run("check", FIXTURE, "--max", f"all-gather={ag - 1}", "--expect", f"reduce-scatter={rs + 1}", "--json")
    assert r.returncode == 1, r.stderr
    payload = json.loads(r.stdout)
    assert payload["ok"] is False
    (mod,) = payload["modules"]
    got = {(v["rule"], v["subject"], v["budget"], v["actual"]) for v in mod["violations"]}
    assert got == {("max", "all-gather", ag - 1, ag), ("expect", "reduce-scatter", rs + 1, rs)}

    text = run("check", FIXTURE, "--max", f"all-gather={ag - 1}", "--expect", f"reduce-scatter={rs + 1}")
    assert text.returncode == 1
    errors = [line for line in text.stdout.splitlines() if ": error: " in line]
    assert len(errors) == 2


def test_total_budget(xla_counts):
    total = sum(n for k, n in xla_counts.items() if k not in ("send", "recv"))
    assert run("check", FIXTURE, "--max", f"total={total}").returncode == 0
    assert run("check", FIXTURE, "--max", f"total={total - 1}").returncode == 1


@pytest.mark.parametrize("args, fragment", [
    (["--max", "all-gathers=3"], "unknown collective kind 'all-gathers'"),
    (["--max", "all-gather"], "KIND=N"),
    (["--max", "all-gather=-1"], "KIND=N"),
    ([], "nothing to check"),
    (["--max-temp", "lots"], "not a size"),
    (["--format", "xml", "--max", "all-gather=1"], "xml"),
])
def test_usage_errors_exit_2(args, fragment):
    r = run("check", FIXTURE, *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert fragment in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_file_exits_2():
    r = run("check", ROOT / "no-such-file.hlo", "--max", "all-gather=1")
    assert r.returncode == 2


# ─── --format github ──────────────────────────────────────────────────────────────────


def test_github_format_prints_one_error_annotation_per_violation(xla_counts):
    ag, ar = xla_counts["all-gather"], xla_counts["all-reduce"]
    r = run("check", FIXTURE, "--max", f"all-gather={ag - 1}", "--max", f"all-reduce={ar - 1}", "--format", "github")
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert len(lines) == 2
    for line, kind, budget, actual in ((lines[0], "all-gather", ag - 1, ag), (lines[1], "all-reduce", ar - 1, ar)):
        head, _, message = line.partition("::")[2].partition("::")
        assert line.startswith("::error ")
        assert head.split(",")[0] == f"error file={FIXTURE}"
        assert f"{kind}: count {actual} exceeds the budget max {kind}={budget}" in message


def test_github_format_escapes():
    from hloscope.budget import Violation
    from hloscope.report.check import github_annotations

    v = Violation("m%1", "max", "all-gather", 1, 2)
    out = github_annotations([v], "a,b:c.txt")
    assert out.startswith("::error file=a%2Cb%3Ac.txt,")
    assert "m%251" in out


def test_github_format_is_silent_when_ok(xla_counts):
    r = run("check", FIXTURE, "--max", f"all-gather={xla_counts['all-gather']}", "--format", "github")
    assert r.returncode == 0
    assert r.stdout.strip() == ""


# ─── budget files ─────────────────────────────────────────────────────────────────────


def test_standalone_budget_toml(tmp_path, xla_counts):
    ag = xla_counts["all-gather"]
    good = tmp_path / "budget.toml"
    good.write_text(f'[max]\nall-gather = {ag}\n[expect]\nreduce-scatter = {xla_counts["reduce-scatter"]}\n')
    assert run("check", FIXTURE, "--budget", good).returncode == 0
    bad = tmp_path / "tight.toml"
    bad.write_text(f"[max]\nall-gather = {ag - 1}\n")
    r = run("check", FIXTURE, "--budget", bad, "--json")
    assert r.returncode == 1
    (v,) = json.loads(r.stdout)["modules"][0]["violations"]
    assert (v["subject"], v["budget"], v["actual"]) == ("all-gather", ag - 1, ag)
    # Options override the file, kind by kind.
    assert run("check", FIXTURE, "--budget", bad, "--max", f"all-gather={ag}").returncode == 0


def test_pyproject_tool_hloscope(tmp_path, xla_counts):
    ag = xla_counts["all-gather"]
    py = tmp_path / "pyproject.toml"
    py.write_text(f'[project]\nname = "x"\n\n[tool.hloscope]\ndynamic = false\n\n[tool.hloscope.max]\n'
                  f'all-gather = {ag - 1}\n')
    r = run("check", FIXTURE, "--budget", py)
    assert r.returncode == 1
    assert f"all-gather: count {ag} exceeds the budget max all-gather={ag - 1}" in r.stdout


def test_pyproject_without_tool_hloscope_is_exit_2(tmp_path):
    py = tmp_path / "pyproject.toml"
    py.write_text('[project]\nname = "x"\n')
    r = run("check", FIXTURE, "--budget", py)
    assert r.returncode == 2
    assert "no [tool.hloscope] table" in r.stderr


@pytest.mark.parametrize("body, fragment", [
    ("maximum = 3\n", "unknown key 'maximum'"),
    ("[max]\nall-gathr = 3\n", "unknown collective kind 'all-gathr'"),
    ("[max]\nall-gather = 'many'\n", "non-negative integer"),
    ("[max\n", "not valid TOML"),
    ("max-temp = 'lots'\n", "max-temp: not a size: 'lots'"),
])
def test_bad_budget_files_exit_2(tmp_path, body, fragment):
    path = tmp_path / "b.toml"
    path.write_text(body)
    r = run("check", FIXTURE, "--budget", path)
    assert r.returncode == 2, r.stdout
    assert fragment in r.stderr
    assert r.stderr.startswith(f"{path}: error: ")  # every message names the file
    assert "Traceback" not in r.stderr


# ─── dynamic counts (answers written beside INLINE) ───────────────────────────────────


def test_dynamic_counts_from_the_cli(inline_file):
    assert run("check", inline_file, "--expect", "all-reduce=2", "--expect", "all-gather=1").returncode == 0
    assert run("check", inline_file, "--expect", "all-reduce=5", "--dynamic").returncode == 0
    r = run("check", inline_file, "--max", "all-reduce=4", "--dynamic")
    assert r.returncode == 1
    assert "all-reduce: dynamic count 5 exceeds the budget max all-reduce=4" in r.stdout
    (tmp := inline_file.parent / "dyn.toml").write_text("dynamic = true\n[max]\nall-reduce = 4\n")
    assert run("check", inline_file, "--budget", tmp).returncode == 1


def test_unknown_trip_count_fails_a_dynamic_budget(inline_file):
    # No known_trip_count, and a condition on data (not a counter's bound): unknowable.
    text = INLINE.replace(', backend_config={"known_trip_count":{"n":"4"}}', "").replace(
        "  %n = s32[] constant(4)\n  ROOT %lt = pred[] compare(%i, %n), direction=LT",
        "  %x = f32[8]{0} get-tuple-element(%s), index=1\n  %x0 = f32[1]{0} slice(%x), slice={[0:1]}\n"
        "  %v = f32[] reshape(%x0)\n  %t = f32[] constant(4)\n  ROOT %lt = pred[] compare(%v, %t), direction=LT")
    assert "compare(%v, %t)" in text
    violations = hloscope.check(hloscope.parse(text), max_collectives={"all-reduce": 100}, dynamic=True)
    (v,) = violations
    assert v.actual is None and "unknown" in v.message
    assert hloscope.check(hloscope.parse(text), max_collectives={"all-reduce": 2}) == ()


# ─── the Python API ───────────────────────────────────────────────────────────────────


def test_check_returns_frozen_violations():
    module = hloscope.parse(INLINE)
    assert hloscope.check(module, max_collectives={"all-reduce": 2, "all-gather": 1}) == ()
    (v,) = hloscope.check(module, max_collectives={"all-reduce": 1}, expect_collectives={"all-gather": 1})
    assert v.to_dict() == {
        "module": "budget_test", "rule": "max", "subject": "all-reduce", "budget": 1, "actual": 2,
        "dynamic": False, "message": v.message,
    }
    with pytest.raises(Exception):
        v.actual = 3  # frozen
    with pytest.raises(budget_mod.BudgetError):
        hloscope.check(module, max_collectives={"allgather": 1})


def test_assert_budget_message_names_kind_budget_and_actual():
    module = hloscope.parse(INLINE)
    hloscope.assert_budget(module, max_collectives={"all-reduce": 2})
    with pytest.raises(AssertionError) as info:
        hloscope.assert_budget(module, max_collectives={"all-reduce": 1}, expect_collectives={"all-gather": 3})
    message = str(info.value)
    assert "all-reduce: count 2 exceeds the budget max all-reduce=1" in message
    assert "all-gather: count 1 differs from the expected all-gather=3" in message
    with pytest.raises(AssertionError) as info:
        hloscope.assert_budget(module, max_collectives={"all-reduce": 4}, dynamic=True)
    assert "all-reduce: dynamic count 5 exceeds the budget max all-reduce=4" in str(info.value)


def test_assert_budget_accepts_a_compiled_object():
    class Compiled:  # what jax's Compiled offers hloscope: as_text()
        def as_text(self):
            return INLINE

    hloscope.assert_budget(Compiled(), expect_collectives={"all-reduce": 2})
    with pytest.raises(AssertionError, match="all-gather"):
        hloscope.assert_budget(Compiled(), max_collectives={"all-gather": 0})


@pytest.mark.parametrize("text, n", [("40GiB", 40 * 2**30), ("512MB", 512 * 10**6), ("1.5KiB", 1536),
                                     ("123", 123), (7, 7), ("2 g", 2 * 2**30)])
def test_parse_size(text, n):
    assert budget_mod.parse_size(text) == n


def test_max_temp_with_the_real_memory_analysis():
    fixture = ROOT / "fixtures" / "cpu_hsdp_accum1"
    xla_temp = json.loads((fixture / "memory_analysis.json").read_text())["temp_size_in_bytes"]
    assert run("check", fixture / "module.hlo.txt", "--max-temp", 2 * xla_temp).returncode == 0
    r = run("check", fixture / "module.hlo.txt", "--max-temp", xla_temp // 2, "--format", "github")
    assert r.returncode == 1
    assert f"exceeds the budget max-temp={xla_temp // 2} bytes" in r.stdout


def test_check_against_a_baseline_on_the_command_line():
    old, new = (ROOT / "fixtures" / n / "module.hlo.txt" for n in ("cpu_hsdp_accum1", "cpu_hsdp_accum2"))
    res = run("check", new, "--baseline", old, "--max-growth", "5%")
    assert res.returncode == 1, res.stderr
    assert "grew past the budget" in res.stdout and "more temp memory than the baseline" in res.stdout
    assert run("check", new, "--baseline", old, "--max-growth", "200%").returncode == 0
    assert run("check", old, "--baseline", new).returncode == 0  # it shrank
    assert run("check", new, "--max-growth", "5%").returncode == 2  # no baseline
    assert run("check", new, "--baseline", old, "--max-growth", "lots").returncode == 2
