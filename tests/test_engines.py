"""The two engines build the same IR: the fast one (grammars/hlo.lark + hlo_fast.lark, the
default) and the reference one (`engine="lark"`: the specification grammars/hlo.lark alone,
every instruction through the grammar's rules).

Compared on every fixture and on every corpus module the fast engine accepts: each module's
name; each computation's name, is_entry and text_name; each instruction's name, opcode,
shape, operand names, attributes (as items), literal, parameter number, is_root and line.
Computations written inline get an id-based text name (`_ inline <id>`), which is compared
with the id left out. The whole corpus is compared by default (it takes well under a
minute); `HLOSCOPE_FULL_CORPUS=1` is accepted too, for symmetry with a sampled run, and
`HLOSCOPE_FULL_CORPUS=0` compares a fixed sample (every 10th module) only.
"""

from __future__ import annotations

import os
import re

import pytest

import hloscope

from .conftest import corpus_rows, fixture_dirs, fixture_ids

_INLINE_ID = re.compile(r"_ inline \d+")


def _plain(value) -> str:
    return _INLINE_ID.sub("_ inline", str(value))


def _ir(modules) -> list:
    return [
        (m.name, [
            (c.name, c.is_entry, _plain(c.text_name), [
                (i.name, i.opcode, str(i.shape), [o.name for o in i.operands],
                 [(k, _plain(v)) for k, v in i.attributes.items()], i.literal, i.parameter_number, i.is_root,
                 i.line)
                for i in c.instructions])
            for c in m.computations])
        for m in modules
    ]


def _read(text: str, engine: str):
    """The IR of `text` as `engine` reads it, or ("error", line) when it rejects it."""
    try:
        return _ir(hloscope.parse_all(text, engine=engine))
    except hloscope.HloSyntaxError as e:
        return ("error", e.line)


def _first_difference(a: list, b: list) -> str:
    for (name, comps_a), (_, comps_b) in zip(a, b):
        for ca, cb in zip(comps_a, comps_b):
            if ca[:3] != cb[:3]:
                return f"{name}: computation {ca[:3]} vs {cb[:3]}"
            for ia, ib in zip(ca[3], cb[3]):
                if ia != ib:
                    return f"{name}/{ca[0]}: fast {ia} vs lark {ib}"
            if len(ca[3]) != len(cb[3]):
                return f"{name}/{ca[0]}: {len(ca[3])} vs {len(cb[3])} instructions"
        if len(comps_a) != len(comps_b):
            return f"{name}: {len(comps_a)} vs {len(comps_b)} computations"
    return f"{len(a)} vs {len(b)} modules" if len(a) != len(b) else "module names differ"


@pytest.mark.parametrize("path", fixture_dirs(), ids=fixture_ids())
def test_fixture_engines_build_the_same_ir(path):
    text = (path / "module.hlo.txt").read_text()
    fast, reference = _read(text, "fast"), _read(text, "lark")
    assert fast[0] != "error", fast
    assert fast == reference, _first_difference(fast, reference)
    assert sum(len(c[3]) for m in fast for c in m[1]) > 100


@pytest.mark.corpus
def test_corpus_engines_build_the_same_ir():
    rows = corpus_rows()
    if os.environ.get("HLOSCOPE_FULL_CORPUS", "1") == "0":
        rows = rows[::10]
    compared, differences = 0, {}
    for row in rows:
        fast = _read(row["text"], "fast")
        if fast[0] == "error":
            continue
        compared += 1
        reference = _read(row["text"], "lark")
        if reference != fast:
            differences[row["path"]] = (f"lark rejects it at line {reference[1]}" if reference[0] == "error"
                                        else _first_difference(fast, reference))
    print(f"\nthe engines agree on {compared - len(differences)} of {compared} corpus modules the fast one accepts")
    assert compared > 0.9 * len(rows)
    assert not differences, "\n".join(f"{p}: {d}" for p, d in list(differences.items())[:20])


@pytest.mark.corpus
def test_corpus_rejections_agree():
    """A corpus module the fast engine rejects, the reference one rejects at the same line."""
    rejected = 0
    for row in corpus_rows():
        fast = _read(row["text"], "fast")
        if fast[0] != "error":
            continue
        rejected += 1
        assert _read(row["text"], "lark") == fast, row["path"]
    assert rejected


_HEAD = "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n"

BROKEN = {
    "undefined operand": _HEAD + "  ROOT q = f32[] add(p, nope)\n}\n",
    "unclosed operation": _HEAD + "  ROOT q = f32[] negate(p\n}\n",
    "unknown element type": "HloModule m\nENTRY e {\n  p = g32[] parameter(0)\n}\n",
    "two roots": "HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n  ROOT q = f32[] parameter(1)\n}\n",
    "empty": "",
    "defined twice": _HEAD + "  p = f32[] parameter(1)\n  ROOT q = f32[] negate(p)\n}\n",
    "unbalanced attribute": _HEAD + "  ROOT q = f32[2] broadcast(p), dimensions={\n}\n",
    "missing closing brace": _HEAD + "  ROOT q = f32[] negate(p)\n",
    "undefined control predecessor": _HEAD + "  ROOT q = f32[] negate(p), control-predecessors={r}\n}\n",
    "unbalanced literal": _HEAD + "  ROOT c = f32[2] constant({1, 2}})\n}\n",
    "two entries": "HloModule m\nENTRY a {\n  ROOT p = f32[] parameter(0)\n}\nENTRY b {\n  ROOT p = f32[] parameter(0)\n}\n",
}


@pytest.mark.parametrize("text", BROKEN.values(), ids=BROKEN.keys())
def test_both_engines_reject_broken_modules_at_the_same_place(text):
    errors = []
    for engine in ("fast", "lark"):
        with pytest.raises(hloscope.HloSyntaxError) as info:
            hloscope.parse(text, "bad.hlo", engine=engine)
        errors.append((info.value.line, info.value.column))
    assert errors[0] == errors[1]


def test_engine_names():
    text = _HEAD + "}\n"
    assert hloscope.parse(text, engine="lark").entry.root.name == "p"
    with pytest.raises(ValueError):
        hloscope.parse(text, engine="earley")
