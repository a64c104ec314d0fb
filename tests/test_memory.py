"""Memory figures against XLA's own: `memory_analysis()` of each fixture's compilation."""

from __future__ import annotations

import json
import statistics

import pytest

import hloscope
from hloscope.analysis.memory import analyze_memory
from hloscope.errors import NotScheduledError

from .conftest import FIXTURES, ROOT, fixture_dirs

CPU_GPU = [p for p in fixture_dirs() if p.name.startswith(("cpu_", "gpu_"))]
TPU = [p for p in fixture_dirs() if p.name.startswith("tpu_")]


def xla_memory(path) -> dict:
    return json.loads((path / "memory_analysis.json").read_text())


@pytest.fixture(scope="module")
def results():
    return {p.name: (hloscope.load(p / "module.hlo.txt").memory(), xla_memory(p)) for p in fixture_dirs()}


@pytest.mark.parametrize("path", CPU_GPU, ids=lambda p: p.name)
def test_argument_output_alias_are_xlas(path, results):
    ours, xla = results[path.name]
    assert ours.argument_bytes == xla["argument_size_in_bytes"]
    assert ours.output_bytes == xla["output_size_in_bytes"]
    assert ours.alias_bytes == xla["alias_size_in_bytes"]


@pytest.mark.parametrize("path", CPU_GPU, ids=lambda p: p.name)
def test_temp_within_5_percent(path, results):
    ours, xla = results[path.name]
    assert ours.temp_bytes == pytest.approx(xla["temp_size_in_bytes"], rel=0.05)
    # Packing never beats the bytes live at one step.
    assert ours.temp_bytes >= ours.temp_max_live_bytes


def test_temp_median_within_1_percent(results):
    errors = [abs(ours.temp_bytes / xla["temp_size_in_bytes"] - 1)
              for name, (ours, xla) in results.items() if name.startswith(("cpu_", "gpu_"))]
    assert len(errors) >= 9
    assert statistics.median(errors) <= 0.01
    # Measured: CPU fixtures agree within 0.7% (six of seven within 0.01%), GPU within 1.8%.
    assert max(errors) <= 0.02


@pytest.mark.parametrize("path", TPU, ids=lambda p: p.name)
def test_tpu_is_reported_not_matched(path, results):
    # TPU: XLA reports temp_size 0 and keeps temporaries in other memory spaces; its tiled
    # layouts (T(8,128)...) pad arrays, which Shape.byte_size does not model, so argument and
    # output sizes are below XLA's (by the padding, under 10% here) and peak_memory_in_bytes
    # (which includes TPU-specific scoped memory) is not reproduced. We only assert the
    # honest bounds measured on these fixtures.
    ours, xla = results[path.name]
    assert xla["temp_size_in_bytes"] == 0
    assert 0.9 * xla["argument_size_in_bytes"] <= ours.argument_bytes <= xla["argument_size_in_bytes"]
    assert ours.peak_bytes <= xla["peak_memory_in_bytes"]


def test_to_dict_keys_are_the_contract(results):
    ours, _ = results["cpu_hsdp_accum1"]
    d = ours.to_dict()
    # The contract keys, in order, then what the issue adds after them.
    assert list(d) == ["name", "temp_bytes", "argument_bytes", "output_bytes", "alias_bytes", "peak_bytes",
                       "peak_at", "live_at_peak", "memory_spaces"]
    assert d["memory_spaces"] == {}  # CPU: everything is in memory space 0
    assert set(d["peak_at"]) == {"index", "instruction"}
    assert d["live_at_peak"]
    assert set(d["live_at_peak"][0]) == {"instruction", "bytes", "shape", "op_name", "source"}
    assert sum(b["bytes"] for b in d["live_at_peak"]) <= ours.temp_max_live_bytes


def test_peak_step_holds_the_max_live_bytes(results):
    ours, _ = results["cpu_fsdp"]
    assert ours.timeline[ours.peak_at["index"]] == max(ours.timeline) == ours.temp_max_live_bytes
    assert ours.steps[ours.peak_at["index"]] == ours.peak_at["instruction"]


UNSCHEDULED = """HloModule m

ENTRY e {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
"""


def test_unscheduled_module_is_refused():
    with pytest.raises(NotScheduledError, match="scheduled"):
        analyze_memory(hloscope.parse(UNSCHEDULED))


SMALL = """HloModule m, is_scheduled=true

ENTRY e {
  p = f32[256] parameter(0)
  a = f32[256] exponential(p)
  b = f32[4,256] broadcast(a), dimensions={1}
  s = f32[1,256] slice(b), slice={[0:1], [0:256]}
  c = f32[256] bitcast(s)
  ROOT d = f32[256] add(c, a)
}
"""


