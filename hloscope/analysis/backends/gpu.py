"""XLA's GPU backend: NCCL's in-place collectives and the fusion emitters' sharing hint
(xla/service/gpu/alias_info.cc, nvptx_alias_info.cc), 256-byte alignment, and the marks a
GPU compilation leaves in its text (the opcode table's `in_place_on`, `marks_gpu`,
`workspace_output` facts, read here)."""

from __future__ import annotations

from ...ir import opcodes
from ...ir.module import Computation, Instruction
from ...ir.opcodes import custom_call, custom_call_names
from ...ir.shape import ELEMENT_BITS
from ..facts import Facts
from .base import Backend

MARKERS = ("operation_queue_id", "__triton", *custom_call_names(marks_gpu=True))
"""What XLA's GPU pipeline writes in its optimized HLO: a stream in a backend config, a
Triton fusion's config, a cuBLAS call."""

_FUSIONS = opcodes.spellings(calls_kind="fused")


class Gpu(Backend):
    name = "gpu"

    def alignment(self, space: int) -> int:
        # kXlaAllocatedBufferAlignBytes, as the fixtures' buffer-assignment dumps place buffers.
        return 256

    def may_alias(self, operand: Instruction, user: Instruction, user_index: tuple,
                  operand_number: int) -> bool | None:
        """A fusion decides by `fusion_may_alias`; a collective NCCL runs in place
        (`OpInfo.in_place_on`: all-reduce, collective-broadcast; a native all-reduce-start
        is in place by its in-place pairs, and an async-start wrapping an all-reduce by its
        `output_to_operand_aliasing`), unless through NVSHMEM, shares with its only operand,
        or element i with operand i; a cuBLASLt matmul's workspace with none."""
        opcode = user.opcode
        if opcode in _FUSIONS:
            return fusion_may_alias(operand, user, user_index, operand_number)
        if self.name in user.info.in_place_on:
            if "nvshmem" in user.attributes.get("backend_config", "").lower():
                return False
            ops = user.operands
            return len(ops) == 1 or (len(user_index) == 1 and user_index[0] < len(ops) and ops[user_index[0]] is operand)
        if opcode == "custom-call":
            workspace = custom_call(user.attributes.get("custom_call_target", "")).workspace_output
            return False if workspace is not None and user_index == workspace else None
        return None

    def may_alias_any(self, user: Instruction) -> bool:
        return user.opcode in _FUSIONS or self.name in user.info.in_place_on


def marks(comp: Computation, facts: Facts) -> bool:
    """Whether `comp` holds what only a GPU compilation writes (`MARKERS`)."""
    return facts.writes_any(comp, MARKERS) and any(_marks_gpu(inst) for inst in comp.instructions)


def _marks_gpu(inst: Instruction) -> bool:
    attributes = inst.attributes
    config = ""
    if attributes.mentions("operation_queue_id") or attributes.mentions("__triton"):
        config = attributes.get("backend_config", "")
    if "operation_queue_id" in config or "fusion_backend_config" in config and "__triton" in config:
        return True
    return inst.opcode == "custom-call" and custom_call(attributes.get("custom_call_target", "")).marks_gpu


def _elementwise_on_operand(inst: Instruction, operand_number: int) -> bool:
    """XLA IsElementwiseOnOperand, for an instruction of a fused computation."""
    if inst.opcode == "dynamic-update-slice":
        return operand_number == 0
    return inst.info.elementwise


def _fusion_hero(root: Instruction) -> Instruction:
    """XLA FindNonTrivialHero, in small: from a fusion root down through bitcasts and unary
    elementwise ops (but copies) with one user, to the op that decides the emitter."""
    hero = root
    while hero.opcode == "bitcast" or (hero.info.elementwise and hero.opcode != "copy" and len(hero.operands) == 1):
        operand = hero.operands[0] if hero.operands else None
        if operand is None or operand.opcode == "parameter" or len(set(operand.users)) != 1:
            break
        hero = operand
    return hero


