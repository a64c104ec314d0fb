"""How often each computation runs: one counter (`CallGraph.runs`), shared by count-collectives
and cost, keyed by computations, not by the names the text writes.

XLA's parser renames a computation whose name repeats in its uniquer (`%f.0` after `%f`
becomes `f.1`) while the text's attributes still call it `%f.0`: a count keyed by names
finds no caller for `f.1`, or another computation's callers. The modules below are written
so that the counts follow from the text by hand (stated next to each); the names are XLA's,
asked of its parser.
"""

from __future__ import annotations

import re

import pytest

import hloscope
from hloscope.analysis.callgraph import CallGraph, running_graph, scheduled_computations
from hloscope.speed.facts import TextFacts
from hloscope.speed.lazy import read_all
from hloscope.speed.seam import parse_lazily

from .conftest import FIXTURES, fixture_ids, needs_xla

_SUM = """%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add = f32[] add(%a, %b)
}
"""

# Two computations `%f` and `%f.0`, one all-reduce each; the entry calls each once.
RENAMED = f"""HloModule renamed, replica_count=2

{_SUM}
%f (x: f32[8]) -> f32[8] {{
  %x = f32[8]{{0}} parameter(0)
  ROOT %ar = f32[8]{{0}} all-reduce(%x), replica_groups={{{{0,1}}}}, to_apply=%sum
}}

%f.0 (y: f32[8]) -> f32[8] {{
  %y = f32[8]{{0}} parameter(0)
  ROOT %ar.0 = f32[8]{{0}} all-reduce(%y), replica_groups={{{{0,1}}}}, to_apply=%sum
}}

ENTRY %main (p: f32[8]) -> f32[8] {{
  %p = f32[8]{{0}} parameter(0)
  %c0 = f32[8]{{0}} call(%p), to_apply=%f
  ROOT %c1 = f32[8]{{0}} call(%c0), to_apply=%f.0
}}
"""


def _loop(name: str, bound: int) -> str:
    """A condition `counter < bound` and a body adding 1 to the counter and all-reducing x."""
    return f"""%cond{name} (s: (s32[], f32[8])) -> pred[] {{
  %s = (s32[], f32[8]{{0}}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant({bound})
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}}

%body{name} (s: (s32[], f32[8])) -> (s32[], f32[8]) {{
  %s = (s32[], f32[8]{{0}}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %x = f32[8]{{0}} get-tuple-element(%s), index=1
  %ar = f32[8]{{0}} all-reduce(%x), replica_groups={{{{0,1}}}}, to_apply=%sum
  ROOT %t = (s32[], f32[8]{{0}}) tuple(%next, %ar)
}}
"""


# Loops over renamed computations. `%run` runs a loop of 3 trips (counter 0, 1, 2 < 3) over
# `%cond`/`%body`; `%run.0` (XLA: run.1) one of 5 trips over `%cond.0`/`%body.0` (XLA: cond.1,
# body.1), its counter's init 0 passed in by the entry's call; `%body.1` (XLA: body.2, a name
# the text gives another computation) is called once, outside any loop. The entry calls each
# of `%run`, `%run.0` and `%body.1` once. So the all-reduce of body runs 3 times, that of
# body.1 5 times, that of body.2 once: 9 in all. Each loop's known_trip_count says the same.
LOOPS = f"""HloModule renamed_loops, replica_count=2

{_SUM}
{_loop("", 3)}
{_loop(".0", 5)}
%body.1 (s: (s32[], f32[8])) -> (s32[], f32[8]) {{
  %s = (s32[], f32[8]{{0}}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[8]{{0}} get-tuple-element(%s), index=1
  %ar = f32[8]{{0}} all-reduce(%x), replica_groups={{{{0,1}}}}, to_apply=%sum
  ROOT %t = (s32[], f32[8]{{0}}) tuple(%i, %ar)
}}

%run (x: f32[8]) -> f32[8] {{
  %x = f32[8]{{0}} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]{{0}}) tuple(%zero, %x)
  %w3 = (s32[], f32[8]{{0}}) while(%init), condition=%cond, body=%body, backend_config={{"known_trip_count":{{"n":"3"}}}}
  ROOT %out = f32[8]{{0}} get-tuple-element(%w3), index=1
}}

%run.0 (z: s32[], x: f32[8]) -> f32[8] {{
  %z = s32[] parameter(0)
  %x = f32[8]{{0}} parameter(1)
  %init = (s32[], f32[8]{{0}}) tuple(%z, %x)
  %w5 = (s32[], f32[8]{{0}}) while(%init), condition=%cond.0, body=%body.0, backend_config={{"known_trip_count":{{"n":"5"}}}}
  ROOT %out = f32[8]{{0}} get-tuple-element(%w5), index=1
}}

ENTRY %main (p: f32[8]) -> f32[8] {{
  %p = f32[8]{{0}} parameter(0)
  %zero = s32[] constant(0)
  %a = f32[8]{{0}} call(%p), to_apply=%run
  %b = f32[8]{{0}} call(%zero, %a), to_apply=%run.0
  %t = (s32[], f32[8]{{0}}) tuple(%zero, %b)
  %once = (s32[], f32[8]{{0}}) call(%t), to_apply=%body.1
  ROOT %out = f32[8]{{0}} get-tuple-element(%once), index=1
}}
"""

_KNOWN = re.compile(r', backend_config=\{"known_trip_count":\{"n":"\d+"\}\}')
_BYTES = 8 * 4  # f32[8]


