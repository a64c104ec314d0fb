"""Computations alike up to names (hloscope.ir.structure), against XLA's canonical print:
computations hloscope finds alike print alike under XLA's `HloPrintOptions.canonical()`
(instruction names canonicalized, metadata and backend configs printed)."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

import hloscope
from hloscope.ir.structure import structure

from .conftest import fixture_dirs, fixture_ids, needs_xla

_HEADER = re.compile(r"^(\S+) \{$", re.M)


def _canonical_bodies(text: str) -> dict[str, str]:
    """Each computation's body as XLA's canonical print has it, by computation name."""
    xc = needs_xla()
    options = xc.hlo.HloPrintOptions.canonical()
    options.print_metadata = True
    options.print_backend_config = True
    printed = xc.hlo.hlo_module_from_text(text).to_string(options)
    bodies = {}
    for m in _HEADER.finditer(printed):
        end = printed.index("\n}\n", m.end())
        bodies[m.group(1).removeprefix("ENTRY ")] = printed[m.end():end]
    return bodies


@pytest.mark.parametrize("path", fixture_dirs(), ids=fixture_ids())
def test_alike_computations_print_alike_in_xla(path):
    text = (path / "module.hlo.txt").read_text()
    module = hloscope.parse(text)
    groups = defaultdict(list)
    for comp in module.computations:
        groups[structure(comp)].append(comp.name)
    canonical = _canonical_bodies(text)
    alike = [names for names in groups.values() if len(names) > 1]
    for names in alike:
        assert len({canonical[n] for n in names}) == 1, names
    if len(set(canonical.values())) < len(canonical):
        assert alike, "XLA prints some computations alike; hloscope finds none alike"


@pytest.mark.parametrize("path", fixture_dirs(), ids=fixture_ids())
def test_alike_up_to_their_callees_print_alike_in_xla(path):
    """With callees compared by their own structure (`structure(comp, callee_key)`, as the
    cost prices them), computations alike still print alike in XLA's canonical print, which
    prints each callee's body in place of its name."""
    text = (path / "module.hlo.txt").read_text()
    module = hloscope.parse(text)
    keys: dict[int, object] = {}

    def key(comp):
        if id(comp) not in keys:
            keys[id(comp)] = structure(comp, key)
        return keys[id(comp)]

    groups = defaultdict(list)
    for comp in module.computations:
        groups[key(comp)].append(comp.name)
    canonical = _canonical_bodies(text)
    for names in groups.values():
        if len(names) > 1:
            assert len({canonical[n] for n in names}) == 1, names


def test_callees_alike_make_their_callers_alike():
    """Two reductions, each with an adder of its own, are alike with callees compared by
    structure, and not when one adds and the other takes the maximum."""
    def module(second_op):
        return f"""HloModule m

add.1 {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(f32[] a, f32[] b)
}}

add.2 {{
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT z = f32[] {second_op}(f32[] x, f32[] y)
}}

r.1 {{
  p = f32[4] parameter(0)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(f32[4] p, f32[] zero), dimensions={{0}}, to_apply=%add.1
}}

r.2 {{
  q = f32[4] parameter(0)
  nil = f32[] constant(0)
  ROOT s = f32[] reduce(f32[4] q, f32[] nil), dimensions={{0}}, to_apply=%add.2
}}

ENTRY e {{
  t = f32[4] parameter(0)
  u = f32[] fusion(f32[4] t), kind=kInput, calls=%r.1
  v = f32[] fusion(f32[4] t), kind=kInput, calls=%r.2
  ROOT w = (f32[], f32[]) tuple(u, v)
}}
"""

    def by_callees(comp):
        return structure(comp, by_callees)

    for op, alike in (("add", True), ("maximum", False)):
        m = hloscope.parse(module(op))
        r1, r2 = m.computation("r.1"), m.computation("r.2")
        assert structure(r1) != structure(r2)  # the callees' names differ
        assert (by_callees(r1) == by_callees(r2)) is alike, op
    # Calling the very same computation, they are alike both ways.
    m = hloscope.parse(module("maximum").replace("to_apply=%add.2", "to_apply=%add.1"))
    r1, r2 = m.computation("r.1"), m.computation("r.2")
    assert structure(r1) == structure(r2) and by_callees(r1) == by_callees(r2)


def _module(second_name: str = "b", second_shape: str = "f32[4]", second_op: str = "add",
            second_meta: str = "", swap: bool = False) -> str:
    operands = "f32[4] q.1, f32[4] p.1" if swap else "f32[4] p.1, f32[4] q.1"
    return f"""HloModule m

f.1 {{
  x.0 = f32[4] parameter(0)
  y.0 = f32[4] parameter(1)
  ROOT a.0 = f32[4] add(f32[4] x.0, f32[4] y.0)
}}

f.2 {{
  p.1 = f32[4] parameter(0)
  q.1 = f32[4] parameter(1)
  ROOT {second_name} = {second_shape} {second_op}({operands}){second_meta}
}}

ENTRY e {{
  s = f32[4] parameter(0)
  t = f32[4] parameter(1)
  u = f32[4] fusion(s, t), kind=kLoop, calls=f.1
  ROOT v = f32[4] fusion(u, t), kind=kLoop, calls=f.2
}}
"""


def _alike(text: str) -> bool:
    module = hloscope.parse(text)
    return structure(module.computation("f.1")) == structure(module.computation("f.2"))


def test_names_aside_computations_are_alike():
    assert _alike(_module())


@pytest.mark.parametrize("change", [
    {"second_shape": "f32[4]{0}"},
    {"second_op": "multiply"},
    {"second_meta": ', metadata={op_name="x"}'},
    {"swap": True},
])
def test_anything_but_names_tells_computations_apart(change):
    assert not _alike(_module(**change))
