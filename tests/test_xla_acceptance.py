"""hloscope accepts what XLA's parser accepts: a differential test over generated variants.

Each attribute form (replica groups in their three forms, sub-axes included; source-target
pairs; shardings; layouts with tiles, element size and memory space; frontend attributes,
origin, statistics, metadata; control predecessors; async wrappers; custom-call forms;
module aliases; and the newest XLA's forms: operands `t#i#j`, names with a glued colon
`x:`, deep tuple literals, collective-reduce, debug_attributes) is written once as XLA
prints or reads it, then mutated by rule: a token
dropped, repeated or put in another's place, an integer changed, blanks or newlines between
all tokens, quotes swapped, and mutations of the form's own meaning (sub-axes that do and
do not divide, repeated axes, device_ids that are no permutation, ...). Every variant sits
in a small module that is otherwise valid and goes through XLA's parser (jaxlib 0.10.2,
in a process of its own: some refusals are failed CHECKs) and through both of hloscope's
engines.

- No false rejection: whatever XLA reads, hloscope reads.
- The false acceptances (XLA refuses, hloscope reads) are exactly `FALSE_ACCEPTANCES`,
  each with its reason: a new one fails the test, and so does one that went away.
- Where XLA releases differ, hloscope reads what either reads (the reason "newest" below,
  checked against the newest jaxlib when `HLOSCOPE_NEWEST_XLA_PYTHON` names its interpreter).
- Groups: hloscope's groups, their number and size, are XLA's for every replica-group form
  and on the fixtures whose collectives run over mesh axes (issue 28's sub-axis included).

Run as a script (`python -m tests.test_xla_acceptance`) it prints the table of variants.
About 5,000 variants; XLA reads them in ~20 s, hloscope in ~4 s.
"""

from __future__ import annotations

import functools
import os
import re

import pytest

import hloscope

from .conftest import fixture_dirs, needs_xla

pytestmark = pytest.mark.xla

# ─── the modules the forms sit in ───────────────────────────────────────────────────────

_ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n\n"
_NEG = "neg {\n  x = f32[8] parameter(0)\n  ROOT y = f32[8] negate(x)\n}\n\n"


def _entry(body: str, header: str = "", computations: str = _ADD) -> str:
    return (f"HloModule m, replica_count=8{header}\n\n{computations}ENTRY e {{\n  p = f32[8] parameter(0)\n"
            f"  q = f32[8] parameter(1)\n{body}\n}}\n")


def _replica_groups(value: str) -> str:
    return _entry(f"  ROOT r = f32[8] all-reduce(p), replica_groups={value}, to_apply=add")


def _pairs(value: str) -> str:
    return _entry(f"  ROOT r = f32[8] collective-permute(p), source_target_pairs={value}")


def _sharding(value: str) -> str:
    return _entry(f"  ROOT r = f32[8] add(p, q), sharding={value}")


def _shape(value: str) -> str:
    return _entry(f"  s = {value} parameter(2)\n  ROOT r = f32[8] add(p, q)")


def _attribute(name: str):
    def module(value: str) -> str:
        return _entry(f"  ROOT r = f32[8] add(p, q), {name}={value}")
    return module


def _custom_call(attributes: str) -> str:
    return _entry(f"  ROOT r = f32[8] custom-call(p, q){attributes}")


def _control(value: str) -> str:
    return _entry(f"  s = f32[8] negate(p)\n  ROOT r = f32[8] add(p, q), control-predecessors={value}")


def _header(value: str) -> str:
    return _entry("  ROOT r = (f32[8], f32[8]) tuple(p, q)", header=value)


def _body(value: str) -> str:
    return _entry(value, computations=_ADD + _NEG)


def _elements(value: str) -> str:
    return _entry(f"  t = (f32[8], (f32[8], f32[8])) parameter(2)\n  ROOT r = f32[8] add({value})")


def _constant(value: str) -> str:
    return _entry(f"  c = {value}\n  ROOT r = f32[8] add(p, q)")


def _root(value: str) -> str:
    return _entry(f"  ROOT r = f32[8] {value}")


def _whole(value: str) -> str:
    return "HloModule m, replica_count=8\n\n" + value


