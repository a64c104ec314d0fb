"""May a value be written over an operand's buffer as the instruction reads it: XLA's
CanShareOperandBufferWithUser, its generic rules and the backend's hints (`AliasInfo`),
which buffer assignment and the heap simulation ask."""

from __future__ import annotations

from ..ir import opcodes
from ..ir.module import Computation, Instruction
from .alias_info import GENERIC, AliasInfo
from .dataflow import Value, in_place_pairs
from .facts import PLAIN, Facts

_FUSIONS = opcodes.spellings(calls_kind="fused")


def can_share_operand_buffer(operand_value: Value, user_value: Value, cache: dict | None = None,
                             in_place: dict | None = None, facts: Facts = PLAIN,
                             alias_info: AliasInfo = GENERIC, at: tuple | None = None) -> bool:
    """XLA CanShareOperandBufferWithUser: may `user_value` be written into the buffer of
    `operand_value` (read by the same instruction) without changing results?

    In XLA's order: an in-place pair (same shapes) says yes; then the backend's hint decides
    where it has one (`alias_info.may_alias`: on GPU every fusion and all-reduce, shapes may
    then differ); else the shapes must be equal and the generic rules below apply.

    `cache` (a dict the caller keeps for one module) holds what is worked out once per user
    instruction: asked about many operands of one fusion, the answers come without redoing it.
    `in_place`: `Dataflow.in_place`, the in-place pairs found already; `facts`: answers
    about fused computations (hloscope.analysis.facts). `at`: the position `(instruction, index)`
    the user reads the value at, when not where it is defined (a `-done` or bitcast
    forwarding it); XLA asks about that instruction."""
    operand, user = operand_value.instruction, user_value.instruction
    operand_index = operand_value.index
    if at is not None:
        operand, operand_index = at
    if not user.info.shares_operand_buffer or operand.opcode == "constant":
        return False
    shapes_equal = operand_value.shape == user_value.shape
    user_facts = _SharingFacts.of(user, cache, in_place, alias_info)
    k = user_facts.operand_number.get(operand)
    if k is None:
        return False
    if shapes_equal:
        for oi, n, pi in user_facts.pairs:
            if oi == user_value.index and (n, pi) == (k, operand_index):
                return True
    hint = alias_info.may_alias(operand, user, user_value.index, k)
    if hint is not None:
        return hint
    if not shapes_equal:
        return False
    for oi, n, pi in user_facts.pairs:
        if oi == user_value.index:
            return (n, pi) == (k, operand_index)
    if user.opcode in _FUSIONS:
        if user_facts.fused is None:
            return False
        if user_facts.elementwise_parameters is None:
            user_facts.elementwise_parameters = _elementwise_parameters(user_facts.fused, facts)
        return k in user_facts.elementwise_parameters
    return user.info.elementwise


def may_share_any_operand_buffer(user: Instruction, cache: dict | None = None,
                                 in_place: dict | None = None, alias_info: AliasInfo = GENERIC) -> bool:
    """False when `can_share_operand_buffer` is False for every operand of `user` (most
    ops that are neither elementwise, in place nor loop fusions): a caller then need not ask
    about each of them, which for an all-reduce of N operands is N questions per output."""
    if not user.info.shares_operand_buffer:
        return False
    if alias_info.may_alias_any(user):
        return True
    facts = _SharingFacts.of(user, cache, in_place, alias_info)
    if facts.pairs:
        return True
    if user.opcode in _FUSIONS:
        return facts.fused is not None
    return user.info.elementwise


def _shares_elementwise_operands(inst: Instruction, alias_info: AliasInfo) -> bool:
    """A fusion whose output may be written over an operand read element by element."""
    return inst.opcode in _FUSIONS and inst.attributes.uncached("kind") in alias_info.elementwise_sharing_kinds


class _SharingFacts:
    """What `can_share_operand_buffer` reads of a user instruction, worked out once."""

    __slots__ = ("elementwise_parameters", "fused", "operand_number", "pairs")

    def __init__(self, user: Instruction, pairs: list[tuple[tuple, int, tuple]] | None = None,
                 alias_info: AliasInfo = GENERIC):
        # The first operand number of each operand (as `list.index`).
        first: dict[Instruction, int] = {}
        for n, o in enumerate(user.operands):
            if o not in first:
                first[o] = n
        self.operand_number = first
        self.pairs = in_place_pairs(user) if pairs is None else pairs
        self.fused: Computation | None = None
        """The computation of a fusion of a kind that may share (`AliasInfo.elementwise_sharing_kinds`)."""
        self.elementwise_parameters: frozenset[int] | None = None
        """Worked out on the first question about an operand (`_elementwise_parameters`)."""
        if _shares_elementwise_operands(user, alias_info):
            called = user.called_computations
            if called:
                self.fused = called[0]

    @classmethod
    def of(cls, user: Instruction, cache: dict | None, in_place: dict | None = None,
           alias_info: AliasInfo = GENERIC) -> _SharingFacts:
        facts = cache.get(user) if cache is not None else None
        if facts is None:
            facts = cls(user, in_place.get(user) if in_place is not None else None, alias_info)
            if cache is not None:
                cache[user] = facts
        return facts




def _elementwise_parameters(comp: Computation, facts: Facts = PLAIN) -> frozenset[int]:
    """Numbers of the parameters of a fused computation that every transitive user reads
    element by element (`_transitive_uses_elementwise`)."""
    comp = facts.same_but_metadata(comp)  # the same parameters, used alike
    known = facts.elementwise_parameters(comp)
    if known is not None:
        return known
    by_number = {p.parameter_number: p for p in comp.parameters}
    return frozenset(n for n, p in by_number.items() if _transitive_uses_elementwise(p))


def elementwise_parameters_of(operations: list[tuple[str, str, list[str]]]) -> frozenset[int] | None:
    """`_elementwise_parameters` from `(name, opcode, operands)` in text order, or None where
    that is not a plain def-before-use order of unique names (a read then decides, or
    reports the error). Backwards over the text, an instruction taints its operands when it
    is neither elementwise nor a tuple, or is itself tainted: a parameter is untainted exactly
    when all its transitive users are elementwise or tuples."""
    defined: set[str] = set()
    for name, opcode, operands in operations:
        if name in defined or opcode != "parameter" and not defined.issuperset(operands):
            return None  # a repeated name, or an operand used before its definition or never defined
        defined.add(name)
    tainted: set[str] = set()
    numbers: dict[int, str] = {}
    info = opcodes.info
    for name, opcode, operands in reversed(operations):
        if opcode == "parameter":
            try:
                number = int(operands[0])
            except ValueError:
                return None
            if number in numbers:
                return None
            numbers[number] = name
        elif name in tainted or not (info(opcode).elementwise or info(opcode).value_rule == "tuple"):
            tainted.update(operands)
    return frozenset(n for n, name in numbers.items() if name not in tainted)


def _transitive_uses_elementwise(inst: Instruction) -> bool:
    """Every transitive user (inside a fused computation) reads `inst` element by element."""
    stack, seen = [inst], set()
    while stack:
        cur = stack.pop()
        for user in cur.users:
            if id(user) in seen:
                continue
            seen.add(id(user))
            # XLA AreTransitiveUsesElementwiseOrTuple.
            if user.info.elementwise or user.info.value_rule == "tuple":
                stack.append(user)
                continue
            return False
    return True
