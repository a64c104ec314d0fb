"""Snapshots: a compilation kept as a small file answers a baseline check as the module does.

For fixture pairs (gradient accumulation, remat policies, FSDP against HSDP, a jax upgrade),
`check NEW --baseline SNAPSHOT` gives the verdict and the sentence `check NEW --baseline
OLD.hlo` gives (the independent path: the whole old module), in both directions; the verdict
is XLA's (its `temp_size_in_bytes` of the two compilations), and so are the snapshot's memory
figures. What the snapshot cannot name (buffers below its cut) the message counts, with the
counts and bytes the whole module has below that rank.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

import hloscope
from hloscope import snapshots
from hloscope.analysis.diff import diff as diff_sides
from hloscope.api.compare import side
from hloscope.cli import cli

from .conftest import FIXTURES, ROOT
from .test_diff import _load, _xla_temp

PAIRS = [
    ("gpu_hsdp_optgrads_accum1", "gpu_hsdp_optgrads_accum2"),  # accumulation 1 vs 2 (H100)
    ("cpu_hsdp_accum1", "cpu_hsdp_accum2"),                    # accumulation 1 vs 2 (CPU)
    ("gpu_remat_dots", "gpu_remat_full"),                      # two remat policies
    ("gpu_fsdp", "gpu_hsdp_accum1"),                           # FSDP vs HSDP
    ("cpu_fsdp", "cpu_hsdp_accum1"),
    ("gpu_hsdp_accum2", "jax-0.12/gpu_hsdp_accum2"),           # jax 0.10.2 vs 0.12.0.1
]
ALL = sorted({n for p in PAIRS for n in p})
XLA_FIGURES = {"temp_bytes": "temp_size_in_bytes", "argument_bytes": "argument_size_in_bytes",
               "output_bytes": "output_size_in_bytes", "alias_bytes": "alias_size_in_bytes"}


def _path(name: str) -> str:
    plain = FIXTURES / name / "module.hlo.txt"
    return str(plain if plain.exists() else plain.with_suffix(".txt.gz"))


def _invoke(*args):
    """The command in this process: its output and what it returns (its exit code)."""
    res = CliRunner().invoke(cli, list(args), standalone_mode=False)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.return_value, res.output


def _run(*args):
    """The command as a user runs it: exit code and output."""
    run = subprocess.run([sys.executable, "-m", "hloscope", *map(str, args)], capture_output=True, text=True, cwd=ROOT)
    return run.returncode, run.stdout + run.stderr


def _xla(name: str) -> dict:
    return json.loads((FIXTURES / name / "memory_analysis.json").read_text())


@pytest.fixture(scope="module")
def taken(tmp_path_factory):
    """name → (module, snapshot path) for every fixture of PAIRS."""
    d = tmp_path_factory.mktemp("snapshots")
    out = {}
    for name in ALL:
        module = _load(name)
        path = d / f"{name.replace('/', '_')}.hloscope.json"
        snapshots.write(path, snapshots.snapshot(module))
        out[name] = (module, path)
    return out


@pytest.mark.parametrize("name", ALL)
def test_the_snapshots_figures_are_xlas(name, taken):
    snap = snapshots.read(taken[name][1])
    xla = _xla(name)
    for ours, theirs in XLA_FIGURES.items():
        assert snap["memory"][ours] == xla[theirs], (ours, snap["memory"][ours], xla[theirs])
    m = snap["memory"]
    assert m["total_bytes"] == (xla["argument_size_in_bytes"] + xla["output_size_in_bytes"]
                                - xla["alias_size_in_bytes"] + xla["temp_size_in_bytes"])


@pytest.mark.parametrize("pair", PAIRS, ids="-vs-".join)
@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_check_against_a_snapshot_says_what_the_module_says(pair, direction, taken):
    old, new = pair if direction == "forward" else pair[::-1]
    new_module, _ = taken[new]
    old_module, old_snapshot = taken[old]
    by_module = hloscope.check(new_module, baseline=old_module, max_growth=0)
    by_snapshot = hloscope.check(new_module, baseline=str(old_snapshot), max_growth=0)
    grew = _xla_temp(new) > _xla_temp(old)  # XLA's verdict
    assert bool(by_module) == bool(by_snapshot) == grew
    # The same sentence and causes, whichever way the temp moved.
    full = hloscope.diff(old_module, new_module)
    kept = diff_sides(snapshots.side(snapshots.read(old_snapshot)), side(new_module))
    assert kept.summary == full.summary
    assert [(c.kind, c.role, c.bytes, c.description) for c in kept.causes] == \
        [(c.kind, c.role, c.bytes, c.description) for c in full.causes]
    if grew:
        said_module, said_snapshot = by_module[0].message, by_snapshot[0].message
        assert said_snapshot.startswith(said_module)  # then what the snapshot cannot name
        lead = full.causes[0]
        assert re.search(rf"Leading causes: {lead.role or lead.kind} [+−]", said_snapshot)


@pytest.mark.parametrize("pair", [PAIRS[0], PAIRS[2]], ids="-vs-".join)
def test_what_lies_below_the_cut_is_counted_as_the_module_counts_it(pair, taken):
    """The message names the buffers of the snapshot's roles below its cut: the number and the
    bytes the whole baseline module has below that rank, role by role."""
    new, old = pair[1], pair[0]
    if _xla_temp(new) < _xla_temp(old):
        new, old = old, new
    old_module = taken[old][0]
    [violation] = hloscope.check(taken[new][0], baseline=str(taken[old][1]), max_growth=0)
    rows: dict[str, list[int]] = {}
    for r in old_module.roles().buffers:
        if r.where == "temp":
            rows.setdefault(r.role, []).append(r.bytes)
    full = hloscope.diff(old_module, taken[new][0])
    said = 0
    for c in full.causes[:3]:
        below = rows.get(c.role, [])[snapshots.CUT:]
        if below:
            words = (f"{len(below)} {c.role.replace('_', ' ')} buffer{'s' if len(below) != 1 else ''} "
                     f"({hloscope.units.human_bytes(sum(below), digits=1)})")
            assert words in violation.message, (words, violation.message)
            said += 1
    assert said and "below its cut it counts without naming" in violation.message


def test_the_cli_says_the_same_against_a_snapshot_as_against_the_module(tmp_path):
    old, new = _path("gpu_hsdp_optgrads_accum2"), _path("gpu_hsdp_optgrads_accum1")
    snap = tmp_path / "step.hloscope.json"
    code, out = _invoke("snapshot", old, "-o", str(snap), "--name", "train", "--jax-version", "0.10.2")
    assert code == 0, out
    code_module, by_module = _invoke("check", new, "--baseline", old, "--max-growth", "5%")
    code_snapshot, by_snapshot = _run("check", new, "--baseline", snap, "--max-growth", "5%")
    assert code_module == code_snapshot == 1
    sentence = re.search(r"This compilation needs .*?Leading causes: [^.]*\.", by_module).group(0)
    assert sentence in by_snapshot
    code, github = _invoke("check", new, "--baseline", str(snap), "--max-growth", "5%", "--format", "github")
    assert code == 1 and github.startswith(f"::error file={new},")
    assert "more temp memory than the baseline" in github and "\n" not in github.rstrip("\n")
    code, out = _invoke("check", new, "--baseline", str(snap), "--max-growth", "50%")
    assert code == 0, out
    data = snapshots.read(snap)
    assert data["key"]["name"] == "train" and data["producer"]["jax"] == "0.10.2"


def test_assert_budget_takes_a_snapshot(taken):
    new_module, _ = taken["cpu_hsdp_accum2"]
    path = str(taken["cpu_hsdp_accum1"][1])
    with pytest.raises(AssertionError, match=r"more temp memory than the baseline.*Leading causes"):
        hloscope.assert_budget(new_module, baseline=path, max_growth="5%")
    hloscope.assert_budget(new_module, baseline=snapshots.read(path), max_growth="100%")  # XLA: +88%
    assert _xla_temp("cpu_hsdp_accum2") < 1.9 * _xla_temp("cpu_hsdp_accum1")


LARGEST = "tpu_hsdp_large_accum2"
"""The largest fixture text (3.4 MB)."""


@pytest.mark.parametrize("name", [*ALL, LARGEST])
def test_a_snapshot_is_a_few_kilobytes_one_value_a_line(name, taken):
    text = snapshots.dumps(snapshots.read(taken[name][1])) if name in taken else \
        snapshots.dumps(snapshots.snapshot(_load(name)))
    assert len(text.encode()) < 16_000, len(text.encode())
    data = json.loads(text)
    assert text == json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    for line in text.splitlines():  # one key and one value at most on a line: a diff names the figure
        assert re.fullmatch(r' *(?:"[^"]*": )?(?:[{}\[\]],?|\{\},?|\[\],?|"(?:[^"\\]|\\.)*",?|-?\d+,?|null,?|true,?|false,?)',
                            line), line
    assert data["format"] == "hloscope-snapshot" and data["version"] == snapshots.VERSION


def test_a_snapshot_is_the_same_every_time(taken):
    module, path = taken["gpu_remat_full"]
    again = hloscope.parse((FIXTURES / "gpu_remat_full" / "module.hlo.txt").read_text())
    assert snapshots.dumps(snapshots.snapshot(again)) == path.read_text()


def test_what_is_not_a_snapshot_is_said_so(tmp_path):
    new = _path("cpu_hsdp_accum2")
    bad = tmp_path / "bad.hloscope.json"
    bad.write_text('{"format": "something else"}')
    code, out = _run("check", new, "--baseline", bad, "--max-growth", "5%")
    assert code == 2 and "not an hloscope snapshot" in out and "Traceback" not in out
    newer = tmp_path / "newer.hloscope.json"
    newer.write_text(json.dumps({"format": "hloscope-snapshot", "version": snapshots.VERSION + 1}))
    with pytest.raises(snapshots.SnapshotError, match="newer than this hloscope reads"):
        _invoke("check", new, "--baseline", str(newer), "--max-growth", "5%")
    broken = tmp_path / "broken.hloscope.json"
    broken.write_text('{"format": ')
    with pytest.raises(snapshots.SnapshotError, match=re.escape(f"{broken}:1:")):
        _invoke("check", new, "--baseline", str(broken), "--max-growth", "5%")


def test_another_programs_snapshot_is_noted(tmp_path, taken, capsys):
    snap = snapshots.read(taken["gpu_fsdp"][1])
    snap["key"]["module"] = "jit_other_step"
    path = tmp_path / "other.hloscope.json"
    snapshots.write(path, snap)
    code, out = _run("check", _path("gpu_hsdp_accum1"), "--baseline", path, "--max-growth", "0%")
    assert "the snapshot is of module 'jit_other_step', not 'jit_train_step'" in out
