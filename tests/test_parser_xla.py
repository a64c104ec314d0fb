"""hloscope's view of a module is XLA's: compared with XLA's C++ parser on real HLO.

For every computation present in the text: the same computations, the same instructions in
the same order, the same opcodes (async sugar resolved through the opcode table) and the
same operand names. XLA also synthesizes `async_wrapped` computations for async sugar; those
are not in the text and are not compared.
"""

from __future__ import annotations

import os
import re

import pytest

import hloscope
from hloscope.ir import opcodes

from .conftest import FIXTURES, accepted_corpus_rows, corpus_rows, fixture_dirs, fixture_ids, needs_xla

# Accepted corpus modules hloscope reads differently from XLA, each with its reason.
KNOWN_DIFFERENCES: set[str] = set()


def _ours(module) -> dict[str, list]:
    return {
        c.name: [(i.name, opcodes.info(i.opcode).canonical, [o.name for o in i.operands]) for i in c.instructions]
        for c in module.computations
    }


def _first_difference(text: str, reference: dict | None = None, lazy: bool = False) -> str | None:
    """None when hloscope and XLA agree on `text`, else a description of the first difference.
    `reference`: XLA's reading (`xla_parse`), this jaxlib's by default."""
    from .xla_reference import xla_parse

    try:
        modules = hloscope.parse_all(text, lazy=lazy)
    except hloscope.HloSyntaxError as e:
        return f"hloscope rejects it: {e.format().splitlines()[0]}"
    if reference is None:
        reference = xla_parse(text)
    ours = _ours(modules[0])
    for name, instructions in ours.items():
        if name not in reference:
            return f"computation {name!r} not in XLA's module (XLA has {sorted(reference)})"
        if instructions != reference[name]:
            for k, (a, b) in enumerate(zip(instructions, reference[name])):
                if a != b:
                    return f"{name}[{k}]: hloscope {a} vs XLA {b}"
            return f"{name}: {len(instructions)} instructions vs XLA's {len(reference[name])}"
    missing = [n for n in reference if n not in ours and not n.startswith("async_wrapped")]
    # XLA's own synthesized computations aside, every computation XLA read is in the text.
    if missing:
        return f"XLA has computations hloscope lacks: {missing}"
    return None


@pytest.mark.xla
@pytest.mark.parametrize("path", fixture_dirs(), ids=fixture_ids())
def test_fixture_matches_xla(path):
    needs_xla()
    text = (path / "module.hlo.txt").read_text()
    assert _first_difference(text) is None
    module = hloscope.parse(text)
    assert module.entry.is_entry and module.is_scheduled


@pytest.mark.xla
@pytest.mark.corpus
def test_corpus_matches_xla(xla_corpus_readings):
    needs_xla()
    rows = accepted_corpus_rows()
    differences = {}
    for k, row in enumerate(rows):
        diff = _first_difference(row["text"], xla_corpus_readings.reading(k))
        if diff is not None and row["path"] not in KNOWN_DIFFERENCES:
            differences.setdefault(row["path"], diff)
    agreed = len(rows) - len(differences)
    print(f"\nhloscope agrees with XLA's parser on {agreed} of {len(rows)} accepted corpus modules")
    assert not differences, "\n".join(f"{p}: {d}" for p, d in list(differences.items())[:20])


# A computation attribute as XLA prints it: one name, or a list of names in braces.
_PRINTED_CALLS = re.compile(r"[ ,](?:to_apply|calls|body|condition|true_computation|false_computation|"
                            r"branch_computations|called_computations|select|scatter)=(\{[^}]*\}|%?[\w.\-]+)")


@pytest.mark.xla
@pytest.mark.parametrize("path", fixture_dirs(), ids=fixture_ids())
def test_each_instruction_calls_the_computations_xla_prints(path):
    """Every instruction's callees, as hloscope reads them (a body that writes no computation
    attribute has its instructions' known at once), are those XLA prints for it."""
    needs_xla()
    from jax._src.lib import xla_client as xc

    text = (path / "module.hlo.txt").read_text()
    module = hloscope.parse(text)
    names = {c.name for c in module.computations}
    theirs = {}
    for comp in xc.hlo.hlo_module_from_text(text).computations():
        for inst in comp.instructions():
            printed = inst.to_string().split(", metadata={", 1)[0]  # op_name strings aside
            called = [n.strip().lstrip("%") for value in _PRINTED_CALLS.findall(printed)
                      for n in value.strip("{}").split(",") if n.strip()]
            theirs[(comp.name, inst.name)] = sorted(n for n in called if n in names)
    ours = {(c.name, i.name): sorted(i.called_computation_names) for c in module.computations for i in c.instructions}
    assert sum(map(bool, ours.values())) > 10
    assert {k: v for k, v in ours.items() if v != theirs.get(k)} == {}


