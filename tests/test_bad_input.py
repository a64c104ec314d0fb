"""Bad input gets a clear error at its place (issue #18): one test per cause the issue lists.

Each test asserts the error's class, a fragment of its message, and its line and column,
for the full parse and for the lazy path a command takes (`hloscope.load(path, lazy=True)`,
then the analysis): the two give the same verdict. Where XLA's parser reports the place
too, the tests compare with it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

import hloscope
from hloscope.speed.lazy import read_all
from hloscope import HloSyntaxError
from hloscope.ir.attributes import (
    MAX_PARTICIPANTS,
    decode_replica_groups,
)
from hloscope.speed import lazy as speed_lazy

from .conftest import ROOT, needs_xla

HEADER = "HloModule m, is_scheduled=true\n\n"
ADD = "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\n"


def module(body: str, computations: str = ADD, header: str = HEADER) -> str:
    """A module whose entry takes `p = f32[8] parameter(0)` and then runs `body`."""
    return header + computations + "ENTRY e {\n  p = f32[8] parameter(0)\n" + body + "\n}\n"


def where(text: str, needle: str, nth: int = 1) -> tuple[int, int]:
    """(line, column), 1-based, of the nth occurrence of `needle` in `text`."""
    at = -1
    for _ in range(nth):
        at = text.index(needle, at + 1)
    return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)


def rejected(text: str, tmp_path, fragment: str, place: tuple[int, int], error=HloSyntaxError,
             lazy: bool = True) -> HloSyntaxError:
    """`text` is refused with `error` at `place`, by the full parse and by each analysis on
    the lazy path (the verdict a command gives)."""
    with pytest.raises(error) as got:
        hloscope.parse(text, "bad.hlo")
    e = got.value
    assert fragment in e.message, e.message
    assert (e.line, e.column) == place, (e.line, e.column, str(e))
    first, shown, caret = str(e).split("\n")
    assert first.startswith(f"bad.hlo:{place[0]}:{place[1]}: error: ")
    assert shown == text.split("\n")[place[0] - 1].expandtabs(1)[:200] and caret == " " * (place[1] - 1) + "^"
    if lazy:
        path = tmp_path / "bad.hlo"
        path.write_text(text)
        default = speed_lazy.CHECK_ELSEWHERE_CHARS
        # The unread bodies checked here at the first read, and in a forked job while the
        # analysis reads on (what large modules get): the same error either way.
        for threshold in (default, 0):
            speed_lazy.CHECK_ELSEWHERE_CHARS = threshold
            try:
                for analysis in ("collectives", "memory", "cost"):  # cost reads every body at once (read_all)
                    with pytest.raises(error) as lazily:
                        getattr(hloscope.load(path, lazy=True), analysis)()
                    assert fragment in lazily.value.message and (lazily.value.line, lazily.value.column) == place
                    assert str(lazily.value) == str(e).replace("bad.hlo", str(path))
            finally:
                speed_lazy.CHECK_ELSEWHERE_CHARS = default
    return e


def xla_place(text: str) -> tuple[int, int] | None:
    """Where XLA's parser says `text` goes wrong (its first `was parsing L:C`), None if it accepts."""
    xc = needs_xla()
    try:
        xc.hlo.hlo_module_from_text(text)
    except Exception as e:  # noqa: BLE001 - XLA's error, whatever its type
        m = re.search(r"was parsing (\d+):(\d+)", str(e))
        return (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    return None


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch):
    monkeypatch.setenv("HLOSCOPE_CACHE", "0")


# ─── shapes and layouts (hloscope/ir/shape.py) ─────────────────────────────────────────


