import click

from ...api.compare import diff as diff_modules
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
@json_option
def diff(files, pattern, top, as_json):
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
    payload = result.to_dict()
    payload["a"]["file"], payload["b"]["file"] = files
    emit(payload, as_json, lambda: diff_report(result, top))
    return 0