# Each family: (name, how a value sits in a module, the values as XLA prints or reads them).
FAMILIES = [
    ("replica_groups", _replica_groups, [
        "{{0,1},{2,3},{4,5},{6,7}}",
        "{}",
        "[4,2]<=[8]",
        "[4,2]<=[2,4]T(1,0)",
        "[2,4]<=[2,2,2]T(2,1,0)",
        "mesh['x'=2,'y'=4] {'x'}",
        "mesh['x'=2,'y'=4] {'y':(2)2}",
        "mesh['x'=2,'y'=4], device_ids=([4,2]T(1,0)) {'y'}",
        "mesh['x'=2,'y'=4], device_ids=(0,2,4,6,1,3,5,7) {'x','y':(1)2}",
        "mesh['axis_0'=4,'axis_1'=1,'axis_2'=2], device_ids=([2,2,2]T(0,2,1)) {'axis_0':(2)2}",
        "mesh['x'=8] {'x':(4)2,'x':(1)2}",
    ]),
    ("source_target_pairs", _pairs, ["{{0,1},{1,2},{2,3}}", "{}"]),
    ("sharding", _sharding, [
        "{replicated}",
        "{maximal device=3}",
        "{manual}",
        "{unknown}",
        "{devices=[2,4]0,1,2,3,4,5,6,7}",
        "{devices=[4,2]<=[2,4]T(1,0)}",
        "{devices=[2,2,2]<=[8] last_tile_dim_replicate}",
        "{devices=[2,1,4]<=[8] last_tile_dims={manual, unreduced}}",
        "{devices=[8]<=[8] shard_as 1 metadata={op_name=\"a\"}}",
        "{{replicated}, {maximal device=0}}",
        "{mesh['x'=2,'y'=4] [{'x'}]}",
        "{mesh['x'=2,'y'=4], device_ids=([4,2]T(1,0)) [{'y':(2)2}], replicated={'x'}}",
        "{mesh['x'=2,'y'=4] unreduced}",
    ]),
    ("layout", _shape, [
        "f32[8,128]{1,0:T(8,128)(2,1)S(1)}",
        "s4[8]{0:E(4)}",
        "f32[]{:T(128)}",
        "bf16[4,8]{0,1:T(4,128)(2,1)E(16)S(5)}",
        "f32[8]{0:T(8)L(2)#(u16)*(u16)E(4)S(1)SC(0:1)M(2)}",
        "f32[<=8,?]{1,0}",
        "(f32[2]{0}, (s32[], u8[3]{0:T(128)}))",
    ]),
    ("frontend_attributes", _attribute("frontend_attributes"), ["{_xla_stream_annotation=\"1\", b={\"k\": [1]}}"]),
    ("origin", _attribute("origin"), ["{({\"x\" {1}}, {\"y\"})}", "{[synthetic_call]}"]),
    ("statistics", _attribute("statistics"), ["{visualizing_index=1,stat-0=0.5,stat-1=2}"]),
    ("metadata", _attribute("metadata"), ["{op_type=\"dot\" op_name=\"jit(f)/dot\" source_file=\"a.py\" source_line=3}"]),
    ("control-predecessors", _control, ["{s}", "{p, s}"]),
    ("custom-call", _custom_call, [
        ", custom_call_target=\"foo\", api_version=API_VERSION_TYPED_FFI, backend_config={\"a\": {\"b\": 1}}",
        ", custom_call_target=\"foo\", schedule=SCHEDULE_LATEST, backend_config=\"raw\"",
        ", custom_call_target=\"foo\", operand_layout_constraints={f32[8]{0}, f32[8]{0}}",
        ", custom_call_target=\"foo\", output_to_operand_aliasing={{}: (0, {})}",
        ", custom_call_target=\"foo\", literal=(s32[], f32[2]) (1, {2, 3.5})",
    ]),
    ("module", _header, [
        ", input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, must-alias) }",
        ", buffer_donor={ (0, {}), (1, {}) }",
        ", is_scheduled=true, entry_computation_layout={(f32[8]{0}, f32[8]{0})->(f32[8]{0}, f32[8]{0})}",
    ]),
    ("async", _body, [
        "  s = ((f32[8]), f32[8], s32[]) async-start(p), calls=neg, async_execution_thread=\"main\"\n"
        "  u = ((f32[8]), f32[8], s32[]) async-update(s)\n  ROOT d = f32[8] async-done(u)",
        "  s = ((f32[8]), f32[8], s32[]) call-start(p), to_apply=neg\n  ROOT d = f32[8] call-done(s)",
        "  s = (f32[8], f32[16]) all-gather-start(p), replica_groups=[4,2]<=[8], dimensions={0}\n"
        "  ROOT d = f32[16] all-gather-done(s)",
        "  s = ((f32[8]), f32[4], u32[]) reduce-scatter-start(p), replica_groups={{0,1}}, dimensions={0}, to_apply=add\n"
        "  ROOT d = f32[4] reduce-scatter-done(s)",
    ]),
    # The newest XLA's compact get-tuple-element (its dumps: `%all-gather.26#0`).
    ("tuple element", _elements, ["t#0, t#1#0", "%t#1#1, %t#0"]),
    # A name with a colon glued to it, wherever XLA's ParseName reads a name.
    ("colon names", _whole, [
        "add: {\n  a: = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c: = f32[] add(a:, b)\n}\n\n"
        "ENTRY e: {\n  p: = f32[8] parameter(0)\n  s = f32[8] negate(p:)\n"
        "  ROOT r = f32[8] all-reduce(s:), replica_groups={}, to_apply=add:, control-predecessors={s:}\n}\n",
    ]),
    ("constant", _constant, ["(f32[], (s32[2], c64[])) constant((1.5, ({1, 2}, (1, 2))))"]),
    ("collective-reduce", _root, ["collective-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=add, "
                                  "has_dynamic_root=true"]),
    # `t#i` with a declared shape (XLA checks it against the element's).
    ("declared element shape", _elements, []),
    ("debug_attributes", _header, [', debug_attributes={{"r" {}}: {log_mode=default, callback_id=1}, '
                                   '{"p"}: ({partitioned=true}, {op_id=2})}']),
]