@pytest.mark.parametrize("shape, bad, fragment", [
    ("f32[2x]", "2x", "expects a dimension size"),
    ("f32[<=]", "<=", "expects a dimension size"),
    ("f32[8]{x}", "{x}", "unexpected '{', expected an opcode"),
    ("f32[8]{0:S(x)}", "x)", "unexpected 'x' in the layout"),
    ("f32[8]{1,0}", "1,0}", "the layout orders 2 dimensions of a shape of rank 1"),
    ("f32[8]{0:Q(1)}", "Q(", "unexpected 'Q' in the layout"),
    ("f32[99999999999999999999]", "999", "expects a dimension size"),
], ids=["dims 2x", "dims <=", "layout x", "memory space S(x)", "layout rank", "layout tag", "beyond int64"])
def test_malformed_shape(shape, bad, fragment, tmp_path):
    """`ValueError` from int() on malformed shapes and layouts: now an error at the bad part.
    As in XLA's parser, a brace opens a layout only before an integer or a colon (`{x}` is
    no layout, and the opcode is missing there), and a layout's part that does not read
    leaves its layout unclosed where it stops."""
    text = module(f"  ROOT r = {shape} negate(p)")
    e = rejected(text, tmp_path, fragment, where(text, bad))
    if shape in ("f32[8]{x}", "f32[8]{0:S(x)}", "f32[8]{0:Q(1)}"):
        assert xla_place(text) == (e.line, e.column)


def test_unterminated_comment_in_a_tuple_shape(tmp_path):
    """`ValueError: substring not found` on `(f32[], /* f32[]) parameter(0)`."""
    text = module("  q = (f32[], /* f32[]) parameter(1)\n  ROOT r = f32[8] negate(p)")
    rejected(text, tmp_path, "unterminated comment in the shape", where(text, "/*"))


def test_shape_left_open_before_the_next_instruction(tmp_path):
    """`AttributeError: 'NoneType' object has no attribute 'end'` when a shape is left open:
    the error is where the shape goes wrong, the next line's start, as XLA says."""
    text = module("  a = f32[\n  ROOT r = f32[8] negate(p)")
    e = rejected(text, tmp_path, "expects a dimension size", where(text, "ROOT r"))
    assert xla_place(text) == (e.line, e.column)  # XLA: "expects integer", there


# ─── attribute values (hloscope/ir/attributes.py) ──────────────────────────────────────


def test_an_empty_iota_is_zero_groups_not_a_crash():
    """`ValueError: range() arg 3 must not be zero` on `replica_groups=[0,0]<=[0]` (XLA reads it)."""
    text = module("  ROOT r = f32[8] all-reduce(p), replica_groups=[0,0]<=[0], to_apply=add")
    (c,) = hloscope.parse(text).collectives().instances
    assert (c.num_groups, c.group_size, c.group_form) == (0, 0, "iota")
    assert xla_place(text) is None


@pytest.mark.parametrize("groups, bad, fragment", [
    ("[2,4]<=[8]T(1,0,2)", "T(1,0,2)", "an iota of one dimension takes no T(...)"),
    ("mesh['x'=2,'y'=4], device_ids=(0,1,2) {'x'}", "0,1,2", "device_ids lists 3 devices for a mesh of 8"),
    ("[1]<=[99999999999]", "[1]", "expects [number of groups, group size] before '<='"),
    ("{{0,a},{2,3}}", "a}", "expects device ids"),
], ids=["iota permutation", "mesh device_ids", "iota of one dimension", "explicit"])
def test_malformed_replica_groups(groups, bad, fragment, tmp_path):
    """IndexError and MemoryError (24 GB) in collectives(): each form is checked, as XLA's
    parser checks it, before any group is listed."""
    text = module(f"  ROOT r = f32[8] all-reduce(p), replica_groups={groups}, to_apply=add")
    started = time.perf_counter()
    rejected(text, tmp_path, "replica_groups: " + fragment, where(text, bad))
    assert time.perf_counter() - started < 30  # nothing the size of the groups was made
    if not groups.startswith("mesh"):  # jaxlib 0.10.2 refuses that one with a failed CHECK (an abort)
        assert xla_place(text) is not None


@pytest.mark.parametrize("groups, sizes", [
    ("[1,99999999999]<=[99999999999]", (1, 99999999999)),
    ("mesh['x'=99999999] {'x'}", (1, 99999999)),
], ids=["iota too large", "mesh too large"])
def test_huge_replica_groups_are_read_not_listed(groups, sizes, tmp_path):
    """MemoryError (24 GB) in collectives() on groups over 10^11 devices. XLA's parser reads
    them (its groups are listed only when asked for), so hloscope reads them too: their
    count and size come from the text, and the groups are never listed."""
    text = module(f"  ROOT r = f32[8] all-reduce(p), replica_groups={groups}, to_apply=add")
    assert xla_place(text) is None
    started = time.perf_counter()
    (c,) = hloscope.parse(text).collectives().instances
    assert (c.num_groups, c.group_size) == sizes
    assert decode_replica_groups(groups).groups is None
    assert time.perf_counter() - started < 30


