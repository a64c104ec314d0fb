import click

from ...report.gathers import gathers_report
from . import (
    emit,
    input_files,
    json_option,
    load_inputs,
    module_option,
    require_scheduled,
    with_file,
)


@click.command()
@input_files()
@module_option
@json_option
def gathers(files, module_regex, as_json):
    """All-gathers of FILE... whose gathered value is held: used on both sides of the
    forward→backward boundary (XLA CSE'd the backward pass's re-gather into the forward
    one) or hoisted out of a loop, with bytes, live range and their share of the peak.

    \b
    held bytes        the gathered (full-size) bytes of each held value
    at peak           of those, what is live at the memory peak's step (what a fix saves
                      at most at the peak; 0 when the peak lies elsewhere)
    boundary          forward and backward are told apart by JAX's metadata
                      (`transpose(` marks the backward pass); without it, by the schedule
                      (the first gradient reduction), and the output says so
    """
    loaded = load_inputs(files, module_regex)
    require_scheduled(loaded, "finding held all-gathers")
    modules = [x.module for x in loaded]
    results = [m.held_gathers() for m in modules]
    memories = [m.memory() for m in modules]
    emit(lambda: {"modules": [with_file(x, r.to_dict()) for x, r in zip(loaded, results)]}, as_json,
         lambda: gathers_report(results, memories))
    return 0
