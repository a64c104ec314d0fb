"""networkx views of the IR, built on demand (the IR itself is plain objects).

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
