"""hloscope's pytest plugin: hold a jitted function's compilation to a snapshot committed
beside the test (an entry point of the package, `pytest11`; inert unless a test asks for its
fixture).

    def test_train_step(hloscope_snapshot):
        hloscope_snapshot(train_step, params, batch)            # jitted or not; arrays or ShapeDtypeStructs

compiles the function for the given arguments, snapshots the compilation (hloscope.snapshots)
and compares it with `__hloscope__/<test file>.<test>.hloscope.json` beside the test file
(`.<name>` before the suffix with `name=`, for several steps in one test). The test fails when
temp memory grew more than the allowed growth (`max_growth=`, else `--hloscope-max-growth`,
else the ini option `hloscope_max_growth`, else 5%), with the diff's sentence. A missing
snapshot is written and the test fails, asking to commit it. `pytest --hloscope-update`
writes every snapshot a test takes; `--hloscope-history FILE.sqlite` appends each check to
a history (`hloscope history FILE.sqlite --html trend.html`).

Nothing of hloscope beyond this module is imported before a test uses the fixture.
"""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path
from typing import Any

import pytest

DIRECTORY = "__hloscope__"
DEFAULT_GROWTH = "5%"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hloscope", "hloscope compilation snapshots")
    group.addoption("--hloscope-update", action="store_true", default=False,
                    help="Rewrite the snapshots hloscope_snapshot takes instead of checking against them.")
    group.addoption("--hloscope-max-growth", metavar="PCT", default=None,
                    help=f"Temp memory growth hloscope_snapshot allows (default: ini hloscope_max_growth, else {DEFAULT_GROWTH}).")
    group.addoption("--hloscope-history", metavar="FILE.sqlite", default=None,
                    help="Append each snapshot check to this SQLite history (hloscope history FILE --html OUT).")
    group.addoption("--hloscope-commit", metavar="SHA", default=None,
                    help="The commit for --hloscope-history (default: $HLOSCOPE_COMMIT, git rev-parse HEAD, $GITHUB_SHA).")
    parser.addini("hloscope_max_growth", f"Temp memory growth hloscope_snapshot allows (default {DEFAULT_GROWTH}).",
                  default=None)


def _part(text: str) -> str:
    """A test's name as part of a file name."""
    return re.sub(r"[^\w.-]+", "_", text).strip("_") or "test"


class SnapshotCheck:
    """The `hloscope_snapshot` fixture: call it with a function and its arguments (or with a
    compiled object or Module as `compiled=`)."""

    def __init__(self, request: pytest.FixtureRequest):
        self.request = request
        self.config = request.config

    def path(self, name: str | None = None) -> Path:
        """Where the snapshot of this test (and `name`) lives."""
        node = self.request.node
        test_file = Path(str(node.path))
        stem = f"{test_file.stem}.{_part(node.name)}" + (f".{_part(name)}" if name else "")
        return test_file.parent / DIRECTORY / f"{stem}.hloscope.json"

    def __call__(self, fn=None, *args, name: str | None = None, max_growth: str | float | None = None,
                 compiled=None, **kwargs) -> dict[str, Any]:
        """Compile `fn(*args, **kwargs)` (jitted here if it is not), snapshot it and check it
        against the committed snapshot; the snapshot taken (JSON data)."""
        snapshots = importlib.import_module("hloscope.snapshots")
        budget = importlib.import_module("hloscope.budget")
        loading = importlib.import_module("hloscope.api.loading")
        if compiled is None:
            compiled = _compile(fn, args, kwargs)
        module = compiled if hasattr(compiled, "memory") else loading.from_compiled(compiled)
        jax_version, jaxlib_version = snapshots.running_jax()
        step = f"{self.request.node.nodeid}" + (f"::{name}" if name else "")
        snap = snapshots.snapshot(module, name=step, jax_version=jax_version, jaxlib_version=jaxlib_version,
                                  source_root=str(self.config.rootpath))
        path = self.path(name)
        growth = (max_growth if max_growth is not None else self.config.getoption("hloscope_max_growth")
                  or self.config.getini("hloscope_max_growth") or DEFAULT_GROWTH)
        update = self.config.getoption("hloscope_update")
        failure = None
        words = ""
        if update:
            _write_if_changed(snapshots, path, snap)
        elif not path.exists():
            snapshots.write(path, snap)
            failure = (f"hloscope: no snapshot at {path}: wrote one; commit it (or run pytest --hloscope-update "
                       "to write every snapshot)")
        else:
            baseline = snapshots.read(path)
            violations = budget.check(module, baseline=baseline, max_growth=growth)
            if violations:
                words = " ".join(v.message for v in violations)
                failure = (f"hloscope: {step} against {os.path.relpath(path)}:\n" + "\n".join(
                    f"  {v.message}" for v in violations) + "\n(pytest --hloscope-update accepts the new compilation)")
        history_file = self.config.getoption("hloscope_history")
        if history_file:
            history = importlib.import_module("hloscope.history")
            history.record(history_file, snap, step=step,
                           commit=history.commit_id(self.config.getoption("hloscope_commit"), str(self.config.rootpath)),
                           ok=failure is None, words=words or failure or "")
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        return snap


def _write_if_changed(snapshots, path: Path, snap: dict[str, Any]) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != snapshots.dumps(snap):
        snapshots.write(path, snap)


def _compile(fn, args, kwargs):
    """`fn` compiled for these arguments: `.lower(...).compile()` of a jitted function, of
    `jax.jit(fn)` otherwise."""
    if fn is None:
        raise TypeError("hloscope_snapshot(fn, *args): give the function to compile (or compiled=...)")
    if hasattr(fn, "as_text"):
        return fn
    if not hasattr(fn, "lower"):
        import jax

        fn = jax.jit(fn)
    return fn.lower(*args, **kwargs).compile()


@pytest.fixture
def hloscope_snapshot(request: pytest.FixtureRequest) -> SnapshotCheck:
    """Compile a function, snapshot its compilation and hold it to the snapshot committed in
    `__hloscope__/` beside the test (see hloscope.pytest_plugin)."""
    return SnapshotCheck(request)
