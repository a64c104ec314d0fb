"""The pytest plugin from a fresh project: a test holds a jitted step to its committed snapshot.

A temporary project (its own test file, jax on CPU, a git repository) runs `python -m pytest`
with hloscope's plugin (the package's `pytest11` entry point; `-p hloscope.pytest_plugin`
where the installed hloscope predates it). The numbers the test expects are XLA's:
`memory_analysis()` of the same step compiled here.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from .conftest import ROOT

MODEL = textwrap.dedent('''
    import os

    import jax
    import jax.numpy as jnp


    def step(w, x):
        def loss(w):
            return jnp.mean(jnp.tanh(x @ w) @ w.T)
        return jax.grad(loss)(w)


    def args():
        width = int(os.environ.get("WIDTH", "256"))
        return (jax.ShapeDtypeStruct((width, width), jnp.float32), jax.ShapeDtypeStruct((64, width), jnp.float32))
''')

TEST = textwrap.dedent('''
    import model


    def test_step(hloscope_snapshot):
        hloscope_snapshot(model.step, *model.args())
''')

INERT = textwrap.dedent('''
    import sys


    def test_nothing_of_hloscope_is_imported_before_the_fixture_is_used():
        assert not [m for m in sys.modules if m.startswith("hloscope.") and m != "hloscope.pytest_plugin"]
''')

SNAPSHOT = "__hloscope__/test_model.test_step.hloscope.json"


def _plugin_args() -> list[str]:
    """`-p hloscope.pytest_plugin` unless the installed hloscope's entry point loads it."""
    registered = any(ep.value == "hloscope.pytest_plugin" for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if registered else ["-p", "hloscope.pytest_plugin"]


def _xla_temp(project, width: int) -> int:
    """XLA's temp size of the project's step at `width`, compiled in this process."""
    jax = pytest.importorskip("jax")
    spec = importlib.util.spec_from_file_location("fresh_model", project / "model.py")
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    os.environ["WIDTH"] = str(width)
    try:
        compiled = jax.jit(model.step).lower(*model.args()).compile()
    finally:
        del os.environ["WIDTH"]
    return compiled.memory_analysis().temp_size_in_bytes


@pytest.fixture
def project(tmp_path):
    pytest.importorskip("jax")
    p = tmp_path / "project"
    p.mkdir()
    (p / "model.py").write_text(MODEL)
    (p / "test_model.py").write_text(TEST)
    (p / "test_inert.py").write_text(INERT)
    (p / "pytest.ini").write_text("[pytest]\n")
    _git(p, "init", "-q")
    return p


def _git(project, *args) -> str:
    run = subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=project,
                         capture_output=True, text=True, check=True)
    return run.stdout


def _pytest(project, width: int, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", "WIDTH": str(width)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *_plugin_args(), *args],
                          cwd=project, env=env, capture_output=True, text=True)


def test_a_fresh_project_holds_its_step_to_the_committed_snapshot(project):
    small, large = _xla_temp(project, 256), _xla_temp(project, 384)
    assert large > 1.05 * small  # by XLA: the wider step needs more than 5% more

    first = _pytest(project, 256, "--hloscope-update", "--hloscope-history", "h.sqlite")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "2 passed" in first.stdout  # the inert check ran first, before the fixture was used
    snap = json.loads((project / SNAPSHOT).read_text())
    assert snap["memory"]["temp_bytes"] == small
    assert snap["key"]["name"] == "test_model.py::test_step" and snap["producer"]["jax"]
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "baseline")
    head = _git(project, "rev-parse", "HEAD").strip()

    grown = _pytest(project, 384, "--hloscope-history", "h.sqlite")
    assert grown.returncode == 1
    out = grown.stdout
    assert f"temp memory {large} bytes" in out and "grew past the budget" in out
    assert re.search(r"This compilation needs [\d.]+ \w+ \(\d+%\) more temp memory than the baseline: at its peak", out)
    assert "Leading causes: gradients +" in out and "--hloscope-update" in out
    assert _git(project, "status", "--porcelain", "__hloscope__") == ""  # a failing check writes nothing

    rows = sqlite3.connect(project / "h.sqlite").execute("SELECT commit_id, step, ok FROM runs ORDER BY id").fetchall()
    assert [r[1:] for r in rows] == [("test_model.py::test_step", 1), ("test_model.py::test_step", 0)]
    assert rows[1][0] == head

    updated = _pytest(project, 384, "--hloscope-update")
    assert updated.returncode == 0, updated.stdout
    assert _pytest(project, 384).returncode == 0

    # The change reads as a git diff: one figure a line, XLA's old and new temp among them.
    diff = _git(project, "diff", "-U0", "--", SNAPSHOT)
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed and all(re.fullmatch(r'[+-] *"[^"]+": (?:-?\d+|"[^"]*"|null),?', line) for line in changed), diff
    assert f'-  "temp_bytes": {small},' in changed and f'+  "temp_bytes": {large},' in changed
