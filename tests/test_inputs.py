"""Every input a user has: a path, `-`, `.gz`, an XLA dump directory, several files, a file of
several modules, CRLF and a byte-order mark, a jax `Compiled` (and a `Lowered`, refused with
a hint); and a clear sentence naming the file, exit code 2 and nothing on stdout for each
input that is not optimized HLO."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import hloscope
from hloscope.text.dumpfiles import buffer_assignment_figures

from .conftest import FIXTURES, ROOT, fixture_dirs, fixture_ids, fixture_meta, needs_xla

FIXTURE = FIXTURES / "cpu_hsdp_accum2"
MODULE = FIXTURE / "module.hlo.txt"


def run(*args, input_bytes=None, env=None):
    return subprocess.run([sys.executable, "-m", "hloscope", *map(str, args)], capture_output=True, cwd=ROOT,
                          input=input_bytes, env={**os.environ, **(env or {})}, timeout=300)


def ok_json(*args, **kw):
    r = run(*args, "--json", **kw)
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


def bad(*args, **kw):
    """A command that must refuse its input: exit 2, nothing on stdout, one error naming
    the input, no traceback. Returns stderr."""
    r = run(*args, **kw)
    err = r.stderr.decode("utf-8", errors="replace")
    assert r.returncode == 2, (r.returncode, err)
    assert r.stdout == b"", r.stdout[:200]
    assert "Traceback" not in err and "internal error" not in err
    return err


def without_file(payload):
    return [{k: v for k, v in m.items() if k != "file"} for m in payload["modules"]]


# ─── stdin, gzip, line ends ────────────────────────────────────────────────────────────


def test_stdin_is_read_for_dash():
    expected = ok_json("count-collectives", MODULE)
    got = ok_json("count-collectives", "-", input_bytes=MODULE.read_bytes())
    assert without_file(got) == without_file(expected)
    assert [m["file"] for m in got["modules"]] == ["<stdin>"]


def test_gzipped_stdin_and_gz_file(tmp_path):
    packed = gzip.compress(MODULE.read_bytes())
    (gz := tmp_path / "step.hlo.gz").write_bytes(packed)
    expected = without_file(ok_json("stats", MODULE))
    assert without_file(ok_json("stats", gz)) == expected
    assert without_file(ok_json("stats", "-", input_bytes=packed)) == expected
    assert ok_json("stats", gz)["modules"][0]["file"] == str(gz)


def test_crlf_and_byte_order_mark_read_as_the_same_module(tmp_path):
    text = MODULE.read_text()
    (crlf := tmp_path / "crlf.hlo").write_bytes(text.replace("\n", "\r\n").encode())
    (bom := tmp_path / "bom.hlo").write_bytes(b"\xef\xbb\xbf" + text.encode())
    expected = without_file(ok_json("count-collectives", MODULE))
    assert without_file(ok_json("count-collectives", crlf)) == expected
    assert without_file(ok_json("count-collectives", bom)) == expected
    assert hloscope.parse("\ufeff" + text).name == hloscope.parse(text).name


def test_crlf_error_shows_the_line_without_carriage_return(tmp_path):
    bad_text = "HloModule m\r\nENTRY e {\r\n  p = f32[] parameter(0)\r\n  ROOT q = f32[] add(p, nope)\r\n}\r\n"
    (f := tmp_path / "bad.hlo").write_bytes(bad_text.encode())
    err = bad("stats", f)
    assert err.splitlines()[0] == f"{f}:4:25: error: instruction 'nope' is not defined"
    assert "\r" not in err


# ─── several files, several modules ────────────────────────────────────────────────────


def test_several_files_give_each_module_its_file():
    other = FIXTURES / "cpu_fsdp" / "module.hlo.txt"
    for command in ("stats", "count-collectives", "memory", "gathers", "export"):
        payload = ok_json(command, MODULE, other)
        assert [m["file"] for m in payload["modules"]] == [str(MODULE), str(other)], command
    r = run("count-collectives", MODULE, other)
    out = r.stdout.decode()
    assert f"{MODULE}: jit_train_step" in out and f"{other}: jit_train_step" in out
    payload = json.loads(run("check", MODULE, other, "--max", "all-gather=1", "--json").stdout)
    assert [m["file"] for m in payload["modules"]] == [str(MODULE), str(other)]


def _small_module(name: str) -> str:
    return (f"HloModule {name}, is_scheduled=true\n\n"
            "ENTRY %main (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n"
            "  ROOT %n = f32[8]{0} negate(%p)\n}\n")


def test_a_file_of_several_modules_and_module_regex(tmp_path):
    both = tmp_path / "two.hlo"
    both.write_text(MODULE.read_text() + "\n" + _small_module("jit_helper"))
    names = [m["name"] for m in ok_json("stats", both)["modules"]]
    assert names == ["jit_train_step", "jit_helper"]
    assert [m.name for m in hloscope.load_all(both)] == names
    (chosen,) = ok_json("stats", both, "--module", "helper$")["modules"]
    assert (chosen["name"], chosen["file"], chosen["instructions"]) == ("jit_helper", str(both), 2)
    err = bad("stats", both, "--module", "nothing-like-it")
    assert err.startswith(f"{both}: error: no module matches --module 'nothing-like-it'")
    assert "jit_train_step" in err and "jit_helper" in err
    assert "not a regular expression" in bad("stats", both, "--module", "(")


# ─── XLA dump directories ──────────────────────────────────────────────────────────────


def make_dump(directory, fixture) -> str:
    """A dump directory as `--xla_dump_to` writes it: the fixture's optimized module and
    buffer assignment under the names XLA gave them, a smaller jit_ module, the module
    before optimizations, and side files. Returns the main module's dump name."""
    directory.mkdir()
    sources = fixture_meta(fixture)["dump_source_files"]
    for key, stored in (("after_optimizations", "after_optimizations.txt.gz"),
                        ("buffer-assignment", "buffer-assignment.txt.gz"),
                        ("live-range", "live-range.txt.gz")):
        (directory / sources[key]).write_bytes(gzip.decompress((fixture / stored).read_bytes()))
    main = sources["after_optimizations"]
    number = int(re.match(r"module_(\d+)", main).group(1))
    helper = f"module_{number + 1:04d}.jit_convert_element_type"
    (directory / f"{helper}.cpu_after_optimizations.txt").write_text(_small_module("jit_convert_element_type"))
    (directory / f"{helper}.before_optimizations.txt").write_text(
        _small_module("jit_convert_element_type").replace(", is_scheduled=true", ""))
    (directory / f"{helper}.debug_options").write_text("xla_dump_to: \"x\"\n")
    return main


