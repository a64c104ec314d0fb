import click

from ...analysis.stats import stats as compute
from ...report.stats import stats_report
from . import (
    emit,
    file_labels,
    input_files,
    json_option,
    load_inputs,
    module_option,
    with_file,
)


@click.command()
@input_files()
@module_option
@json_option
def stats(files, module_regex, as_json):
    """Modules, computations, instructions and the opcode histogram of FILE..."""
    loaded = load_inputs(files, module_regex)
    result = compute([x.module for x in loaded])
    emit(lambda: {"modules": [with_file(x, m.to_dict()) for x, m in zip(loaded, result.modules)]}, as_json,
         lambda: stats_report(result, file_labels(loaded)))
    return 0
