"""Parser behaviour on small inline modules: structure, names, errors."""

from __future__ import annotations

import re

import pytest

import hloscope
from hloscope.speed.lazy import read_all
from hloscope.ir import opcodes

SMALL = """HloModule small, is_scheduled=true, entry_computation_layout={(f32[4]{0})->f32[]}

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT sum = f32[] add(x, y)
}

ENTRY %main (p: f32[4]) -> f32[] {
  %p = f32[4]{0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[4]{0} %p, f32[] %zero), dimensions={0}, to_apply=%add, metadata={op_name="jit(f)/reduce_sum" source_file="f.py" source_line=3}
}
"""


def test_structure_and_names():
    m = hloscope.parse(SMALL)
    assert m.name == "small" and m.is_scheduled
    assert [c.name for c in m.computations] == ["add", "main"]
    assert m.entry.name == "main" and m.entry.is_entry and not m.computation("add").is_entry
    r = m.entry.root
    assert (r.name, r.opcode, [o.name for o in r.operands]) == ("r", "reduce", ["p", "zero"])
    assert r.called_computations == [m.computation("add")]
    assert r.attributes.decoded("dimensions") == (0,)
    assert r.op_name == "jit(f)/reduce_sum" and r.source == "f.py:3"
    assert m.entry.instruction("p").parameter_number == 0
    assert m.entry.instruction("zero").literal == "0"
    assert m.entry.instruction("p").users == [r]


def test_short_form_nested_and_shapeless_operands():
    m = hloscope.parse("""
ENTRY e {
  a = f32[2] parameter(0)
  ROOT t = tuple(a, f32[2] negate(add(a, a)))
}""")
    assert m.name == "module_e"
    assert [i.name for i in m.entry.instructions] == ["a", "add.anon", "negate.anon", "t"]
    assert [o.name for o in m.entry.root.operands] == ["a", "negate.anon"]
    assert m.entry.root.shape.element_type == "unknown"


def test_repeated_names_are_renamed_like_xla():
    m = hloscope.parse("""HloModule m
c {
  x = f32[] parameter(0)
  ROOT x.1 = f32[] negate(x)
}
ENTRY main {
  x = f32[] parameter(0)
  b = f32[] negate(x)
  b.0 = f32[] negate(b)
  ROOT c = f32[] call(b.0), to_apply=c
}""")
    names = [i.name for c in m.computations for i in c.instructions]
    # The second `x` takes the next free suffix after the `x.1` already taken; `b.0`
    # collides with `b` (suffix 0) and becomes `b.1`.
    assert names == ["x", "x.1", "x.2", "b", "b.1", "c"]
    assert m.entry.root.called_computations[0].name == "c"


def test_inline_computation_in_attribute():
    m = hloscope.parse("""HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply={
    a = f32[] parameter(0)
    b = f32[] parameter(1)
    ROOT c = f32[] add(a, b)
  }
}""")
    assert [c.name for c in m.computations] == ["_", "main"]
    assert m.entry.root.called_computations == [m.computations[0]]


def test_multiple_modules_in_one_text():
    text = "HloModule a\nENTRY e {\n ROOT p = f32[] parameter(0)\n}\nHloModule b\nENTRY e {\n ROOT q = s32[] parameter(0)\n}\n"
    mods = hloscope.parse_all(text)
    assert [m.name for m in mods] == ["a", "b"]
    assert mods[1].entry.root.shape.element_type == "s32"


def test_unknown_opcode_and_attribute_are_kept():
    m = hloscope.parse("""ENTRY e {
  p = f32[8] parameter(0)
  ROOT q = f32[8] frobnicate-start(p), shiny_new_attr={a=[1,2] b="x"}, other=42
}""")
    q = m.entry.root
    assert q.opcode == "frobnicate-start" and not opcodes.info(q.opcode).known
    assert q.attributes["shiny_new_attr"] == '{a=[1,2] b="x"}' and q.attributes["other"] == "42"


def test_async_sugar_resolves_through_the_table():
    assert opcodes.info("reduce-scatter-start").canonical == "async-start"
    assert opcodes.info("reduce-scatter-start").collective == "reduce-scatter"
    assert opcodes.info("all-gather-start").canonical == "all-gather-start"
    assert opcodes.info("call-done").canonical == "async-done"
    assert not opcodes.info("all-gather-update").known  # XLA rejects it too


def test_accelerator_syntax():
    m = hloscope.parse("""HloModule tpu, is_scheduled=true
ENTRY e {
  p = bf16[256,1024]{1,0:T(8,128)(2,1)S(1)} parameter(0), sharding={devices=[2,1]0,1}
  ag = (bf16[256,1024]{1,0:T(8,128)(2,1)}, bf16[512,1024]{1,0:T(8,128)(2,1)}) all-gather-start(p), channel_id=1, replica_groups=[1,2]<=[2], dimensions={0}, backend_config={"collective_backend_config":{"is_sync":false}}
  ROOT d = bf16[512,1024]{1,0:T(8,128)(2,1)} all-gather-done(ag)
}""")
    p = m.entry.instruction("p")
    assert p.shape.layout.tiles == ((8, 128), (2, 1)) and p.shape.memory_space == 1
    ag = m.entry.instruction("ag")
    assert ag.attributes.decoded("replica_groups").groups == ((0, 1),)
    assert ag.attributes.decoded("backend_config") == {"collective_backend_config": {"is_sync": False}}


@pytest.mark.parametrize(
    "text, line, column, fragment",
    [
        ("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT q = f32[] add(p, nope)\n}\n", 4, 25,
         "instruction 'nope' is not defined"),
        ("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT q = f32[] negate(p\n}\n", 5, 1, "unexpected"),
        ("HloModule m\nENTRY e {\n  p = g32[] parameter(0)\n}\n", 3, 7, "unknown element type"),
        ("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n  ROOT q = f32[] parameter(1)\n}\n", 4, 1,
         "only one ROOT"),
        ("", 1, 1, "unexpected end of file"),
    ],
)
def test_syntax_errors_name_line_and_column(text, line, column, fragment):
    with pytest.raises(hloscope.HloSyntaxError) as info:
        hloscope.parse(text, "bad.hlo")
    e = info.value
    assert (e.line, e.column) == (line, column) and fragment in e.message
    first, source, caret = e.format().split("\n")
    assert first.startswith(f"bad.hlo:{line}:{column}: error: ")
    assert caret == " " * (column - 1) + "^"