# Mutations of a form's meaning, beyond the token rules (same families).
_SUBAXES = [f"mesh['x'=2,'y'=8] {{'y':({pre}){size}}}" for pre in (0, 1, 2, 3, 4, 8) for size in (1, 2, 3, 4, 8)]
EXTRA = {
    "replica_groups": _SUBAXES + [
        "mesh['x'=2,'y'=8] {'y':(1)2,'y':(4)2}", "mesh['x'=2,'y'=8] {'y':(1)2,'y':(2)2}",
        "mesh['x'=2,'y'=8] {'y':(2)2,'y':(1)2}", "mesh['x'=2,'y'=8] {'y':(1)4,'y':(2)2}",
        "mesh['x'=2,'y'=8] {'y','y':(2)2}", "mesh['x'=2,'y'=8] {'x','x'}", "mesh['x'=2,'y'=8] {'0'}",
        "mesh['x'=2,'y'=8] {'1','0'}", "mesh['x'=2,'y'=8] {'2'}", "mesh['x'=2,'y'=8] {'-1'}", "mesh['x'=2,'y'=8] {'z'}",
        "mesh['x'=2,'x'=8] {'x'}", "mesh['x'=2,'y'=1] {'y'}", "mesh['x'=2,'y'=4] {}", "mesh[] {}",
        "maximal_mesh[device_id=3] {}", "maximal_mesh[device_id=3] {'x'}",
        "mesh['x'=2,'y'=4], device_ids=(0,1,2,3,4,5,6,7) {'x'}", "mesh['x'=2,'y'=4], device_ids=(1,0,2,3,4,5,6,6) {'x'}",
        "mesh['x'=2,'y'=4], device_ids=(1,0,2,3,4,5,6) {'x'}", "mesh['x'=2,'y'=4], device_ids=(7,6,5,4,3,2,1,0) {'y'}",
        "mesh['x'=2,'y'=4], device_ids=([2,4]) {'x'}", "mesh['x'=2,'y'=4], device_ids=([8]) {'x'}",
        "mesh['x'=2,'y'=4], device_ids=([2,2,2]T(2,0,1)) {'x'}", "mesh['x'=2,'y'=4], device_ids=([4,3]T(1,0)) {'x'}",
        "mesh['x'=2,'y'=4], device_ids=([4,2]T(0,0)) {'x'}", "mesh['x'=2,'y'=4], device_ids=([4,2]T(1,0,2)) {'x'}",
        "mesh['x'=2,'y'=4], {'x'}", "mesh['x'=2,'y'=4], foo={'x'}", "mesh['x'=2,'y'=4], device_ids= ([4,2]T(1,0)) {'x'}",
        "mesh['x'=-2,'y'=4] {'y'}", "mesh['x'=0,'y'=4] {'y'}",
        "[2,2]<=[5]", "[0,4]<=[4]", "[2,-2]<=[4]", "[2,2]<=[2,2]T(0,0)", "[2,2]<=[2,2]T(0)", "[2,2]<=[2,2]T(-1,0)",
        "[2,2]<=[2,2]", "[2,2]<=[4]T(0)", "[1,2,2]<=[4]", "[4]<=[4]",
        "[1,99999999999]<=[99999999999]", "{{0,18446744073709551615}}", "{{0,18446744073709551616}}",
    ],
    "layout": ["f32[8]{0:S(1)T(8)}", "f32[8]{0:E(4)E(4)}", "f32[8]{0:T(8)T(8)}", "f32[8]{0:P(f32[8])}", "f32[8]{0:D(X)}",
               "f32[8]{0:E(}", "f32[8]{0:T}", "f32[8]{0:T(-8)}", "f32[8]{7}", "f32[8]{0,1}", "f32[8]{}", "f32[8] {0}",
               "f32\n[8]\n{0}"],
    "module": [", input_output_alias={ {0}: (0, {5}) }", ", input_output_alias={ {0}: (9, {}) }",
               ", input_output_alias={ {7}: (0, {}) }", ", input_output_alias={ {0}: (0, {}), {0}: (1, {}) }",
               ", input_output_alias={ {0}: (-1, {}) }", ", buffer_donor={ (-1, {}) }",
               ", input_output_alias={ {0}: (0, {}, must-alias:), {1}: (1, {}, %may-alias) }",
               ", input_output_alias={ {0}: (0, {}, %must-alias:) }"],
    "tuple element": ["t # 1 # 0, t /* c */ #0", "t#01, t#1#0", "t:#0, t#1#0", "t#0#0, t#0", "p#0, t#0",
                      "t#1, t#1#2", "u#0, t#0", "t#0 #1, t#0", "f32[8] negate(t#0), t#1#1", "t#2, t#0", "r#0, t#0",
                      "t#-1, t#0", "t#18446744073709551616, t#0", "t#1#1, , t#0,", "f32[8], t#0, t#1#1"],
    "declared element shape": ["f32[8]{0} t#0, f32[8] t#1#1", "f32[8] %t#1#0, (f32[8], f32[8]) t#1",
                               "f32[4] t#0, t#1#0"],
    "colon names": [
        "ENTRY: {\n  ROOT: = f32[8] parameter(0)\n}\n",
        "ENTRY e {\n  ROOT x : = f32[8] parameter(0)\n}\n",
        "ENTRY e {\n  ROOT %x: = f32[8] parameter(0)\n}\n",
        "ENTRY e {\n  p = f32[8] parameter(0)\n  ROOT x = f32[8] negate(%p:)\n}\n",
        "ENTRY e {\n  p = f32[8] parameter(0)\n  pred: = f32[8] negate(p)\n  ROOT x = f32[8] negate(pred:)\n}\n",
        "ENTRY e {\n  p = f32[8] parameter(0)\n  true: = f32[8] negate(p)\n  ROOT x = f32[8] negate(true:)\n}\n",
        "ENTRY e: (p: f32[8]) -> f32[8] {\n  p: = f32[8] parameter(0)\n  ROOT x:=f32[8] negate(p:)\n}\n",
        "ENTRY %e: {\n  ROOT p = f32[8] parameter(0)\n}\n",
        "ENTRY e {\n  p = (f32[8]) parameter(0)\n  ROOT x = f32[8] negate(p:#0)\n}\n",
    ],
    "constant": ["(" * 10 + "f32[]" + ")" * 10 + " constant(" + "(" * 10 + "1.5" + ")" * 10 + ")",
                 "(" * 40 + "s32[]" + ")" * 40 + " constant(" + "(" * 40 + "-1" + ")" * 40 + ")",
                 "(f32[], (s32[])) constant( ( 1 , ( 2 ) ) )"],
    "async": ["  s = ((f32[8]), f32[8], s32[]) async-start(p)\n  ROOT d = f32[8] async-done(s)",
              "  t = (f32[8], f32[8]) tuple(p, q)\n  ROOT g = f32[8] get-tuple-element(t), index=2",
              "  ROOT g = f32[8] get-tuple-element(p), index=-1"],
}


