"""The one seam: the IR and the analyses name none of the speed machinery, and what the speed
layer answers from the text equals what the plain IR answers (hloscope.analysis.facts)."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hloscope.analysis import dataflow, sharing
from hloscope.analysis.facts import PLAIN
from hloscope.ir.opcodes import COLLECTIVE_KINDS
from hloscope.speed.seam import parse_eagerly, parse_lazily
from hloscope.speed.facts import TextFacts
from hloscope.speed.lazy import LazyComputation, read_all
from hloscope.text.body import BodyText

from .test_bad_input import xla_place

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "hloscope"

MACHINERY = re.compile(
    r"\b(copy_of|may_mention|may_contain|peek|_Peek|executor|Executor|submit|settle|check_elsewhere|cache_key"
    r"|fork\w*|read_all|know_called_computation_names|BodySource|body_source|is_read)\b"
    r"|gc\.(disable|enable|freeze|isenabled)|\bimport gc\b|getattr\([^)]*[\"']tail[\"']")


def _lines(folder: str):
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            yield f"{path.relative_to(ROOT)}:{number}", line


@pytest.mark.parametrize("folder", ["ir", "analysis"])
def test_no_line_of_the_ir_or_the_analyses_names_the_machinery(folder):
    found = [f"{where}: {line.strip()}" for where, line in _lines(folder) if MACHINERY.search(line)]
    assert found == []


def test_only_the_speed_layer_switches_the_cyclic_gc():
    # The one place it is switched is hloscope.speed.runtime (the CLI asks the seam).
    switch = re.compile(r"gc\.(disable|enable|freeze)|\bimport gc\b")
    found = [f"{path.relative_to(ROOT)}:{number}" for path in sorted(PACKAGE.rglob("*.py"))
             if PACKAGE / "speed" not in path.parents
             for number, line in enumerate(path.read_text().splitlines(), 1) if switch.search(line)]
    assert found == []


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_what_a_parse_makes_skips_the_young_generations_and_is_still_collected(lazy):
    """With the collector on, what a parse (or an analysis) made with it off goes to the
    oldest generation at once: the young ones' next collections do not each scan it (0.3 s
    apiece on a 22 MB step), and dropping the module still frees it (its instructions and
    users make cycles; a lazy one's verdict does not keep it). Objects the program froze stay
    frozen."""
    import gc
    import weakref

    import hloscope

    text = _text(ROOT / "fixtures" / "cpu_remat_dots" / "module.hlo.txt")
    assert gc.isenabled()
    gc.collect()
    (module,) = hloscope.parse_all(text, lazy=lazy)
    for comp in module.computations:
        comp.instructions  # noqa: B018 - every body made, while the collector is on
    made = sum(len(c.instructions) for c in module.computations)
    young = len(gc.get_objects(0)) + len(gc.get_objects(1))
    assert made > 1000 and young < made / 10, (made, young)
    gone = weakref.ref(module)
    del module, comp
    gc.collect()
    assert gone() is None
    marker = [object()]
    gc.freeze()
    try:
        hloscope.parse_all(text, lazy=lazy)
        assert not any(o is marker for o in gc.get_objects())  # still in the permanent generation
    finally:
        gc.unfreeze()
    assert any(o is marker for o in gc.get_objects())


def test_the_pattern_finds_what_it_forbids():
    # The test above cannot pass by a pattern that matches nothing.
    for line in ("comp.copy_of or comp", "x = comp.may_mention(('a',))", "executor.submit(f)", "gc.disable()",
                 "module.settle()", "import gc", "getattr(attributes, \"tail\", \"\")", "os.fork()"):
        assert MACHINERY.search(line), line
    for line in ("facts.same_as(comp)", "facts.writes_any(comp, literals)", "attributes.mentions('x')"):
        assert not MACHINERY.search(line), line


def _fixture_texts():
    for path in sorted(ROOT.glob("fixtures/**/module.hlo.txt*")):
        yield pytest.param(path, id=str(path.parent.relative_to(ROOT / "fixtures")))


def _text(path: Path) -> str:
    return gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()


@pytest.mark.parametrize("path", list(_fixture_texts()))
def test_answers_from_the_text_equal_the_plain_ones(path):
    """Every question `Facts` answers, asked of every computation of every fixture: from the
    unread text (before any read, and after `read_all` marked copies), and plainly from the
    same module parsed eagerly. "Unsure" (True) is allowed where the plain answer is False
    only for `writes_any`, which the plain IR cannot answer at all."""
    text = _text(path)
    (lazy,) = parse_lazily(text, str(path))
    (plain,) = parse_eagerly(text, str(path))
    literals = [(k,) for k in COLLECTIVE_KINDS] + [("calls=",), ("__cublas",), (".remat",), ("rematted_computation",)]
    opcode_sets = [("all-gather",), ("gather", "scatter"), ("dynamic-update-slice", "scatter"), ("fusion",)]
    unread = [c for c in lazy.computations if isinstance(c, LazyComputation) and not c.is_read]
    unread_answers = []
    facts = TextFacts()  # one for the module, as an analysis has: what it keeps of alike bodies is used
    module_answers = [facts.module_writes_any(lazy, lit) for lit in literals]
    for comp in lazy.computations:
        unread_answers.append(([facts.writes_any(comp, lit) for lit in literals],
                               [facts.holds_any(comp, ops) for ops in opcode_sets],
                               facts.fusion_in_place_operands(comp),
                               facts.elementwise_parameters(comp)))
    read_all(lazy)
    module_answers = [a or facts.module_writes_any(lazy, lit) for a, lit in zip(module_answers, literals)]
    assert [c.name for c in lazy.computations] == [c.name for c in plain.computations]
    for lit, answer in zip(literals, module_answers):
        if not answer:  # "certainly not written" (before the reads or after): in no body
            assert not any(_writes(i, lit[0]) for c in plain.computations for i in c.instructions), lit
    asked = alike_up_to_metadata = 0
    for comp, answers, same in zip(plain.computations, unread_answers, lazy.computations):
        writes, holds, in_place, elementwise = answers
        for lit, answer in zip(literals, writes):
            if not answer:  # "certainly not written": the plain body holds no such text
                assert not any(_writes(i, lit[0]) for i in comp.instructions), (comp.name, lit)
        for ops, answer in zip(opcode_sets, holds):
            if not answer:  # "certainly none": the plain answer agrees
                assert not PLAIN.holds_any(comp, ops), (comp.name, ops)
        if in_place is not None:
            asked += 1
            assert in_place == dataflow.in_place_operands_from(comp.root, lambda i, k: i.operands[k]), comp.name
        if elementwise is not None:
            asked += 1
            assert elementwise == sharing._elementwise_parameters(comp), comp.name
        # A body known to repeat another holds its instructions up to names (and metadata).
        original = facts.same_as(same)
        if original is not same:
            theirs = lazy.computation(original.name)
            assert _up_to_names(same) == _up_to_names(theirs), comp.name
        alike = facts.same_but_metadata(same)
        if alike is not same:
            alike_up_to_metadata += 1
            theirs = lazy.computation(alike.name)
            assert _up_to_names(same, "metadata") == _up_to_names(theirs, "metadata"), comp.name
    if any(i.opcode == "fusion" for c in unread for i in c.instructions):
        assert asked > 0  # the text did answer some: the comparison compared something
    if any(getattr(c, "recipe", None) is not None for c in lazy.computations):
        assert alike_up_to_metadata > 0


def _writes(inst, literal: str) -> bool:
    """Whether an instruction's opcode, name or an attribute as written holds `literal`."""
    return literal in inst.opcode or literal in inst.name or any(
        literal in k + "=" + v for k, v in inst.attributes.raw.items())


def _up_to_names(comp, *but: str) -> list:
    """What a computation's instructions are up to their names (and the attributes `but`)."""
    at = {id(i): k for k, i in enumerate(comp.instructions)}
    return [(i.opcode, i.shape.text, [at.get(id(o)) for o in i.operands], i.literal, i.parameter_number,
             {k: v for k, v in i.attributes.raw.items() if k not in but and "%" not in v})
            for i in comp.instructions]


def _fused(name: str, p: str, q: str, negated: str, reversed_: str, suffix: str) -> str:
    """One text up to its `%name`s: a fused computation negating one parameter and reversing
    the other (`negated`, `reversed_`: `p` or `q`), its names ending in `suffix`."""
    return f"""%{name} ({p}: f32[4], {q}: f32[4]) -> f32[4] {{
  %{p} = f32[4]{{0}} parameter(0)
  %{q} = f32[4]{{0}} parameter(1)
  %n{suffix} = f32[4]{{0}} negate(%{negated})
  %r{suffix} = f32[4]{{0}} reverse(%{reversed_}), dimensions={{0}}
  ROOT %a{suffix} = f32[4]{{0}} add(%n{suffix}, %r{suffix})
}}
"""


_ALIKE_UP_TO_NAMES = f"""HloModule alike_up_to_names

{_fused("fused_first", "p0", "p1", "p0", "p1", "")}
{_fused("fused_b", "q0", "q1", "q1", "q0", ".1")}
{_fused("fused_c", "x0", "x1", "x0", "x1", ".2")}
{_fused("fused_d", "y0", "y1", "y0", "y1", ".3")}
ENTRY %main (in0: f32[4], in1: f32[4]) -> (f32[4], f32[4], f32[4], f32[4]) {{
  %in0 = f32[4]{{0}} parameter(0)
  %in1 = f32[4]{{0}} parameter(1)
  %first = f32[4]{{0}} fusion(%in0, %in1), kind=kLoop, calls=%fused_first
  %fb = f32[4]{{0}} fusion(%in0, %in1), kind=kLoop, calls=%fused_b
  %fc = f32[4]{{0}} fusion(%in0, %in1), kind=kLoop, calls=%fused_c
  %fd = f32[4]{{0}} fusion(%in0, %in1), kind=kLoop, calls=%fused_d
  ROOT %t = (f32[4]{{0}}, f32[4]{{0}}, f32[4]{{0}}, f32[4]{{0}}) tuple(%first, %fb, %fc, %fd)
}}
"""


def test_bodies_alike_up_to_names_answer_alike_only_where_the_names_stand_one_for_one(monkeypatch):
    """`%fused_b`, `%fused_c` and `%fused_d` are one text up to their `%name`s. In b the
    negated parameter is the second; in c and d the first, c's names standing one for one
    for d's. So d is answered as c was, without cutting it, and c is not answered as b was
    (the parameters read element by element differ), each as the plain IR answers."""
    assert xla_place(_ALIKE_UP_TO_NAMES) is None  # XLA's parser takes it
    (lazy,) = parse_lazily(_ALIKE_UP_TO_NAMES, "alike.hlo")
    (plain,) = parse_eagerly(_ALIKE_UP_TO_NAMES, "alike.hlo")
    fused = [c for c in lazy.computations if c.name in ("fused_b", "fused_c", "fused_d")]
    assert len({c.alike for c in fused}) == 1 and fused[0].alike is not None and not any(c.is_read for c in fused)
    cut = []
    operations_marked = BodyText.operations_marked
    monkeypatch.setattr(BodyText, "operations_marked", lambda body: cut.append(body) or operations_marked(body))
    facts = TextFacts()
    answers = {c.name: facts.elementwise_parameters(c) for c in lazy.computations if c.name.startswith("fused")}
    assert answers == {c.name: sharing._elementwise_parameters(c) for c in plain.computations
                       if c.name.startswith("fused")}
    assert answers["fused_b"] == {1} and answers["fused_c"] == answers["fused_d"] == {0}
    assert [b.start for b in cut] == [c.body.start for c in lazy.computations if c.name in ("fused_first", "fused_b", "fused_c")]
    # A body that writes a name bare answers for itself alone (it is cut each time).
    cut.clear()
    monkeypatch.setattr(BodyText, "operations_marked", lambda body: (cut.append(body) or operations_marked(body))[:1] + (False,))
    facts = TextFacts()
    assert [facts.elementwise_parameters(c) for c in fused] == [{1}, {0}, {0}] and len(cut) == 3


_UNREAD_ERROR = """HloModule unread_error

%fused (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%missing)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %f = f32[4]{0} fusion(%x), kind=kLoop, calls=%fused
}
"""


def test_a_module_whose_unread_body_holds_an_error_is_unsure_of_its_text():
    # Its text writes no `negate(` elsewhere than in the body a read rejects: "certainly
    # not" would let an analysis skip the read that reports the full parse's error.
    (module,) = parse_lazily(_UNREAD_ERROR, "unread_error")
    assert not any(c.is_read for c in module.computations)
    facts = TextFacts()
    assert facts.module_writes_any(module, ("not written",))
    assert facts.writes_any(module.computation("fused"), ("not written",))
    (clean,) = parse_lazily(_UNREAD_ERROR.replace("%missing", "%p"), "clean")
    assert not TextFacts().module_writes_any(clean, ("not written",))


def test_operations_say_whether_every_name_is_written_with_its_percent():
    """What lets a body's answers stand for those of bodies alike up to their `%name`s: a
    name written bare stays as it is in a body alike up to names, where it may name another
    instruction."""
    (module,) = parse_lazily(_ALIKE_UP_TO_NAMES.replace("negate(%y0)", "negate(y0)"), "bare.hlo")
    marked = {c.name: c.unread_body().operations_marked()[1] for c in module.computations if c.name.startswith("fused")}
    assert marked == {"fused_first": True, "fused_b": True, "fused_c": True, "fused_d": False}


@pytest.mark.parametrize("folder", ["cpu_remat_dots", "cpu_scan_layers", "tpu_hsdp_accum2"])
def test_analyses_through_the_seam_equal_the_plain_ones_and_leave_copies_unmade(folder, monkeypatch):
    """The cost, the roles, the held gathers and the collectives of a module read lazily (its
    repeated bodies known as copies, `read_all`) equal those of the same text parsed eagerly;
    and a copy that calls no computation is never made: what the analyses ask of it, they
    ask of the body it repeats (`facts.Alike`). On a model's step most fused computations are
    such copies; making them took a third of a diff's time."""
    monkeypatch.setenv("HLOSCOPE_CACHE", "0")
    import hloscope

    text = _text(next((ROOT / "fixtures" / folder).glob("module.hlo.txt*")))
    lazy, plain = hloscope.parse(text, lazy=True), hloscope.parse(text)
    for analysis in ("cost", "memory", "roles", "held_gathers", "collectives"):
        assert getattr(lazy, analysis)().to_dict() == getattr(plain, analysis)().to_dict(), analysis
    copies = [c for c in lazy.computations if isinstance(c, LazyComputation) and c.copy_of is not None]
    assert copies, "no body repeats another here: the test would look at nothing"
    made = [c.name for c in copies if c.is_read and not any(i.called_computations for i in c.instructions)]
    assert made == []


_LOADS = """
import os, sys
import hloscope.ir
ir_loads_lark = "lark" in sys.modules
from hloscope.cli import main
leave = os._exit
def report(status):  # the CLI leaves by os._exit
    print(ir_loads_lark, "lark" in sys.modules, "hloscope.text.parser" in sys.modules, file=sys.stderr)
    leave(status)
os._exit = report
sys.argv = ["hloscope", "memory", sys.argv[1]]
main()
"""


def test_a_command_answered_from_the_cache_loads_no_parser(tmp_path):
    """The IR imports no Lark, and a command whose module and result the cache keeps parses
    nothing, so it loads neither the parser nor Lark (`seam._parsing`); the same command on
    a new cache does load them (the check can fail)."""
    path = next((ROOT / "fixtures" / "cpu_remat_dots").glob("module.hlo.txt*"))
    env = dict(os.environ, HLOSCOPE_CACHE_DIR=str(tmp_path), HLOSCOPE_CACHE="1")

    def loaded() -> str:
        run = subprocess.run([sys.executable, "-c", _LOADS, str(path)], env=env, capture_output=True, text=True,
                             cwd=ROOT)
        assert run.returncode == 0, run.stderr
        return run.stderr.split()[-3:]

    assert loaded() == ["False", "True", "True"]  # cold: parsed
    assert loaded() == ["False", "False", "False"]  # warm: from the cache