def test_replica_group_sizes_come_without_listing_the_groups():
    rg = decode_replica_groups(f"[1,{MAX_PARTICIPANTS}]<=[{MAX_PARTICIPANTS}]")
    assert (rg.num_groups, rg.group_size) == (1, MAX_PARTICIPANTS)
    rg = decode_replica_groups(f"[1,{MAX_PARTICIPANTS + 1}]<=[{MAX_PARTICIPANTS + 1}]")
    assert (rg.num_groups, rg.group_size) == (1, MAX_PARTICIPANTS + 1)
    assert rg.groups is None  # more devices than are ever listed


def test_channel_id_that_is_not_an_integer(tmp_path):
    """`ValueError` on `channel_id=abc`: an error at the value, where XLA puts it."""
    text = module("  ROOT r = f32[8] all-reduce(p), channel_id=abc, replica_groups={}, to_apply=add")
    e = rejected(text, tmp_path, "channel_id: expects an integer, not 'abc'", where(text, "abc"))
    assert xla_place(text) == (e.line, e.column)


# ─── references and structure (hloscope/text/link.py, references.py) ──────────────────


def test_operand_used_before_its_definition(tmp_path):
    """`KeyError` in memory() when a scheduled computation uses an operand before defining it;
    XLA refuses any forward reference."""
    text = module("  ROOT b = f32[8] add(p, a)\n  a = f32[8] negate(p)")
    e = rejected(text, tmp_path, "instruction 'a' is used before it is defined", where(text, "a)"))
    assert xla_place(text) == (e.line, e.column)


def test_a_tuple_that_is_its_own_operand(tmp_path):
    """`RuntimeError: dictionary changed size during iteration` on `tuple(t)` of itself."""
    text = module("  ROOT t = (f32[], f32[]) tuple(t)")
    e = rejected(text, tmp_path, "instruction 't' is its own operand", where(text, "t)"))
    assert xla_place(text) == (e.line, e.column)


def test_operand_cycle(tmp_path):
    text = module("  a = f32[8] negate(b)\n  ROOT b = f32[8] negate(a)")
    e = rejected(text, tmp_path, "instruction 'b' is used before it is defined", where(text, "b)"))
    assert xla_place(text) == (e.line, e.column)


def test_a_fusion_root_that_is_its_own_operand_does_not_hang(tmp_path):
    """The hang: `b = f32[4] bitcast(b)` as a fusion's root made the dataflow walk (and
    `hloscope memory`) loop forever. The fused body is unread on the lazy path: its verdict
    is the full parse's all the same."""
    fused = ("fused {\n  f = f32[4] parameter(0)\n  ROOT b = f32[4] bitcast(b)\n}\n\n")
    text = HEADER + fused + "ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] fusion(p), kind=kLoop, calls=fused\n}\n"
    rejected(text, tmp_path, "instruction 'b' is its own operand", where(text, "b)"))
    assert xla_place(text) is not None


@pytest.mark.parametrize("body, fragment, bad", [
    ("  ROOT w = f32[8] while(), condition=add, body=add", "while expects 1 operand (the loop state), but has 0",
     "()"),
    ("  t = (f32[8], f32[8]) tuple(p)\n  ROOT w = (f32[8], f32[8]) while(t), condition=add, body=add",
     "tuple expects 2 operands (one per element of its shape), but has 1", "(p)"),
    ("  t = (f32[8]) tuple(p)\n  ROOT w = (f32[8]) while(t), condition=add", "while expects body=", "while("),
    ("  ROOT c = f32[8] call(p)", "call expects to_apply=", "call("),
], ids=["while()", "tuple with fewer operands than its shape", "while without body", "call without to_apply"])
def test_control_flow_without_its_parts(body, fragment, bad, tmp_path):
    """`IndexError`/`AttributeError` on `while()`, a `while` without `body=`, a tuple with
    fewer operands than the `while` it feeds: XLA's parser refuses them, at the place
    hloscope names for an operand count."""
    text = module(body)
    e = rejected(text, tmp_path, fragment, where(text, bad))
    if "operand" in fragment:
        assert xla_place(text) == (e.line, e.column)
    else:  # XLA notices the missing attribute at the next token
        assert xla_place(text) is not None


