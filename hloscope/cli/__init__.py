"""The `hloscope` command line: a thin layer over the library.

Each command lives in its own module under `hloscope.cli.commands` and is imported only when
it runs, so `hloscope stats` never pays for the imports of `hloscope memory`.

Exit codes: 0 ok · 1 a check or budget failed · 2 bad input or usage · 3 internal error. A
reader that stops reading (`hloscope stats f | head -1`) is not a failure: exit 0.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import NoReturn

import click

from .. import __version__
from ..speed.seam import finish as finish_background
from ..speed.seam import one_command
from ..errors import HloscopeError

# name → ("module:attribute" of the click command, its line in `hloscope --help`), the main
# job first. The lines live here so that `--help` imports no command.
COMMANDS: dict[str, tuple[str, str]] = {
    "diff": ("hloscope.cli.commands.diff:diff",
             "Why B needs more or less memory than A: the gap by cause, the mechanism, a lever."),
    "memory": ("hloscope.cli.commands.memory:memory",
               "Memory figures as memory_analysis() names them, the peak and the buffers live there."),
    "gathers": ("hloscope.cli.commands.gathers:gathers",
                "All-gathered values held from forward into backward (or hoisted out of a loop)."),
    "count-collectives": ("hloscope.cli.commands.collectives:count_collectives",
                          "Collectives by kind: count, count per step, bytes, group sizes."),
    "cost": ("hloscope.cli.commands.cost:cost",
             "FLOPs, bytes accessed and collective bytes of one step; a roofline estimate."),
    "check": ("hloscope.cli.commands.check:check",
              "Exit 1 when a module exceeds a budget or grows past its baseline."),
    "snapshot": ("hloscope.cli.commands.snapshot:snapshot",
                 "A small, stable summary of one compilation, to commit and check against."),
    "history": ("hloscope.cli.commands.history:history",
                "The trend of a check history: each figure over commits, every jump explained."),
    "stats": ("hloscope.cli.commands.stats:stats",
              "Modules, computations, instructions and the opcode histogram."),
    "sweep": ("hloscope.cli.commands.sweep:sweep",
              "Compile a step's variants for a target, rank them, say why each differs from its neighbour."),
    "export": ("hloscope.cli.commands.export:export",
               "The parsed module as JSON, GraphML or Graphviz dot."),
}

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


class _LazyGroup(click.Group):
    def list_commands(self, ctx):
        return [name for name in COMMANDS if self._available(name)]

    @staticmethod
    def _available(name: str) -> bool:
        module = COMMANDS[name][0].split(":")[0]
        return importlib.util.find_spec(module) is not None

    def format_commands(self, ctx, formatter):
        # Each command's own line, whole and in the order of COMMANDS (click would import every
        # command and cut its docstring's first sentence at 45 characters).
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx):
        # Here, before click's own handler turns a closed pipe into exit status 1.
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _stdout_to_devnull()
            raise click.exceptions.Exit(EXIT_OK) from None

    def get_command(self, ctx, name):
        if name not in COMMANDS or not self._available(name):
            return None
        module, attr = COMMANDS[name][0].split(":")
        return getattr(importlib.import_module(module), attr)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hloscope")
@click.option("--no-cache", is_flag=True, help="Neither use nor keep parsed-module outlines (also: HLOSCOPE_CACHE=0).")
def cli(no_cache):
    """Memory and collective analysis of XLA's compiled HLO text.

    FILE is HLO text as XLA prints it (`compiled.as_text()`, or an `*after_optimizations*.txt`
    of `--xla_dump_to`), plain or gzipped; `-` reads standard input; an XLA dump directory
    reads its largest jit_* module (or the one --module REGEX names). Sizes are bytes per
    device. JSON keys: docs/json.md.
    """
    if no_cache:
        os.environ["HLOSCOPE_CACHE"] = "0"


def main(argv=None) -> None:
    """Console entry point: map hloscope's errors to exit codes, never show a traceback."""
    one_command()
    try:
        rv = cli.main(args=argv, prog_name="hloscope", standalone_mode=False)
    except BrokenPipeError:
        _stdout_to_devnull()
        _exit(EXIT_OK)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        _exit(EXIT_BAD_INPUT)
    except click.exceptions.ClickException as e:
        e.show()
        _exit(EXIT_BAD_INPUT if e.exit_code in (1, 2) else e.exit_code)
    except HloscopeError as e:
        click.echo(str(e), err=True)
        _exit(EXIT_BAD_INPUT)
    except OSError as e:
        click.echo(f"error: {e.strerror or e}: {e.filename}" if e.filename else f"error: {e}", err=True)
        _exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        _exit(130)
    except Exception as e:  # a bug in hloscope: say so, briefly
        click.echo(f"hloscope: internal error: {type(e).__name__}: {e}", err=True)
        click.echo("Please report this with the input file; set HLOSCOPE_DEBUG=1 for a traceback.", err=True)
        if os.environ.get("HLOSCOPE_DEBUG"):
            raise
        _exit(EXIT_INTERNAL)
    _exit(rv if isinstance(rv, int) else EXIT_OK)


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null: what is still buffered for a closed pipe goes nowhere,
    instead of failing again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _exit(code: int) -> NoReturn:
    """End the process once its output is out and its background writers are done, without
    the interpreter's teardown: freeing a large module's IR object by object took 1.4 s
    after the analysis of a 100 MB module, for memory the process gives back anyway."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`): nothing more can be said
            pass
    finish_background()
    os._exit(code)


if __name__ == "__main__":
    main()
