"""Output that reads well: names never cut, --by groups, exit codes as documented (a closed
pipe is 0), options validated, NO_COLOR and non-terminals, DOT that graphviz draws as
meant, `export --json`, the JSON contract in docs/json.md with `file` on every module, trip
counts inferred as XLA's while-loop analysis infers them, and `dir(hloscope)`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import hloscope
from hloscope.analysis.callgraph import CallGraph, inferred_trip_count, trip_count
from hloscope.report.table import shorten_middle

from .conftest import FIXTURES, ROOT, fixture_dirs, fixture_ids, in_terminal, needs_xla

MODULE = FIXTURES / "cpu_hsdp_accum2" / "module.hlo.txt"
SCAN = FIXTURES / "cpu_scan_layers" / "module.hlo.txt"


def run(*args, env=None, input_bytes=None):
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    return subprocess.run([sys.executable, "-m", "hloscope", *map(str, args)], capture_output=True, cwd=ROOT,
                          env={**environment, **(env or {})}, input=input_bytes, timeout=300)


def text_of(*args, columns=None):
    """What the command prints into a pipe, or with `columns` on a terminal that wide."""
    if columns:
        return in_terminal(args, columns)
    r = run(*args)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def json_of(*args):
    r = run(*args, "--json")
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


# ─── names are never cut ───────────────────────────────────────────────────────────────


def test_piped_tables_keep_every_name_whole():
    out = text_of("memory", MODULE, "--top", "1000")
    (m,) = json_of("memory", MODULE, "--top", "1000")["modules"]
    for b in m["live_at_peak"]:
        row = next(line for line in out.splitlines() if re.search(rf"\s{re.escape(b['instruction'])}\s", line))
        for value in (b["instruction"], b["shape"], b["op_name"], b["source"]):
            if value:
                assert value in row, (value, row)
    assert "…" not in out


@pytest.mark.parametrize("by", ["op_name", "source"])
@pytest.mark.parametrize("columns", [None, 80, 120, 250])
def test_by_groups_keep_their_names_apart(by, columns):
    (m,) = json_of("count-collectives", MODULE, "--by", by)["modules"]
    keys = [g[by] for g in m["groups"]]
    out = text_of("count-collectives", MODULE, "--by", by, columns=columns)
    if columns:
        assert max(len(line) for line in out.splitlines()) <= columns
    for key in keys:
        if key is None:
            assert f"(no {by})" in out
        elif columns in (None, 250) and len(key) < 150:
            assert key in out  # whole, on one line
        else:  # whole on a line of its own, or shortened in the middle with its tail kept
            assert key in out or shorten_middle(key, 10**6) in out or key.rsplit("/", 1)[-1] in out
    if columns in (None, 250):  # one row per group, the name in it: distinct groups never print alike
        rows = [line for line in out.splitlines() if line.split() and line.split()[0] in m["collectives"]]
        assert len(rows) == len(keys) == len(set(rows))


def test_narrow_terminal_memory_table_keeps_tails():
    (m,) = json_of("memory", SCAN)["modules"]
    out = text_of("memory", SCAN, columns=80)
    assert max(len(line) for line in out.splitlines()) <= 80
    for b in m["live_at_peak"][:10]:
        assert b["instruction"] in out
        if b["source"]:
            assert b["source"].rsplit("/", 1)[-1] in out  # the file and its line number
        if b["op_name"]:
            assert b["op_name"].rsplit("/", 1)[-1] in out


def test_shorten_middle_keeps_head_and_tail():
    name = "jit(train_step)/transpose(jvp())/while/body/closed_call/dot_general"
    assert shorten_middle(name, 200) == name
    assert shorten_middle(name, 44) == "jit(train_step)/…/closed_call/dot_general"
    assert shorten_middle("/work/main/fixtures/generate.py:232", 28) == "/…/fixtures/generate.py:232"
    short = shorten_middle("/work/main/fixtures/generate.py:232", 20)
    assert short.endswith("generate.py:232") and len(short) <= 20
    assert len(shorten_middle("x" * 100, 10)) == 10


def test_by_groups_add_up_to_the_totals():
    for by in ("computation", "op_name", "source"):
        (m,) = json_of("count-collectives", MODULE, "--by", by)["modules"]
        assert sum(g["count"] for g in m["groups"]) == m["total"]["count"]
        assert sum(g["dynamic_count"] for g in m["groups"]) == m["total"]["dynamic_count"]
        assert len({(g[by], g["kind"]) for g in m["groups"]}) == len(m["groups"])


# ─── exit codes, options, colour ───────────────────────────────────────────────────────


@pytest.mark.parametrize("args", [["export", MODULE], ["stats", *[MODULE] * 40], ["memory", MODULE, "--top", "80"]])
def test_a_closed_pipe_is_not_a_failure(args):
    proc = subprocess.Popen([sys.executable, "-m", "hloscope", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.readline()
    proc.stdout.close()  # `| head -1`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "error" not in err.lower()


def test_options_are_validated():
    for args in (["memory", MODULE, "--top", "-1"], ["memory", MODULE, "--top", "x"],
                 ["count-collectives", MODULE, "--by", "nothing"], ["stats", MODULE, "--module", "("],
                 ["export", MODULE, "--json", "--format", "dot"]):
        r = run(*args)
        assert r.returncode == 2, args
        assert r.stdout == b"" and "Traceback" not in r.stderr.decode()
    assert run("memory", MODULE, "--top", "0").returncode == 0


def test_colour_only_on_a_terminal_without_no_color():
    assert "\x1b[" not in text_of("stats", MODULE)  # piped: plain text
    assert "\x1b[" in in_terminal(["stats", MODULE], raw=True)  # a terminal: styled
    assert "\x1b[" not in in_terminal(["stats", MODULE], env={"NO_COLOR": "1"}, raw=True)


# ─── export ────────────────────────────────────────────────────────────────────────────


SMALL = """HloModule small, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (p: f32[8]) -> f32[] {
  %p = f32[8]{0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(%p, %z), dimensions={0}, to_apply=%add
}
"""


def test_export_json_flag_is_format_json():
    assert json_of("export", MODULE) == json.loads(run("export", MODULE, "--format", "json").stdout)


def test_dot_has_line_breaks_and_a_cluster_per_computation(tmp_path):
    (f := tmp_path / "small.hlo").write_text(SMALL)
    dot = text_of("export", f, "--format", "dot")
    assert dot.count("subgraph cluster_") == 2
    assert re.search(r'label="r\\nreduce f32\[\]"', dot), dot  # DOT's line break, not a drawn backslash
    assert "\\\\n" not in dot
    big = text_of("export", MODULE, "--format", "dot")
    assert big.count("subgraph cluster_") == len(hloscope.load(MODULE).computations)
    if shutil.which("dot") is None:
        return
    svg = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, check=True).stdout
    node = re.search(r'<g id="node\d+" class="node">\s*<title>main/r</title>(.*?)</g>', svg, re.S).group(1)
    assert re.findall(r">([^<]+)</text>", node) == ["r", "reduce f32[]"]  # two lines, no "\n" drawn
    assert svg.count('class="cluster"') == 2


# ─── the JSON contract ─────────────────────────────────────────────────────────────────


def test_json_contract_is_in_the_repository():
    readme = (ROOT / "README.md").read_text()
    doc = (ROOT / "docs" / "json.md").read_text()
    assert "docs/json.md" in readme and "../shared" not in readme
    other = FIXTURES / "cpu_fsdp" / "module.hlo.txt"
    for command, section in (("stats", "stats"), ("export", "export"), ("count-collectives", "count-collectives"),
                             ("memory", "memory")):
        payload = json_of(command, MODULE, other)
        part = doc.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
        for m in payload["modules"]:
            assert m["file"] in (str(MODULE), str(other))
            for key in m:
                assert f'"{key}"' in part, (command, key)
    check = json.loads(run("check", MODULE, "--max", "all-gather=1", "--json").stdout)
    part = doc.split("\n## check\n", 1)[1].split("\n## ", 1)[0]
    for key in [*check, *check["modules"][0], *check["modules"][0]["violations"][0]]:
        assert f'"{key}"' in part, key


def test_dir_shows_the_api():
    names = dir(hloscope)
    for name in hloscope.__all__:
        assert name in names and getattr(hloscope, name) is not None
    for name in ("from_compiled", "load", "parse", "load_all", "Module", "HloscopeError"):
        assert name in names
    assert "importlib" not in names and "TYPE_CHECKING" not in names


# ─── trip counts, inferred as XLA infers them ──────────────────────────────────────────

_KNOWN = re.compile(r'"known_trip_count":\{"n":"\d+"\},?')


def _loops_with_known_trip_count():
    out = []
    for d in fixture_dirs():
        for name in ("module.hlo.txt", "after_optimizations.txt.gz"):
            module = hloscope.load(d / name)
            for w in module.instructions():
                if w.opcode == "while" and w.known_trip_count is not None:
                    out.append(pytest.param(d / name, w.name, w.known_trip_count, id=f"{d.name}/{name}/{w.name}"))
    return out


@pytest.mark.parametrize("path, loop, known", _loops_with_known_trip_count())
def test_inferred_trip_count_is_xlas_known_trip_count(path, loop, known):
    text = hloscope.api.loading.decode_text(hloscope.api.loading.read_bytes(str(path)))
    stripped = hloscope.parse(_KNOWN.sub("", text))
    (w,) = [i for i in stripped.instructions() if i.name == loop]
    assert w.known_trip_count is None
    graph = CallGraph(stripped)
    assert trip_count(w, graph.calling) == known
    assert graph.trip_count(w) == known
    body = stripped.callee(w.attributes.decoded("body")[0])
    original = hloscope.parse(text)
    home = original.callee(w.computation.text_name)
    assert graph.runs(body).exact == known * CallGraph(original).runs(home).exact


@pytest.mark.parametrize("fixture", fixture_dirs(), ids=fixture_ids())
def test_collectives_agree_with_and_without_known_trip_count(fixture):
    text = (fixture / "module.hlo.txt").read_text()
    with_known = hloscope.parse(text).collectives().to_dict()
    inferred = hloscope.parse(_KNOWN.sub("", text)).collectives().to_dict()
    assert inferred == with_known


JAX_LOOPS = {  # (init, condition on the counter i, step)
    "lt": (3, "i < 40", 2),
    "le": (3, "i <= 40", 2),
    "gt": (50, "i > 7", -3),
    "ge": (50, "i >= 7", -3),
    "ne": (2, "i != 62", 4),
    "bound_first": (0, "33 > i", 5),
    "long": (0, "i < 100000", 1),
}


@pytest.mark.parametrize("case", list(JAX_LOOPS))
def test_inference_matches_xla_on_compiled_loops(case):
    needs_xla()
    import jax
    import jax.numpy as jnp
    from jax import lax

    init, condition, step = JAX_LOOPS[case]
    test = eval(f"lambda i: {condition}")  # noqa: S307 — the table above

    def f(x):
        def body(c):
            i, y = c
            return i + step, jnp.sin(y) * 1.01 + y[::-1]
        return lax.while_loop(lambda c: test(c[0]), body, (jnp.int32(init), x))[1]

    text = jax.jit(f).lower(jnp.ones((16,), jnp.float32)).compile().as_text()
    (loop,) = [i for i in hloscope.parse(text).instructions() if i.opcode == "while"]
    assert loop.known_trip_count is not None, "XLA found the trip count"
    stripped = hloscope.parse(_KNOWN.sub("", text))
    (w,) = [i for i in stripped.instructions() if i.opcode == "while"]
    graph = CallGraph(stripped)
    assert graph.runs(stripped.callee(w.attributes.decoded("body")[0])).exact == loop.known_trip_count


def test_loops_that_are_not_counted_stay_unknown():
    text = """HloModule m

%cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]{0}) parameter(0)
  %x = f32[4]{0} get-tuple-element(%s), index=1
  %x0 = f32[1]{0} slice(%x), slice={[0:1]}
  %v = f32[] reshape(%x0)
  %t = f32[] constant(4)
  ROOT %lt = pred[] compare(%v, %t), direction=LT
}