def test_lazy_bodies_read_the_same_module():
    """parse(lazy=True) leaves printed bodies unread until used; what it reads is the same."""
    from .conftest import fixture_dirs

    for path in fixture_dirs():
        text = (path / "module.hlo.txt").read_text()
        eager, lazy = hloscope.parse(text), hloscope.parse(text, lazy=True)
        assert not all(getattr(c, "is_read", True) for c in lazy.computations), path.name
        assert [c.name for c in lazy.computations] == [c.name for c in eager.computations]
        for a, b in zip(eager.computations, lazy.computations):
            assert [(i.name, i.opcode, i.shape, [o.name for o in i.operands], dict(i.attributes))
                    for i in a.instructions] == \
                   [(i.name, i.opcode, i.shape, [o.name for o in i.operands], dict(i.attributes))
                    for i in b.instructions], (path.name, a.name)


def _as_read(comp) -> list[tuple]:
    """What a read finds of a computation's instructions (an inline callee's name, made of
    an object's id, left out)."""
    import re

    def unnamed(pieces):
        return [re.sub(r" inline \d+", " inline", str(piece)) for piece in pieces]

    return [(i.name, i.opcode, i.shape.text, [o.name for o in i.operands], unnamed(i.attributes.written()), i.line,
             [u.name for u in i.users], i.is_root, i.literal, i.parameter_number, unnamed(i.called_computation_names))
            for i in comp.instructions] + [comp.root.name]


def test_bodies_read_as_copies_are_what_a_read_finds():
    """`Module.read_all` reads a body that repeats one read before, up to the names of its
    instructions (and metadata values), as a copy of it (hloscope.speed.copies): every
    instruction, operand, user, line, attribute and callee is what the full parse finds, on
    the fixtures and the corpus, and a verdict (an error) is the full parse's."""
    from hloscope.ir.structure import structure

    from .conftest import corpus_texts_or_none, fixture_texts

    copies = own_metadata = 0
    for text in fixture_texts() + corpus_texts_or_none():
        try:
            eager = hloscope.parse_all(text)
        except hloscope.HloSyntaxError as e:
            with pytest.raises(hloscope.HloSyntaxError) as lazily:
                for m in hloscope.parse_all(text, lazy=True):
                    read_all(m)
            assert (lazily.value.message, lazily.value.line, lazily.value.column) == (e.message, e.line, e.column)
            continue
        lazy = hloscope.parse_all(text, lazy=True)
        for a, b in zip(eager, lazy):
            read_all(b)
            for y in b.computations:
                # Alike but for the computations they call, each its own (the cost prices a
                # copy that calls any by its own structure, callees included). First: reading
                # attributes back as text (`_as_read`) cuts them apart.
                if getattr(y, "copy_of", None) is not None:
                    assert structure(y, _any_callee) == structure(getattr(y, "copy_of", None), _any_callee), (a.name, y.name)
            for x, y in zip(a.computations, b.computations):
                assert _as_read(x) == _as_read(y), (a.name, x.name)
                if getattr(y, "copy_of", None) is not None:
                    copies += 1
                    assert _as_read(getattr(y, "copy_of", None)) == _as_read(a.computation(getattr(y, "copy_of", None).name))
                recipe = getattr(y, "recipe", None)
                own_metadata += recipe is not None and getattr(y, "copy_of", None) is not recipe.computation
    assert copies > 100  # the fixtures' unrolled layers repeat their fusions
    assert own_metadata > 100  # and many differ from the first in their metadata alone


def _any_callee(_):
    return None


_REPEATED = """HloModule m

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

%f.1 (p: f32[4]) -> f32[4] {
  %p.1 = f32[4]{0} parameter(0)
  %n.1 = f32[4]{0} negate(f32[4]{0} %p.1), metadata={op_name="neg"}
  ROOT %m.1 = f32[4]{0} multiply(f32[4]{0} %n.1, f32[4]{0} %p.1)
}

%f.2 (p: f32[4]) -> f32[4] {
  %p.2 = f32[4]{0} parameter(0)
  %n.2 = f32[4]{0} negate(f32[4]{0} %p.2), metadata={op_name="neg"}
  ROOT %m.2 = f32[4]{0} multiply(f32[4]{0} %n.2, f32[4]{0} %p.2)
}

%f.3 (p: f32[4]) -> f32[4] {
  %p.3 = f32[4]{0} parameter(0)
  %n.3 = f32[4]{0} negate(f32[4]{0} %p.3), metadata={op_name="neg"}
  ROOT %m.3 = f32[4]{0} multiply(f32[4]{0} %n.3, f32[4]{0} %n.3)
}

%f.4 (p: f32[4]) -> f32[] {
  %p.4 = f32[4]{0} parameter(0)
  %z.4 = f32[] constant(0)
  ROOT %r.4 = f32[] reduce(f32[4]{0} %p.4, f32[] %z.4), dimensions={0}, to_apply=%add
}

%f.5 (p: f32[4]) -> f32[] {
  %p.5 = f32[4]{0} parameter(0)
  %z.5 = f32[] constant(0)
  ROOT %r.5 = f32[] reduce(f32[4]{0} %p.5, f32[] %z.5), dimensions={0}, to_apply=%add
}

%max (x: f32[], y: f32[]) -> f32[] {
  %x.m = f32[] parameter(0)
  %y.m = f32[] parameter(1)
  ROOT %s.m = f32[] maximum(f32[] %x.m, f32[] %y.m)
}

%f.6 (p: f32[4]) -> f32[] {
  %p.6 = f32[4]{0} parameter(0)
  %z.6 = f32[] constant(0)
  ROOT %r.6 = f32[] reduce(f32[4]{0} %p.6, f32[] %z.6), dimensions={0}, to_apply=%max
}

%f.7 (p: f32[4]) -> f32[4] {
  %p.7 = f32[4]{0} parameter(0)
  ROOT %n.7 = f32[4]{0} negate(f32[4]{0} %p.7), control-predecessors={%p.7}
}

%f.8 (p: f32[4]) -> f32[4] {
  %p.8 = f32[4]{0} parameter(0)
  ROOT %n.8 = f32[4]{0} negate(f32[4]{0} %p.8), control-predecessors={%p.8}
}

ENTRY %e (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  %b = f32[4]{0} fusion(f32[4]{0} %a), kind=kLoop, calls=%f.1
  %c = f32[4]{0} fusion(f32[4]{0} %b), kind=kLoop, calls=%f.2
  %d = f32[4]{0} fusion(f32[4]{0} %c), kind=kLoop, calls=%f.3
  %s4 = f32[] fusion(f32[4]{0} %d), kind=kInput, calls=%f.4
  %s5 = f32[] fusion(f32[4]{0} %d), kind=kInput, calls=%f.5
  %s6 = f32[] fusion(f32[4]{0} %d), kind=kInput, calls=%f.6
  %g = f32[4]{0} fusion(f32[4]{0} %d), kind=kLoop, calls=%f.7
  %h = f32[4]{0} fusion(f32[4]{0} %g), kind=kLoop, calls=%f.8
  ROOT %o = f32[4]{0} add(f32[4]{0} %d, f32[4]{0} %d)
}
"""