# ─── mutations ──────────────────────────────────────────────────────────────────────────

_TOKEN = re.compile(r"""(\s*)("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|-?[0-9]+(?:\.[0-9]+)?|%?[A-Za-z_][\w.\-]*|<=|->|\S)""")
_WORDY = re.compile(r"[\w\"'%]")


def _pieces(value: str) -> tuple[list[str], list[str]]:
    """The tokens of `value` and the blanks before each."""
    seps, toks = [], []
    for m in _TOKEN.finditer(value):
        seps.append(m.group(1))
        toks.append(m.group(2))
    return seps, toks


def _join(seps: list[str], toks: list[str]) -> str:
    """The tokens with their blanks; two tokens that would run together are kept apart."""
    out = []
    for k, (sep, tok) in enumerate(zip(seps, toks)):
        if k and not sep and _WORDY.match(tok[0]) and _WORDY.match(toks[k - 1][-1]):
            sep = " "
        out.append(sep + tok)
    return "".join(out)


def _merged(a: str, b: str) -> str:
    """The blanks left where a token is dropped from between blanks `a` and `b`."""
    both = a + b
    return both[both.rfind("\n"):] if "\n" in both else (" " if both else "")


def mutations(value: str) -> list[tuple[str, str]]:
    """(what was done, the mutated value) for `value`, in a fixed order: as written, blanks
    or newlines between all tokens, other quotes, and for each token: dropped, repeated,
    swapped with the next; each integer: 0, -1, 3 and 2^64 - 1 in its place."""
    seps, toks = _pieces(value)
    out = [("as written", value), ("blanks between tokens", " ".join(toks)),
           ("newlines between tokens", "\n".join(toks))]
    if "'" in value:
        out.append(("double quotes", value.replace("'", '"')))
    for k, t in enumerate(toks):
        rest_seps = seps[:k] + ([_merged(seps[k], seps[k + 1])] if k + 1 < len(toks) else []) + seps[k + 2:]
        out.append((f"drop {k} {t!r}", _join(rest_seps, toks[:k] + toks[k + 1:])))
        out.append((f"repeat {k} {t!r}", _join(seps[:k + 1] + [""] + seps[k + 1:], toks[:k + 1] + [t] + toks[k + 1:])))
        if re.fullmatch(r"-?[0-9]+", t):
            for n in ("0", "-1", "3", "18446744073709551615"):
                if n != t:
                    out.append((f"{t}->{n} at {k}", _join(seps, toks[:k] + [n] + toks[k + 1:])))
        if k + 1 < len(toks) and toks[k + 1] != t:
            out.append((f"swap {k},{k + 1}", _join(seps, toks[:k] + [toks[k + 1], t] + toks[k + 2:])))
    return out