@pytest.mark.parametrize("body", [
    "  ROOT c = f32[] call(), to_apply=add",
    "  cs = f32[8] copy-start(p)\n  ROOT cd = f32[8] copy-done(cs)",
    "  t = (f32[8]) tuple(p)\n  ROOT w = (f32[8], f32[8]) while(t), condition=cond, body=body",
], ids=["call()", "copy-start of an array", "loop state shorter than the while"])
def test_structure_xla_reads_is_analysed_without_a_crash(body, tmp_path):
    """`call()`, a `copy-start` with a non-tuple shape, a tuple with fewer operands than the
    `while` it feeds: XLA's parser reads them (its verifier would not), so hloscope reads
    them too, and its analyses take what is missing as new values instead of failing."""
    loop = ("cond {\n  c = (f32[8], f32[8]) parameter(0)\n  ROOT f = pred[] constant(false)\n}\n\n"
            "body {\n  b = (f32[8], f32[8]) parameter(0)\n  g = f32[8] get-tuple-element(b), index=0\n"
            "  ROOT t = (f32[8], f32[8]) tuple(g, g)\n}\n\n")
    text = module(body, ADD + loop)
    assert xla_place(text) is None
    full = hloscope.parse(text)
    path = tmp_path / "odd.hlo"
    path.write_text(text)
    assert full.memory().to_dict() == hloscope.load(path, lazy=True).memory().to_dict()
    assert full.collectives().to_dict() == hloscope.load(path, lazy=True).collectives().to_dict()


@pytest.mark.parametrize("alias", ["{0}: (0, {9}, may-alias)", "{0}: (7, {})"], ids=["index", "parameter"])
def test_input_output_alias_to_a_parameter_index_that_does_not_exist(alias, tmp_path):
    """`IndexError` in memory() on `input_output_alias={ {0}: (0, {9}, may-alias) }`. XLA's
    parser checks only the output side (its verifier, not its parser, checks the parameter
    side), so the module is read, and the analyses take such an alias as none."""
    header = f"HloModule m, is_scheduled=true, input_output_alias={{ {alias} }}\n\n"
    text = module("  ROOT r = (f32[8]) tuple(p)", header=header)
    assert xla_place(text) is None
    path = tmp_path / "alias.hlo"
    path.write_text(text)
    for m in (hloscope.parse(text), hloscope.load(path, lazy=True)):
        assert m.memory().alias_bytes == 0


def test_input_output_alias_to_an_output_index_that_does_not_exist(tmp_path):
    header = "HloModule m, is_scheduled=true, input_output_alias={ {4}: (0, {}, may-alias) }\n\n"
    text = module("  ROOT r = (f32[8]) tuple(p)", header=header)
    rejected(text, tmp_path, "{4} is not an index of the entry's result shape (f32[8])", where(text, "{4}"))
    assert xla_place(text) is not None


@pytest.mark.parametrize("attribute, name, fragment", [
    ("body", "nonexistent", "computation 'nonexistent' is not defined"),
    ("condition", "later", "computation 'later' is used before it is defined (in 'e')"),
    ("body", "e", "computation 'e' calls itself"),
], ids=["undefined", "defined after its caller", "itself"])
def test_dangling_computation_references(attribute, name, fragment, tmp_path):
    """`AttributeError` on `body=nonexistent`, and dangling `calls=`/`to_apply=`/`body=` that
    the CLI accepted (exit 0): XLA requires every callee defined before its caller."""
    other = "condition" if attribute == "body" else "body"
    loop = (f"  t = (f32[8]) tuple(p)\n  ROOT w = (f32[8]) while(t), {other}=cond, {attribute}={name}")
    cond = "cond {\n  c = (f32[8]) parameter(0)\n  ROOT f = pred[] constant(false)\n}\n\n"
    later = "\nlater {\n  l = (f32[8]) parameter(0)\n  ROOT f = pred[] constant(false)\n}\n"
    text = module(loop, ADD + cond) + later
    line, column = where(text, f"{attribute}={name}")
    e = rejected(text, tmp_path, fragment, (line, column + len(attribute) + 1))
    assert xla_place(text) == (e.line, e.column)