def test_a_repeat_up_to_names_is_read_as_a_copy_and_nothing_else_is():
    """f.2 repeats f.1 name for name: a copy. f.3 writes `%n.3` where f.1 writes `%p.1` (the
    names do not stand one for one): read. f.5 and f.6 repeat f.4, whose reduce names its
    callee: copies, each calling its own (f.6 the maximum, not f.4's adder). f.8 repeats f.7,
    whose attributes name an instruction (a control predecessor): read."""
    m = hloscope.parse(_REPEATED, lazy=True)
    read_all(m)
    copied = {c.name: getattr(c, "copy_of", None).name for c in m.computations if getattr(c, "copy_of", None) is not None}
    assert copied == {"f.2": "f.1", "f.5": "f.4", "f.6": "f.4"}
    assert [c.name for c in m.computation("f.6").root.called_computations] == ["max"]
    eager = hloscope.parse(_REPEATED)
    for comp in m.computations:
        assert _as_read(comp) == _as_read(eager.computation(comp.name)), comp.name


def test_a_known_copy_is_made_only_when_its_instructions_are_asked_for():
    """After `read_all`, f.2 is known to repeat f.1 but is not made yet: what it holds is
    asked of f.1 (`may_contain`), and its instructions, made when first asked for, are the
    full parse's."""
    m = hloscope.parse(_REPEATED, lazy=True)
    read_all(m)
    copy, original = m.computation("f.2"), m.computation("f.1")
    assert getattr(copy, "copy_of", None) is original and getattr(original, "is_read", True) and not getattr(copy, "is_read", True)
    assert copy.holds(("negate",)) and not copy.holds(("add", "reduce"))
    read_all(m)  # a second pass leaves it as it is
    assert not getattr(copy, "is_read", True)
    assert _as_read(copy) == _as_read(hloscope.parse(_REPEATED).computation("f.2"))
    assert getattr(copy, "is_read", True) and getattr(copy, "copy_of", None) is original


def _reports_the_full_parse_error(text: str, how: str) -> None:
    """A lazily parsed `text` reports the full parse's error, whether its bodies are all read
    in text order (`read_all`) or checked when one is first read."""
    with pytest.raises(hloscope.HloSyntaxError) as full:
        hloscope.parse(text)
    lazy = hloscope.parse(text, lazy=True)
    with pytest.raises(hloscope.HloSyntaxError) as got:
        read_all(lazy) if how == "read_all" else lazy.entry.instructions
    assert (got.value.message, got.value.line, got.value.column) == (full.value.message, full.value.line,
                                                                      full.value.column)


@pytest.mark.parametrize("error", ["header", "undefined"])
@pytest.mark.parametrize("how", ["read_all", "checked at the first read"])
def test_a_repeat_with_an_error_reports_it(error, how):
    """A body repeating one read before, but for its header's result (f32[8] here, which
    its root is not) or for a name that does not stand for the original's (an operand not
    defined), reports the full parse's error: whether the module's bodies are all read in
    text order, or checked (`_Verdict`, which passes over copies) when one is first read."""
    if error == "header":
        text = _REPEATED.replace("%f.2 (p: f32[4]) -> f32[4]", "%f.2 (p: f32[4]) -> f32[8]")
    else:
        text = _REPEATED.replace("negate(f32[4]{0} %p.2)", "negate(f32[4]{0} %q.2)")
    _reports_the_full_parse_error(text, how)


def _layer(k: int, layer: str, before: str = "", op_name: str | None = None) -> str:
    """A fused body as a model's layer prints it: its metadata names the layer."""
    neg = op_name or f"jit(step)/{layer}/neg"
    return f"""
%f.{k} (p: f32[4,8]) -> f32[4] {{
  %p.{k} = f32[4,8]{{1,0}} parameter(0)
  %n.{k} = f32[4,8]{{1,0}} negate(f32[4,8]{{1,0}} %p.{k}){before}, metadata={{op_name="{neg}" source_file="model.py" source_line=10}}
  %z.{k} = f32[] constant(0)
  ROOT %r.{k} = f32[4]{{0}} reduce(f32[4,8]{{1,0}} %n.{k}, f32[] %z.{k}), dimensions={{1}}, to_apply=%add, metadata={{op_name="jit(step)/{layer}/sum" source_file="model.py" source_line=11}}
}}
"""


_QUOTED = r', frontend_attributes={note="a, metadata={op_name=\"b\"} c"}'
"""An attribute whose string writes what looks like a metadata value."""

_LAYERS = ("HloModule m\n\n%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
           "  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(f32[] %x, f32[] %y)\n}\n"
           + _layer(1, "layers_0") + _layer(2, "layers_1") + _layer(3, "layers_1")
           + _layer(4, "layers_2", op_name="jit(step)/layers_2/%neg")
           + _layer(5, "layers_0", before=', frontend_attributes={k="v"}')
           + _layer(6, "layers_3", before=', frontend_attributes={k="v"}')
           + _layer(7, "layers_0", before=_QUOTED) + _layer(8, "layers_4", before=_QUOTED)
           + "\nENTRY %e (a: f32[4,8]) -> f32[4] {\n  %a = f32[4,8]{1,0} parameter(0)\n"
           + "".join(f"  %fusion.{k} = f32[4]{{0}} fusion(f32[4,8]{{1,0}} %a), kind=kInput, calls=%f.{k}\n"
                     for k in range(1, 9))
           + "  ROOT %w = f32[4]{0} add(f32[4]{0} %fusion.1, f32[4]{0} %fusion.2)\n}\n")


def test_a_repeat_up_to_names_and_metadata_writes_its_own_metadata():
    """A model's layers differ in their metadata alone. f.2 repeats f.1 up to names and
    metadata: a copy of it (`recipe`) writing its own metadata, so not `copy_of` f.1 (what
    analyses ask of f.1 may depend on the metadata). f.3 repeats f.2 up to names: the same
    as f.2. f.4 writes a `%` in its metadata, f.8 a metadata value inside a string (its
    other metadata as f.7's): read. f.6, whose metadata follows a quoted string, repeats
    f.5. Every body is what the full parse reads, and XLA's parser takes the module."""
    from .test_bad_input import xla_place

    assert xla_place(_LAYERS) is None
    m = hloscope.parse(_LAYERS, lazy=True)
    read_all(m)

    def recipe(name):
        found = getattr(m.computation(name), "recipe", None)
        return found.computation.name if found is not None else None

    assert {c.name: recipe(c.name) for c in m.computations if recipe(c.name)} == {"f.2": "f.1", "f.3": "f.1", "f.6": "f.5"}
    copy_of = {c.name: getattr(c, "copy_of", None) for c in m.computations}
    assert copy_of["f.2"] is None and copy_of["f.6"] is None and copy_of["f.3"] is m.computation("f.2")
    assert not getattr(m.computation("f.3"), "is_read", True)  # made when asked for, as f.2
    assert m.computation("f.2").root.op_name == "jit(step)/layers_1/sum"
    eager = hloscope.parse(_LAYERS)
    for comp in m.computations:
        assert _as_read(comp) == _as_read(eager.computation(comp.name)), comp.name