@pytest.mark.parametrize("fixture", fixture_dirs(), ids=fixture_ids())
def test_buffer_assignment_figures_are_xlas_memory_analysis(fixture):
    figures = buffer_assignment_figures(gzip.decompress((fixture / "buffer-assignment.txt.gz").read_bytes()).decode())
    xla = json.loads((fixture / "memory_analysis.json").read_text())
    assert figures.argument_bytes == xla["argument_size_in_bytes"]
    assert figures.output_bytes == xla["output_size_in_bytes"]
    assert figures.alias_bytes == xla["alias_size_in_bytes"]
    if fixture_meta(fixture)["target"] != "tpu":  # TPU reports temp apart (temp_size_in_bytes 0)
        assert figures.temp_bytes == xla["temp_size_in_bytes"]


@pytest.mark.parametrize("name", ["cpu_hsdp_accum2", "gpu_hsdp_accum2", "tpu_hsdp_accum1"])
def test_dump_directory_picks_the_largest_jit_module_and_shows_xlas_figures(tmp_path, name):
    fixture = FIXTURES / name
    dump = tmp_path / "dump"
    main = make_dump(dump, fixture)
    r = run("memory", dump)
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == 0, err
    assert "jit_convert_element_type" in err and "jit_train_step" in err and "--module" in err  # the listing
    xla = json.loads((fixture / "memory_analysis.json").read_text())
    line = next(x for x in out.splitlines() if x.startswith("XLA (buffer assignment): temp"))
    assert f"arguments {_human(xla['argument_size_in_bytes'])}" in line
    (module,) = ok_json("memory", dump)["modules"]
    assert module["file"] == str(dump / main)
    assert module["xla_buffer_assignment"]["argument_bytes"] == xla["argument_size_in_bytes"]
    if fixture_meta(fixture)["target"] != "tpu":  # TPU reports its temp otherwise (0 here)
        assert line.startswith("XLA (buffer assignment): temp " + _human(xla["temp_size_in_bytes"]))
        assert module["xla_buffer_assignment"]["temp_bytes"] == xla["temp_size_in_bytes"]
    # The module file given directly finds the buffer assignment beside it too.
    (direct,) = ok_json("memory", dump / main)["modules"]
    assert direct["xla_buffer_assignment"] == module["xla_buffer_assignment"]
    # And the module read is the dump's, not as_text()'s: the same collectives here.
    assert without_file(ok_json("count-collectives", dump)) == without_file(ok_json("count-collectives", dump / main))


