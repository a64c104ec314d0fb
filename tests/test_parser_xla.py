"""hloscope's view of a module is XLA's: compared with XLA's C++ parser on real HLO.

For every computation present in the text: the same computations, the same instructions in
the same order, the same opcodes (async sugar resolved through the opcode table) and the
same operand names. XLA also synthesizes `async_wrapped` computations for async sugar; those
are not in the text and are not compared.
"""

from __future__ import annotations

import re

import pytest

import hloscope
from hloscope.ir import opcodes

from .conftest import corpus_rows, fixture_dirs, fixture_ids, needs_xla

# Accepted corpus modules hloscope reads differently from XLA, each with its reason.
KNOWN_DIFFERENCES: set[str] = set()


def _ours(module) -> dict[str, list]:
    return {
        c.name: [(i.name, opcodes.info(i.opcode).canonical, [o.name for o in i.operands]) for i in c.instructions]
        for c in module.computations
    }


def _first_difference(text: str) -> str | None:
    """None when hloscope and XLA agree on `text`, else a description of the first difference."""
    from .xla_reference import xla_parse

    try:
        modules = hloscope.parse_all(text)
    except hloscope.HloSyntaxError as e:
        return f"hloscope rejects it: {e.format().splitlines()[0]}"
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
def test_corpus_matches_xla():
    needs_xla()
    rows = [r for r in corpus_rows() if r["accepted_by_xla"]]
    differences = {}
    for row in rows:
        diff = _first_difference(row["text"])
        if diff is not None and row["path"] not in KNOWN_DIFFERENCES:
            differences.setdefault(row["path"], diff)
    agreed = len(rows) - len(differences)
    print(f"\nhloscope agrees with XLA's parser on {agreed} of {len(rows)} accepted corpus modules")
    assert not differences, "\n".join(f"{p}: {d}" for p, d in list(differences.items())[:20])


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