@pytest.mark.parametrize("error", ["header", "undefined"])
@pytest.mark.parametrize("how", ["read_all", "checked at the first read"])
def test_a_repeat_up_to_metadata_with_an_error_reports_it(error, how):
    """f.9 repeats f.1 up to names and metadata, the second such repeat (f.2 the first), but
    for its header's result or an operand not defined: the full parse's error is reported,
    whether the bodies are all read in text order or checked (which reads f.1 again for
    it, as its copy)."""
    layer = _layer(9, "layers_5")
    if error == "header":
        broken = layer.replace("%f.9 (p: f32[4,8]) -> f32[4]", "%f.9 (p: f32[4,8]) -> f32[8]")
    else:
        broken = layer.replace("negate(f32[4,8]{1,0} %p.9)", "negate(f32[4,8]{1,0} %q.9)")
    text = _LAYERS.replace("\nENTRY %e", broken + "\nENTRY %e")
    _reports_the_full_parse_error(text, how)

def _outline_of(modules) -> list:
    """What a lazy parse found: each module's name, header, tables, and each computation's
    names, place, header and body span."""
    import re

    out = []
    for m in modules:
        out.append((m.name, m.attributes.written(), m.tables, m.entry.name))
        for c in m.computations:
            body = getattr(c, "body", None)
            span = (body.start, body.end, body.line, body.column) if body is not None else None
            text_name = re.sub(r" inline \d+", " inline", c.text_name)  # made of an object's id
            out.append((c.name, text_name, c.is_entry, c.line, c.signature, c.attributes.written(), getattr(c, "is_read", True), span))
    return out


_PRINTED_EDGES = {
    "entry on its own line": ("ENTRY %e", "ENTRY\n%e"),
    "a comment between two": ("\n\nENTRY %e", "\n\n// the entry\nENTRY %e"),
    "an attribute after a body": ("ROOT %s = f32[] add(f32[] %x, f32[] %y)\n}", "ROOT %s = f32[] add(f32[] %x, f32[] %y)\n}, execution_thread=\"main\""),
    "a header indented": ("\n%f.2 (p", "\n  %f.2 (p"),
    "blank lines with blanks": ("\n\n%f.3 (p", "\n  \n\t\n%f.3 (p"),
    "a name that starts with ENTRY": ("%f.4", "ENTRY_f.4"),
    "a computation after the entry": ("ROOT %o = f32[4]{0} add(f32[4]{0} %d, f32[4]{0} %d)\n}\n",
                                      ("ROOT %o = f32[4]{0} add(f32[4]{0} %d, f32[4]{0} %d)\n}\n\n"
                                       "%late (q: f32[]) -> f32[] {\n  ROOT %q = f32[] parameter(0)\n}\n")),
    "an error in a later header": ("%f.5 (p: f32[4]) -> f32[]", "%f.5 (p: f32[4]) -> f32[] junk"),
    # Bodies that repeat one the terminal matched, up to names, are taken without matching.
    "a copy under longer names": ("%p.2", "%a_much_longer_name-2.x"),
    "a copy whose name is no name": ("%n.2 = f32[4]{0} negate", "%2n = f32[4]{0} negate"),
    "a copy with a % that starts no name": ("negate(f32[4]{0} %p.2)", "negate(f32[4]{0} %)"),
    "a group closing on a line of its own": ('metadata={op_name="neg"}', 'metadata={op_name="neg"\n}'),
    "a copy with a header of its own": ("%f.2 (p: f32[4]) -> f32[4] {", "%f.2 (p: f32[4], q: s32[]) -> (f32[4]) {"),
    # A mistake inside a body, and one of form after it: the parser reads a body once the
    # token after it is found, so which is reported depends on where the second lies.
    "a body error, then a form error two later": (
        "negate(f32[4]{0} %p.1),", "negate(f32[4]{0} %nope),", "%f.4 (p: f32[4]) -> f32[]", "%f.4 (p: f32[4]) -> f32[] junk"),
    "a body error, then a form error next": (
        "negate(f32[4]{0} %p.1),", "negate(f32[4]{0} %nope),", "\n%f.2 (p", "\n@f.2 (p"),
    "two body errors": ("negate(f32[4]{0} %p.2)", "negate(f32[4]{0} %q.2)", "constant(0)\n  ROOT %r.5", "constant(x)\n  ROOT %r.5"),
    "a body error in the first computation": ("ROOT %s = f32[] add(f32[] %x, f32[] %y)", "ROOT %s = f32[] add(f32[] %x, f32[] %w)"),
}


def _edge_text(edge: str) -> str:
    text = _REPEATED
    replacements = _PRINTED_EDGES[edge]
    for old, new in zip(replacements[::2], replacements[1::2]):
        assert old in text
        text = text.replace(old, new, 1)
    return text


def _parsed(text: str, lazy: bool):
    """What a parse finds, lazily (its outline) or eagerly (every instruction as read); or
    its error, placed."""
    try:
        modules = hloscope.parse_all(text, lazy=lazy)
    except hloscope.HloSyntaxError as e:
        return (e.message, e.line, e.column)
    if lazy:
        return _outline_of(modules)
    return [(m.name, m.attributes.written(), m.tables, m.entry.name,
             [(c.name, c.text_name, c.is_entry, c.line, c.signature, c.attributes.written(), _as_read(c))
              for c in m.computations]) for m in modules]


@pytest.mark.parametrize("lazy", [True, False], ids=["lazy", "eager"])
@pytest.mark.parametrize("edge", sorted(_PRINTED_EDGES))
def test_computations_found_without_the_parser_are_what_it_finds(edge, lazy, monkeypatch):
    """A parse reads computations printed one after another without the parser, one match
    of the grammar's COMPUTATION terminal each (`parse_printed`): the module is the one the
    parser alone gives, or the error its error, on texts that leave that form. Eagerly,
    every instruction is the parser's too."""
    from hloscope.text import parser

    text = _edge_text(edge)
    found = _parsed(text, lazy)
    monkeypatch.setattr(parser, "parse_printed", lambda *args: None)
    assert found == _parsed(text, lazy)


@pytest.mark.parametrize(("edge", "on_the_line"), [
    ("a body error, then a form error two later", "%nope"),
    ("a body error, then a form error next", "@f.2"),
    ("two body errors", "%q.2"),
    ("a body error in the first computation", "%w"),
])
def test_the_edges_errors_are_where_the_parser_finds_them(edge, on_the_line, monkeypatch):
    """Those edges fail, by the parser alone, on the line the text put the mistake meant to
    be found first on (so the test above compares errors, not two modules)."""
    from hloscope.text import parser

    monkeypatch.setattr(parser, "parse_printed", lambda *args: None)
    text = _edge_text(edge)
    with pytest.raises(hloscope.HloSyntaxError) as e:
        hloscope.parse_all(text)
    assert on_the_line in text.splitlines()[e.value.line - 1]