@functools.lru_cache(maxsize=1)
def variants() -> list[tuple[str, str]]:
    """(id, module text) of every variant, ids unique and stable."""
    out: dict[str, str] = {}
    for family, build, values in FAMILIES:
        for b, value in enumerate(values):
            for what, mutated in mutations(value):
                out.setdefault(f"{family}#{b}: {what}", build(mutated))
        for e, value in enumerate(EXTRA.get(family, ())):
            out.setdefault(f"{family}+{e}: {value!r}", build(value))
    return list(out.items())


XLA_UNDEFINED = {
    "sharding#4: 4->3 at 6": "ParseSharding writes the 8 listed devices into a [2,3] tile assignment: a "
                             "heap overflow in XLA, which aborts (`malloc(): invalid size`) or reads it, "
                             "run by run",
}
"""Variants on which XLA's parser has undefined behaviour: never asked (a corrupted heap in the
worker would answer for the variants after it), their verdict left out of every count."""


def asked() -> list[tuple[str, str]]:
    """The variants whose verdict XLA is asked for: all but `XLA_UNDEFINED`."""
    return [(vid, text) for vid, text in variants() if vid not in XLA_UNDEFINED]


def test_undefined_variants_are_variants():
    """Each variant left out as undefined in XLA exists (ids are stable) and hloscope reads it."""
    texts = dict(variants())
    for vid in XLA_UNDEFINED:
        hloscope.parse(texts[vid])


# ─── what XLA refuses and hloscope reads, each with its reason ──────────────────────────

REASONS = {
    "newest": "the newest XLA reads it (jaxlib 0.12 takes groups of one device, memory-space-only "
              "layouts `{:S(1)}` and tuple elements `t#i`); hloscope reads what any XLA it meets reads",
    "sharding": "shardings are kept as text: no analysis reads them (XLA reads them with ParseSharding)",
    "text": "frontend attributes, origin and statistics are kept as text: no analysis reads them",
    "metadata": "metadata is read leniently (op_name, source): XLA checks each sub-attribute's name and type",
    "custom-call": "custom-call attributes (literal, operand_layout_constraints, api_version, schedule, "
                   "output_to_operand_aliasing, backend_config) are kept as text or read leniently",
    "entry layout": "entry_computation_layout is kept as text: hloscope takes the entry's layouts from its "
                    "instructions",
    "module flags": "is_scheduled and input_output_alias= are read leniently where XLA reads a token: "
                    "`is_scheduled==true`, `is_scheduled=true true`, `input_output_alias=={...}` are kept as text",
    "async shapes": "XLA checks the shapes and operands of an async chain against each other; hloscope reads "
                    "them as written",
    "operand counts": "XLA checks every opcode's operand count and required attributes; hloscope those its "
                      "analyses rest on (tuple, while, conditional, calls, get-tuple-element, parameter)",
    "dimensions": "a collective's dimensions= is read when an analysis needs it, not checked when read "
                  "(XLA refuses an all-gather without one, its parse reads `dimensions->at(0)`)",
    "declared shapes": "an operand's declared shape is not checked: jaxlib 0.10.2 refuses `t#i`, the newest reads "
                       "`f32[8] t#0` where the element is f32[8] and refuses it where it is not",
    "callee names": "a callee's name is read as far as a name goes (`to_apply=add::`): XLA refuses what follows",
    "literal": "a constant's literal is kept as text: XLA reads its values against the constant's shape",
    "unknown opcode": "an opcode jaxlib 0.10.2 does not know is kept, its attributes as text (the newest XLA's "
                      "collective-reduce: the newest reads it, and checks its attributes)",
    "debug attributes": "module debug_attributes= (the newest XLA's) is kept as text: jaxlib 0.10.2 refuses the "
                        "attribute, the newest reads it by its own grammar",
}