def _human(n: int) -> str:
    from hloscope.units import human_bytes

    return human_bytes(n)


def test_dump_directory_module_regex(tmp_path):
    dump = tmp_path / "dump"
    make_dump(dump, FIXTURE)
    (m,) = ok_json("stats", dump, "--module", "convert_element")["modules"]
    assert m["name"] == "jit_convert_element_type" and m["file"].endswith("cpu_after_optimizations.txt")
    err = bad("stats", dump, "--module", "no_such_module")
    assert err.startswith(f"{dump}: error: no module of this dump matches --module 'no_such_module'")
    assert "jit_train_step" in err
    assert hloscope.load(dump).name == "jit_train_step"


def test_dump_glob_passes_over_side_files(tmp_path):
    dump = tmp_path / "dump"
    make_dump(dump, FIXTURE)
    files = sorted(dump.glob("*.txt"))
    assert any(f.name.endswith("-buffer-assignment.txt") for f in files)
    assert any(f.name.endswith(".before_optimizations.txt") for f in files)
    r = run("count-collectives", *files, "--json")
    assert r.returncode == 0, r.stderr.decode()
    names = [m["name"] for m in json.loads(r.stdout)["modules"]]
    # The module before optimizations is passed over too: the devices never run it.
    assert sorted(names) == ["jit_convert_element_type", "jit_train_step"]
    err = r.stderr.decode()
    assert "passed over 2 files" in err and "passed over 1 module before XLA's optimizations" in err
    # `memory dump/*.txt`, the README's example, reads every optimized module.
    r = run("memory", *files, "--json")
    assert r.returncode == 0, r.stderr.decode()
    assert sorted(m["name"] for m in json.loads(r.stdout)["modules"]) == sorted(names)
    # Only modules before optimizations: the error says what to give instead.
    before = [f for f in files if f.name.endswith(".before_optimizations.txt")]
    (copy := dump / "module_9999.jit_other.before_optimizations.txt").write_text(before[0].read_text())
    err = bad("memory", *before, copy)
    assert "only modules before XLA's optimizations" in err and "after_optimizations" in err


