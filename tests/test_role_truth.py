"""Roles measured against a truth built from JAX, not from hloscope.

`fixtures/truth.py` compiles train steps for 8 CPU devices, 8 H100s and a TPU v5e 2x4 (data
parallel: unrolled and scanned layers, gradient accumulation by `lax.scan` and by
`fori_loop`; on GPU and TPU also remat of each layer under two `jax.checkpoint` policies, and
FSDP) whose buffers say what they hold by their element type and extents: the residuals JAX
saves are of one type (bfloat16; float16 under FSDP), the batch of another (float16; uint8
under FSDP), weight gradients have the weights' extents in float32, gathered weights (FSDP)
in bfloat16. That script checks those claims against JAX's own account of each loss, and
lists in `truth.json` the arrays of XLA's module whose type no longer tells because XLA went
against what the program asks (`changed_by_xla`, with what they hold where that is known).
The arrays XLA's own dump files put in its temp allocation at its peak, with that truth,
against the role hloscope gives the same value: at least 98% of the bytes with a known truth
get the right role.
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
from .xla_reference import opcode_spelling, read_dump, xla_temp_at_peak

PROGRAMS = sorted(p.name for p in (FIXTURES / "truth").iterdir() if (p / "truth.json").exists())


_TYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "u8": "uint8"}


def _truth(truth: dict, shape: str) -> str | None:
    """What an array of this shape holds in the program (None: its shape does not tell)."""
    m = re.match(r"(\w+)\[([\d,]*)\]", shape)
    if m is None:
        return "temporaries"  # a scalar or a token
    dtype, dims = _TYPES.get(m.group(1), m.group(1)), [int(d) for d in m.group(2).split(",") if d]
    d, f = truth["weight_extents"]
    if dtype in truth["activation_types"]:
        # JAX makes no array of that type with a weight's extents (truth.py checks it): one is
        # XLA's own rounding of a weight for its matrix unit (TPU: float32 products at the
        # default precision).
        return "parameters" if d in dims and f in dims else "activations"
    if dtype in truth["input_types"]:
        return "inputs"
    n = math.prod(dims)
    weights = n % (d * f) == 0 and ((d in dims and f in dims) or len(dims) == 1)
    # A weight's shard on one device (FSDP): n == d * f / shards.
    shard = truth.get("weight_shards", 1) > 1 and n * truth["weight_shards"] == d * f
    if dtype in truth.get("gathered_types", ()):
        # FSDP's compute type: a weight gathered whole, a shard cast before its gather, or a
        # cast of data for a product.
        return "gathered_parameters" if weights else "parameters" if shard else "temporaries"
    if dtype not in truth["state_types"] or not dims:
        return "temporaries"  # loop counters, predicates
    if shard:
        return None  # a gradient's shard or the optimizer's update of one: untold
    if weights:
        # A slice of the stacked parameters has one weight's extents too: untold.
        return None if truth["param_slices"] and n == d * f else "gradients"
    if truth["scan_layers"] and len(dims) >= 3 and dims[0] == truth.get("layers", 3):
        # XLA converts the stack of bfloat16 residuals back to float32 whole, out of the
        # backward loop: the scan's only stacked batch-sized arrays are its residuals.
        return "activations"
    return "temporaries"


def _temp_at_peak(directory) -> list[dict]:
    """The arrays of XLA's temp allocation live at its peak, from the dump files alone; on a
    target with several memory spaces, of the allocation whose arrays peak highest."""
    return xla_temp_at_peak(directory, highest=True)


_COPIES = ("copy", "copy-start", "copy-done")
"""XLA's copies between layouts and memory spaces (TPU's prefetches of the parameters)."""


def _copied_parameters(directory) -> dict[str, int]:
    """Each instruction that copies an entry parameter (through XLA's copies) → that
    parameter's number, by XLA's parser on the module the dump files describe."""
    from jax._src.lib import xla_client as xc

    text = read_dump(directory / "after_optimizations.txt.gz")
    entry = re.search(r"^ENTRY %?([^ (]+)", text, re.M).group(1)
    (comp,) = [c for c in xc.hlo.hlo_module_from_text(text).computations() if c.name == entry]
    numbers: dict[str, int] = {}
    for inst in comp.instructions():  # operands first
        opcode = opcode_spelling(inst.opcode)
        if opcode == "parameter":
            numbers[inst.name] = int(re.search(r" parameter\((\d+)\)", inst.to_string()).group(1))
        elif opcode in _COPIES and inst.operands()[0].name in numbers:
            numbers[inst.name] = numbers[inst.operands()[0].name]
    return numbers


def _roles(name: str):
    directory = FIXTURES / "truth" / name
    module = hloscope.load(str(directory / "module.hlo.txt"))
    target = json.loads((directory / "truth.json").read_text()).get("target", "cpu")
    model = build_memory_model(module, target)
    return module, model, assign_roles(module, model)


@pytest.mark.parametrize("name", PROGRAMS)
def test_roles_at_xlas_peak_are_what_jax_says(name):
    directory = FIXTURES / "truth" / name
    truth = json.loads((directory / "truth.json").read_text())
    _, model, roles = _roles(name)
    values = {v.name: v for v in model.dataflow.values}
    total = told = right = 0
    wrong = []
    copied = _copied_parameters(directory)
    for x in _temp_at_peak(directory):
        total += x["size"]
        key = x["name"] + x["index"]
        if key in truth["changed_by_xla"]:  # XLA went against what the program asks
            expected = truth["changed_by_xla"][key][0]
        elif x["name"] in copied:  # a copy of an entry parameter holds that pytree leaf
            expected = truth["entry_parameters"][str(copied[x["name"]])]
        else:
            expected = _truth(truth, x["shape"])
        if expected is None:
            continue
        told += x["size"]
        got = roles.of(values[key])
        if got == expected:
            right += x["size"]
        else:
            wrong.append(f"{key} {x['shape']} {x['size']} B: {got}, holds {expected}")
    assert total > 0, "no array in XLA's temp allocation"
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
