import os

import click

from ...history import as_json as trend_json
from ...history import html, text, trends
from ...htmlreport import write_html
from . import emit, json_option


@click.command()
@click.argument("database", type=click.Path(dir_okay=False), metavar="FILE.sqlite")
@click.option("--html", "html_out", type=click.Path(dir_okay=False), metavar="OUT.html",
              help="Also write one self-contained page: each figure over the runs, every jump explained.")
@click.option("--step", "steps", multiple=True, metavar="STEP", help="Only these steps (repeatable).")
@json_option
def history(database, html_out, steps, as_json):
    """The trend of a history that `check --history` (or the pytest plugin) appends to.

    For each step: its runs in order (commit, verdict, temp, peak and total memory), and each
    change of temp memory between two runs with the diff's sentence explaining it.
    """
    if not os.path.exists(database):
        raise click.BadParameter(f"{database}: no such file", param_hint="FILE.sqlite")
    found = [t for t in trends(database) if not steps or t.step in steps]
    if html_out:
        write_html(html_out, html(found, f"hloscope trend · {os.path.basename(database)}"))
    if as_json:
        emit(lambda: trend_json(found), True, lambda: None)
    else:
        click.echo(text(found) if found else f"{database}: no runs" + (f" of {', '.join(steps)}" if steps else ""))
    return 0
