"""Roles measured against a truth built from JAX, not from hloscope.

`fixtures/truth.py` compiles train steps (data parallel over 8 CPU devices; unrolled and
scanned layers; gradient accumulation by `lax.scan` and by `fori_loop`) whose buffers say what
they hold by their element type and extents: the residuals JAX saves are bfloat16, the batch
float16, weight gradients have the weights' extents (see that script). The arrays XLA's own
dump files put in its temp allocation at its peak, with that truth, against the role hloscope
gives the same value: at least 98% of the bytes with a known truth get the right role.
"""

from __future__ import annotations

import json
import math
import re

import pytest

import hloscope
from hloscope.analysis.memory import build_memory_model
from hloscope.analysis.roles import assign_roles

from .conftest import FIXTURES
from .xla_reference import xla_temp_at_peak

PROGRAMS = sorted(p.name for p in (FIXTURES / "truth").iterdir() if (p / "truth.json").exists())


def _truth(truth: dict, shape: str) -> str | None:
    """What an array of this shape holds in the program (None: its shape does not tell)."""
    m = re.match(r"(\w+)\[([\d,]*)\]", shape)
    if m is None:
        return "temporaries"  # a scalar or a token
    dtype, dims = m.group(1), [int(d) for d in m.group(2).split(",") if d]
    types = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}
    if types.get(dtype) in truth["activation_types"]:
        return "activations"
    if types.get(dtype) in truth["input_types"]:
        return "inputs"
    if types.get(dtype) not in truth["state_types"] or not dims:
        return "temporaries"  # loop counters, predicates
    d, f = truth["weight_extents"]
    n = math.prod(dims)
    weights = n % (d * f) == 0 and ((d in dims and f in dims) or len(dims) == 1)
    if weights:
        # A slice of the stacked parameters has one weight's extents too: untold.
        return None if truth["param_slices"] and n == d * f else "gradients"
    if truth["scan_layers"] and len(dims) >= 3 and dims[0] == truth.get("layers", 3):
        # XLA converts the stack of bfloat16 residuals back to float32 whole, out of the
        # backward loop: the scan's only stacked batch-sized arrays are its residuals.
        return "activations"
    return "temporaries"


def _roles(name: str):
    directory = FIXTURES / "truth" / name
    module = hloscope.load(str(directory / "module.hlo.txt"))
    model = build_memory_model(module, "cpu")
    return module, model, assign_roles(module, model)


@pytest.mark.parametrize("name", PROGRAMS)
def test_roles_at_xlas_peak_are_what_jax_says(name):
    directory = FIXTURES / "truth" / name
    truth = json.loads((directory / "truth.json").read_text())
    _, model, roles = _roles(name)
    values = {v.name: v for v in model.dataflow.values}
    total = told = right = 0
    wrong = []
    for x in xla_temp_at_peak(directory):
        total += x["size"]
        expected = _truth(truth, x["shape"])
        if expected is None:
            continue
        told += x["size"]
        key = x["name"] + x["index"]
        got = roles.of(values[key])
        if got == expected:
            right += x["size"]
        else:
            wrong.append(f"{key} {x['shape']} {x['size']} B: {got}, holds {expected}")
    assert told >= 0.9 * total, f"the truth tells only {told} of {total} bytes"
    assert right >= 0.98 * told, "\n".join(wrong)


@pytest.mark.parametrize("name", PROGRAMS)
def test_entry_parameters_are_the_pytrees_they_came_from(name):
    truth = json.loads((FIXTURES / "truth" / name / "truth.json").read_text())
    module, model, roles = _roles(name)
    for p in module.entry.parameters:
        (v,) = [v for v in model.dataflow.value_sets[p].values() if v.instruction is p and not v.shape.is_tuple]
        assert roles.of(v) == truth["entry_parameters"][str(p.parameter_number)], p.name


def _fixture_modules():
    for d in sorted(FIXTURES.glob("*/")) + sorted(FIXTURES.glob("jax-*/*/")):
        for f in ("module.hlo.txt", "module.hlo.txt.gz"):
            if (d / f).exists():
                yield str((d / f).relative_to(FIXTURES))


@pytest.mark.parametrize("path", list(_fixture_modules()))
def test_unknown_is_rare_on_every_fixture(path):
    """At most 2% of the temp bytes live at the peak have no role, and each says why."""
    roles = hloscope.load(str(FIXTURES / path)).roles()
    live = sum(roles.temp_by_role.values())
    assert roles.temp_by_role["unknown"] <= 0.02 * live
    assert all(b.why for b in roles.buffers if b.role == "unknown")