%body (s: (s32[], f32[4])) -> (s32[], f32[4]) {
  %s = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[4]{0} get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %y = f32[4]{0} exponential(%x)
  ROOT %t = (s32[], f32[4]{0}) tuple(%i1, %y)
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %z = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%z, %p)
  %w = (s32[], f32[4]{0}) while(%init), condition=%cond, body=%body
  ROOT %out = f32[4]{0} get-tuple-element(%w), index=1
}
"""
    (w,) = [i for i in hloscope.parse(text).instructions() if i.opcode == "while"]
    assert inferred_trip_count(w) is None  # the condition tests data
    never = text.replace("%x = f32[4]{0} get-tuple-element(%s), index=1\n  %x0", "%i = s32[] get-tuple-element(%s), "
                         "index=0\n  %x0").replace("%v = f32[] reshape(%x0)\n  %t = f32[] constant(4)\n  ROOT %lt = "
                         "pred[] compare(%v, %t)", "%t = s32[] constant(-1)\n  ROOT %lt = pred[] compare(%i, %t)")
    never = never.replace("  %x0 = f32[1]{0} slice(%x), slice={[0:1]}\n", "")
    never = never.replace("direction=LT", "direction=GE")  # 0 ≥ -1, then 1, 2, ...: no end
    (w,) = [i for i in hloscope.parse(never).instructions() if i.opcode == "while"]
    assert inferred_trip_count(w) is None
    ends = never.replace("direction=GE", "direction=LT")  # 0 < -1 is false at once
    (w,) = [i for i in hloscope.parse(ends).instructions() if i.opcode == "while"]
    assert inferred_trip_count(w) == 0