@pytest.mark.parametrize("lazy", [True, False], ids=["lazy", "eager"])
def test_printed_computations_on_every_text_are_what_the_parser_finds(lazy, monkeypatch):
    """The same on the fixtures and the corpus, whole and as the tail part a split parse
    reads (`start="computations"`); most fixtures take the path (it is not left untried)."""
    from hloscope.text import parser

    from .conftest import corpus_texts_or_none, fixture_texts

    taken = 0
    real = parser.parse_printed

    def counting(*args):
        nonlocal taken
        found = real(*args)
        taken += found is not None
        return found

    texts = fixture_texts() + corpus_texts_or_none()
    monkeypatch.setattr(parser, "parse_printed", counting)
    found = [_parsed(text, lazy) for text in texts]
    assert taken >= len(fixture_texts())
    monkeypatch.setattr(parser, "parse_printed", lambda *args: None)
    for k, text in enumerate(texts):
        assert found[k] == _parsed(text, lazy), k


def test_lazy_body_errors_surface_on_use():
    text = "HloModule m\n\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT q = f32[] add(p, nope)\n}\n"
    m = hloscope.parse(text, lazy=True)
    with pytest.raises(hloscope.HloSyntaxError) as info:
        m.entry.instructions
    assert (info.value.line, info.value.column) == (5, 25)
    assert "instruction 'nope' is not defined" in info.value.message


def test_every_analysis_of_a_lazily_loaded_module_reports_an_unread_error(monkeypatch):
    """An error in a body no analysis reads is the full parse's verdict: each analysis
    reports it, the second as the first (`speed.lazy.settle`), after the first read some bodies."""
    from .conftest import FIXTURES

    monkeypatch.setenv("HLOSCOPE_CACHE", "0")
    text = (FIXTURES / "cpu_hsdp_accum2" / "module.hlo.txt").read_text()
    # A fused computation's body, late in the text: the analyses price or model it only
    # through its original, and the first unread body the check meets comes before it.
    at = text.rindex("ROOT", 0, text.index("\nENTRY"))
    broken = text[:at] + "ROOT %bad = f32[] add(f32[] %nope, f32[] %nope)" + text[text.index("\n", at):]
    with pytest.raises(hloscope.HloSyntaxError) as full:
        hloscope.parse_all(broken)
    (module,) = hloscope.parse_all(broken, lazy=True)
    for analysis in (module.collectives, module.collectives, module.memory):
        with pytest.raises(hloscope.HloSyntaxError) as lazily:
            analysis()
        assert (lazily.value.line, lazily.value.message) == (full.value.line, full.value.message)


def test_progress_is_reported_up_to_the_end():
    from .conftest import FIXTURES

    text = (FIXTURES / "cpu_fsdp" / "module.hlo.txt").read_text()
    seen: list[int] = []
    hloscope.parse_all(text, progress=seen.append)
    assert seen == sorted(seen) and len(seen) >= 10
    assert text[seen[-1] - 1] == "}" and not text[seen[-1]:].strip()


def test_the_inline_callee_scan_agrees_with_its_regex():
    """`has_inline_callee` is a faster way to run `INLINE_CALLEE.search`: same answers on
    every corpus text, and on spans of one."""
    from hloscope.text.references import INLINE_CALLEE, has_inline_callee

    from .conftest import corpus_texts_or_none, fixture_texts

    inline = "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[] reduce(p, p), dimensions={0}, to_apply={\n    a = f32[] parameter(0)\n    b = f32[] parameter(1)\n    ROOT s = f32[] add(a, b)\n  }\n}\n"
    found = 0
    for k, text in enumerate([inline] + fixture_texts() + corpus_texts_or_none()):
        expected = INLINE_CALLEE.search(text) is not None
        found += expected
        assert has_inline_callee(text) == expected, k
        half = len(text) // 2
        assert has_inline_callee(text, half) == (INLINE_CALLEE.search(text, half) is not None)
        assert has_inline_callee(text, 0, half) == (INLINE_CALLEE.search(text, 0, half) is not None)
    assert found  # inline computations were among the texts: both answers were seen


def test_the_body_cutter_cuts_where_the_instruction_terminal_does():
    """A printed body is cut by one cutter (`BodyText`): a line's parts and attributes in
    one match, where that match ends where the INSTRUCTION terminal does, else by the
    terminal. Cut by the grammar alone instead, every body of the corpus and the fixtures,
    and bodies whose instructions go on past their line, give the same instructions, texts
    and operations."""
    from hloscope.text.body import BodyText, split_instruction

    bodies = [getattr(comp, "body", None) for comp in _unread_computations()]
    edges = 0
    for old, new in _PAST_THEIR_LINE:
        text = _REPEATED.replace(old, new)
        assert text != _REPEATED
        start = text.index("{\n", text.index("ENTRY"))
        bodies.append(BodyText(text, start, text.index("\n}", start) + 2, text.count("\n", 0, start) + 1, 1))
    for body in bodies:
        pieces = _cut_by_the_grammar(body)
        edges += len(pieces) < body.text.count("\n") - 1  # some instruction took more than its line
        assert body.instruction_texts() == pieces
        by_grammar = _outcome(lambda: [split_instruction(*p) for p in pieces])
        assert _outcome(body.instructions) == by_grammar, body.text[:200]
        if by_grammar[0] != "error":
            assert body.operations() == [(name, opcode, [str(number)] if opcode == "parameter"
                                          else [o.lstrip("%") for o in operands])
                                         for name, opcode, _, operands, *_, number in by_grammar], body.text[:200]
    assert len(bodies) > 1000 and edges >= len(_PAST_THEIR_LINE)


# Instructions of the entry of `_REPEATED` made to go on past their line (see
# test_parser_xla.py): a group or string left open there, attributes after a comma, a value
# after blanks. Each next line looks like an instruction's start.
_PAST_THEIR_LINE = [
    ("ROOT %o = f32[4]{0} add(f32[4]{0} %d, f32[4]{0} %d)",
     'ROOT %o = f32[4]{0} add(f32[4]{0} %d, f32[4]{0} %d), backend_config={\n  %z = f32[] parameter(0)}'),
    ("ROOT %o = f32[4]{0} add(f32[4]{0} %d, f32[4]{0} %d)",
     'ROOT %o = f32[4]{0} add(f32[4]{0} %d, f32[4]{0} %d), backend_config="\n  %z = f32[] parameter(0)"'),
    ("%b = f32[4]{0} fusion(f32[4]{0} %a), kind=kLoop, calls=%f.1",
     "%b = f32[4]{0} fusion(f32[4]{0} %a), kind=kLoop,\n    calls=%f.1"),
    ("%b = f32[4]{0} fusion(f32[4]{0} %a), kind=kLoop, calls=%f.1",
     "%b = f32[4]{0} fusion(f32[4]{0} %a), kind=kLoop, calls=%f.1, sharding={devices=[1,1]\n  <=[1]}"),
]