# (family, XLA's message, reason): every false acceptance matches exactly one, and each
# comes with the number of variants it covers, so a new one (or one gone) fails the test.
FALSE_ACCEPTANCES: list[tuple[str, str, str, int]] = [
    ("replica_groups", r"must have more than one device per group", "newest", 9),
    ("layout", r"Dimensions size is 1, but minor to major size is 0", "newest", 1),
    ("sharding", r".", "sharding", 545),
    ("frontend_attributes|origin|statistics", r".", "text", 82),
    ("metadata", r".", "metadata", 39),
    ("custom-call", r".", "custom-call", 123),
    ("module", r"entry_computation_layout|parameter shape|tuple\.|kLsquare|kRsquare|primitive type|expects integer|"
               r"layout to end|minor to major|result shape|computation layouts", "entry layout", 102),
    ("module", r"true or false|expects name|aliasing description", "module flags", 3),
    ("async", r"AsyncUpdate", "async shapes", 16),
    ("async", r"operands|to_apply is expected", "operand counts", 2),
    ("async", r"list to end with kRbrace|range_check|expects string", "dimensions", 11),
    ("tuple element|colon names", r"expects '\)' at the end of operands", "newest", 16),
    ("declared element shape", r"expects '\)' at the end of operands", "declared shapes", 3),
    ("colon names", r"expects 2 operands", "operand counts", 1),
    ("colon names", r"expects name", "callee names", 1),
    ("constant", r".", "literal", 28),
    ("collective-reduce", r"Unknown opcode: collective-reduce", "unknown opcode", 43),
    ("debug_attributes", r"unexpected attribute \"debug_attributes\"", "debug attributes", 83),
]
"""What XLA refuses and hloscope reads among the variants, with why (see REASONS)."""


def _family(variant_id: str) -> str:
    return re.split(r"[#+]", variant_id, 1)[0]


_READ_ON = "cannot parse as an instruction name or as a nested instruction"


def _xla_message(error: str) -> str:
    """The first `error:` line of XLA's message (or the message: "aborted", an exception's).
    XLA's ParseOperands records why it could not read an operand and reads on past it (an
    empty place between commas, `add(p, )`): when that is the first line, the last one,
    the error that stopped it."""
    lines = re.findall(r"error: (.*)", error)
    if not lines:
        return error
    return lines[-1] if lines[0].startswith(_READ_ON) else lines[0]


def _refusal(text: str, engine: str) -> str | None:
    try:
        hloscope.parse(text, engine=engine)
    except hloscope.HloSyntaxError as e:
        return e.message
    return None


@functools.lru_cache(maxsize=1)
def verdicts() -> list[tuple[str, str | None, str | None, str | None]]:
    """(id, XLA's error, the fast engine's, the Lark engine's) per variant; None: read."""
    from .xla_reference import XlaParserProcess

    xla = XlaParserProcess()
    try:
        errors = xla.errors(text for _, text in asked())
    finally:
        xla.close()
    return [(vid, error, _refusal(text, "fast"), _refusal(text, "lark"))
            for (vid, text), error in zip(asked(), errors)]


def test_no_false_rejection():
    """Whatever XLA's parser reads, both of hloscope's engines read."""
    needs_xla()
    unanswered = [vid for vid, xla, _, _ in verdicts() if xla == "no answer in time"]
    assert not unanswered, f"XLA gave no verdict on {unanswered}"
    refused = [f"{vid}: {fast or lark}" for vid, xla, fast, lark in verdicts() if xla is None and (fast or lark)]
    assert not refused, f"{len(refused)} variants XLA reads are refused:\n" + "\n".join(refused[:30])


def test_the_engines_agree():
    needs_xla()
    split = [f"{vid}: fast {fast!r}, lark {lark!r}" for vid, _, fast, lark in verdicts()
             if (fast is None) != (lark is None)]
    assert not split, "\n".join(split[:30])


