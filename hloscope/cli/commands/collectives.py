import click

from ...report import collectives_report
from . import emit, input_files, json_option, load_modules

BY_CHOICES = ("kind", "computation", "op_name", "source")


@click.command("count-collectives")
@input_files(multiple=True)
@click.option("--by", type=click.Choice(BY_CHOICES), default="kind", show_default=True,
              help="Group the counts by collective kind, or by kind within each computation, op_name or source.")
@json_option
def count_collectives(files, by, as_json):
    """Count the collectives of each module in FILE...: kind, count, dynamic count, bytes, groups.

    \b
    count          static: instructions in the text, an async pair (X-start/X-done, or
                   async-start wrapping X) once, collectives inside fusions included.
    dynamic count  executions per step: each collective × the known_trip_count of every
                   enclosing while loop (a while's condition runs trip count + 1 times);
                   '?' (JSON null) when a loop has no known trip count.
    bytes          per-device RESULT bytes summed over the static instances: a plain op's
                   own shape; for an async start, its -done's shape (the gathered output of
                   all-gather-start, the scattered output of reduce-scatter-start).
    send/recv are listed apart as point-to-point transfers.
    """
    loaded = [(path, m) for path in files for m in load_modules(path)]
    results = [m.collectives() for _, m in loaded]
    payload = {"modules": [r.to_dict(by=by) for r in results]}
    labels = [path for path, _ in loaded] if len(files) > 1 else None
    emit(payload, as_json, lambda: collectives_report(results, by, labels))
    return 0
