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
