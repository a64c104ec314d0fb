"""What one step of a module costs: FLOPs, transcendentals, bytes accessed and collective
bytes, per instruction and in total, each instruction × how often it runs, and which of it
recomputes the forward pass.

Each op is priced as XLA's HloCostAnalysis prices it (`op_cost`), so that the figures check
against `compiled.cost_analysis()`; docs/cost.md says what is counted, and how.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any

from ..encode import Encoded, as_json, encode, extra
from ..ir.module import Computation, Instruction, Module
from ..ir.opcodes import COLLECTIVE_KINDS
from ..ir.opcodes import info as opinfo
from ..ir.structure import structure
from .callgraph import CallGraph, running_graph, scheduled_computations
from .collectives import CollectivesResult, analyze_collectives
from .facts import PLAIN, Alike, Facts
from .fusion_bytes import fusion_bytes
from .op_cost import MATMUL_OPCODES, ZERO, Counts, matmul_arithmetic, matmul_flops, price
from .sides import REMAT_LITERALS, XLA_REMAT_TEXT, may_recompute, recomputes, remat_clone

GROUP_KEYS = ("op_name", "source", "computation", "opcode")
"""What `CostResult.group_by` (and `hloscope cost --by`) can group instructions by."""

XLA_CONVENTION = ("XLA's HloCostAnalysis: a while loop counts one trip of its body and condition, "
                  "a conditional its costliest branch, a custom-call -1")



# ─── results ───────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class InstructionCost(Encoded):
    """One instruction of a computation the schedule runs (a fusion, a dot, a collective...),
    what one execution of it costs, and how often it runs per step. Its JSON gives the costs
    per step (`flops_per_run` per execution), the contract's keys first."""

    instruction: str
    computation: str
    opcode: str
    flops: int = field(metadata=as_json(key="flops_per_run"))
    """Per execution (a fusion: its fused instructions together)."""
    transcendentals: int = field(metadata=as_json(get="total_transcendentals"))
    bytes_accessed: int = field(metadata=as_json(get="total_bytes_accessed"))
    collective_bytes: int = field(metadata=as_json(get="total_collective_bytes"))
    """Result bytes of the collectives it runs (its own, or those fused into it)."""
    recompute_flops: int = field(metadata=as_json(get="total_recompute_flops"))
    """Of `flops`, those that recompute forward ops."""
    runs: int = field(metadata=as_json(after="opcode"))
    """Executions per step: the product of enclosing loops' trip counts (1 for an unknown one)."""
    op_name: str | None = field(metadata=as_json(after="flops"))
    source: str | None
    json_extra = (extra("flops", "total_flops", after="instruction"),)

    @property
    def total_flops(self) -> int:
        return self.flops * self.runs

    @property
    def total_transcendentals(self) -> int:
        return self.transcendentals * self.runs

    @property
    def total_bytes_accessed(self) -> int:
        return self.bytes_accessed * self.runs

    @property
    def total_collective_bytes(self) -> int:
        return self.collective_bytes * self.runs

    @property
    def total_recompute_flops(self) -> int:
        return self.recompute_flops * self.runs


@dataclass(frozen=True, slots=True)
class LoopCost(Encoded):
    """A while loop: how often it runs, its trip count, and one trip's cost."""

    instruction: str
    computation: str
    trip_count: int | None
    """None when unknown (then counted as one trip)."""
    runs: int
    """How often the loop itself starts per step."""
    trip_flops: int
    """One trip of its body and condition (XLA's convention: what XLA counts for the loop)."""


@dataclass(frozen=True, slots=True)
class CostGroup:
    """Instructions sharing an op_name, source, computation or opcode, their costs summed per step."""

    key: str | None = field(metadata=as_json(omit=True))
    """Their op_name, source, ...: the JSON's first key, named after what they are grouped by."""
    instructions: int
    flops: int
    transcendentals: int
    bytes_accessed: int
    collective_bytes: int
    recompute_flops: int

    def to_dict(self, by: str) -> dict[str, Any]:
        return {by: self.key, **encode(self)}


