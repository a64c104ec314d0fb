"""What people read in a terminal: every command rendered through a pseudo-terminal at 60, 80,
100 and 200 columns keeps each instruction name, `file:line` and pytree path of its JSON
whole (a long cell is shortened in its middle or moved to a line of its own), and no line
is wider than the terminal. Piped output is never wrapped, whatever COLUMNS says."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import FIXTURES, ROOT, in_terminal

A = FIXTURES / "gpu_hsdp_optgrads_accum1" / "module.hlo.txt.gz"
B = FIXTURES / "gpu_hsdp_optgrads_accum2" / "module.hlo.txt.gz"
CPU = FIXTURES / "cpu_hsdp_accum2" / "module.hlo.txt"
WIDTHS = (60, 80, 100, 200)


def json_of(args):
    r = subprocess.run([sys.executable, "-m", "hloscope", *map(str, args), "--json"], capture_output=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


def file_line(source: str | None) -> str | None:
    """The `generate.py:313` of a source: what a shortened path keeps whole."""
    return source.rsplit("/", 1)[-1] if source else None


def _diff_identifiers(d):
    for c in d["causes"]:
        for side in ("a", "b"):
            for r in c["instructions"].get(side, [])[:5]:
                yield r["instruction"]
                yield file_line(r["source"])
    yield d["a"]["peak_at"]["instruction"]
    yield d["b"]["peak_at"]["instruction"]


def _gathers_identifiers(d):
    for m in d["modules"]:
        for g in m["held_all_gathers"]:
            yield g["instruction"]
            yield g.get("parameter_path")


def _memory_identifiers(d):
    for m in d["modules"]:
        yield m["peak_at"]["instruction"]
        for b in m["live_at_peak"][:10]:
            yield b["instruction"]
            yield file_line(b["source"])


def _collectives_identifiers(d):
    for m in d["modules"]:
        for g in m["groups"]:
            yield file_line(g["source"])


def _cost_identifiers(d):
    for m in d["modules"]:
        for t in m["top"][:10]:
            yield t["instruction"]


COMMANDS = {
    "diff": (["diff", A, B], _diff_identifiers),
    "gathers": (["gathers", A], _gathers_identifiers),
    "memory": (["memory", CPU], _memory_identifiers),
    "count-collectives": (["count-collectives", CPU, "--by", "source"], _collectives_identifiers),
    "cost": (["cost", CPU], _cost_identifiers),
}


@pytest.fixture(scope="module", params=sorted(COMMANDS))
def command(request):
    args, identifiers = COMMANDS[request.param]
    names = {n for n in identifiers(json_of(args)) if n}
    assert names
    return request.param, args, names


@pytest.mark.parametrize("columns", WIDTHS)
def test_identifiers_stay_whole_at_any_width(command, columns):
    name, args, names = command
    text = in_terminal(args, columns)
    for n in names:
        assert n in text, f"{name} at {columns} columns splits {n!r}"
    wide = [line for line in text.splitlines() if len(line) > columns]
    assert not wide, f"{name} at {columns} columns: lines wider than the terminal: {wide[:3]}"


def test_a_pipe_is_not_wrapped_whatever_columns_says():
    plain = subprocess.run([sys.executable, "-m", "hloscope", "diff", str(A), str(B)], capture_output=True,
                           cwd=ROOT, env={**os.environ, "COLUMNS": "60"}, timeout=300)
    assert plain.returncode == 0
    lines = plain.stdout.decode().splitlines()
    summary = json_of(["diff", A, B])["summary"]
    assert lines[0] == summary  # the sentence on one line: nothing wrapped at 60
    assert "below each row" not in plain.stdout.decode()


def test_repeated_op_name_parts_are_counted_not_repeated():
    from hloscope.wording import tidy_op_name

    name = "jit(f)/(jvp(jit(_take))/gather:" + ":".join(["jvp()/dot_general"] * 9) + ")"
    assert tidy_op_name(name) == "jit(f)/(jvp(jit(_take))/gather:jvp()/dot_general (×8):jvp()/dot_general)"
    assert tidy_op_name("a:b:c") == "a:b:c"
