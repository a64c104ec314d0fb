"""The trend: runs appended to an SQLite history, every jump of temp memory explained.

A history of fixture compilations recorded as commits: each run's figures are XLA's (its
`memory_analysis()` of that compilation), each jump is XLA's temp difference, and its
sentence is the one the diff of the two whole modules gives. The page is self-contained and
opened in Chromium; its screenshot is kept under /work/scratch/snapshot/ when that exists.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import hloscope
from hloscope import history, snapshots

from .conftest import FIXTURES, ROOT
from .test_diff import _load, _xla_temp
from .test_html import Opened, assert_clean, browser, save_screenshot  # noqa: F401 (browser: a fixture)

RUNS = [("c0ffee01", "cpu_hsdp_accum1"), ("c0ffee02", "cpu_hsdp_accum1"), ("c0ffee03", "cpu_hsdp_accum2"),
        ("c0ffee04", "cpu_remat_full"), ("c0ffee05", "cpu_remat_full"), ("c0ffee06", "cpu_remat_dots")]
"""One step over six commits: accumulation 2 lands, then remat, then another remat policy."""
SCRATCH = Path("/work/scratch/snapshot")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    path = tmp_path_factory.mktemp("history") / "h.sqlite"
    for n, (commit, name) in enumerate(RUNS):
        snap = snapshots.snapshot(_load(name))
        history.record(str(path), snap, step="train_step", commit=commit, ok=True, words="",
                       when=f"2026-12-03T10:0{n}:00+00:00")
    return path


def test_each_run_is_a_row_of_xlas_figures(recorded):
    db = sqlite3.connect(recorded)
    rows = db.execute("SELECT r.commit_id, f.value FROM runs r JOIN figures f ON f.run = r.id "
                      "WHERE f.name = 'temp_bytes' ORDER BY r.id").fetchall()
    assert rows == [(commit, _xla_temp(name)) for commit, name in RUNS]
    peaks = db.execute("SELECT f.value FROM figures f WHERE f.name = 'argument_bytes' ORDER BY f.run").fetchall()
    xla = [json.loads((FIXTURES / name / "memory_analysis.json").read_text())["argument_size_in_bytes"]
           for _, name in RUNS]
    assert [v for (v,) in peaks] == xla


def test_every_jump_is_xlas_and_explained_by_the_diff(recorded):
    [trend] = history.trends(str(recorded))
    assert [r.commit for r in trend.runs] == [c for c, _ in RUNS]
    expected = [(RUNS[i - 1], RUNS[i]) for i in range(1, len(RUNS)) if _xla_temp(RUNS[i][1]) != _xla_temp(RUNS[i - 1][1])]
    assert [(j.before.commit, j.after.commit) for j in trend.jumps] == [(a[0], b[0]) for a, b in expected]
    for j, (a, b) in zip(trend.jumps, expected):
        assert j.delta_temp_bytes == _xla_temp(b[1]) - _xla_temp(a[1])
        full = hloscope.diff(_load(a[1]), _load(b[1]), names=(f"commit {a[0]}", f"commit {b[0]}"))
        assert j.sentence == full.summary[:1].upper() + full.summary[1:]
    text = history.text([trend])
    assert all(j.sentence in text for j in trend.jumps)


def _run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "hloscope", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_check_appends_a_run_with_the_commit_of_the_repository(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    db = tmp_path / "h.sqlite"
    old, new = (FIXTURES / n / "module.hlo.txt" for n in ("cpu_hsdp_accum1", "cpu_hsdp_accum2"))
    snap = tmp_path / "step.hloscope.json"
    assert _run("snapshot", old, "-o", snap).returncode == 0
    first = _run("check", new, "--baseline", snap, "--max-growth", "5%", "--history", db, "--step", "train", cwd=repo)
    assert first.returncode == 1, first.stderr
    second = _run("check", old, "--max-temp", "1GiB", "--history", db, "--step", "train", "--commit", "abc123", cwd=repo)
    assert second.returncode == 0, second.stderr
    rows = sqlite3.connect(db).execute("SELECT commit_id, step, ok, words FROM runs ORDER BY id").fetchall()
    assert [r[:3] for r in rows] == [(head, "train", 0), ("abc123", "train", 1)]
    assert "more temp memory than the baseline" in rows[0][3]
    shown = _run("history", db, "--html", tmp_path / "trend.html")
    assert shown.returncode == 0 and "train: 2 runs, 1 jump of temp memory" in shown.stdout


def test_the_trend_page_in_chromium(recorded, browser, tmp_path):  # noqa: F811 (the fixture)
    [trend] = history.trends(str(recorded))
    page = tmp_path / "trend.html"
    page.write_text(history.html([trend], "hloscope trend · train_step"))
    text = page.read_text()
    assert "<script" not in text and "http" not in text.replace("http-equiv", "")
    opened = Opened(browser, page)
    assert_clean(opened)
    charts = opened.page.locator("figure svg").count()
    assert charts >= 3
    assert opened.page.locator("ol.jumps li").count() == len(trend.jumps)
    # On the temp chart, a red dot per jump, each titled with its sentence.
    titles = opened.page.eval_on_selector_all("figure:first-child circle.jump title", "ts => ts.map(t => t.textContent)")
    assert len(titles) == len(trend.jumps)
    assert all(j.sentence in t for j, t in zip(trend.jumps, titles))
    save_screenshot(opened, tmp_path / "trend.png")
    if SCRATCH.is_dir():
        save_screenshot(opened, SCRATCH / "trend.png")
    opened.page.close()


def test_a_file_that_is_no_history_is_said_so(tmp_path):
    bad = tmp_path / "notes.sqlite"
    bad.write_text("not a database\n" * 100)
    with pytest.raises(history.HistoryError, match="not an hloscope history"):
        history.trends(str(bad))
    run = _run("history", bad)
    assert run.returncode == 2 and "not an hloscope history" in run.stderr and "Traceback" not in run.stderr