# XLA messages that mean malformed syntax, as opposed to a semantic check, an attribute or
# opcode XLA does not know (hloscope keeps those), or a literal's value out of range.
_SYNTAX_MESSAGES = re.compile(
    r"expects opcode$|cannot parse as an instruction name|unexpected '.' token|expected primitive type|"
    r"expects name$|expects only one ENTRY|should have only one ROOT|computation already exists|"
    r"is not defined$|Expects '[{}]' at the (start|end) of|expects integer$"
)


@pytest.mark.corpus
def test_corpus_rejections_match_xla():
    """Modules XLA rejects as malformed are rejected too, at the line XLA names (≥ 90%)."""
    rejected = []
    for row in corpus_rows():
        if row["accepted_by_xla"]:
            continue
        m = re.search(r"was parsing (\d+):(\d+): error: (.*)", row["xla_error"] or "")
        if m and _SYNTAX_MESSAGES.search(m.group(3).strip()):
            rejected.append((row, int(m.group(1))))
    assert rejected
    accepted, same_line = [], 0
    for row, xla_line in rejected:
        try:
            hloscope.parse_all(row["text"])
        except hloscope.HloSyntaxError as e:
            same_line += e.line == xla_line
        else:
            accepted.append(row["path"])
    share = same_line / len(rejected)
    print(f"\n{len(rejected) - len(accepted)} of {len(rejected)} malformed modules rejected; "
          f"error line equal to XLA's in {same_line} ({share:.0%})")
    assert share >= 0.90, f"only {share:.0%} at XLA's line; still accepted: {accepted}"


@pytest.mark.corpus
def test_every_accepted_corpus_module_parses():
    """Parsing alone, no XLA needed: every module XLA accepts, hloscope reads."""
    failures = []
    for row in corpus_rows():
        if row["accepted_by_xla"] and row["path"] not in KNOWN_DIFFERENCES:
            try:
                hloscope.parse_all(row["text"])
            except hloscope.HloSyntaxError as e:
                failures.append(f"{row['path']}: {e.format().splitlines()[0]}")
    assert not failures, "\n".join(failures[:20])


def _module_calling(names: list[str]) -> str:
    bodies = "".join(f"{n} {{\n  x = f32[] parameter(0)\n  ROOT y = f32[] negate(x)\n}}\n" for n in names)
    calls = "".join(f"  c{i} = f32[] call(p), to_apply={n}\n" for i, n in enumerate(names))
    results = ", ".join(f"c{i}" for i in range(len(names)))
    shapes = ", ".join("f32[]" for _ in names)
    return (f"HloModule m\n{bodies}ENTRY main {{\n  p = f32[] parameter(0)\n{calls}"
            f"  ROOT t = ({shapes}) tuple({results})\n}}\n")


@pytest.mark.xla
@pytest.mark.parametrize("names", [["f", "g.1", "h.2"], ["f", "f.0"], ["g.00"], ["h.1", "h.01"], ["a.0", "a"],
                                   ["k.0"], ["main.0", "z"]])
def test_computation_names_are_made_unique_as_xla_does(names):
    """Names as written, and names that meet in XLA's uniquer through a zero-led suffix."""
    needs_xla()
    assert _first_difference(_module_calling(names)) is None


@pytest.mark.xla
@pytest.mark.parametrize("names", [["a.00"], ["a.007"], ["a.-0"], ["a.-01", "b"], ["a.-1"], ["a.010", "a.9"],
                                   ["a.7", "a.007"], ["a.-1", "a.-01"]])
@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_a_number_is_written_back_as_xla_writes_it(names, lazy):
    """XLA's uniquer reads `.N` as a number (a sign allowed) and writes it back as one:
    `a.007` is `a.7` even when no other name meets it; a computation's name too."""
    needs_xla()
    lines = "".join(f"  %{n} = f32[4]{{0}} negate(%p)\n" for n in names)
    computation = (f"%{names[0]} (x: f32[4]) -> f32[4] {{\n  %x = f32[4]{{0}} parameter(0)\n"
                   "  ROOT %y = f32[4]{0} negate(%x)\n}\n\n")
    text = ("HloModule m\n\n" + computation + "ENTRY %e (p: f32[4]) -> f32[4] {\n  %p = f32[4]{0} parameter(0)\n"
            + lines + f"  ROOT %r = f32[4]{{0}} call(%p), to_apply=%{names[0]}\n}}\n")
    assert _first_difference(text, lazy=lazy) is None