@dataclass(frozen=True, slots=True)
class CostResult(Encoded):
    """The cost of one step of a module (per device)."""

    module: str = field(metadata=as_json(key="name"))
    flops: int
    """Every instruction × how often it runs (loop trip counts applied)."""
    transcendentals: int = field(metadata=as_json(after="recompute_flops"))
    bytes_accessed: int
    collective_bytes: int
    """Collective result bytes × how often each collective runs."""
    collective_bytes_by_kind: dict[str, int] = field(hash=False)
    """Every kind of COLLECTIVE_KINDS, in that order."""
    collective_wire_bytes: int
    """Ring-algorithm estimate of the bytes each device sends."""
    collective_wire_bytes_by_kind: dict[str, int] = field(hash=False)
    recompute_flops: int = field(metadata=as_json(after="collective_bytes"))
    """FLOPs of instructions that recompute forward ops (× how often they run)."""
    flops_xla_convention: int
    """The FLOPs XLA's HloCostAnalysis reports: each loop one trip (see XLA_CONVENTION)."""
    transcendentals_xla_convention: int
    bytes_accessed_xla_convention: int
    unknown_trip_count: bool
    """Some loop has no known trip count: the plain totals count it as one trip."""
    opaque: int = field(metadata=as_json(key="opaque_custom_calls"))
    """Custom-calls the step runs, whose cost is unknown (not counted)."""
    loops: tuple[LoopCost, ...]
    matmul_flops: dict[str, int] = field(hash=False, metadata=as_json(after="recompute_flops"))
    """Of `flops`, those of dots and convolutions (fused ones included), by the arithmetic they
    compute in (`op_cost.matmul_arithmetic`: `bf16`, `f32`, `f32/highest`, an algorithm): a
    target's peak depends on it."""
    instructions: tuple[InstructionCost, ...] = field(metadata=as_json(omit=True))
    """Every instruction with a cost, of the computations the schedule runs, in their order
    (the JSON lists the `top` ones and those `recomputed`)."""
    json_extra = (extra("xla_convention", lambda _: XLA_CONVENTION, after="bytes_accessed_xla_convention"),)

    @property
    def recomputed(self) -> tuple[InstructionCost, ...]:
        """The instructions that recompute forward ops, costliest first."""
        found = [i for i in self.instructions if i.recompute_flops]
        return tuple(sorted(found, key=lambda i: -i.total_recompute_flops))

    def in_brief(self, n: int = 10) -> CostResult:
        """The totals, with only the `n` instructions that recompute the most (what a diff
        shows of a side's cost; a step's every instruction is tens of thousands)."""
        return replace(self, instructions=self.recomputed[:n])

    def top(self, n: int = 10) -> tuple[InstructionCost, ...]:
        """The `n` instructions with the most FLOPs per step."""
        ranked = sorted(self.instructions, key=lambda i: (-i.total_flops, -i.total_bytes_accessed))
        return tuple(ranked[:n])

    def group_by(self, key: str) -> list[CostGroup]:
        """Costs per step grouped by one of GROUP_KEYS, costliest first."""
        if key not in GROUP_KEYS:
            raise ValueError(f"cannot group by {key!r}; choose one of {', '.join(GROUP_KEYS)}")
        groups: dict[str | None, list[InstructionCost]] = defaultdict(list)
        for i in self.instructions:
            groups[getattr(i, key)].append(i)
        rows = [CostGroup(k, len(items), sum(i.total_flops for i in items),
                          sum(i.transcendentals * i.runs for i in items),
                          sum(i.total_bytes_accessed for i in items),
                          sum(i.total_collective_bytes for i in items),
                          sum(i.total_recompute_flops for i in items))
                for k, items in groups.items()]
        rows.sort(key=lambda g: (-g.flops, -g.bytes_accessed, str(g.key)))
        return rows

    def to_dict(self, by: str | None = None, top: int = 10) -> dict[str, Any]:
        """The JSON object: the totals, the `top` instructions by FLOPs, the recomputing ones,
        and grouped `by` one of GROUP_KEYS, the groups."""
        more: dict[str, Any] = {
            "top": self.top(top),
            "recomputed": [{"instruction": i.instruction, "flops": i.total_recompute_flops, "op_name": i.op_name,
                            "computation": i.computation} for i in self.recomputed],
        }
        if by is not None:
            more["by"] = by
            more["groups"] = [g.to_dict(by) for g in self.group_by(by)]
        return encode(self, more)


