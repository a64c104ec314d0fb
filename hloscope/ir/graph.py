"""networkx views of the IR, built on demand (the IR itself is plain objects), and the text
`hloscope export` writes of them: GraphML, and Graphviz DOT with a cluster per computation.

networkx is imported when a view is first asked for: it takes a third of a second, and most
commands never build a graph.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx


def _networkx():
    return importlib.import_module("networkx")


def _node_attrs(inst) -> dict:
    return {
        "opcode": inst.opcode,
        "shape": inst.shape.text,
        "bytes": inst.shape.byte_size,
        "op_name": inst.op_name or "",
        "computation": inst.computation.name if inst.computation is not None else "",
    }


def computation_graph(comp) -> "nx.MultiDiGraph":
    """Nodes are instruction names; an edge operand → user per operand slot (`operand` = index)."""
    g = _networkx().MultiDiGraph(name=comp.name)
    for inst in comp.instructions:
        g.add_node(inst.name, **_node_attrs(inst))
    for inst in comp.instructions:
        for k, op in enumerate(inst.operands):
            g.add_edge(op.name, inst.name, kind="operand", operand=k)
    return g


def module_graph(module) -> "nx.MultiDiGraph":
    """Every instruction as node `computation/instruction`; operand edges, and `calls` edges
    from a calling instruction to the root of each computation it calls."""
    g = _networkx().MultiDiGraph(name=module.name)

    def key(inst) -> str:
        return f"{inst.computation.name}/{inst.name}"

    for comp in module.computations:
        for inst in comp.instructions:
            g.add_node(key(inst), name=inst.name, **_node_attrs(inst))
    for comp in module.computations:
        for inst in comp.instructions:
            for k, op in enumerate(inst.operands):
                g.add_edge(key(op), key(inst), kind="operand", operand=k)
            for callee in inst.called_computations:
                g.add_edge(key(inst), key(callee.root), kind="calls", operand=-1)
    return g


def call_graph(module) -> "nx.MultiDiGraph":
    """Computations as nodes; an edge caller → callee per calling instruction."""
    g = _networkx().MultiDiGraph(name=module.name)
    for comp in module.computations:
        g.add_node(comp.name, is_entry=comp.is_entry, instructions=len(comp.instructions))
    for comp in module.computations:
        for inst in comp.instructions:
            for callee in inst.called_computations:
                g.add_edge(comp.name, callee.name, instruction=inst.name, opcode=inst.opcode)
    return g


def modules_graph(modules) -> "nx.MultiDiGraph":
    """One graph of several modules' `module_graph`s; with more than one, each node prefixed
    `N:module:` by the module's position too (two inputs may hold modules of the same name)."""
    if len(modules) == 1:
        return module_graph(modules[0])
    return _networkx().union_all([module_graph(m) for m in modules],
                                 rename=[f"{n}:{m.name}:" for n, m in enumerate(modules)])


def graphml(graph) -> str:
    """The graph as GraphML."""
    return "\n".join(_networkx().generate_graphml(graph)) + "\n"


def _q(s) -> str:
    """A DOT string: quoted, its backslashes and quotes escaped (a label's line breaks are
    DOT's `\\n`, added after this)."""
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot(graph) -> str:
    """Graphviz DOT of a `module_graph` (or `modules_graph`): each computation a cluster
    (`subgraph cluster_N`, labelled with its name) holding its instructions, each labelled
    `name` over `opcode shape`; call edges dashed."""
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