def test_dangling_to_apply_and_calls(tmp_path):
    text = module("  ROOT r = f32[8] fusion(p), kind=kLoop, calls=%fused_nowhere")
    e = rejected(text, tmp_path, "computation 'fused_nowhere' is not defined", where(text, "%fused_nowhere"))
    assert xla_place(text)[0] == e.line
    text = module("  ROOT r = f32[] reduce(p, f32[] constant(0)), dimensions={0}, to_apply=nope")
    e = rejected(text, tmp_path, "computation 'nope' is not defined", where(text, "nope"))
    assert xla_place(text) == (e.line, e.column)


def test_a_reference_in_a_comment_or_a_string_is_no_reference():
    text = module("  // calls=%nowhere\n  ROOT r = f32[8] negate(p), metadata={op_name=\"x, to_apply=nowhere\"}")
    assert hloscope.parse(text).entry.root.name == "r"
    spanning = module("  ROOT r = f32[8] negate(p) /* a comment over two lines,\n  to_apply=%nowhere */")
    assert xla_place(spanning) is None
    assert hloscope.parse(spanning).entry.root.name == "r"


@pytest.mark.parametrize("opening, closing", [
    ('metadata={op_name="a/*b"}', ""),
    ('metadata={op_name="a/*b"}', ', metadata={op_name="c*/d"}'),
    ("// a /* in a line comment", ', metadata={op_name="c*/d"}'),
], ids=["string, left open", "string, closed in a later string", "line comment"])
def test_a_comment_opened_in_a_string_hides_no_reference(opening, closing, tmp_path):
    """A `/*` inside a quoted string or a `//` comment opens no comment (XLA's lexer takes
    those whole): the undefined `to_apply=%nowhere` after it is refused where XLA refuses it."""
    text = module(f"  q = f32[8] negate(p), {opening}\n  r = f32[8] call(q), to_apply=%nowhere\n"
                  f"  ROOT s = f32[8] negate(r){closing}")
    if opening.startswith("//"):
        text = text.replace(", //", " //")
    e = rejected(text, tmp_path, "computation 'nowhere' is not defined", where(text, "%nowhere"))
    assert xla_place(text) == (e.line, e.column)


def test_undefined_operand_after_an_index_comment(tmp_path):
    """After `/*index=5*/` an undefined operand's error pointed at column 1."""
    operands = ", ".join(["p"] * 5) + ", /*index=5*/p, /*index=6*/q"
    text = module(f"  ROOT t = ({', '.join(['f32[8]'] * 7)}) tuple({operands})")
    e = rejected(text, tmp_path, "instruction 'q' is not defined", where(text, "q)"))
    assert xla_place(text) == (e.line, e.column)


def test_undefined_control_predecessor_points_at_it(tmp_path):
    text = module("  ROOT r = f32[8] negate(p), control-predecessors={zz}")
    e = rejected(text, tmp_path, "instruction 'zz' is not defined", where(text, "zz"))
    assert xla_place(text)[0] == e.line  # XLA points past the list


def test_duplicate_parameter_numbers(tmp_path):
    text = module("  q = f32[8] parameter(0)\n  ROOT r = f32[8] add(p, q)")
    e = rejected(text, tmp_path, "parameter number 0 is taken by 'p'", where(text, "0)", 3))
    assert xla_place(text)[0] == e.line  # XLA points past the number


def test_a_root_other_than_the_header_says(tmp_path):
    """A dropped ROOT line makes the last instruction the root: XLA checks it against the
    computation's header."""
    fused = "fused (f: f32[4]) -> f32[4] {\n  f = f32[4] parameter(0)\n  g = f32[2] slice(f), slice={[0:2]}\n}\n\n"
    text = HEADER + fused + "ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] fusion(p), kind=kLoop, calls=fused\n}\n"
    line, column = where(text, "-> f32[4] {")
    rejected(text, tmp_path, "the header of 'fused' declares the result f32[4], its root 'g' is f32[2]",
             (line, column + 3))
    assert xla_place(text)[0] == line


# ─── the lazy path gives the full parse's verdict ──────────────────────────────────────


