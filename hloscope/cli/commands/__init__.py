"""One module per CLI command; shared options and loading live here.

A command loads its input with `load_modules`, runs one analysis, and hands the result to
`emit`: JSON on stdout with `--json`, else the text a formatter in `hloscope.report` renders.
Commands return an exit code (0 ok, 1 findings); errors propagate to `hloscope.cli.main`.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

import click

from ...api.loading import load_all
from ...report import parse_progress, print_renderable

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")


def input_files(multiple: bool = False):
    """The FILE argument(s): must exist; read plain or gzipped."""
    return click.argument(
        "files" if multiple else "file",
        nargs=-1 if multiple else 1,
        required=True,
        type=click.Path(exists=True, dir_okay=False),
    )


def load_modules(path: str):
    """Every module in a file (a file can hold several). Bodies are read as the command
    needs them: a command that looks at every instruction reads them all."""
    with parse_progress(path) as progress:
        return load_all(path, lazy=True, progress=progress)


def emit(payload: dict[str, Any], as_json: bool, render: Callable[[], Any]) -> None:
    """Print `payload` as JSON, or what `render()` returns (a string or rich renderables)."""
    if as_json:
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    print_renderable(render())