def test_directory_without_a_dump(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    err = bad("count-collectives", tmp_path)
    assert err.startswith(f"{tmp_path}: error: a directory without XLA dump modules")


# ─── jax ───────────────────────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def jitted():
    needs_xla()
    import jax
    import jax.numpy as jnp

    f = jax.jit(lambda x, w: jnp.tanh(x @ w).sum())
    lowered = f.lower(jnp.ones((8, 16), jnp.float32), jnp.ones((16, 4), jnp.float32))
    return f, lowered, lowered.compile()


def test_from_compiled_takes_a_jax_compiled(jitted):
    _, _, compiled = jitted
    module = hloscope.from_compiled(compiled)
    assert module.is_scheduled and module.name.startswith("jit_")
    assert module.memory().temp_bytes == compiled.memory_analysis().temp_size_in_bytes


def test_from_compiled_refuses_a_lowered_and_a_jitted_function(jitted):
    f, lowered, _ = jitted
    with pytest.raises(hloscope.NotCompiledError, match=r"call \.compile\(\) first"):
        hloscope.from_compiled(lowered)
    with pytest.raises(TypeError, match=r"\.lower\(\*args\)\.compile\(\)"):
        hloscope.from_compiled(f)
    with pytest.raises(hloscope.NotCompiledError, match="hloscope.parse"):
        hloscope.from_compiled("HloModule m")


def test_stablehlo_text_gets_a_hint(jitted, tmp_path):
    _, lowered, _ = jitted
    (f := tmp_path / "lowered.mlir.txt").write_text(lowered.as_text())
    err = bad("count-collectives", f)
    first = err.splitlines()[0]
    assert re.match(rf"{re.escape(str(f))}:\d+:\d+: error: this is StableHLO/MLIR text", first), first
    assert ".compile()" in first
    with pytest.raises(hloscope.HloSyntaxError, match="StableHLO"):
        hloscope.parse(lowered.as_text())


def test_pre_optimization_module_is_named_as_such(jitted, tmp_path):
    _, lowered, _ = jitted
    (f := tmp_path / "before_optimizations.txt").write_text(lowered.as_text(dialect="hlo"))
    err = bad("memory", f)
    assert err.startswith(f"{f}: error: module '")
    assert "before XLA's optimizations" in err and "is_scheduled=true" in err
    r = run("count-collectives", f)
    assert r.returncode == 0
    assert "before XLA's optimizations" in r.stderr.decode() and "partition" in r.stderr.decode()


# ─── inputs that are not HLO ───────────────────────────────────────────────────────────


def test_truncated_gz_names_the_file(tmp_path):
    packed = gzip.compress(MODULE.read_bytes())
    (f := tmp_path / "cut.hlo.gz").write_bytes(packed[: len(packed) // 2])
    err = bad("stats", f)
    assert err.strip() == f"{f}: error: the gzip data ends early: the file is truncated"
    assert "Aborted" not in err


def test_non_gzip_gz_names_the_file(tmp_path):
    (f := tmp_path / "plain.gz").write_text("no\n")
    assert bad("memory", f).startswith(f"{f}: error: named .gz but not gzip data")
    (g := tmp_path / "corrupt.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 64)
    assert bad("memory", g).startswith(f"{g}: error: the gzip data is corrupt")


def test_binary_file_echoes_no_bytes(tmp_path):
    junk = bytes(range(256)) * 64
    (f := tmp_path / "a.out").write_bytes(junk)
    err = bad("stats", f)
    assert err.startswith(f"{f}: error: binary data, not HLO text")
    assert err.isprintable() or all(c.isprintable() or c == "\n" for c in err)
    (o := tmp_path / "kernel.o").write_bytes(b"\x7fELF\x02\x01\x01\x00" + junk)
    assert "an object file" in bad("stats", o)


def test_dump_side_files_say_what_they_are(tmp_path):
    dump = tmp_path / "dump"
    main = make_dump(dump, FIXTURE)
    stem = main.removesuffix(".txt")
    for side, kind in (("-buffer-assignment.txt", "buffer-assignment"), ("-live-range.txt", "live-range")):
        err = bad("memory", dump / f"{stem}{side}")
        assert f"this is XLA's {kind} dump, not an HLO module" in err
        assert f"`{main}` beside it" in err
    # Renamed, the content still tells.
    shutil.copy(dump / f"{stem}-buffer-assignment.txt", renamed := tmp_path / "mystery.txt")
    assert "buffer-assignment dump" in bad("stats", renamed)


def test_missing_file_and_stdin_twice(tmp_path):
    assert bad("stats", tmp_path / "absent.hlo").startswith(f"{tmp_path / 'absent.hlo'}: error: no such file")
    # A name whose gzipped file exists gets a hint, from the command line and the API alike.
    (tmp_path / "step.hlo.gz").write_bytes(gzip.compress(MODULE.read_bytes()))
    assert "step.hlo.gz is: did you mean it?" in bad("stats", tmp_path / "step.hlo")
    with pytest.raises(hloscope.InputError, match=r"step\.hlo\.gz is: did you mean it"):
        hloscope.load(tmp_path / "step.hlo")
    assert "only once" in bad("stats", "-", "-", input_bytes=b"")