def test_small_module_temp_is_the_largest_overlap():
    # Steps 0:p 1:a 2:b 3:s 4:c 5:d. a: [1, 5] (1 KiB), b: [2, 3] (4 KiB), s: [3, 5] (1 KiB;
    # the bitcast c only forwards it); d is the output, p an argument. At step 3 a, b and s
    # are live.
    m = analyze_memory(hloscope.parse(SMALL))
    assert m.temp_max_live_bytes == 1024 + 4096 + 1024
    assert m.temp_bytes == 1024 + 4096 + 1024
    assert m.argument_bytes == 1024 and m.output_bytes == 1024 and m.alias_bytes == 0
    assert m.peak_at == {"index": 3, "instruction": "s"}
    assert [b.instruction for b in m.live_at_peak] == ["b", "a", "s"]


def test_cli_memory_json_and_exit_codes(tmp_path):
    import subprocess
    import sys

    path = FIXTURES / "cpu_fsdp" / "module.hlo.txt"
    r = subprocess.run([sys.executable, "-m", "hloscope", "memory", str(path), "--json"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    (mod,) = json.loads(r.stdout)["modules"]
    assert mod["argument_bytes"] == xla_memory(FIXTURES / "cpu_fsdp")["argument_size_in_bytes"]
    r = subprocess.run([sys.executable, "-m", "hloscope", "memory", str(path), "--top", "3"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "temp" in r.stdout
    bad = tmp_path / "u.hlo"
    bad.write_text(UNSCHEDULED)
    r = subprocess.run([sys.executable, "-m", "hloscope", "memory", str(bad)], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 2
    assert "scheduled" in r.stderr and "Traceback" not in r.stderr


HOST = """HloModule m, is_scheduled=true

ENTRY e {
  p = f32[256]{0} parameter(0)
  a = f32[256]{0} exponential(p)
  h = f32[4,256]{1,0:S(5)} broadcast(a), dimensions={1}
  g = f32[4,256]{1,0:S(5)} negate(h)
  s = f32[1,256]{1,0} slice(g), slice={[0:1], [0:256]}
  c = f32[256]{0} bitcast(s)
  ROOT d = f32[256]{0} add(c, a)
}
"""


def test_host_memory_is_packed_and_reported_apart(tmp_path):
    # Steps 0:p 1:a 2:h 3:g 4:s 5:c 6:d. Device temp: a [1, 6] and s [4, 6], 1 KiB each.
    # Host (S(5)): h [2, 3] and g [3, 4], 4 KiB each; g = negate(h) takes h's slot as h dies.
    m = analyze_memory(hloscope.parse(HOST))
    assert m.temp_bytes == 2048
    assert m.host_temp_bytes == 4096
    d = m.to_dict()
    assert d["temp_bytes"] == 2048 and d["memory_spaces"] == {"5": 4096}
    path = tmp_path / "host.hlo"
    path.write_text(HOST)
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "hloscope", "memory", str(path)], capture_output=True, text=True,
                       cwd=ROOT, env={**__import__("os").environ, "NO_COLOR": "1"})
    assert r.returncode == 0, r.stderr
    assert "host memory (S(5)): temp 4.00 KiB" in r.stdout


@pytest.mark.parametrize("path", TPU, ids=lambda p: p.name)
def test_tpu_temporaries_are_in_memory_space_1(path, results):
    # XLA reports temp_size 0 on TPU: its temporaries live in S(1), which we pack apart.
    ours, _ = results[path.name]
    spaces = ours.to_dict()["memory_spaces"]
    assert set(spaces) >= {"1"} and spaces["1"] > 0


@pytest.mark.parametrize("path", fixture_dirs(), ids=lambda p: p.name)
def test_lazy_loading_gives_the_same_memory(path, results, monkeypatch):
    """The CLI loads lazily and reads a fused body only when its text holds an in-place op.
    No cache: the lazy path must work the answer out, not read back the eager one."""
    monkeypatch.setenv("HLOSCOPE_CACHE", "0")
    ours, _ = results[path.name]
    lazy = hloscope.load(path / "module.hlo.txt", lazy=True)
    assert lazy.memory().to_dict() == ours.to_dict()
    assert not all(c.is_read for c in lazy.computations)


@pytest.mark.parametrize("path", fixture_dirs(), ids=lambda p: p.name)
def test_the_platform_is_the_compilation_target(path):
    """From unread bodies (their text looked at first) and from read ones alike."""
    from hloscope.analysis.memory import detect_platform

    target = json.loads((path / "meta.json").read_text())["target"]
    unread = hloscope.parse((path / "module.hlo.txt").read_text(), lazy=True)
    assert not unread.entry.is_read
    assert detect_platform(unread) == target
    assert detect_platform(hloscope.load(path / "module.hlo.txt")) == target