def fusion_may_alias(operand: Instruction, fusion: Instruction, user_index: tuple,
                     operand_number: int) -> bool:
    """XLA's GPU FusionCanShareBufferHint: may output `user_index` of `fusion` be written over
    its operand `operand_number`? Yes when the shapes hold as many elements of as many bits,
    and every path from that parameter reaches the output through elementwise ops (no copy),
    bitcasts and tuples only (a reduction hero stops the walk: the reduction emitter reads
    before it writes; a scatter or sort root may be reached through its data operand; a
    dynamic-update-slice root through its update when every dynamic-slice of the same
    operand reads the same slice), and no other output is reached unless both it and this one
    run in the same order::

        p0 = bf16[1024,1024] parameter(0)        fusion output {1}, bf16[2,512,1024], may
        b  = bf16[2,512,1024] bitcast(p0)        take p0's buffer: p0 reaches it through a
        a  = add(x, b)  ──▶ tuple{1}             bitcast and an add, and reaches output {0}
        r  = reduce(multiply(convert(a), ...))   only through the reduction hero r
    """
    user_shape = fusion.shape.at(user_index) if user_index else fusion.shape
    operand_shape = operand.shape
    if operand_shape != user_shape:
        if operand_shape.is_tuple or user_shape.is_tuple or not operand_shape.is_array or not user_shape.is_array:
            return False
        if operand_shape.element_count != user_shape.element_count:
            return False
        if ELEMENT_BITS.get(operand_shape.element_type) != ELEMENT_BITS.get(user_shape.element_type):
            return False
    called = fusion.called_computations
    if not called:
        return False
    comp = called[0]
    param = next((p for p in comp.parameters if p.parameter_number == operand_number), None)
    if param is None:
        return False
    root = comp.root
    roots = list(root.operands) if root.opcode == "tuple" else [root]
    output = root
    for i in user_index:
        if output.opcode != "tuple" or i >= len(output.operands):
            break
        output = output.operands[i]
    non_bitcast_root = output.operands[0] if output.opcode == "bitcast" and output.operands else output
    heroes = [_fusion_hero(r) for r in roots]
    reduction_hero = next((h for h in heroes if h.opcode == "reduce"), None)
    queue, visited = [param], {param}
    found = False
    while queue:
        cur = queue.pop(0)
        if cur is output:
            found = True
        if cur is reduction_hero:
            continue
        for hlo in cur.users:
            if hlo not in visited:
                visited.add(hlo)
                queue.append(hlo)
            ops = hlo.operands
            k = next((n for n, o in enumerate(ops) if o is cur), 0)
            if hlo is non_bitcast_root and hlo.opcode == "scatter":
                inputs = len(hlo.shape.tuple_shapes) if hlo.shape.is_tuple else 1
                if k < inputs and sum(1 for o in ops if o is cur) == 1:
                    continue
            if hlo is non_bitcast_root and hlo.opcode == "sort" and sum(1 for o in ops if o is cur) == 1:
                if user_index != (k,):
                    return False
                continue
            dus = non_bitcast_root
            if (dus.opcode == "dynamic-update-slice" and hlo.opcode == "dynamic-slice" and len(dus.operands) > 1
                    and hlo.operands and dus.operands[0] is hlo.operands[0] and hlo.shape == dus.operands[1].shape):
                if not (hlo.shape.element_count == 1 and dus.operands[1].shape.element_count == 1):
                    starts, dus_starts = hlo.operands[1:], dus.operands[2:]
                    if len(starts) != len(dus_starts) or any(a is not b for a, b in zip(starts, dus_starts)):
                        return False
            elif ((not _elementwise_on_operand(hlo, k) or hlo.opcode == "copy")
                  and hlo.opcode not in ("bitcast", "tuple") and hlo is not reduction_hero):
                if hlo is not non_bitcast_root or hlo.opcode != "dynamic-update-slice" or k != 1:
                    return False
    if root.opcode == "tuple":
        reached = [(r, h) for r, h in zip(roots, heroes) if r in visited]
        if any(r is not output for r, _ in reached):
            transposing = any(h.opcode in ("transpose", "copy") for _, h in reached)
            if not non_bitcast_root.info.elementwise or transposing:
                return False
    return found

