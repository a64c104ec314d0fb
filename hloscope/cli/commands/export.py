import json
import sys

import click

from . import input_files, load_modules


@click.command()
@input_files()
@click.option("--format", "fmt", type=click.Choice(["json", "graphml", "dot"]), default="json", show_default=True,
              help="json: every computation and instruction; graphml/dot: the networkx dataflow graph.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here instead of stdout.")
def export(file, fmt, output):
    """The parsed module(s) of FILE as JSON, GraphML or Graphviz dot."""
    modules = load_modules(file)
    if fmt == "json":
        text = json.dumps({"modules": [m.to_dict() for m in modules]}, indent=1) + "\n"
    elif fmt == "graphml":
        import networkx as nx

        graph = _union(modules)
        text = "\n".join(nx.generate_graphml(graph)) + "\n"
    else:
        text = _dot(_union(modules))
    # Written only once complete, so a failure leaves no half-written file.
    if output:
        with open(output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def _union(modules):
    import networkx as nx

    if len(modules) == 1:
        return modules[0].graph()
    return nx.union_all([m.graph() for m in modules], rename=[f"{m.name}:" for m in modules])


def _dot(graph) -> str:
    def q(s) -> str:
        return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [f"digraph {q(graph.name or 'hlo')} {{", "  node [shape=box, fontname=monospace];"]
    for node, data in graph.nodes(data=True):
        label = f"{data.get('name', node)}\\n{data.get('opcode', '')} {data.get('shape', '')}"
        lines.append(f"  {q(node)} [label={q(label)}];")
    for u, v, data in graph.edges(data=True):
        style = ' [style=dashed]' if data.get("kind") == "calls" else ""
        lines.append(f"  {q(u)} -> {q(v)}{style};")
    lines.append("}")
    return "\n".join(lines) + "\n"
