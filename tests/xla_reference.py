"""XLA's own answers, for tests to compare hloscope with (imports jax lazily)."""

from __future__ import annotations

import re

# XLA opcode enum names whose text spelling is not the plain kebab-case of the enum.
_SPELLING_EXCEPTIONS = {
    "kExpm1": "exponential-minus-one",
    "kLog1p": "log-plus-one",
    "kOptimizationBarrier": "opt-barrier",
    "kTopK": "topk",
    "kPopulationCount": "popcnt",
    "kSin": "sine",
    "kCos": "cosine",
    "kExp": "exponential",
}


def opcode_spelling(enum_value) -> str:
    """`HloOpcode.kAllGatherStart` → `all-gather-start`."""
    name = str(enum_value).rsplit(".", 1)[-1]
    if name in _SPELLING_EXCEPTIONS:
        return _SPELLING_EXCEPTIONS[name]
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name[1:]).lower()


def xla_parse(text: str):
    """XLA's C++ parser: {computation: [(name, opcode, [operand names])]} in XLA's order.

    Raises the parser's exception for text XLA rejects."""
    from jax._src.lib import xla_client as xc

    module = xc.hlo.hlo_module_from_text(text)
    out = {}
    for comp in module.computations():
        out[comp.name] = [
            (inst.name, opcode_spelling(inst.opcode), [o.name for o in inst.operands()])
            for inst in comp.instructions()
        ]
    return out


# ─── collectives, as XLA's own parser sees them ─────────────────────────────────────────

# Opcode spellings XLA's parser gives a counted collective: the plain ops and the native
# async starts. Sugar (`reduce-scatter-start`) becomes an async-start whose synthesized
# `async_wrapped` computation holds the plain op, which is what gets counted.
XLA_COLLECTIVE_SPELLINGS = {
    "all-gather": "all-gather",
    "all-gather-start": "all-gather",
    "all-reduce": "all-reduce",
    "all-reduce-start": "all-reduce",
    "reduce-scatter": "reduce-scatter",
    "all-to-all": "all-to-all",
    "ragged-all-to-all": "ragged-all-to-all",
    "collective-permute": "collective-permute",
    "collective-permute-start": "collective-permute",
    "collective-broadcast": "collective-broadcast",
    "send": "send",
    "recv": "recv",
}

_XLA_ELEMENT_BYTES = {
    "pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
    "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16,
    "f8e5m2": 1, "f8e4m3fn": 1, "token": 0,
}
_XLA_ARRAY = re.compile(r"\b([a-z][a-z0-9]*)\[([0-9,]*)\]")


def _shape_text_bytes(text: str) -> int:
    """Array bytes of every leaf of a printed shape (layouts ignored; dense, unpacked)."""
    total = 0
    for etype, dims in _XLA_ARRAY.findall(text):
        n = 1
        for d in dims.split(","):
            if d:
                n *= int(d)
        total += n * _XLA_ELEMENT_BYTES[etype]
    return total


def _xla_result_shape_text(inst) -> str:
    # `%name = SHAPE opcode(...)`: the shape sits between ` = ` and ` opcode(`.
    text = inst.to_string()
    head = text.split(" = ", 1)[1]
    spelling = opcode_spelling(inst.opcode)
    return head[: head.index(f" {spelling}(")]


def xla_collectives(text: str) -> list[tuple[str, str, str, int]]:
    """Every collective (and send/recv) XLA's parser finds, in every computation it reports:
    `(kind, computation, instruction, result bytes)`; a native start's bytes are its done's."""
    from jax._src.lib import xla_client as xc

    module = xc.hlo.hlo_module_from_text(text)
    out = []
    for comp in module.computations():
        for inst in comp.instructions():
            spelling = opcode_spelling(inst.opcode)
            kind = XLA_COLLECTIVE_SPELLINGS.get(spelling)
            if kind is None:
                continue
            result = inst
            if spelling.endswith("-start"):
                dones = [u for u in inst.users() if opcode_spelling(u.opcode).endswith("-done")]
                result = dones[0] if dones else inst
            out.append((kind, comp.name, inst.name, _shape_text_bytes(_xla_result_shape_text(result))))
    return out


# XLA's dump files (`--xla_dump_to`), for the memory and liveness tests.


def read_dump(path) -> str:
    """A dump file's text, gzipped or not."""
    import gzip

    path = str(path)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read()


def parse_live_range_dump(text: str) -> tuple[list[str], dict[tuple[str, str], tuple[int, int]]]:
    """`*-live-range.txt` → (flattened schedule, {(instruction, "{i,j}"): (start, end)})."""
    steps: list[str] = []
    ranges: dict[tuple[str, str], tuple[int, int]] = {}
    section = None
    for line in text.splitlines():
        s = line.strip()
        if s == "InstructionSequence:":
            section = "steps"
            continue
        if s == "BufferLiveRange:":
            section = "ranges"
            continue
        if s.startswith("Live ranges at") or s.startswith("Stack trace"):
            section = None
            continue
        if section == "steps":
            m = re.match(r"(\d+):(\S+)$", s)
            if m:
                steps.append(m.group(2))
        elif section == "ranges":
            m = re.match(r"(\S+?)(\{[^}]*\}):(\d+)-(\d+)$", s)
            if m:
                ranges[(m.group(1), m.group(2))] = (int(m.group(3)), int(m.group(4)))
    return steps, ranges


def parse_buffer_assignment_dump(text: str) -> list[dict]:
    """`*-buffer-assignment.txt` → allocations: {index, size, kinds, values: [{name, index,
    size, offset, shape}]}."""
    allocations: list[dict] = []
    current = None
    for line in text.splitlines():
        m = re.match(r"allocation (\d+): size (\d+), (.*):$", line.rstrip())
        if m:
            current = {"index": int(m.group(1)), "size": int(m.group(2)), "kinds": m.group(3), "values": []}
            allocations.append(current)
            continue
        # A while's phi values print as `<ID NAME{i} (phi) @POS>`.
        m = re.match(r" value: <(\d+) (\S+?)(\{[^}]*\})?( \(phi\))? @(\d+)> \(size=(\d+),offset=(\d+)\): (.*)$",
                     line.rstrip())
        if m and current is not None:
            current["values"].append({"name": m.group(2), "index": m.group(3) or "{}", "size": int(m.group(6)),
                                      "offset": int(m.group(7)), "shape": m.group(8), "id": int(m.group(1)),
                                      "phi": bool(m.group(4))})
        elif line.startswith("Total bytes") or line.startswith("Used values"):
            current = None
    return allocations