# ─── collective traffic ───────────────────────────────────────────────────────────────

# What each device sends per result byte under ring algorithms, as a function of the group
# size n (when the groups are not known: the result itself).
_WIRE: dict[str, Callable[[int], float]] = {
    "all-gather": lambda n: (n - 1) / n,
    "all-to-all": lambda n: (n - 1) / n,
    "ragged-all-to-all": lambda n: (n - 1) / n,
    "reduce-scatter": lambda n: n - 1,
    "all-reduce": lambda n: 2 * (n - 1) / n,
    "collective-permute": lambda n: 1,
    "collective-broadcast": lambda n: 1,
}


# ─── recomputation ────────────────────────────────────────────────────────────────────

def _may_recompute(comp: Computation, facts: Facts) -> bool:
    """False when no instruction of `comp` recomputes forward ops (`recomputes`), by its text
    where unread."""
    return facts.writes_any(comp, REMAT_LITERALS) and any(map(may_recompute, comp.instructions))


def _replays(comp: Computation, facts: Facts) -> dict[int, bool | None]:
    """Per instruction (by id): whether it recomputes forward ops, None when nothing says.

    XLA drops the metadata of some ops it builds (on CPU the attention's batched dots, fused,
    carry none): such an op is judged by what it computes from. It replays the forward pass
    when every operand that has a verdict replays it, and at least one has; parameters and
    constants have none. The text order of a computation puts operands first."""
    verdicts: dict[int, bool | None] = {}
    if not _may_recompute(comp, facts):
        # Nothing here can recompute (`recomputes` is False for all), so no verdict is true:
        # known without decoding the metadata of every op, what the loop below would do.
        return verdicts
    for inst in comp.instructions:
        if inst.op_name or remat_clone(inst):
            verdicts[id(inst)] = recomputes(inst)
            continue
        known = [v for v in (verdicts.get(id(o)) for o in inst.operands) if v is not None]
        verdicts[id(inst)] = all(known) if known else None
    return verdicts


# ─── the walk ─────────────────────────────────────────────────────────────────────────


