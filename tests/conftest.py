"""Shared test fixtures: the committed compilations and the public HLO corpus."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = ROOT.parent / "shared" / "corpus" / "xla_tests.jsonl.gz"

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


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
