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
