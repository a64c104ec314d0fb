import click

from ...api.compare import diff as diff_modules
from ...htmlreport import diff_page, write_html
from ...report import diff_report
from . import emit, input_files, json_option, load_modules


def _one_module(path: str, pattern: str | None):
    modules = load_modules(path)
    if pattern is not None:
        chosen = [m for m in modules if pattern in m.name]
        if not chosen:
            raise click.BadParameter(f"no module of {path} is named like {pattern!r} "
                                     f"(it holds: {', '.join(m.name for m in modules)})", param_hint="--module")
        return chosen[0]
    return modules[0]


@click.command()
@input_files(multiple=True)
@click.option("--module", "pattern", help="With several modules per file: the one whose name contains this.")
@click.option("--top", default=5, show_default=True, type=click.IntRange(min=1),
              help="How many instructions to show per cause and side.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False, writable=True), metavar="OUT",
              help="Also write the diff as one self-contained HTML page (two timelines, the causes).")
@json_option
def diff(files, pattern, top, html_out, as_json):
    """Explain the temp-memory gap of B against A (FILES: A B).

    \b
    The gap in XLA's temp size splits exactly into causes: for each role (gathered
    parameters, gradients, activations, loop state, ...) the change in bytes of that role
    live at each side's peak, plus the change in what best-fit packing adds around them.
    The causes add up to the gap. Collective counts and held gathers of both sides follow.
    """
    if len(files) != 2:
        raise click.UsageError(f"diff takes two files, A and B; got {len(files)}")
    a, b = (_one_module(f, pattern) for f in files)
    result = diff_modules(a, b, labels=files)
    if html_out:
        write_html(html_out, diff_page(result, files, (a.role_timelines(), b.role_timelines())))
    payload = result.to_dict()
    payload["a"]["file"], payload["b"]["file"] = files
    emit(payload, as_json, lambda: diff_report(result, top))
    return 0
