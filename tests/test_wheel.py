"""The grammar ships inside the wheel and is loaded from there."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from .conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    pytest.importorskip("hatchling", reason="building the wheel needs hatchling")
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out),
                        str(ROOT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = out.glob("hloscope-*.whl")
    return whl


def test_wheel_contains_grammar_and_parses_from_it(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as z:
        assert "hloscope/grammars/hlo.lark" in z.namelist()
        z.extractall(tmp_path / "site")
    code = (
        "import hloscope, hloscope.grammar as p; g = p.path(); "
        "assert str(g).startswith(%r), g; "
        "m = hloscope.parse('ENTRY e {\\n ROOT p = f32[2] parameter(0)\\n}'); print(m.entry.root.shape)"
    ) % str(tmp_path / "site")
    # Run from an empty directory with only the unpacked wheel on the path: no source tree.
    r = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(tmp_path / 'site')!r}); {code}"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "f32[2]"
