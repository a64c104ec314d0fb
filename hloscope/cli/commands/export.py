import json
import sys

import click

from ...ir.graph import dot, graphml, modules_graph
from . import input_files, load_inputs, module_option, with_file


@click.command()
@input_files()
@module_option
@click.option("--format", "fmt", type=click.Choice(["json", "graphml", "dot"]), default=None,
              help="json (the default): every computation and instruction; graphml/dot: the networkx "
                   "dataflow graph (dot: one cluster per computation).")
@click.option("--json", "as_json", is_flag=True, help="The same as --format json.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here instead of stdout.")
def export(files, module_regex, fmt, as_json, output):
    """The parsed module(s) of FILE... as JSON, GraphML or Graphviz dot."""
    if as_json and fmt not in (None, "json"):
        raise click.UsageError(f"--json and --format {fmt} ask for two formats: give one")
    fmt = fmt or "json"
    loaded = load_inputs(files, module_regex)
    modules = [x.module for x in loaded]
    if fmt == "json":
        text = json.dumps({"modules": [with_file(x, x.module.to_dict()) for x in loaded]}, indent=1) + "\n"
    elif fmt == "graphml":
        text = graphml(modules_graph(modules))
    else:
        text = dot(modules_graph(modules))
    # Written only once complete, so a failure leaves no half-written file.
    if output:
        with open(output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0

