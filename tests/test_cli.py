"""The command line: exit codes, error format, JSON contract of stats and export."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import FIXTURES, ROOT


def run(*args, input_text=None):
    return subprocess.run([sys.executable, "-m", "hloscope", *args], capture_output=True, text=True, cwd=ROOT,
                          input=input_text)


FIXTURE = str(FIXTURES / "cpu_hsdp_accum1" / "module.hlo.txt")


def test_stats_json_matches_the_module():
    import hloscope

    r = run("stats", FIXTURE, "--json")
    assert r.returncode == 0, r.stderr
    (mod,) = json.loads(r.stdout)["modules"]
    module = hloscope.load(FIXTURE)
    assert mod["computations"] == len(module.computations)
    assert mod["instructions"] == sum(len(c.instructions) for c in module.computations)
    assert sum(mod["opcodes"].values()) == mod["instructions"]


def test_export_json_contract():
    r = run("export", FIXTURE, "--format", "json")
    assert r.returncode == 0, r.stderr
    (mod,) = json.loads(r.stdout)["modules"]
    entry = [c for c in mod["computations"] if c["is_entry"]]
    assert len(entry) == 1
    inst = entry[0]["instructions"][-1]
    assert set(inst) == {"name", "opcode", "shape", "operands", "called_computations", "op_name"}
    assert not inst["name"].startswith("%")


@pytest.mark.parametrize("fmt, marker", [("graphml", "<graphml"), ("dot", "digraph")])
def test_export_graph_formats(fmt, marker, tmp_path):
    out = tmp_path / f"g.{fmt}"
    r = run("export", FIXTURE, "--format", fmt, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert marker in out.read_text()


def test_bad_input_gives_location_caret_and_exit_2(tmp_path):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT q = f32[] add(p, nope)\n}\n")
    out = tmp_path / "out.json"
    r = run("export", str(bad), "-o", str(out))
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert lines[0] == f"{bad}:4:25: error: instruction 'nope' is not defined"
    assert lines[1] == "  ROOT q = f32[] add(p, nope)"
    assert lines[2] == " " * 24 + "^"
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert not out.exists()  # nothing written half-way


def test_missing_file_and_unknown_command_exit_2(tmp_path):
    assert run("stats", str(tmp_path / "absent.hlo")).returncode == 2
    assert run("no-such-command").returncode == 2


def test_importing_hloscope_does_not_import_jax():
    code = "import sys, hloscope; hloscope.parse('ENTRY e {\\n ROOT p = f32[] parameter(0)\\n}'); print('jax' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.stdout.strip() == "False", r.stderr


def test_the_process_ends_after_its_output_and_background_writers(tmp_path):
    """`main` leaves through os._exit (no teardown of the IR): what it printed is out, and
    what a background child writes is there once the process has ended."""
    import subprocess
    import sys

    done = tmp_path / "done"
    code = (
        "import sys, time\n"
        "from hloscope import cli\nfrom hloscope.speed import runtime\n"
        "print('printed', end='')\n"
        f"runtime.in_background(lambda: (time.sleep(0.5), open({str(done)!r}, 'w').write('x')))\n"
        "cli._exit(3)\n"
    )
    out = tmp_path / "out"
    with out.open("w") as f:  # not a pipe: `run` would also wait for the child holding it
        proc = subprocess.run([sys.executable, "-c", code], stdout=f, stderr=subprocess.DEVNULL,
                              timeout=60, check=False)
    assert (proc.returncode, out.read_text()) == (3, "printed")
    assert done.read_text() == "x"


def test_help_lists_every_command_whole_with_the_main_job_first():
    from hloscope.cli import COMMANDS

    r = subprocess.run([sys.executable, "-m", "hloscope", "--help"], capture_output=True, text=True, cwd=ROOT,
                       env={k: v for k, v in os.environ.items() if k != "COLUMNS"}, timeout=120)
    assert r.returncode == 0, r.stderr
    listing = r.stdout.split("Commands:", 1)[1]
    names = [line.split()[0] for line in listing.splitlines() if line.startswith("  ") and not line.startswith("   ")]
    assert names[0] == "diff" and sorted(names) == sorted(COMMANDS)
    flat = " ".join(listing.split())
    for name, (_, line) in COMMANDS.items():
        assert line in flat, name  # whole, never cut with "..."
    assert "..." not in listing


def test_diffing_two_different_programs_warns(tmp_path):
    small = tmp_path / "small.hlo"
    small.write_text("HloModule jit__lambda, is_scheduled=true\n\nENTRY %main (p: f32[8]) -> f32[8] {\n"
                     "  %p = f32[8]{0} parameter(0)\n  ROOT %n = f32[8]{0} negate(%p)\n}\n")
    module = ROOT / "fixtures" / "cpu_hsdp_accum2" / "module.hlo.txt"
    r = subprocess.run([sys.executable, "-m", "hloscope", "diff", str(small), str(module)], capture_output=True,
                       text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "warning: A is module jit__lambda and B is module jit_train_step" in r.stderr
    same = subprocess.run([sys.executable, "-m", "hloscope", "diff", str(module), str(module)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert same.returncode == 0 and "warning" not in same.stderr
