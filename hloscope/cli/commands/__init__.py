"""One module per CLI command; shared options and loading live here.

A command loads its inputs with `load_inputs` (files, `-`, XLA dump directories, `--module`),
runs one analysis, and hands the result to `emit`: JSON on stdout with `--json` (each module's
object carrying its `file`), else the text a formatter in `hloscope.report` renders. Everything
is loaded and analysed before anything is printed: bad input writes nothing. Commands return
an exit code (0 ok, 1 findings); errors propagate to `hloscope.cli.main()`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any, Callable

import click

from ...api.loading import (
    Input,
    InputError,
    load_all,
    load_input,
    module_pattern,
    resolve_inputs,
    xla_figures,
)
from ...api.module import Module
from ...report.terminal import parse_progress, print_renderable

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")


def input_files(multiple: bool = True):
    """The FILE... argument, `files`: HLO files (plain or gzipped), `-` for standard input, or
    XLA dump directories; checked when loaded (`load_inputs`), with messages that say what a
    file is when it is not HLO. `multiple=False`: one FILE, still passed as a one-item tuple."""
    if not multiple:
        return click.argument("files", nargs=1, required=True, type=click.Path(allow_dash=True), metavar="FILE",
                              callback=lambda ctx, param, value: (value,))
    return click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True), metavar="FILE...")


def _module_regex(ctx, param, value):
    try:
        module_pattern(value)
    except ValueError as e:
        raise click.BadParameter(str(e), ctx, param) from None
    return value


module_option = click.option(
    "--module", "module_regex", metavar="REGEX", callback=_module_regex,
    help="Only the modules whose name matches REGEX (re.search); in an XLA dump directory, its "
         "*after_optimizations.txt of that module (default: the largest jit_* module).")


@dataclass(frozen=True, slots=True)
class Loaded:
    """A module and the input it came from."""

    module: Module
    input: Input

    @property
    def file(self) -> str:
        """The file it was read from (`<stdin>` for `-`): JSON's `file`."""
        return self.input.name

    def xla_figures(self):
        """XLA's figures from the dump's buffer assignment beside the module, or None."""
        return xla_figures(self.input)


def note(text: str) -> None:
    """A remark for the user on stderr, which a pipe reading stdout does not see."""
    click.echo(f"note: {text}", err=True)


def warn(text: str) -> None:
    """A warning on stderr: the command goes on, but its answer may not be the one wanted."""
    click.echo(f"warning: {text}", err=True)


def load_inputs(files, module_regex: str | None = None) -> list[Loaded]:
    """Every module of every input, in order; notes on stderr say what a dump directory held
    and which files were passed over."""
    resolved = resolve_inputs(files, module_regex)
    for text in resolved.notes:
        note(text)
    loaded: list[Loaded] = []
    for inp in resolved.inputs:
        with parse_progress(inp.path) as progress:
            loaded += [Loaded(m, inp) for m in load_input(inp, lazy=True, progress=progress)]
    return loaded


def file_labels(loaded: list[Loaded]) -> list[str] | None:
    """The file of each module for text headings, when the modules come from several files."""
    files = [x.file for x in loaded]
    return files if len(set(files)) > 1 else None


def with_file(loaded: Loaded, payload: dict[str, Any]) -> dict[str, Any]:
    """A module's JSON object, with the file it came from first."""
    return {"file": loaded.file, **payload}


def _not_scheduled(module: Module) -> str:
    return (f"module '{module.name}' is not scheduled (its header has no is_scheduled=true): it is the "
            "module before XLA's optimizations (a dump's *before_optimizations.txt, or "
            "`lowered.as_text(dialect='hlo')`), not yet partitioned into per-device programs or scheduled")


def require_scheduled(loaded: list[Loaded], what: str) -> None:
    """Raise, naming the file, for a module the memory analyses cannot read (they follow the
    schedule): a pre-optimization module, most likely."""
    for x in loaded:
        if not x.module.is_scheduled:
            raise InputError(x.file, f"{_not_scheduled(x.module)}; {what} needs the optimized module: "
                             "`jax.jit(f).lower(*args).compile().as_text()`, or the dump's *after_optimizations.txt")


def warn_unscheduled(loaded: list[Loaded]) -> None:
    """Say so when a module's collectives are counted before SPMD partitioning inserted them."""
    for x in loaded:
        if not x.module.is_scheduled:
            note(f"{x.file}: {_not_scheduled(x.module)}: its collectives are not those the devices run "
                 "(SPMD partitioning inserts them); count the optimized module: "
                 "`jax.jit(f).lower(*args).compile().as_text()`, or the dump's *after_optimizations.txt")


def load_modules(path: str):
    """Every module in a file (a file can hold several). Bodies are read as the command
    needs them: a command that looks at every instruction reads them all."""
    with parse_progress(path) as progress:
        return load_all(path, lazy=True, progress=progress)


def emit(payload: Callable[[], dict[str, Any]], as_json: bool, render: Callable[[], Any]) -> None:
    """Print `payload()` as JSON, or what `render()` returns (a string or rich renderables):
    only the one asked for is made."""
    if as_json:
        sys.stdout.write(json.dumps(payload(), indent=2) + "\n")
        return
    print_renderable(render())