def _cut_by_the_grammar(body) -> list[tuple[str, int, int]]:
    """(text, line, column) of each instruction of `body` as the grammar's BODY terminal cuts
    it: after its `{` line, `[ \\t]* INSTRUCTION [ \\t]*\\n` per instruction (each atomic, as
    in grammars/hlo_fast.lark), then `[ \\t]*}`."""
    from hloscope import grammar

    line = re.compile(r"(?>([ \t]*)(" + grammar.terminal_regex("INSTRUCTION") + r")[ \t]*\r?\n)")
    text = body.text
    pos, number = text.index("\n") + 1, body.line + 1
    pieces = []
    while (m := line.match(text, pos)) is not None:
        pieces.append((m.group(2), number, len(m.group(1)) + 1))
        number += text.count("\n", pos, m.end())
        pos = m.end()
    assert re.fullmatch(r"[ \t]*\}", text[pos:]), text[pos:pos + 200]
    return pieces


def _outcome(read) -> list | tuple:
    """What `read()` gives, as comparable tuples, or the error it raises."""
    try:
        return [(i.name, i.opcode, i.shape, i.operands, i.attributes.tail, i.line, i.is_root, i.literal,
                 i.parameter_number) for i in read()]
    except hloscope.HloSyntaxError as e:
        return ("error", e.line, e.column, e.message)


def _unread_computations():
    """Every computation left unread by a lazy parse of the corpus and the fixtures."""
    from .conftest import corpus_texts_or_none, fixture_texts

    texts = fixture_texts() + corpus_texts_or_none()
    for text in texts:
        try:
            modules = hloscope.parse_all(text, lazy=True)
        except hloscope.HloSyntaxError:
            continue
        yield from (c for m in modules for c in m.computations if not getattr(c, "is_read", True))


def test_attribute_lookups_agree_with_the_whole_split():
    """Attributes are cut off an instruction's tail only as far as a lookup needs. Whatever
    the lookups before, every answer (kept or not: `uncached`) and the final mapping equal
    those of cutting it whole, and `keys_written` names every computation attribute there."""
    from hloscope.ir.attributes import COMPUTATION_ATTRIBUTES, Attributes

    from .conftest import fixture_dirs

    asked = ("index", *COMPUTATION_ATTRIBUTES, "metadata", "kind", "backend_config",
             "output_to_operand_aliasing", "no_such_attribute")
    partial = 0
    for path in fixture_dirs():
        for comp in hloscope.load(path / "module.hlo.txt").computations:
            for inst in comp.instructions:
                tail = inst.attributes.tail
                if not tail:
                    continue
                whole = dict(Attributes((), tail))
                for k in range(0, len(asked), 4):
                    attrs = Attributes((), tail)
                    for name in asked[k:] + asked[:k]:
                        # A lookup that keeps nothing, before and after the one that does.
                        assert attrs.uncached(name) == whole.get(name), (inst.name, name)
                        assert attrs.get(name) == whole.get(name), (inst.name, name)
                        assert attrs.uncached(name) == whole.get(name), (inst.name, name)
                        assert (name in attrs) == (name in whole)
                        # Every computation attribute present is among those written.
                        written = attrs.keys_written(COMPUTATION_ATTRIBUTES)
                        assert {n for n in COMPUTATION_ATTRIBUTES if n in whole} <= set(written), inst.name
                        assert list(written) == [n for n in COMPUTATION_ATTRIBUTES if n in written]
                        partial += bool(attrs.tail)
                    assert dict(attrs) == whole and list(attrs) == list(whole)
    assert partial  # some lookups were answered before the whole tail was cut


@pytest.mark.parametrize("tail, expected", [
    (", kind=kLoop, calls=%fused.1, metadata={op_name=\"a\"}", ("fused.1",)),
    (", to_apply=%add, dimensions={0}", ("add",)),
    (", to_apply=\n  %add", ("add",)),
    (", calls=add:", ("add",)),
    (", kind=kLoop", ()),
    ("", ()),
    # Not told from the text alone: the caller cuts the attributes apart.
    (", metadata={op_name=\"x, calls=%y\"}, calls=%f", None),  # a quote before: a comma may be inside
    (", backend_config=\"\", calls=%f", None),
    (", condition=%c, body=%b", None),  # two computation attributes
    (", calls={%a, %b}", None),
    (", calls=%f{x}", None),  # the value goes on past its plain piece
    (", calls=%f 1", None),
    (", dimensions={0}, to_apply=%add", None),  # a bracket before it
])
def test_callees_in_tail_are_told_from_it_or_not_at_all(tail, expected):
    from hloscope.ir.attributes import callees_in_tail

    assert callees_in_tail(tail) == expected


def test_callees_in_tail_are_those_cutting_it_finds():
    """`callees_in_tail` answers without cutting a tail apart, or says it cannot: where it
    answers, on every instruction of the fixtures and the corpus, the answer is the one of
    cutting the tail with the grammar's ATTRIBUTE terminal."""
    from hloscope.ir.attributes import COMPUTATION_ATTRIBUTES, Attributes, callees_in_tail, decode_names

    from .conftest import corpus_texts_or_none, fixture_texts

    told = cut = 0
    for text in fixture_texts() + corpus_texts_or_none():
        try:
            modules = hloscope.parse_all(text)
        except hloscope.HloSyntaxError:
            continue
        for inst in (i for m in modules for c in m.computations for i in c.instructions):
            tail = inst.attributes.tail
            if not tail:
                continue
            quick = callees_in_tail(tail)
            if quick is None:
                cut += 1
                continue
            told += bool(quick)
            attrs = Attributes((), tail)
            assert quick == tuple(name for key in COMPUTATION_ATTRIBUTES if (value := attrs.get(key)) is not None
                                  for name in decode_names(value)), inst.name
    assert told > 1000 and cut > 0