def test_false_acceptances_are_the_listed_ones():
    """Each variant XLA refuses and hloscope reads matches one entry of FALSE_ACCEPTANCES,
    and each entry covers as many variants as it says."""
    needs_xla()
    covered = [0] * len(FALSE_ACCEPTANCES)
    unlisted = []
    for vid, xla, fast, _ in verdicts():
        if xla is None or fast is not None:
            continue
        message = _xla_message(xla)
        matches = [k for k, (family, pattern, _, _) in enumerate(FALSE_ACCEPTANCES)
                   if re.fullmatch(family, _family(vid)) and re.search(pattern, message)]
        if len(matches) != 1:
            unlisted.append(f"{vid}: XLA says {message[:100]!r} ({len(matches)} entries match)")
            continue
        covered[matches[0]] += 1
    assert not unlisted, f"{len(unlisted)} false acceptances not listed once:\n" + "\n".join(unlisted[:30])
    counts = {f"{f} / {p[:40]} ({REASONS[r][:30]}...)": (got, n)
              for (f, p, r, n), got in zip(FALSE_ACCEPTANCES, covered) if got != n}
    assert not counts, f"entries covering another number of variants than listed (got, listed): {counts}"


def test_what_is_read_is_analysed():
    """Every variant hloscope reads, XLA's verdict aside, goes through the collectives,
    memory and cost analyses (scheduled) without an internal error: what hloscope reads
    where XLA would not (a false acceptance) is no crash either."""
    failures = []
    for vid, text in variants():
        try:
            module = hloscope.parse(text.replace("HloModule m,", "HloModule m, is_scheduled=true,", 1))
        except hloscope.HloSyntaxError:
            continue
        for analysis in ("collectives", "memory", "cost"):
            try:
                getattr(module, analysis)().to_dict()
            except Exception as e:  # noqa: BLE001 - any error is the finding
                failures.append(f"{vid}: {analysis}: {e!r}"[:200])
    assert not failures, "\n".join(failures[:30])


# ─── group membership, as XLA computes it ───────────────────────────────────────────────

GROUP_FORMS = [
    "{{0,1},{2,3},{4,5},{6,7}}",
    "{{3,1},{0,2}}",
    "{{0,4,2,6},{1,5,3,7}}",
    "[4,2]<=[8]",
    "[4,2]<=[2,4]T(1,0)",
    "[2,4]<=[2,2,2]T(2,1,0)",
    "[8,1]<=[8]",
    "[2,8]<=[2,2,4]T(1,2,0)",
    "mesh['x'=2,'y'=4] {'x'}",
    "mesh['x'=2,'y'=4] {'y'}",
    "mesh['x'=2,'y'=4] {'y','x'}",
    "mesh['x'=2,'y'=4] {'y':(1)2}",
    "mesh['x'=2,'y'=4] {'y':(2)2}",
    "mesh['x'=2,'y'=4] {'x','y':(1)2}",
    "mesh['x'=2,'y'=4] {'y':(2)2,'x'}",
    "mesh['x'=8] {'x':(4)2,'x':(1)2}",
    "mesh['x'=8] {'x':(1)2,'x':(4)2}",
    "mesh['x'=16] {'x':(2)4}",
    "mesh['x'=2,'y'=2,'z'=4] {'z':(2)2,'x'}",
    "mesh['x'=2,'y'=4] {'1','0'}",
    "mesh['x'=2,'y'=4], device_ids=([4,2]T(1,0)) {'y'}",
    "mesh['x'=2,'y'=4], device_ids=([2,2,2]T(2,0,1)) {'y':(2)2}",
    "mesh['x'=2,'y'=4], device_ids=(0,2,4,6,1,3,5,7) {'x','y':(1)2}",
    "mesh['x'=2,'y'=4], device_ids=(7,6,5,4,3,2,1,0) {'y'}",
    # The form of issue 28 (JAX 0.10.2, an HSDP step with gradient accumulation).
    "mesh['axis_0'=4,'axis_1'=1,'axis_2'=2], device_ids=([2,2,2]T(0,2,1)) {'axis_0':(2)2}",
]

_DEVICE_IDS = re.compile(r",\s*device_ids\s*=\s*\((.*)\)\s*(?=\{)", re.S)


def _xla_groups(form: str, xla) -> set[tuple[int, ...]] | list[tuple[int, ...]]:
    """XLA's groups for `form`: listed in order by XLA's own expansion (explicit, iota), or
    as a set from what each replica gathers when the all-gather runs (mesh axes).

    The HLO-to-StableHLO translation that feeds the runtime drops a mesh's device_ids (jaxlib
    0.10.2 and 0.12 alike), so a mesh with device_ids runs without them, which gives the
    groups of mesh positions, and each position is then read through XLA's own device array
    (its tile assignment, as HloSharding expands it; or the ids as listed): the way
    MeshAxesReplicaGroupList::flattened_replica_groups reads them."""
    from hloscope.ir.replica_groups import decode_replica_groups

    if not form.startswith("mesh"):
        return [tuple(g) for g in xla.listed(form)]
    rg = decode_replica_groups(form)
    mesh = rg.spec[0]
    n = mesh.num_elements
    positions_form = _DEVICE_IDS.sub(" ", form)
    gathered = xla.run(positions_form, n, rg.group_size)
    m = _DEVICE_IDS.search(form)
    if m is None:
        devices = list(range(n))
    elif m.group(1).lstrip().startswith("["):
        devices = xla.devices("[" + ",".join(map(str, mesh.sizes)) + "]<=" + m.group(1).strip())
    else:
        devices = [int(d) for d in m.group(1).split(",")]
    return {tuple(devices[p] for p in group) for group in gathered}


