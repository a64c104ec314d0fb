import click

from ...analysis.stats import stats as compute
from ...report import stats_report
from . import emit, input_files, json_option, load_modules


@click.command()
@input_files()
@json_option
def stats(file, as_json):
    """Modules, computations, instructions and the opcode histogram of FILE."""
    result = compute(load_modules(file))
    emit(result.to_dict(), as_json, lambda: stats_report(result))
    return 0