def test_a_peeked_instruction_is_the_one_a_read_gives():
    """An unread body's text (`LazyComputation.unread_body()`) cuts single instructions
    from their lines (`BodyText.instruction_named`).
    Each must be what reading the body gives (operands still names), or None, never
    another. Its `operations()` (name, opcode, operands of each, nothing built) must be the
    read's too, and so must the parameters found used only elementwise from them. On every
    corpus and fixture body."""
    from hloscope.analysis.sharing import (
        _transitive_uses_elementwise,
        elementwise_parameters_of,
    )

    peeked = cut = operations_cut = 0
    for comp in _unread_computations():
        body = comp.unread_body()
        root_name = body.root_name() if body is not None else None
        operations = body.operations() if root_name is not None else None
        elementwise = elementwise_parameters_of(operations) if operations is not None else None
        try:
            read = comp.instructions
        except hloscope.HloSyntaxError:
            continue
        if root_name is None:
            continue
        peeked += 1
        if operations is not None:
            operations_cut += 1
            assert operations == [(i.name, i.opcode, [str(i.parameter_number)] if i.opcode == "parameter"
                                   else [o.name for o in i.operands]) for i in read], comp.name
            assert elementwise == {p.parameter_number for p in comp.parameters
                                   if _transitive_uses_elementwise(p)}, comp.name
        assert root_name == comp.root.name
        for inst in read[:12] + read[12:][-12:]:  # both ends of a long body: peeking is per name
            alone = body.instruction_named(inst.name)
            if alone is None:
                continue
            cut += 1
            assert (alone.name, alone.opcode, alone.shape, alone.attributes.tail, alone.line,
                    alone.is_root, alone.literal, alone.parameter_number) == \
                   (inst.name, inst.opcode, inst.shape, inst.attributes.tail, inst.line,
                    inst.is_root, inst.literal, inst.parameter_number), (comp.name, inst.name)
            assert [o.lstrip("%") for o in alone.operands] == [o.name for o in inst.operands]
    assert peeked > 1000 and cut > 3 * peeked and operations_cut > 0.8 * peeked


def test_op_name_is_the_metadata_s_whether_or_not_the_text_is_searched_first():
    """`Instruction.op_name` answers from the text when it holds no `op_name` at all, and
    from the decoded metadata otherwise: the same answer as the metadata's, spacing aside."""
    text = ("HloModule m, is_scheduled=true\n\nENTRY %e (p: f32[2]) -> f32[2] {\n"
            "  %p = f32[2]{0} parameter(0), metadata={op_name = \"spaced/neg\"}\n"
            "  %q = f32[2]{0} negate(%p), metadata={op_type=\"neg\" source_line=3}\n"
            "  ROOT %r = f32[2]{0} negate(%q), metadata={op_type=\"neg\" op_name=\"jit(f)/neg\"}\n}\n")
    module = hloscope.parse(text, lazy=True)
    assert [i.op_name for i in module.entry.instructions] == ["spaced/neg", None, "jit(f)/neg"]
    from .conftest import fixture_texts

    checked = 0
    for fixture in fixture_texts():
        for comp in hloscope.parse(fixture).computations:
            for inst in comp.instructions:
                assert inst.op_name == inst.metadata.get("op_name"), inst.name
                checked += inst.op_name is not None
    assert checked


# ─── the newest XLA's forms ────────────────────────────────────────────────────────────
# Expected names and orders are jaxlib 0.12's reading of the same texts (checked against it
# by tests/test_parser_xla.py when HLOSCOPE_NEWEST_XLA_PYTHON names its interpreter).

ELEMENTS = """HloModule m, is_scheduled=true

ENTRY e {
  p = (f32[8], (f32[4], s32[])) parameter(0)
  a = f32[8] negate(p#0)
  p_0 = f32[8] add(a, p#0)
  b = f32[4] negate(p#1#0)
  c = f32[4] negate(p # 1 # 0)
  ROOT t = (f32[8], f32[4], s32[], f32[8]) tuple(p_0, b, p#1#1, f32[8] p#0)
}
"""


@pytest.mark.parametrize("engine, lazy", [("fast", False), ("fast", True), ("lark", False)])
def test_tuple_element_operands_are_the_get_tuple_elements_xla_makes(engine, lazy):
    """`p#0` is element 0 of p, `p#1#0` element 0 of element 1: a get-tuple-element for
    each path, named as it (`#` made `_`) before its first user, shared by later users; a
    written name it takes (`p_0`) is renamed, as the newest XLA's parser does."""
    (module,) = hloscope.parse_all(ELEMENTS, lazy=lazy) if engine == "fast" else [hloscope.parse(ELEMENTS, engine=engine)]
    got = [(i.name, i.opcode, [o.name for o in i.operands]) for i in module.entry.instructions]
    assert got == [("p", "parameter", []), ("p_0", "get-tuple-element", ["p"]), ("a", "negate", ["p_0"]),
                   ("p_0.1", "add", ["a", "p_0"]), ("p_1", "get-tuple-element", ["p"]),
                   ("p_1_0", "get-tuple-element", ["p_1"]), ("b", "negate", ["p_1_0"]), ("c", "negate", ["p_1_0"]),
                   ("p_1_1", "get-tuple-element", ["p_1"]), ("t", "tuple", ["p_0.1", "b", "p_1_1", "p_0"])]
    by_name = {i.name: i for i in module.entry.instructions}
    assert [str(by_name[n].shape) for n in ("p_0", "p_1", "p_1_0", "p_1_1")] == ["f32[8]", "(f32[4], s32[])",
                                                                                 "f32[4]", "s32[]"]
    assert [by_name[n].attributes.decoded("index") for n in ("p_0", "p_1", "p_1_0", "p_1_1")] == [0, 1, 0, 1]
    assert by_name["p"].users == [by_name["p_0"], by_name["p_1"]]
    assert by_name["p_0"].users == [by_name["a"], by_name["p_0.1"], by_name["t"]]


def test_tuple_elements_among_nested_operands_come_in_operand_order():
    """XLA makes a `t#i`'s get-tuple-element while it reads the operands, so before the
    nested instructions of later operands (jaxlib 0.12: t_2, t_1, t_0, negate.anon, add.anon)."""
    text = ("HloModule m\nENTRY e {\n  t = (f32[8], f32[8], f32[8]) parameter(0)\n"
            "  ROOT r = f32[8] add(t#2, f32[8] add(t#1, f32[8] negate(t#0)))\n}\n")
    assert [i.name for i in hloscope.parse(text, engine="lark").entry.instructions] == [
        "t", "t_2", "t_1", "t_0", "negate.anon", "add.anon", "r"]


@pytest.mark.parametrize("operand, message", [
    ("q#0", "'q#0' takes an element of 'q', which is no tuple"),
    ("t#2", "'t#2': (f32[8], s32[]) has no element 2"),
    ("t#18446744073709551615", "'t#-1': (f32[8], s32[]) has no element -1"),
    ("u#0", "instruction 'u' is not defined"),
])
@pytest.mark.parametrize("engine", ["fast", "lark"])
def test_a_tuple_element_xla_refuses_is_refused_at_the_operand(operand, message, engine):
    text = (f"HloModule m\nENTRY e {{\n  t = (f32[8], s32[]) parameter(0)\n  q = f32[8] parameter(1)\n"
            f"  ROOT r = f32[8] negate({operand})\n}}\n")
    with pytest.raises(hloscope.HloSyntaxError) as info:
        hloscope.parse(text, engine=engine)
    assert (info.value.line, info.value.column) == (5, 26) and message in info.value.message


