import json
import sys

import click

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
    # Prefixed by position too: two inputs may hold modules of the same name.
    return nx.union_all([m.graph() for m in modules], rename=[f"{n}:{m.name}:" for n, m in enumerate(modules)])


def _q(s) -> str:
    """A DOT string: quoted, its backslashes and quotes escaped (a label's line breaks are
    DOT's `\\n`, added after this)."""
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dot(graph) -> str:
    """Graphviz dot: each computation a cluster (`subgraph cluster_N`, labelled with its name)
    holding its instructions, each labelled `name` over `opcode shape`; call edges dashed."""
    clusters: dict[str, list[str]] = {}
    for node in graph.nodes:
        # Nodes are `computation/instruction` (prefixed `N:module:` for several modules);
        # instruction names hold no `/`.
        clusters.setdefault(str(node).rsplit("/", 1)[0], []).append(node)
    # Layout effort capped (rank by network simplex once, one crossing-minimisation pass):
    # graphviz took 53 s of CPU on a 2,500-instruction module flat, 82 s clustered, and
    # takes 3 s with these, the clusters keeping the picture readable.
    lines = [f"digraph {_q(graph.name or 'hlo')} {{", "  compound=true; newrank=true;",
             "  mclimit=0.1; nslimit=1; nslimit1=1;", "  node [shape=box, fontname=monospace];"]
    for n, (computation, nodes) in enumerate(clusters.items()):
        lines.append(f"  subgraph cluster_{n} {{")
        lines.append(f"    label={_q(computation)};")
        for node in nodes:
            data = graph.nodes[node]
            label = _q(data.get("name", node))[:-1] + "\\n" + _q(f"{data.get('opcode', '')} {data.get('shape', '')}")[1:]
            lines.append(f"    {_q(node)} [label={label}];")
        lines.append("  }")
    for u, v, data in graph.edges(data=True):
        style = " [style=dashed]" if data.get("kind") == "calls" else ""
        lines.append(f"  {_q(u)} -> {_q(v)}{style};")
    lines.append("}")
    return "\n".join(lines) + "\n"
