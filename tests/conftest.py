"""Shared test fixtures: the committed compilations and the public HLO corpus."""

from __future__ import annotations

import fcntl
import gzip
import importlib.util
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from .xla_reference import XlaReadings

# The tests compile on the host's CPU (accelerator targets without a device, as the sweep and
# fixtures/generate.py do); with libtpu installed, JAX would otherwise first look for a TPU.
os.environ.setdefault("JAX_PLATFORMS", "cpu")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = ROOT.parent / "shared" / "corpus" / "xla_tests.jsonl.gz"

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


@pytest.fixture(autouse=True, scope="session")
def _cache_in_a_temporary_directory(tmp_path_factory):
    """The suite never writes into the user's cache: every cache (outlines, results, Lark's
    grammar tables) goes to a directory of this session's, also for the processes tests start
    (they inherit the environment)."""
    directory = tmp_path_factory.mktemp("hloscope-cache")
    previous = os.environ.get("HLOSCOPE_CACHE_DIR")
    os.environ["HLOSCOPE_CACHE_DIR"] = str(directory)
    yield directory
    if previous is None:
        os.environ.pop("HLOSCOPE_CACHE_DIR", None)
    else:
        os.environ["HLOSCOPE_CACHE_DIR"] = previous


@pytest.fixture(autouse=True, scope="session")
def _fork_as_a_command_would():
    """hloscope forks only where no other thread runs (`runtime.other_threads`); the suite
    imports JAX for XLA's answers, whose threads would keep every forking path untested here.
    The suite's processes count Python threads only, as a command's process, which has no
    other (tests/test_parallel.py checks the rule itself in processes of their own)."""
    import threading

    from hloscope.speed import runtime

    real = runtime.other_threads
    runtime.other_threads = lambda: threading.active_count() > 1
    yield real
    runtime.other_threads = real


def fixture_dirs() -> list[Path]:
    return sorted(p.parent for p in FIXTURES.glob("*/module.hlo.txt"))


def fixture_ids() -> list[str]:
    return [p.name for p in fixture_dirs()]


def fixture_meta(path: Path) -> dict:
    return json.loads((path / "meta.json").read_text())


def corpus_rows() -> list[dict]:
    if not CORPUS.exists():
        pytest.skip("../shared/corpus is absent (a user's clone has no ../shared)")
    with gzip.open(CORPUS, "rt") as f:
        return [json.loads(line) for line in f]


def accepted_corpus_rows() -> list[dict]:
    """The rows of the corpus' modules XLA's parser accepts, in the corpus' order: what
    `xla_corpus_readings` reads, one for one."""
    return [row for row in corpus_rows() if row["accepted_by_xla"]]


def _accepted_corpus_texts() -> list[str]:
    return [row["text"] for row in accepted_corpus_rows()]


_IN_BACKGROUND: dict = {}
"""What the session started in the background (`pytest_collection_finish`), by fixture name."""


def pytest_collection_finish(session):
    """XLA's reading of the accepted corpus modules (minutes of CPU) starts as soon as a test
    that asks for it is collected, in a process of its own: it runs while the tests before
    that one do."""
    asks = any("xla_corpus_readings" in getattr(item, "fixturenames", ()) for item in session.items)
    if asks and CORPUS.exists() and importlib.util.find_spec("jaxlib") is not None:
        _IN_BACKGROUND["xla_corpus_readings"] = XlaReadings(_accepted_corpus_texts())


def pytest_sessionfinish(session):
    for started in _IN_BACKGROUND.values():
        started.stop()
    _IN_BACKGROUND.clear()


@pytest.fixture(scope="session")
def xla_corpus_readings():
    """XLA's reading of the text of each of `accepted_corpus_rows()` (`XlaReadings`)."""
    needs_xla()
    if "xla_corpus_readings" not in _IN_BACKGROUND:
        _IN_BACKGROUND["xla_corpus_readings"] = XlaReadings(_accepted_corpus_texts())
    return _IN_BACKGROUND["xla_corpus_readings"]


def corpus_texts_or_none() -> list[str]:
    """The corpus' texts where ../shared is there, else none: for tests the fixtures serve too."""
    if not CORPUS.exists():
        return []
    with gzip.open(CORPUS, "rt") as f:
        return [json.loads(line)["text"] for line in f]


def fixture_texts() -> list[str]:
    return [(path / "module.hlo.txt").read_text() for path in fixture_dirs()]


def needs_xla():
    """XLA's Python bindings; the test is skipped without jaxlib, except in CI, where the
    comparison with XLA must run."""
    try:
        from jax._src.lib import xla_client
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("needs jaxlib for XLA's own answers")
    return xla_client


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def in_terminal(args, columns: int = 80, env: dict | None = None, raw: bool = False) -> str:
    """What `hloscope ARGS` prints on a terminal `columns` wide (stdout a pseudo-terminal), as
    a person sees it: without colour (NO_COLOR), unless `raw`, which leaves the environment
    (plus `env`) and the escape sequences as they are."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    environment.update({"TERM": "xterm", **({} if raw else {"NO_COLOR": "1"}), **(env or {})})
    proc = subprocess.Popen([sys.executable, "-m", "hloscope", *map(str, args)], stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=subprocess.DEVNULL, cwd=ROOT, env=environment)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=300) == 0, args
    os.close(leader)
    text = b"".join(chunks).decode().replace("\r\n", "\n")
    return text if raw else _ANSI.sub("", text)