def test_the_printer_writes_tuple_elements_as_get_tuple_elements():
    """Both XLA releases read get-tuple-element lines; only the newest reads `t#0`."""
    module = hloscope.parse(ELEMENTS)
    printed = module.to_text()
    assert "#" not in printed and "%p_1_0 = f32[4] get-tuple-element(%p_1), index=0" in printed
    again = hloscope.parse(printed)
    assert [(i.name, [o.name for o in i.operands]) for i in again.entry.instructions] == [
        (i.name, [o.name for o in i.operands]) for i in module.entry.instructions]


@pytest.mark.parametrize("engine", ["fast", "lark"])
def test_names_with_a_glued_colon_are_the_names(engine):
    """XLA's lexer reads `x:` as the name x wherever a name is read: instructions,
    computations, operands, callees, control predecessors; `ROOT:` names an instruction."""
    text = ("HloModule m:\n\nadd: {\n  a: = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c: = f32[] add(a:, b)\n"
            "}\n\nENTRY e: (p: f32[8]) -> f32[8] {\n  p: = f32[8] parameter(0)\n  s = f32[8] negate(p:)\n"
            "  ROOT: = f32[8] all-reduce(s:), replica_groups={}, to_apply=add:, control-predecessors={s:}\n}\n")
    module = hloscope.parse(text, engine=engine)
    assert module.name == "m" and [c.name for c in module.computations] == ["add", "e"]
    assert [(i.name, [o.name for o in i.operands]) for i in module.computation("add").instructions] == [
        ("a", []), ("b", []), ("c", ["a", "b"])]
    root = module.entry.root
    assert (root.name, root.is_root, [o.name for o in root.operands]) == ("ROOT", True, ["s"])
    assert root.called_computations == [module.computation("add")]


@pytest.mark.parametrize("text", [
    "HloModule m :\nENTRY e {\n  ROOT p = f32[8] parameter(0)\n}\n",
    "HloModule m\nENTRY e {\n  ROOT p : = f32[8] parameter(0)\n}\n",
    "HloModule m\nENTRY e {\n  ROOT %p: = f32[8] parameter(0)\n}\n",
    "HloModule m\nENTRY e {\n  p = f32[8] parameter(0)\n  pred: = f32[8] negate(p)\n  ROOT r = f32[8] negate(pred:)\n}\n",
])
def test_a_colon_xla_does_not_read_as_part_of_a_name_is_refused(text):
    for engine in ("fast", "lark"):
        with pytest.raises(hloscope.HloSyntaxError):
            hloscope.parse(text, engine=engine)


@pytest.mark.parametrize("operands, names", [
    ("p,, q", ["p", "q"]), (",p, q", ["p", "q"]), ("p, q,", ["p", "q"]), ("f32[8], p, q", ["p", "q"]),
    ("p, q, f32[8]{0}", ["p", "q"]),
])
def test_operand_places_xla_reads_past_stand_for_no_operand(operands, names):
    """XLA's ParseOperands goes on past a place where no operand parses: an empty one, or a
    shape alone (which fails as a nested instruction at the comma)."""
    text = f"HloModule m\nENTRY e {{\n  p = f32[8] parameter(0)\n  q = f32[8] parameter(1)\n  ROOT r = f32[8] add({operands})\n}}\n"
    for engine in ("fast", "lark"):
        assert [o.name for o in hloscope.parse(text, engine=engine).entry.root.operands] == names


@pytest.mark.parametrize("depth", [9, 40])
def test_tuple_literals_nest_as_deep_as_written(depth):
    literal = "(" * depth + "1.5" + ")" * depth
    text = f"HloModule m\nENTRY e {{\n  ROOT c = {'(' * depth}f32[]{')' * depth} constant({literal})\n}}\n"
    for engine in ("fast", "lark"):
        assert hloscope.parse(text, engine=engine).entry.root.literal == literal


@pytest.mark.parametrize("chain, names", [
    # As XLA prints it: both releases take one `async_param` (the start's one operand).
    ("  s = ((f32[8]), f32[8], s32[]) call-start(p), to_apply=neg\n  ROOT d = f32[8] call-done(s)",
     ["p", "q", "async_param.1", "async_param.2", "call.1", "call.2", "s", "d"]),
    # The start's shape lists two operands: the newest XLA takes two (jaxlib 0.10.2 one).
    ("  s = ((f32[8], f32[8]), f32[8], s32[]) call-start(p), to_apply=neg\n  ROOT d = f32[8] call-done(s)",
     ["p", "q", "async_param.2", "async_param.3", "call.1", "call.2", "s", "d"]),
    # The callee takes two parameters: two.
    ("  s = ((f32[8]), f32[8], s32[]) call-start(p), to_apply=add2\n  ROOT d = f32[8] call-done(s)",
     ["p", "q", "async_param.2", "async_param.3", "call.1", "call.2", "s", "d"]),
    # A dot takes two operands, whatever its start's shape lists.
    ("  s = ((f32[8]), f32[], s32[]) dot-start(p), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
     "  ROOT d = f32[] dot-done(s)",
     ["p", "q", "async_param.2", "async_param.3", "call.1", "call", "s", "d"]),
])
def test_async_sugar_takes_the_parameter_names_the_newest_xla_takes(chain, names):
    """XLA's parser builds a computation for async sugar (`call-start`) with a parameter named
    `async_param` per operand shape the start's shape lists (at least the wrapped op's arity,
    more if its callee takes more): written names it takes are renamed. Expected names:
    jaxlib 0.12's reading of the same text."""
    text = ("HloModule m\n\nneg {\n  x = f32[8] parameter(0)\n  ROOT y = f32[8] negate(x)\n}\n\n"
            "add2 {\n  x = f32[8] parameter(0)\n  z = f32[8] parameter(1)\n  ROOT y = f32[8] add(x, z)\n}\n\n"
            "ENTRY e {\n  p = f32[8] parameter(0)\n  q = f32[8] parameter(1)\n  async_param.1 = f32[8] negate(p)\n"
            f"  async_param = f32[8] negate(p)\n  call.1 = f32[8] negate(p)\n  call = f32[8] negate(p)\n{chain}\n}}\n")
    for lazy in (False, True):
        (module,) = hloscope.parse_all(text, lazy=lazy)
        assert [i.name for i in module.entry.instructions] == names


def test_inline_computations_are_named_by_the_text_alone():
    """A computation written inline gets a name no text can hold; two parses of one text give
    the same names (they reach `export`'s JSON)."""
    text = ("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[] reduce(p, f32[] constant(0)), "
            "dimensions={0}, to_apply={ a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n}\n")
    first, second = (hloscope.parse(text).to_dict() for _ in range(2))
    assert first == second
    (called,) = first["computations"][-1]["instructions"][-1]["called_computations"]
    assert called.startswith("_ inline ")
