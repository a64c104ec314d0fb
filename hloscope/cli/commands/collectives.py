import click

from ...analysis.collectives import GROUP_KEYS
from ...report.collectives import collectives_report
from . import (
    emit,
    file_labels,
    input_files,
    json_option,
    load_inputs,
    module_option,
    warn_unscheduled,
    with_file,
)


@click.command("count-collectives")
@input_files()
@module_option
@click.option("--by", type=click.Choice(GROUP_KEYS), default="kind", show_default=True,
              help="Group the counts by collective kind, or by kind within each computation, op_name or source.")
@json_option
def count_collectives(files, module_regex, by, as_json):
    """Count the collectives of each module in FILE...: kind, count, dynamic count, bytes, groups.

    \b
    count          static: instructions in the text, an async pair (X-start/X-done, or
                   async-start wrapping X) once, collectives inside fusions included.
    dynamic count  executions per step: each collective × the trip count of every
                   enclosing while loop (its known_trip_count, else inferred from its
                   counter as XLA's while-loop analysis does; a condition runs trip
                   count + 1 times); '?' (JSON null) when a loop's is unknown.
    bytes          per-device RESULT bytes summed over the static instances: a plain op's
                   own shape; for an async start, its -done's shape (the gathered output of
                   all-gather-start, the scattered output of reduce-scatter-start).
    send/recv are listed apart as point-to-point transfers.
    """
    loaded = load_inputs(files, module_regex)
    warn_unscheduled(loaded)
    results = [x.module.collectives() for x in loaded]
    emit(lambda: {"modules": [with_file(x, r.to_dict(by=by)) for x, r in zip(loaded, results)]}, as_json,
         lambda: collectives_report(results, by, file_labels(loaded)))
    return 0