# Instructions that go on past their line, each followed by a line that looks like an
# instruction's start: a group or a string left open at the line's end (the next line is
# inside it), attributes after a comma or after a key's `=`, a value going on after blanks,
# a computation written inline. A body is cut where the INSTRUCTION terminal ends, as XLA reads it.
_HEAD = "HloModule m\n\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\n"
_PAST_THEIR_LINE = {
    "a brace left open": ('  a = f32[] custom-call(), custom_call_target="x", backend_config={\n'
                          '  b = f32[] parameter(0)}\n  ROOT c = f32[] negate(a)'),
    "a string left open": ('  a = f32[] custom-call(), custom_call_target="x", backend_config="\n'
                           '  b = f32[] parameter(0)"\n  ROOT c = f32[] negate(a)'),
    "attributes after a comma": "  ROOT r = f32[8] all-reduce(p), replica_groups={},\n    to_apply=add",
    "a value after its key's =": "  ROOT r = f32[8] all-reduce(p), replica_groups={}, to_apply=\n    add",
    "a value going on after blanks": "  ROOT r = f32[8] all-reduce(p), replica_groups=[1,1]\n    <=[1], to_apply=add",
    "a computation written inline": ("  ROOT r = f32[] reduce(p, f32[] constant(0)), dimensions={0}, to_apply={\n"
                                     "    a = f32[] parameter(0)\n    b = f32[] parameter(1)\n"
                                     "    ROOT s = f32[] add(a, b)\n  }"),
}


@pytest.mark.xla
@pytest.mark.parametrize("edge", sorted(_PAST_THEIR_LINE))
def test_an_instruction_going_on_past_its_line_is_read_as_xla_reads_it(edge):
    """The instructions are XLA's, read eagerly or lazily, and their attributes those the
    specification alone (`engine="lark"`) reads (an inline computation's name, made of an
    object's id, aside)."""
    needs_xla()
    text = _HEAD + "ENTRY e {\n  p = f32[8] parameter(0)\n" + _PAST_THEIR_LINE[edge] + "\n}\n"
    assert _first_difference(text) is None
    assert _first_difference(text, lazy=True) is None
    read = [[(i.name, {k: re.sub(r"_ inline \d+", "_ inline", v) for k, v in i.attributes.items()})
             for c in hloscope.parse(text, **how).computations for i in c.instructions]
            for how in ({}, {"lazy": True}, {"engine": "lark"})]
    assert read[0] == read[1] == read[2]


# ─── the newest XLA's forms, against the newest jaxlib ──────────────────────────────────
#
# Forms jaxlib 0.10.2 does not read, or names otherwise, compared with the newest jaxlib's
# reading (HLOSCOPE_NEWEST_XLA_PYTHON: an interpreter with it, run in a process of its own).

NEWEST_PYTHON = os.environ.get("HLOSCOPE_NEWEST_XLA_PYTHON")
needs_newest_xla = pytest.mark.skipif(not NEWEST_PYTHON,
                                      reason="HLOSCOPE_NEWEST_XLA_PYTHON names no interpreter with the newest jaxlib")

_H = "HloModule m, is_scheduled=true\n\n"
_NEG = "neg {\n  x = f32[8] parameter(0)\n  ROOT y = f32[8] negate(x)\n}\n\n"
_ADD2 = "add2 {\n  x = f32[8] parameter(0)\n  z = f32[8] parameter(1)\n  ROOT y = f32[8] add(x, z)\n}\n\n"
# Instructions whose names meet the names XLA takes for the async sugar's wrapped computation.
_TAKEN = "  async_param.1 = f32[8] negate(p)\n  async_param = f32[8] negate(p)\n  call.1 = f32[8] negate(p)\n"


def _sugar(body: str) -> str:
    # Unscheduled: the newest XLA's schedule check aborts on a wrapped computation whose
    # parameters it adds after reading the start.
    return ("HloModule m\n\n" + _NEG + _ADD2 + "ENTRY e {\n  p = f32[8] parameter(0)\n  q = f32[8] parameter(1)\n" + _TAKEN
            + body + "\n}\n")