def test_errors_in_bodies_a_command_does_not_read_are_still_reported(tmp_path):
    """Of the mutants `hloscope.parse` rejected, `count-collectives` exited 0 on some and
    `memory` on others: the error was in a body the command left unread."""
    unread = "unused (u: f32[2]) -> f32[2] {\n  u = f32[2] parameter(0)\n  ROOT v = f32[2] negate(nope)\n}\n\n"
    text = HEADER + ADD + unread + "ENTRY e (p: f32[8]) -> f32[8] {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] negate(p)\n}\n"
    rejected(text, tmp_path, "instruction 'nope' is not defined", where(text, "nope"))
    lazy = hloscope.parse(text, lazy=True)  # reading lazily defers the error to a read
    with pytest.raises(HloSyntaxError, match="'nope' is not defined"):
        _ = lazy.entry.instructions


def test_reading_every_body_reports_the_first_error_in_text_order_and_keeps_it():
    """`Module.read_all` reads the bodies in text order without checking them first: the
    first error it meets is the full parse's, and every later read of the module says it."""
    first = "one (u: f32[2]) -> f32[2] {\n  u = f32[2] parameter(0)\n  ROOT v = f32[2] negate(first)\n}\n\n"
    second = "two (w: f32[2]) -> f32[2] {\n  w = f32[2] parameter(0)\n  ROOT z = f32[2] negate(second)\n}\n\n"
    text = HEADER + ADD + first + second + "ENTRY e (p: f32[8]) -> f32[8] {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] negate(p)\n}\n"
    with pytest.raises(HloSyntaxError) as full:
        hloscope.parse(text)
    lazy = hloscope.parse(text, lazy=True)
    for ask in (lambda: read_all(lazy), lambda: lazy.entry.instructions, lambda: read_all(lazy)):
        with pytest.raises(HloSyntaxError) as got:
            ask()
        assert (got.value.message, got.value.line, got.value.column) == (full.value.message, full.value.line,
                                                                          full.value.column)
    assert "'first' is not defined" in full.value.message


def test_a_diff_whose_second_side_is_bad_reports_it_with_exit_2(tmp_path):
    """B's side is worked out in a forked child; when its text holds an error the child
    sends nothing, and the command reports B's error as it would without the child."""
    good = HEADER + ADD + "ENTRY e (p: f32[8]) -> f32[8] {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] negate(p)\n}\n"
    unread = "unused (u: f32[2]) -> f32[2] {\n  u = f32[2] parameter(0)\n  ROOT v = f32[2] negate(nope)\n}\n\n"
    bad = HEADER + ADD + unread + "ENTRY e (p: f32[8]) -> f32[8] {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] negate(p)\n}\n"
    (tmp_path / "a.hlo").write_text(good)
    (tmp_path / "b.hlo").write_text(bad)
    line, column = where(bad, "nope")
    run = subprocess.run([sys.executable, "-m", "hloscope", "diff", str(tmp_path / "a.hlo"), str(tmp_path / "b.hlo")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith(f"{tmp_path / 'b.hlo'}:{line}:{column}: error: instruction 'nope' is not defined")
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("command", ["count-collectives", "memory"])
def test_the_cli_reports_bad_input_with_exit_2(command, tmp_path):
    """FILE:LINE:COL, the line and a caret, exit 2, no traceback; a second run reads the
    file's outline from the cache and says the same."""
    unread = "unused (u: f32[2]) -> f32[2] {\n  u = f32[2] parameter(0)\n  ROOT v = f32[2] negate(nope)\n}\n\n"
    text = HEADER + ADD + unread + "ENTRY e (p: f32[8]) -> f32[8] {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] negate(p)\n}\n"
    path = tmp_path / "bad.hlo"
    path.write_text(text)
    env = dict(os.environ, HLOSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("HLOSCOPE_CACHE", None)
    line, column = where(text, "nope")
    for _ in range(2):
        run = subprocess.run([sys.executable, "-m", "hloscope", command, str(path)], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=120, check=False)
        assert run.returncode == 2, run.stderr
        first, shown, caret = run.stderr.strip("\n").split("\n")
        assert first == f"{path}:{line}:{column}: error: instruction 'nope' is not defined"
        assert shown == "  ROOT v = f32[2] negate(nope)" and caret == " " * (column - 1) + "^"
        assert "Traceback" not in run.stderr
