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
from hloscope.speed.facts import TEXT_FACTS
from hloscope.speed.lazy import LazyComputation, read_all

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
    literals = [(k,) for k in COLLECTIVE_KINDS] + [("calls=",), ("__cublas",), (".remat",)]
    opcode_sets = [("all-gather",), ("gather", "scatter"), ("dynamic-update-slice", "scatter"), ("fusion",)]
    unread = [c for c in lazy.computations if isinstance(c, LazyComputation) and not c.is_read]
    unread_answers = []
    for comp in lazy.computations:
        unread_answers.append(([TEXT_FACTS.writes_any(comp, lit) for lit in literals],
                               [TEXT_FACTS.holds_any(comp, ops) for ops in opcode_sets],
                               TEXT_FACTS.fusion_in_place_operands(comp),
                               TEXT_FACTS.elementwise_parameters(comp)))
    read_all(lazy)
    assert [c.name for c in lazy.computations] == [c.name for c in plain.computations]
    asked = 0
    for comp, answers, same in zip(plain.computations, unread_answers, lazy.computations):
        writes, holds, in_place, elementwise = answers
        for lit, answer in zip(literals, writes):
            if not answer:  # "certainly not written": the plain body holds no such text
                assert not any(lit[0] in i.opcode or lit[0] in i.name or any(lit[0] in k + "=" + v for k, v in
                               i.attributes.raw.items()) for i in comp.instructions), (comp.name, lit)
        for ops, answer in zip(opcode_sets, holds):
            if not answer:  # "certainly none": the plain answer agrees
                assert not PLAIN.holds_any(comp, ops), (comp.name, ops)
        if in_place is not None:
            asked += 1
            assert in_place == dataflow.in_place_operands_from(comp.root, lambda i, k: i.operands[k]), comp.name
        if elementwise is not None:
            asked += 1
            assert elementwise == sharing._elementwise_parameters(comp), comp.name
        # A body known to repeat another holds its instructions up to names.
        original = TEXT_FACTS.same_as(same)
        if original is not same:
            theirs = lazy.computation(original.name)
            assert [(i.opcode, i.shape.text) for i in same.instructions] == \
                   [(i.opcode, i.shape.text) for i in theirs.instructions]
    if any(i.opcode == "fusion" for c in unread for i in c.instructions):
        assert asked > 0  # the text did answer some: the comparison compared something


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
