"""The structure is part of the product: layers import one way, nothing hides an import.

The layers are import-linter's contract in pyproject.toml; these tests run it, and check by
reading the source what import-linter cannot see: imports placed inside functions (each
hides an arrow), private names taken from another module, and an analysis asking which
target it runs for instead of asking the target's backend object.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "hloscope"


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def _own_module(node: ast.ImportFrom | ast.Import) -> list[str]:
    """The hloscope modules an import statement names (relative imports are hloscope's)."""
    if isinstance(node, ast.ImportFrom):
        if node.level > 0 or (node.module or "").startswith("hloscope"):
            return [node.module or "."]
        return []
    return [a.name for a in node.names if a.name.startswith("hloscope")]


def test_the_layer_contract_is_kept():
    # --no-cache: import-linter writes nothing into the repository.
    run = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()",
                          "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert " 0 broken" in run.stdout


def test_no_import_of_hloscope_hides_inside_a_function():
    hidden = []
    for path, tree in _sources():
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and _own_module(node):
                    hidden.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert hidden == []


def test_no_private_name_is_taken_from_another_module():
    taken = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and _own_module(node):
                taken += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert taken == []


TARGET_NAME = re.compile(r"""["'](cpu|gpu|tpu)["']""")
"""A target's name as a string: what an analysis would compare `platform` with."""


def test_no_analysis_or_report_names_a_target():
    # A target's quirks live in its backend object (hloscope/analysis/backends), which the
    # analyses are handed and the reports look up (`backends.named`); one that compares a
    # name with "tpu" has a rule of its own.
    backends = PACKAGE / "analysis" / "backends"
    paths = [*(PACKAGE / "analysis").rglob("*.py"), *(PACKAGE / "report").rglob("*.py"), PACKAGE / "htmlreport.py"]
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in sorted(paths) if backends not in path.parents
             for number, line in enumerate(path.read_text().splitlines(), 1) if TARGET_NAME.search(line)]
    assert found == []


def test_the_target_pattern_finds_what_it_forbids():
    for line in ('if platform == "tpu":', "\"tpu\" in (a.platform, b.platform)", "backend != 'gpu'", 'p = "cpu"'):
        assert TARGET_NAME.search(line), line
    for line in ('Target("tpu-v5e", ...)', "backend.name", "# on TPU and GPU"):
        assert not TARGET_NAME.search(line), line
