"""The parsed-module cache: same modules from the outline, off when asked, robust to damage."""

from __future__ import annotations

import pytest

import hloscope
from hloscope import cache

from .conftest import FIXTURES


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("HLOSCOPE_CACHE", raising=False)
    return tmp_path / "hloscope" / "modules"


def _outline(module):
    return [(c.name, c.is_entry, [(i.name, i.opcode, i.shape.text, [o.name for o in i.operands], dict(i.attributes))
                                  for i in c.instructions]) for c in module.computations]


@pytest.mark.parametrize("name", ["cpu_scan_layers", "gpu_hsdp_accum2", "tpu_hsdp_accum1"])
def test_second_load_comes_from_the_cache_and_is_the_same(name, cache_home):
    path = FIXTURES / name / "module.hlo.txt"
    first = hloscope.load_all(path, lazy=True)
    assert len(list(cache_home.glob("*.json"))) == 1
    second = hloscope.load_all(path, lazy=True)
    assert not any(c.is_read for c in second[0].computations)  # an outline, bodies unread
    assert _outline(second[0]) == _outline(first[0]) == _outline(hloscope.load(path))
    assert second[0].collectives().to_dict() == first[0].collectives().to_dict()


def test_cache_can_be_turned_off(cache_home, monkeypatch):
    monkeypatch.setenv("HLOSCOPE_CACHE", "0")
    hloscope.load_all(FIXTURES / "cpu_fsdp" / "module.hlo.txt", lazy=True)
    assert not cache_home.exists() or not list(cache_home.glob("*.json"))


def test_a_damaged_entry_is_ignored_and_removed(cache_home):
    path = FIXTURES / "cpu_fsdp" / "module.hlo.txt"
    expected = _outline(hloscope.load(path))
    hloscope.load_all(path, lazy=True)
    (entry,) = cache_home.glob("*.json")
    entry.write_text('{"stamp": "%s", "modules": [{"name": 1}]}' % cache._stamp())
    assert _outline(hloscope.load_all(path, lazy=True)[0]) == expected
    entry.write_text("not json")
    assert _outline(hloscope.load_all(path, lazy=True)[0]) == expected


def test_text_with_rule_parsed_bodies_is_not_cached(cache_home, tmp_path):
    hand = tmp_path / "hand.hlo"
    hand.write_text("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT q = negate(p)\n}\n")
    m = hloscope.load(hand, lazy=True)
    assert m.entry.root.opcode == "negate"
    assert not cache_home.exists() or not list(cache_home.glob("*.json"))
