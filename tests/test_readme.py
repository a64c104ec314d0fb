"""The README's pytest example runs as written (it compiles with JAX on 8 CPU devices)."""

from __future__ import annotations

import re
import subprocess
import sys

from .conftest import ROOT, needs_xla


def test_readme_pytest_example_passes(tmp_path):
    needs_xla()
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    (example,) = [b for b in blocks if "def test_" in b]
    (tmp_path / "test_example.py").write_text(example)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                       capture_output=True, text=True, cwd=tmp_path,
                       env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "1 passed" in r.stdout


def test_quickstart_runs_a_diff_that_explains_the_gap():
    """The Quickstart has two commands: the first installs and runs `hloscope diff` on a shipped
    fixture pair (run here from the source tree), the second installs and runs the tests."""
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", quick, re.S)
    assert len(blocks) == 2
    first, second = (b.strip() for b in blocks)
    install, _, command = first.partition(" && ")
    assert install == "python -m pip install ." and command.startswith("hloscope diff ")
    assert "pytest" in second and ".[test]" in second
    r = subprocess.run([sys.executable, "-m", "hloscope", *command.split()[1:]], capture_output=True, text=True,
                       cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("B needs ") and "causes of the temp gap" in r.stdout