class _Coster:
    """XLA's properties of instructions and computations, each priced once (the `Pricer` the
    rules of `op_cost` ask for callees)."""

    def __init__(self, collective_bytes: dict[tuple[str, str], int], facts: Facts = PLAIN,
                 never_marked: bool = False):
        self._collective_bytes = collective_bytes
        self.facts = facts
        self._with_collectives = {comp for comp, _ in collective_bytes}
        self._computations: dict[tuple[str, bool], Counts] = {}
        self._alike: dict[tuple[Hashable, bool], Counts] = {}
        """Computations priced, by what they compute (`structure`): alike ones cost the same."""
        self._structures: dict[int, Hashable] = {}
        """`structure` of each computation asked about, by id (they live as long as the module)."""
        self._alike_one = Alike(facts)
        self._alike_but_metadata = Alike(facts, but_metadata=True)
        self._alike_priced = self._alike_but_metadata if never_marked else self._alike_one
        """Whose walk prices a computation: where no op recomputes, the metadata decides no price."""
        self._fusion_bytes: dict[tuple[str, int], int] = {}
        """`fusion_bytes` by result shape and fused computation's id."""
        self._instructions: dict[int, Counts] = {}
        """Instructions priced outside any marked callee (by id: they live as long as the module)."""
        self._recomputes: dict[int, bool] = {}
        self._marks: list[bool] = [False]
        self._matmuls: dict[int, tuple[Instruction, ...]] = {}
        """The dots and convolutions each fused computation runs, by id (`matmuls`)."""

    def collective(self, inst: Instruction) -> int:
        comp = inst.computation
        return self._collective_bytes.get((comp.name if comp is not None else "", inst.name), 0)

    def marked(self, inst: Instruction) -> bool:
        """Whether `inst` recomputes forward ops: by its own metadata, else (silent) as its caller."""
        verdict = self._recomputes.get(id(inst)) if type(inst) is Instruction else None
        if verdict is None:
            verdict = recomputes(inst)
            if type(inst) is Instruction:
                self._recomputes[id(inst)] = verdict
        return verdict or (self._marks[-1] and not inst.op_name)

    def computation(self, comp: Computation, marked: bool = False) -> Counts:
        """One run of `comp` (loops one trip: XLA's convention)."""
        key = (comp.name, marked)
        cost = self._computations.get(key)
        if cost is None:
            priced = self._what_is_priced(comp)
            alike = (priced, marked)
            cost = self._alike.get(alike)
            if cost is None:
                walked = comp
                if priced is not comp:
                    # Priced by its structure: the body it repeats holds the same instructions,
                    # and prices them alike unless its names are priced (its own collectives).
                    original = self._alike_priced(comp)
                    if original is not comp and self._what_is_priced(original) is priced:
                        walked = original
                self._marks.append(marked)
                try:
                    parts = [self.instruction(inst) for inst in walked.instructions]
                finally:
                    self._marks.pop()
                cost = Counts(*map(sum, zip(*parts))) if parts else ZERO
                self._alike[alike] = cost
            self._computations[key] = cost
        return cost

    def fusion_bytes(self, shape: Shape, comp: Computation) -> int:
        """`fusion_bytes`, once per result shape and fused computation (alike ones, once)."""
        comp = self._alike_but_metadata(comp)
        key = (shape.text, id(comp))
        found = self._fusion_bytes.get(key)
        if found is None:
            found = self._fusion_bytes[key] = fusion_bytes(shape, comp, self._alike_but_metadata)
        return found

    def _what_is_priced(self, comp: Computation) -> Hashable:
        """What decides the price of `comp`: its structure, unless names are priced too (a
        collective's bytes are found by name, XLA's remat clones are known by theirs)."""
        if comp.name in self._with_collectives or (
                self.facts.writes_any(comp, (XLA_REMAT_TEXT,)) and any(map(remat_clone, comp.instructions))):
            return comp
        original = self._alike_priced(comp)
        found = self._structures.get(id(original))
        if found is None:
            # Callees by what decides their price in turn: alike ones priced alike.
            found = self._structures[id(original)] = structure(original, self._what_is_priced)
        return found

    def instruction(self, inst: Instruction) -> Counts:
        """XLA's properties of one execution of `inst`, its callees included."""
        memo = not self._marks[-1] and type(inst) is Instruction
        if memo:
            cost = self._instructions.get(id(inst))
            if cost is not None:
                return cost
        cost = price(inst, self)
        # An op priced by its callees is judged there, instruction by instruction (a callee's
        # instruction without metadata takes its caller's verdict).
        if cost[0] and not opinfo(inst.opcode).priced_by_callees and self.marked(inst):
            cost = cost.recomputed()
        if memo:
            self._instructions[id(inst)] = cost
        return cost

    def matmuls(self, inst: Instruction) -> tuple[Instruction, ...]:
        """The dots and convolutions `inst` runs: itself, or those of the computations it fuses
        (the last callee's first, each computation's own before those it fuses in turn, the
        last of those first)."""
        if inst.opcode in MATMUL_OPCODES:
            return (inst,)
        if opinfo(inst.opcode).calls_kind != "fused":
            return ()
        found: tuple[Instruction, ...] = ()
        for comp in reversed(inst.called_computations):
            found += self._fused_matmuls(comp)
        return found

    def _fused_matmuls(self, comp: Computation) -> tuple[Instruction, ...]:
        original = self._alike_but_metadata(comp)  # their shapes and precisions
        found = self._matmuls.get(id(original))
        if found is None:
            own: list[Instruction] = []
            fused: list[Computation] = []
            for op in original.instructions:
                if op.opcode in MATMUL_OPCODES:
                    own.append(op)
                elif op.called_computations and opinfo(op.opcode).calls_kind == "fused":
                    fused.extend(op.called_computations)
            found = tuple(own)
            for callee in reversed(fused):
                found += self._fused_matmuls(callee)
            self._matmuls[id(original)] = found
        return found

    def own(self, inst: Instruction) -> Counts:
        """What `inst` costs itself, as one step of the schedule: an op that runs its callees as
        steps of the schedule (loop, call, conditional, async wrapper) costs nothing itself:
        its callees' instructions are steps of their own."""
        if opinfo(inst.opcode).runs_callees and inst.called_computations:
            return ZERO
        return self.instruction(inst)