def _xla_all_reduces(text: str) -> set[tuple[str, str]]:
    """(computation, instruction) of each all-reduce, as XLA's parser names them."""
    needs_xla()
    from .xla_reference import xla_collectives

    return {(comp, inst) for kind, comp, inst, _ in xla_collectives(text) if kind == "all-reduce"}


def _agree(text: str, runs: dict[tuple[str, str], int], loops: dict[tuple[str, str], tuple[str, ...]]):
    """count-collectives and cost both say each all-reduce runs `runs[(computation, name)]`
    times, under `loops[...]`; the names are XLA's."""
    assert _xla_all_reduces(text) == set(runs)
    module = hloscope.parse(text)
    collectives = module.collectives()
    counted = {(c.computation, c.instruction): c.dynamic_count for c in collectives.instances}
    assert counted == runs
    assert {(c.computation, c.instruction): c.loops for c in collectives.instances} == loops
    assert all(c.reachable for c in collectives.instances)
    total = collectives.tally("all-reduce")
    assert (total.dynamic_count, total.dynamic_bytes) == (sum(runs.values()), _BYTES * sum(runs.values()))

    cost = module.cost()
    priced = {(i.computation, i.instruction): i.runs for i in cost.instructions if i.opcode == "all-reduce"}
    assert priced == runs
    assert cost.collective_bytes_by_kind["all-reduce"] == _BYTES * sum(runs.values())
    assert cost.collective_bytes == total.dynamic_bytes
    assert not cost.unknown_trip_count and not collectives.total.unknown_trip_count


def test_renamed_computations_each_run_once():
    # XLA names the second `f.1` (and its all-reduce `ar.1`); the entry calls each once: 2.
    _agree(RENAMED, {("f", "ar"): 1, ("f.1", "ar.1"): 1}, {("f", "ar"): (), ("f.1", "ar.1"): ()})


@pytest.mark.parametrize("recorded", [True, False], ids=["known_trip_count", "inferred"])
def test_loops_over_renamed_computations(recorded):
    text = LOOPS if recorded else _KNOWN.sub("", LOOPS)
    assert ("known_trip_count" in text) == recorded
    # XLA: body → body, body.0 → body.1, body.1 → body.2; instruction names made unique.
    runs = {("body", "ar"): 3, ("body.1", "ar.1"): 5, ("body.2", "ar.2"): 1}
    loops = {("body", "ar"): ("w3",), ("body.1", "ar.1"): ("w5",), ("body.2", "ar.2"): ()}
    _agree(text, runs, loops)
    cost = hloscope.parse(text).cost()
    assert {(loop.computation, loop.instruction, loop.trip_count, loop.runs) for loop in cost.loops} == {
        ("run", "w3", 3, 1), ("run.1", "w5", 5, 1)}


# Branches called from a computation that writes no `calls=` (XLA's parser accepts it;
# `branch_computations={...}` is read at once, as a body that may hold an inline callee).
BRANCHES = """HloModule branches, replica_count=2

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add = f32[] add(%a, %b)
}

%reduced (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  ROOT %ar = f32[8]{0} all-reduce(%x), replica_groups={{0,1}}, to_apply=%sum
}

%negated (y: f32[8]) -> f32[8] {
  %y = f32[8]{0} parameter(0)
  ROOT %neg = f32[8]{0} negate(%y)
}

%by_pred (p: pred[], x: f32[8]) -> f32[8] {
  %p = pred[] parameter(0)
  %x = f32[8]{0} parameter(1)
  ROOT %c = f32[8]{0} conditional(%p, %x, %x), true_computation=%reduced, false_computation=%negated
}

ENTRY %main (p: pred[], v: f32[8]) -> f32[8] {
  %p = pred[] parameter(0)
  %v = f32[8]{0} parameter(1)
  %one = f32[8]{0} call(%p, %v), to_apply=%by_pred
  ROOT %two = f32[8]{0} call(%p, %one), to_apply=%by_pred
}
"""


def _asked(module) -> list:
    """The computations whose runs count-collectives and cost ask: those the schedule runs,
    and those holding a collective."""
    held = [c for c in module.computations if any(i.info.collective for i in c.instructions)]
    return list(dict.fromkeys([*scheduled_computations(module), *held]))


@pytest.mark.parametrize("read_first", [False, True], ids=["unread", "read"])
@pytest.mark.parametrize("name", ["renamed", "loops", "branches", *fixture_ids()])
def test_the_graph_walked_counts_runs_as_the_whole_graph(name, read_first):
    # `running_graph` leaves out bodies whose text calls nothing the schedule runs and
    # nothing a collective could be in; on a lazily read module it asks their text. The
    # runs and trip counts it gives are those of the graph of every call.
    text = {"renamed": RENAMED, "loops": LOOPS, "branches": BRANCHES}.get(name)
    if text is None:
        text = (FIXTURES / name / "module.hlo.txt").read_text()
    for module in parse_lazily(text, name):
        if read_first:
            read_all(module)
        walked = running_graph(module, TextFacts())
        whole = CallGraph(module)
        asked = _asked(module)
        assert len(asked) > 1 or name not in ("renamed", "loops", "branches")
        for comp in asked:
            assert walked.runs(comp) == whole.runs(comp), comp.name
            for inst in comp.instructions:
                if inst.info.is_loop:
                    assert walked.trip_count(inst) == whole.trip_count(inst), inst.name