def _assert_groups_equal(form: str, xla_groups) -> None:
    from hloscope.ir.replica_groups import decode_replica_groups

    rg = decode_replica_groups(form)
    if isinstance(xla_groups, set):
        assert set(rg.groups) == xla_groups, form
        assert len(rg.groups) == len(xla_groups) == rg.num_groups, form
    else:
        assert rg.groups == tuple(xla_groups), form
        assert rg.num_groups == len(xla_groups), form
    assert {len(g) for g in rg.groups} == {rg.group_size}, form


@pytest.fixture(scope="module")
def xla_groups():
    needs_xla()
    from .xla_reference import XlaGroupsProcess

    process = XlaGroupsProcess()
    yield process
    process.close()


def test_replica_groups_are_xlas(xla_groups):
    """hloscope's groups, their number and size, for each replica-group form, sub-axes and
    device_ids included, are the groups XLA computes."""
    for form in GROUP_FORMS:
        _assert_groups_equal(form, _xla_groups(form, xla_groups))


def _subaxis_fixtures():
    return [p for p in fixture_dirs() if "subaxes" in p.name]


@pytest.mark.parametrize("path", _subaxis_fixtures(), ids=lambda p: p.name)
def test_fixture_collective_groups_are_xlas(path, xla_groups):
    """On the fixtures whose collectives run over mesh axes, a sub-axis among them in
    cpu_hsdp_subaxes_accum2 and gpu_hsdp_subaxes_accum2 (issue 28): XLA's parser
    reads the module, and every collective's groups, their number and size (what
    `count-collectives` reports) are the groups XLA computes for its replica_groups."""
    text = (path / "module.hlo.txt").read_text()
    from .xla_reference import XlaParserProcess

    xla = XlaParserProcess()
    try:
        assert xla.error(text) is None
    finally:
        xla.close()
    module = hloscope.parse(text)
    forms = {}
    for comp in module.computations:
        for inst in comp.instructions:
            value = inst.attributes.get("replica_groups")
            if value is not None:
                forms.setdefault(value, []).append(inst.name)
    assert any(form.startswith("mesh") for form in forms)
    expected = {}
    for form in forms:
        groups = _xla_groups(form, xla_groups)
        _assert_groups_equal(form, groups)
        expected[form] = (len(groups), len(next(iter(groups))))
    by_name = {i.name: i for c in module.computations for i in c.instructions}
    for c in module.collectives().instances:
        value = by_name[c.instruction].attributes.get("replica_groups")
        if value is not None:
            assert (c.num_groups, c.group_size) == expected[value], c.instruction


def test_a_fixture_has_a_sub_axis():
    """The fixtures above hold issue 28's form: replica groups over a mesh sub-axis."""
    assert any(":(" in (p / "module.hlo.txt").read_text() for p in _subaxis_fixtures())


@pytest.mark.skipif(not os.environ.get("HLOSCOPE_NEWEST_XLA_PYTHON"),
                    reason="HLOSCOPE_NEWEST_XLA_PYTHON names no interpreter with the newest jaxlib")
def test_what_the_newest_xla_reads_is_read():
    """The variants the newest XLA reads (HLOSCOPE_NEWEST_XLA_PYTHON: an interpreter with
    the newest jaxlib) are read too, those listed as its own among them."""
    needs_xla()
    from .xla_reference import XlaParserProcess

    xla = XlaParserProcess(os.environ["HLOSCOPE_NEWEST_XLA_PYTHON"])
    try:
        errors = xla.errors(text for _, text in asked())
    finally:
        xla.close()
    refused = [vid for (vid, old, fast, _), new in zip(verdicts(), errors) if new is None and fast is not None]
    assert not refused, refused[:30]
    for (vid, old, fast, _), new in zip(verdicts(), errors):
        if old is not None and fast is None:
            listed = [r for f, p, r, _ in FALSE_ACCEPTANCES
                      if re.fullmatch(f, _family(vid)) and re.search(p, _xla_message(old))]
            if listed == ["newest"]:
                assert new is None, vid


if __name__ == "__main__":
    for vid, xla, fast, lark in verdicts():
        verdict = "both read" if xla is None and fast is None else (
            "FALSE REJECTION" if xla is None else "both refuse" if fast else "false acceptance")
        print(f"{verdict:17s} {vid[:90]:90s} | {_xla_message(xla or '')[:70]}")