def analyze_cost(module: Module, collectives: CollectivesResult | None = None,
                 recomputing_only: bool = False, facts: Facts = PLAIN,
                 graph: CallGraph | None = None) -> CostResult:
    """FLOPs, transcendentals, bytes accessed and collective bytes of one step of `module`
    (docs/cost.md says what is counted, and how). `collectives`: the module's
    collectives, when already found. `recomputing_only`: list only the instructions that
    recompute forward ops (all `CostResult.in_brief` keeps; the totals are the same), whose
    metadata is then read for hundreds of instructions, not tens of thousands. `graph`: the
    module's `running_graph`, when already found (the collectives walk it too)."""
    graph = running_graph(module, facts) if graph is None else graph
    unknown = False

    def runs(comp: Computation) -> int:
        """How often `comp` runs per step, a loop of unknown trip count counted once."""
        nonlocal unknown
        count = graph.runs(comp)
        unknown = unknown or not count.known
        return count.times

    if collectives is None:
        collectives = analyze_collectives(module, facts, graph)
    collective_bytes: dict[tuple[str, str], int] = {}
    by_kind = {kind: 0 for kind in COLLECTIVE_KINDS}
    wire_by_kind = {kind: 0 for kind in COLLECTIVE_KINDS}
    for c in collectives.collectives:
        collective_bytes[(c.computation, c.instruction)] = c.bytes
        comp = module.computation(c.computation)
        n = runs(comp) if comp is not None else 0
        by_kind[c.kind] += c.bytes * n
        factor = _WIRE.get(c.kind)
        size = c.group_size
        share = factor(size) if factor is not None and size else 1.0
        wire_by_kind[c.kind] += round(c.bytes * share) * n

    never_marked = not (facts.module_writes_any(module, REMAT_LITERALS)
                        and any(_may_recompute(c, facts) for c in module.computations))
    coster = _Coster(collective_bytes, facts, never_marked)
    matmuls: dict[str, int] = {}
    units: list[InstructionCost] = []
    total = ZERO
    loops: list[LoopCost] = []
    for comp in scheduled_computations(module):
        n = runs(comp)
        replays = {} if never_marked else _replays(comp, facts)
        for inst in comp.instructions:
            if opinfo(inst.opcode).is_loop:
                loops.append(LoopCost(inst.name, comp.name, graph.trip_count(inst), n,
                                      coster.instruction(inst).flops))
            cost = coster.own(inst)
            if cost.flops:
                for dot in coster.matmuls(inst):
                    kind = matmul_arithmetic(dot)
                    matmuls[kind] = matmuls.get(kind, 0) + matmul_flops(dot) * n
            if replays.get(id(inst)) and not inst.op_name:
                cost = cost.recomputed()
            total = total + cost.times(n).with_bytes(cost.bytes * n)
            if cost == ZERO or cost == Counts(opaque=cost.opaque) or (recomputing_only and not cost.recompute_flops):
                continue
            units.append(InstructionCost(
                instruction=inst.name, computation=comp.name, opcode=inst.opcode, flops=cost.flops,
                transcendentals=cost.transcendentals, bytes_accessed=cost.bytes,
                collective_bytes=cost.collective_bytes, recompute_flops=cost.recompute_flops, runs=n,
                op_name=inst.op_name, source=inst.source))
    xla = coster.computation(module.entry) if module.entry is not None else ZERO
    return CostResult(
        module=module.name,
        flops=total.flops,
        transcendentals=total.transcendentals,
        bytes_accessed=total.bytes,
        collective_bytes=sum(by_kind.values()),
        collective_bytes_by_kind=by_kind,
        collective_wire_bytes=sum(wire_by_kind.values()),
        collective_wire_bytes_by_kind=wire_by_kind,
        recompute_flops=total.recompute_flops,
        flops_xla_convention=xla.flops - xla.opaque,
        transcendentals_xla_convention=xla.transcendentals,
        bytes_accessed_xla_convention=xla.bytes,
        unknown_trip_count=unknown,
        opaque=total.opaque,
        loops=tuple(loops),
        matmul_flops=dict(sorted(matmuls.items(), key=lambda kv: -kv[1])),
        instructions=tuple(units),
    )


__all__ = [
    "GROUP_KEYS",
    "XLA_CONVENTION",
    "CostGroup",
    "CostResult",
    "InstructionCost",
    "LoopCost",
    "analyze_cost",
    "recomputes",
]