NEWEST_FORMS = {
    # `t#i`: a get-tuple-element named `t_i` before its first user, one per path; a written
    # name it takes is renamed.
    "elements": _H + "ENTRY e {\n  p = (f32[8], (f32[4], s32[])) parameter(0)\n  a = f32[8] negate(p#0)\n"
                     "  p_0 = f32[8] add(a, p#0)\n  b = f32[4] negate(p#1#0)\n  c = f32[4] negate(p # 1 # 0)\n"
                     "  ROOT t = (f32[8], f32[4], s32[], f32[8]) tuple(p_0, b, p#1#1, f32[8] p#0)\n}\n",
    "elements in two computations": _H + "f {\n  p = (f32[8], f32[8]) parameter(0)\n  ROOT r = f32[8] add(p#0, p#1)\n}"
                                         "\n\nENTRY e {\n  p = (f32[8], f32[8]) parameter(0)\n"
                                         "  c = f32[8] call(p), to_apply=f\n  ROOT r = f32[8] add(c, p#0)\n}\n",
    "elements among nested operands": _H + "ENTRY e {\n  t = (f32[8], f32[8], f32[8]) parameter(0)\n"
                                           "  ROOT r = f32[8] add(t#2, f32[8] add(t#1, f32[8] negate(t#0)))\n}\n",
    "elements after nested operands": _H + "ENTRY e {\n  t = (f32[8], f32[8]) parameter(0)\n"
                                           "  ROOT r = f32[8] add(f32[8] negate(t#0), t#1)\n}\n",
    "elements of elements": _H + "ENTRY e {\n  t = ((f32[8], f32[8])) parameter(0)\n"
                                 "  a = (f32[8], f32[8]) get-tuple-element(t), index=0\n"
                                 "  ROOT r = f32[8] add(a#1, t#0#1)\n}\n",
    "elements in an inline computation": _H + "ENTRY e {\n  t = (f32[8], f32[8]) parameter(0)\n"
                                              "  ROOT r = f32[8] call(t), to_apply={\n"
                                              "    q = (f32[8], f32[8]) parameter(0)\n"
                                              "    ROOT s = f32[8] add(q#0, q#01)\n  }\n}\n",
    "element of a sugared start": _sugar("  t = (f32[8], f32[8]) tuple(p, q)\n"
                                         "  s = ((f32[8]), f32[8], s32[]) call-start(t#0), to_apply=neg\n"
                                         "  ROOT d = f32[8] call-done(s)"),
    # Async sugar: the newest XLA gives the wrapped computation the parameters its start's shape
    # lists (at least the wrapped op's arity), a callee takes, or an async-update lists.
    "sugar as printed": _sugar("  s = ((f32[8]), f32[8], s32[]) call-start(p), to_apply=neg\n"
                               "  ROOT d = f32[8] call-done(s)"),
    "sugar shape lists more": _sugar("  s = ((f32[8], f32[8]), f32[8], s32[]) call-start(p), to_apply=neg\n"
                                     "  ROOT d = f32[8] call-done(s)"),
    "sugar callee takes more": _sugar("  s = ((f32[8]), f32[8], s32[]) call-start(p), to_apply=add2\n"
                                      "  ROOT d = f32[8] call-done(s)"),
    "sugar update lists more": _sugar("  s = ((f32[8]), f32[8], s32[]) call-start(p), to_apply=neg\n"
                                      "  u = ((f32[8], f32[8]), f32[8], s32[]) call-update(s)\n"
                                      "  ROOT d = f32[8] call-done(u)"),
    "sugar arity": _sugar("  s = ((f32[8]), f32[], s32[]) dot-start(p), lhs_contracting_dims={0}, "
                          "rhs_contracting_dims={0}\n  ROOT d = f32[] dot-done(s)"),
    "sugar of a variadic op": _sugar("  s = ((f32[8]), (f32[8], f32[8]), s32[]) tuple-start(p, q)\n"
                                     "  ROOT d = (f32[8], f32[8]) tuple-done(s)"),
    # Names with a colon glued to them.
    "colon names": "HloModule m\n\nadd: {\n  a: = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                   "  ROOT c: = f32[] add(a:, b)\n}\n\nENTRY e: {\n  p: = f32[8] parameter(0)\n"
                   "  ROOT: = f32[8] all-reduce(p:), replica_groups={}, to_apply=add:\n}\n",
}


@needs_newest_xla
@pytest.mark.parametrize("name", sorted(NEWEST_FORMS))
def test_newest_forms_match_the_newest_xla(name):
    """hloscope's computations, instructions (names, order), opcodes and operands are the
    newest jaxlib's, read at once or lazily."""
    from .xla_reference import xla_parse_with

    text = NEWEST_FORMS[name]
    reference = xla_parse_with(NEWEST_PYTHON, text)
    assert _first_difference(text, reference) is None
    assert _first_difference(text, reference, lazy=True) is None


NEWEST_DUMPS = sorted(p.parent for p in (FIXTURES / "jax-0.12").glob("*/after_optimizations.txt.gz"))
"""The dumped `after_optimizations.txt` of the newest jax's fixtures: operands `%x#0`."""


def test_the_newest_dumps_write_tuple_elements_compactly():
    from .xla_reference import read_dump

    assert NEWEST_DUMPS
    assert all(re.search(r"%[\w.\-]+#\d", read_dump(p / "after_optimizations.txt.gz")) for p in NEWEST_DUMPS)


@needs_newest_xla
@pytest.mark.parametrize("path", NEWEST_DUMPS, ids=lambda p: p.name)
def test_newest_dumps_match_the_newest_xla(path):
    from .xla_reference import read_dump, xla_parse_with

    text = read_dump(path / "after_optimizations.txt.gz")
    reference = xla_parse_with(NEWEST_PYTHON, text)
    assert _first_difference(text, reference) is None
    assert _first_difference(text, reference, lazy=True) is None
