"""The parsed-module cache: same modules from the outline, off when asked, robust to damage."""

from __future__ import annotations

import pytest

import hloscope
from hloscope.speed import cache

from .conftest import FIXTURES


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "hloscope"))
    monkeypatch.delenv("HLOSCOPE_CACHE", raising=False)
    return tmp_path / "hloscope" / "modules"


def test_the_cache_directory_is_the_one_asked_for(tmp_path, monkeypatch):
    from hloscope import settings

    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "here"))
    assert settings.private_dir("modules") == str(tmp_path / "here" / "modules")
    monkeypatch.delenv("HLOSCOPE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert settings.private_dir("modules") == str(tmp_path / "xdg" / "hloscope" / "modules")
    monkeypatch.setenv("HLOSCOPE_CACHE", "0")
    assert settings.private_dir("modules") is None


def _outline(module):
    return [(c.name, c.is_entry, [(i.name, i.opcode, i.shape.text, [o.name for o in i.operands], dict(i.attributes))
                                  for i in c.instructions]) for c in module.computations]


@pytest.mark.parametrize("name", ["cpu_scan_layers", "gpu_hsdp_accum2", "tpu_hsdp_accum1"])
def test_second_load_comes_from_the_cache_and_is_the_same(name, cache_home):
    path = FIXTURES / name / "module.hlo.txt"
    first = hloscope.load_all(path, lazy=True)
    assert len(list(cache_home.glob("*.json"))) == 1
    second = hloscope.load_all(path, lazy=True)
    assert not any(getattr(c, "is_read", True) for c in second[0].computations)  # an outline, bodies unread
    assert _outline(second[0]) == _outline(first[0]) == _outline(hloscope.load(path))
    assert second[0].collectives().to_dict() == first[0].collectives().to_dict()


def _alike(module):
    """Which computations the parse found of one text up to names (`LazyComputation.alike`):
    each the first of its kind, or None."""
    first: dict[int, str] = {}
    return [None if c.alike is None else first.setdefault(id(c.alike), c.name) for c in module.computations]


@pytest.mark.parametrize("name", ["cpu_scan_layers", "cpu_hsdp_accum2"])
def test_the_outline_keeps_which_bodies_are_alike(name, cache_home):
    """What the analyses ask of one body they know of those alike to it (hloscope.speed.facts):
    a module made from the cache's outline finds the same bodies alike as the parse did."""
    path = FIXTURES / name / "module.hlo.txt"
    first = hloscope.load_all(path, lazy=True)
    second = hloscope.load_all(path, lazy=True)
    assert not any(getattr(c, "is_read", True) for c in second[0].computations)
    assert _alike(second[0]) == _alike(first[0])
    assert len(set(_alike(first[0])) - {None}) < len(first[0].computations) - 1  # some are alike


def test_the_key_is_the_texts_hash_whether_read_plain_or_gzipped(cache_home, tmp_path):
    import gzip

    path = FIXTURES / "cpu_fsdp" / "module.hlo.txt"
    packed = tmp_path / "module.hlo.txt.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    plain = hloscope.load_all(path, lazy=True)
    (entry,) = cache_home.glob("*.json")
    assert entry.stem == cache.digest(path.read_text(encoding="utf-8"))
    assert cache._keys[plain[0]] == f"{entry.stem}-0"
    unpacked = hloscope.load_all(packed, lazy=True)
    assert list(cache_home.glob("*.json")) == [entry]  # found under the same key
    assert not any(getattr(c, "is_read", True) for c in unpacked[0].computations)
    assert _outline(unpacked[0]) == _outline(plain[0])


def test_a_large_texts_outline_is_written_by_a_child(cache_home, monkeypatch):
    from hloscope.speed import runtime

    monkeypatch.setattr(cache, "BACKGROUND_MIN_CHARS", 0)
    monkeypatch.delenv("HLOSCOPE_JOBS", raising=False)
    started = []
    start = runtime.in_background
    monkeypatch.setattr(runtime, "in_background", lambda *args: started.append(start(*args)) or started[-1])
    path = FIXTURES / "gpu_hsdp_accum2" / "module.hlo.txt"
    first = hloscope.load_all(path, lazy=True)
    assert started == [True]  # a child was started to write it
    runtime.wait_for_background()
    assert len(list(cache_home.glob("*.json"))) == 1
    second = hloscope.load_all(path, lazy=True)
    assert not any(getattr(c, "is_read", True) for c in second[0].computations)
    assert _outline(second[0]) == _outline(first[0]) == _outline(hloscope.load(path))


def test_bodies_the_parse_read_early_keep_their_outline(cache_home, monkeypatch):
    """A parse in two processes reads the schedule's bodies in the parent's part: the module
    is still cached, and comes back the same."""
    from hloscope.speed import runtime
    from hloscope.speed import split

    monkeypatch.setattr(split, "MIN_CHARS", 0)
    monkeypatch.setattr(runtime.Child, "ready", lambda self: False)
    monkeypatch.delenv("HLOSCOPE_JOBS", raising=False)
    path = FIXTURES / "cpu_scan_layers" / "module.hlo.txt"
    first = hloscope.load_all(path, lazy=True)
    assert first[0].entry.is_read
    assert len(list(cache_home.glob("*.json"))) == 1
    second = hloscope.load_all(path, lazy=True)
    assert not any(getattr(c, "is_read", True) for c in second[0].computations)
    assert _outline(second[0]) == _outline(first[0]) == _outline(hloscope.load(path))


_SUGAR = ("HloModule m, is_scheduled=true\n\n%neg (a: f32[8]) -> f32[8] {\n  %a = f32[8] parameter(0)\n"
          "  ROOT %y = f32[8] negate(%a)\n}\n\n%w (v: f32[8]) -> f32[8] {\n  %v = f32[8] parameter(0)\n"
          "  %s = ((f32[8]), f32[8], s32[]) call-start(%v), to_apply=%neg\n  ROOT %d = f32[8] call-done(%s)\n}\n\n"
          "%f (x: f32[8]) -> f32[8] {\n  %x = f32[8] parameter(0)\n  ROOT %call.2 = f32[8] negate(%x)\n}\n\n"
          "ENTRY %e (p: f32[8]) -> f32[8] {\n  %p = f32[8] parameter(0)\n  %call = f32[8] negate(%p)\n"
          "  %q = f32[8] call(%call), to_apply=%f\n  ROOT %c = f32[8] call(%q), to_apply=%w\n}\n")


def test_instructions_xla_renames_keep_their_names_from_the_outline(cache_home, tmp_path):
    """XLA names the computation it builds for `%w`'s async sugar `call`, so the entry's
    `%call` is renamed (tests/test_parallel.py holds that to XLA's parse): the module is
    still cached, and its bodies, read from the outline, take the same names."""
    path = tmp_path / "sugar.hlo"
    path.write_text(_SUGAR)
    first = hloscope.load_all(path, lazy=True)
    assert len(list(cache_home.glob("*.json"))) == 1
    second = hloscope.load_all(path, lazy=True)
    assert not any(getattr(c, "is_read", True) for c in second[0].computations)
    eager = hloscope.load(path)
    assert [i.name for i in eager.entry.instructions][1] != "call"  # renamed
    assert _outline(second[0]) == _outline(first[0]) == _outline(eager)


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


def test_a_kept_modules_computations_are_made_when_first_asked_for(cache_home, monkeypatch):
    """A module from the cache is its header until a computation is asked for: a command whose
    results are kept (a warm diff) makes none of them, nor decodes the text."""
    from hloscope.api import loading

    path = FIXTURES / "gpu_hsdp_accum2" / "module.hlo.txt"
    fresh = hloscope.load(path)
    hloscope.load(path, lazy=True).memory()
    made, decoded = [], []
    outline = cache.computations_from_outline
    monkeypatch.setattr(cache, "computations_from_outline", lambda *a: made.append(1) or outline(*a))
    decode = loading.decode_text
    monkeypatch.setattr(loading, "decode_text", lambda *a: decoded.append(1) or decode(*a))
    kept = hloscope.load(path, lazy=True)
    assert (kept.name, kept.is_scheduled, kept.tables) == (fresh.name, fresh.is_scheduled, fresh.tables)
    assert kept.memory().to_dict() == fresh.memory().to_dict()
    assert isinstance(kept, hloscope.Module) and not hasattr(kept, "as_text")
    assert made == decoded == []
    assert kept.computation(fresh.entry.name).is_entry  # made now, once
    assert kept.entry is kept.computation(fresh.entry.name)
    assert _outline(kept) == _outline(fresh)
    assert all(c.module is kept for c in kept.computations)
    assert made == decoded == [1]


def _reads(monkeypatch) -> list[str]:
    from hloscope.api import loading

    reads, read = [], loading.read_bytes
    monkeypatch.setattr(loading, "read_bytes", lambda path: reads.append(path) or read(path))
    return reads


def test_a_file_seen_before_is_not_read_while_it_is_unchanged(cache_home, tmp_path, monkeypatch):
    """Its key is found from its status (`cache.file_key`): a command whose results are kept
    reads nothing. A file still being written is not noted (`SETTLED_SECONDS`)."""
    path = tmp_path / "module.hlo.txt"
    text = (FIXTURES / "gpu_hsdp_accum2" / "module.hlo.txt").read_bytes()
    fresh = hloscope.load(FIXTURES / "gpu_hsdp_accum2" / "module.hlo.txt")
    expected, expected_outline = fresh.memory().to_dict(), _outline(fresh)
    path.write_bytes(text)  # then read at once: within SETTLED_SECONDS of being written
    hloscope.load(path, lazy=True).memory()
    assert cache.file_key(str(path)) is None  # written just now: not noted
    monkeypatch.setattr(cache, "SETTLED_SECONDS", 0.0)
    hloscope.load(path, lazy=True)
    assert cache.file_key(str(path)) == cache.digest_bytes(text)
    reads = _reads(monkeypatch)
    kept = hloscope.load(path, lazy=True)
    assert kept.memory().to_dict() == expected
    assert reads == []
    assert _outline(kept) == expected_outline
    assert reads == [str(path)]  # read for its computations, and found to hash to the key


def test_a_file_changed_since_is_read_again(cache_home, tmp_path, monkeypatch):
    """Rewritten with the same size and its modification time put back: its change time,
    which no program sets, tells; the new text's results are given, not the old ones."""
    import os

    monkeypatch.setattr(cache, "SETTLED_SECONDS", 0.0)
    path = tmp_path / "module.hlo.txt"
    old, new = (FIXTURES / n / "module.hlo.txt" for n in ("cpu_hsdp_accum2", "cpu_hsdp_accum1"))
    path.write_bytes(old.read_bytes())
    first = hloscope.load(path, lazy=True)
    first.collectives()
    assert cache.file_key(str(path)) == cache.digest_bytes(old.read_bytes())
    before = os.stat(path)
    assert len(new.read_bytes()) < before.st_size  # so the new text, padded with blanks, is a module
    same_size = new.read_bytes().ljust(before.st_size, b" ")
    with open(path, "r+b") as f:
        f.write(same_size)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size and os.stat(path).st_mtime_ns == before.st_mtime_ns
    assert cache.file_key(str(path)) is None
    reads = _reads(monkeypatch)
    assert cache.text_key(hloscope.load_all(path, lazy=True)[0]) == cache.digest_bytes(same_size)
    assert reads == [str(path)]


def test_computations_the_outline_no_longer_gives_are_parsed_again(cache_home):
    """The outline's second line read back damaged (or its file gone) once the header was
    read: the module's computations come from a parse of the text instead."""
    path = FIXTURES / "cpu_scan_layers" / "module.hlo.txt"
    expected = _outline(hloscope.load(path))
    hloscope.load_all(path, lazy=True)
    (entry,) = cache_home.glob("*.json")
    header = entry.read_text().splitlines()[0]
    for damage in (header + "\n[[]]", header + "\nnot json", None):
        hloscope.load_all(path, lazy=True)  # the outline, kept again
        kept = hloscope.load(path, lazy=True)
        if damage is None:
            entry.unlink()
        else:
            entry.write_text(damage)
        assert _outline(kept) == expected
        assert not entry.exists()


def test_text_with_rule_parsed_bodies_is_not_cached(cache_home, tmp_path):
    hand = tmp_path / "hand.hlo"
    hand.write_text("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT q = negate(p)\n}\n")
    m = hloscope.load(hand, lazy=True)
    assert m.entry.root.opcode == "negate"
    assert not cache_home.exists() or not list(cache_home.glob("*.json"))


# ─── analysis results ────────────────────────────────────────────────────────────────


@pytest.fixture
def results_home(cache_home):
    return cache_home.parent / "results"


@pytest.mark.parametrize("name", ["cpu_hsdp_accum2", "gpu_hsdp_accum1", "tpu_hsdp_accum2"])
def test_kept_results_are_the_results(name, results_home, monkeypatch):
    path = FIXTURES / name / "module.hlo.txt"
    first = hloscope.load_all(path, lazy=True)[0]
    memory, collectives = first.memory(), first.collectives()
    assert len(list(results_home.glob("*.json"))) == 2

    # The second command gets the same results without running the analyses again.
    import hloscope.analysis.collectives as hc
    import hloscope.analysis.memory as hm

    def not_again(*args):
        raise AssertionError("analysis ran although its result is kept")

    monkeypatch.setattr(hm, "analyze_dataflow", not_again)
    monkeypatch.setattr(hc, "running_graph", not_again)
    second = hloscope.load_all(path, lazy=True)[0]
    assert second.memory() == memory
    assert second.collectives() == collectives
    assert second.memory().to_dict() == memory.to_dict()
    assert second.collectives().to_dict(by="source") == collectives.to_dict(by="source")
    monkeypatch.undo()

    # ...and they are what an analysis with no cache at all says.
    monkeypatch.setenv("HLOSCOPE_CACHE", "0")
    fresh = hloscope.load(path)
    assert fresh.memory() == memory
    assert fresh.collectives() == collectives


def test_kept_role_timelines_are_the_timelines(results_home, monkeypatch):
    """What the pictures draw (`role_timelines`) is kept too: the next command draws it without
    a memory model, and it is what an analysis with no cache at all says."""
    path = FIXTURES / "gpu_hsdp_accum1" / "module.hlo.txt"
    first = hloscope.load_all(path, lazy=True)[0].role_timelines()
    assert first and all(type(t) is list for t in first.values())
    import hloscope.analysis.memory as hm

    def not_again(*args):
        raise AssertionError("the memory model was built although the timelines are kept")

    monkeypatch.setattr(hm, "analyze_dataflow", not_again)
    assert hloscope.load_all(path, lazy=True)[0].role_timelines() == first
    monkeypatch.undo()
    monkeypatch.setenv("HLOSCOPE_CACHE", "0")
    assert hloscope.load(path).role_timelines() == first


def test_results_depend_on_the_arguments(results_home):
    m = hloscope.load_all(FIXTURES / "cpu_fsdp" / "module.hlo.txt", lazy=True)[0]
    assert m.memory(alignment=1).temp_bytes <= m.memory(alignment=4096).temp_bytes
    assert len(list(results_home.glob("*.json"))) == 2


def test_a_damaged_or_stale_result_is_not_used(results_home, monkeypatch):
    path = FIXTURES / "cpu_fsdp" / "module.hlo.txt"
    expected = hloscope.load_all(path, lazy=True)[0].memory()
    (entry,) = results_home.glob("*.json")
    for damage in ("not json",
                   '{"stamp": "%s", "payload": {"c": "os.system", "f": ["true"]}}' % cache._stamp(),
                   '{"stamp": "%s", "payload": {"c": "MemoryAnalysis", "f": [1]}}' % cache._stamp(),
                   '{"stamp": "other", "payload": 1}'):
        entry.write_text(damage)
        assert hloscope.load_all(path, lazy=True)[0].memory() == expected
        assert entry.read_text() != damage  # removed, or replaced by the recomputed result


def test_a_result_that_is_not_plain_data_is_not_kept(results_home):
    @cache.memoized("test", ())
    def analysis(module):
        return object()

    m = hloscope.load_all(FIXTURES / "cpu_fsdp" / "module.hlo.txt", lazy=True)[0]
    assert analysis(m) is not analysis(m)
    assert not list(results_home.glob("*-test-*.json"))


def test_the_cache_keeps_the_newest_files_within_its_limits(tmp_path, monkeypatch):
    import os
    import time

    for n in range(6):
        (tmp_path / f"{n}.json").write_text("x" * 100)
        os.utime(tmp_path / f"{n}.json", (time.time() + n, time.time() + n))
    cache._trim(str(tmp_path), (4, 1 << 20))
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["2.json", "3.json", "4.json", "5.json"]
    cache._trim(str(tmp_path), (10, 250))
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["4.json", "5.json"]
    cache._trim(str(tmp_path), (10, 10))
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["5.json"]  # the newest stays
