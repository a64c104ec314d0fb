"""The bytes a fusion accesses, counted at its boundary as XLA's HloCostAnalysis::HandleFusion
counts them: what its users inside read of each fused parameter, not the parameter whole."""

from __future__ import annotations

from collections.abc import Callable

from ..ir.module import Computation, Instruction
from ..ir.shape import Shape
from .op_cost import first_elements_in, shape_size


def _users(inst: Instruction) -> list[Instruction]:
    """Users without repeats, as XLA keeps them (an operand used twice has its user once)."""
    seen: dict[int, Instruction] = {}
    for u in inst.users:
        seen.setdefault(id(u), u)
    return list(seen.values())


def _fused_parameters(comp: Computation) -> dict[int, Instruction]:
    return {p.parameter_number: p for p in comp.instructions if p.opcode == "parameter"}


def _same(comp: Computation) -> Computation:
    """Each computation read as itself."""
    return comp


def _parameter_read_bytes(param: Instruction, alike: Callable[[Computation], Computation] = _same) -> int:
    """HloCostAnalysis::FusionParameterReadBytes: what a fused parameter's users read of it.
    `alike(comp)`: a computation whose instructions are a nested fused computation's own up to
    names (the nested fusion's bytes are found in it)."""
    size = 0
    seen = False

    def dynamic_slice(hlo: Instruction, user: Instruction) -> int:
        nonlocal seen
        if user.operands and user.operands[0] is hlo:
            return shape_size(user.shape)
        if not seen:
            seen = True
            return shape_size(hlo.shape)
        return 0

    def dynamic_update_slice(hlo: Instruction, user: Instruction) -> int:
        nonlocal seen
        if not (user.operands and user.operands[0] is hlo) and not seen:
            seen = True
            return shape_size(hlo.shape)
        return 0

    for user in _users(param):
        op = user.opcode
        if op == "fusion":
            called = user.called_computations
            if not called:
                continue
            nested = alike(called[0])
            root = nested.root
            params = _fused_parameters(nested)
            for idx, operand in enumerate(user.operands):
                if operand is not param:
                    continue
                simple = not root.operands or params.get(idx) is root.operands[0]
                nested_seen = False
                for fusion_user in _users(user):
                    fop = fusion_user.opcode
                    if simple and fop == "slice":
                        size += shape_size(fusion_user.shape)
                    elif simple and fop == "dynamic-slice":
                        if fusion_user.operands and fusion_user.operands[0] is user:
                            size += shape_size(fusion_user.shape)
                        elif not nested_seen:
                            nested_seen = True
                            size += shape_size(user.shape)
                    elif simple and fop == "dynamic-update-slice":
                        if not (fusion_user.operands and fusion_user.operands[0] is user) and not nested_seen:
                            nested_seen = True
                            size += shape_size(user.shape)
                    elif not nested_seen:
                        nested_seen = True
                        inner = params.get(idx)
                        size += _parameter_read_bytes(inner, alike) if inner is not None else 0
        elif op == "slice":
            size += shape_size(user.shape)
        elif op == "dynamic-slice":
            size += dynamic_slice(param, user)
        elif op == "dynamic-update-slice":
            size += dynamic_update_slice(param, user)
        elif op in ("broadcast", "reshape"):
            size += shape_size(param.shape)
        elif not seen:
            seen = True
            size += shape_size(param.shape)
    return size


def fusion_bytes(shape: Shape, comp: Computation, alike: Callable[[Computation], Computation] = _same) -> int:
    """HandleFusion's bytes, for a fusion of result `shape` calling `comp`: the outputs (a
    dynamic-update-slice root writes its update), the fused parameters as read inside, and the
    fused constants of more than one element. `alike`: as for `_parameter_read_bytes`."""
    root = comp.root
    nbytes = 0
    for index, sub in shape.subshapes():
        if not sub.is_array:
            continue
        out = root
        if len(index) == 1 and root.opcode == "tuple" and index[0] < len(root.operands):
            out = root.operands[index[0]]
        if out.opcode == "dynamic-update-slice" and len(out.operands) > 1:
            nbytes += shape_size(out.operands[1].shape)
        else:
            nbytes += shape_size(sub)
    for inst in comp.instructions:
        if inst.opcode == "constant" and first_elements_in(inst.shape) > 1:
            nbytes += shape_size(inst.shape)
    for number, param in sorted(_fused_parameters(comp).items()):
        if not param.shape.is_tuple:
            nbytes += _parameter_read_bytes(param, alike)
            continue
        for index, _leaf in param.shape.leaves():
            node = param
            for sub_index in index:
                for user in _users(node):
                    if user.opcode == "get-tuple-element" and user.attributes.decoded("index") == sub_index:
                        node = user
                        break
            nbytes += _parameter_read_bytes(node, alike)
    return nbytes


__all__ = ["fusion_bytes"]
