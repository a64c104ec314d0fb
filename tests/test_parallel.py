"""A large text read by two processes gives the module a sequential parse gives."""

from __future__ import annotations

import os
import re
import time

import pytest

import hloscope
from hloscope.speed import lazy
from hloscope.speed.lazy import read_all
from hloscope.speed import runtime
from hloscope.errors import HloSyntaxError
from hloscope.speed import split
from hloscope.text.names import NameFacts, Renames, may_write_sugar, uniquify_instruction_names

from .conftest import FIXTURES, fixture_ids, needs_xla


def _spy(monkeypatch, owner, name: str) -> list:
    """Replace `owner.name` by a function that also lists what it returns."""
    returned = []
    original = getattr(owner, name)

    def spy(*args, **kwargs):
        returned.append(original(*args, **kwargs))
        return returned[-1]

    monkeypatch.setattr(owner, name, spy)
    return returned


@pytest.fixture
def in_two(monkeypatch):
    """Every text counts as large; the list has the modules the two-process path made."""
    monkeypatch.setattr(split, "MIN_CHARS", 0)
    monkeypatch.delenv("HLOSCOPE_JOBS", raising=False)
    return _spy(monkeypatch, split, "_join")


def _sequential(text, monkeypatch):
    with monkeypatch.context() as m:
        m.setenv("HLOSCOPE_JOBS", "1")
        return hloscope.parse_all(text, "f.hlo", lazy=True)


def _outline(module):
    return (module.name, dict(module.attributes), module.tables, module.entry.name,
            [(c.name, c.text_name, c.is_entry, c.line, c.signature, dict(c.attributes),
              getattr(c, "body", None) and (getattr(c, "body", None).start, getattr(c, "body", None).end, getattr(c, "body", None).line, getattr(c, "body", None).column))
             for c in module.computations])


def _instructions(module):
    return [(c.name, [(i.name, i.opcode, i.shape.text, [o.name for o in i.operands], dict(i.attributes))
                      for i in c.instructions]) for c in module.computations]


@pytest.mark.parametrize("name", fixture_ids())
def test_two_processes_read_the_same_module(name, in_two, monkeypatch):
    text = (FIXTURES / name / "module.hlo.txt").read_text()
    (two,) = hloscope.parse_all(text, "f.hlo", lazy=True)
    assert in_two == [two]  # the two-process path did run
    (one,) = _sequential(text, monkeypatch)
    assert _outline(two) == _outline(one)
    assert _instructions(two) == _instructions(one) == _instructions(hloscope.parse(text))


def _copies(module):
    read_all(module)
    return [(c.name, getattr(c, "copy_of", None).name if getattr(c, "copy_of", None) is not None else None) for c in module.computations]


@pytest.mark.parametrize("name", ["cpu_hsdp_accum2", "cpu_remat_full"])
def test_two_processes_read_the_same_copies(name, in_two, monkeypatch):
    """The tail's bodies, found alike by its lazy parse (`LazyBody.alike`), are copies of
    the head's as a sequential read finds them: the two meet under the text up to names."""
    text = (FIXTURES / name / "module.hlo.txt").read_text()
    (two,) = hloscope.parse_all(text, "f.hlo", lazy=True)
    assert in_two == [two]
    at = split._split_point(text)
    head = {c.name for c in two.computations if getattr(c, "body", None) is not None and c.body.start < at}
    (one,) = _sequential(text, monkeypatch)
    copies = _copies(one)
    assert _copies(two) == copies
    assert any(original in head and name not in head for name, original in copies)  # across the parts
    # Within each part, the bodies found alike are those the sequential parse finds alike.
    for part in (head, {c.name for c in two.computations} - head):
        assert _alike_pairs(two, part) == _alike_pairs(one, part)
    assert _alike_pairs(two, head)


def _alike_pairs(module, names):
    comps = [c for c in module.computations if c.name in names and c.alike is not None]
    return {(a.name, b.name) for a in comps for b in comps if a is not b and a.alike is b.alike}


def _halves(text):
    at = split._split_point(text)
    assert at is not None
    return text[:at], text[at:]


def _error(text, monkeypatch):
    with pytest.raises(HloSyntaxError) as e:
        hloscope.parse_all(text, "f.hlo", lazy=True)
    return str(e.value)


def test_an_error_in_the_second_half_is_the_sequential_error(in_two, monkeypatch):
    first, second = _halves((FIXTURES / "cpu_fsdp" / "module.hlo.txt").read_text())
    broken = first + second.replace(" = ", " = = ", 1)
    got = _error(broken, monkeypatch)
    monkeypatch.setenv("HLOSCOPE_JOBS", "1")
    assert got == _error(broken, monkeypatch)
    assert "f.hlo:" in got and "^" in got


def test_a_name_repeated_across_the_halves_is_the_sequential_error(in_two, monkeypatch):
    text = (FIXTURES / "cpu_fsdp" / "module.hlo.txt").read_text()
    first, second = _halves(text)
    (module,) = _sequential(text, monkeypatch)
    early = module.computations[0].name
    late = next(c.name for c in module.computations if getattr(c, "body", None).start >= len(first) and not c.is_entry)
    repeated = first + second.replace(f"%{late} (", f"%{early} (", 1)
    got = _error(repeated, monkeypatch)
    assert "computation already exists" in got
    monkeypatch.setenv("HLOSCOPE_JOBS", "1")
    assert got == _error(repeated, monkeypatch)


@pytest.mark.parametrize("change", ["none", "repeated", "zero-led"])
def test_the_halves_judge_renames_by_their_names_hashes_as_by_the_names(change):
    """Each half of a split parse keeps its names' hashes, not the names (a forked child's
    `hash` is its parent's); judged together, they say what the names say: a rename is needed
    exactly when XLA's uniquer would rename one."""
    (module,) = hloscope.parse_all((FIXTURES / "cpu_fsdp" / "module.hlo.txt").read_text())
    comps = module.computations
    k = len(comps) // 2
    early, late = comps[0].instructions[0], comps[-1].instructions[1]
    root, dot, suffix = early.name.rpartition(".")
    if change == "repeated":
        late.name = early.name
    elif change == "zero-led":  # the same name to XLA's uniquer: `x.05` is `x.5`, `x.0` is `x`
        late.name = f"{root}.0{suffix}" if dot and suffix.isdigit() else f"{early.name}.0"
    head = NameFacts(*NameFacts.of(comps[:k], hashed=True).plain())  # as it crosses from the child
    tail = NameFacts.of(comps[k:], hashed=True)
    whole = NameFacts.of(comps)
    before = [i.name for c in comps for i in c.instructions]
    uniquify_instruction_names(comps)
    renamed = [i.name for c in comps for i in c.instructions] != before
    assert renamed == (change != "none")
    assert (Renames.of([head, tail]).roots != frozenset()) == renamed == (Renames.of([whole]).roots != frozenset())


def _sugar_module(entry_names: tuple[str, str]) -> str:
    """A module whose second computation writes async sugar (`call-start`), ten more after it,
    and an entry whose second and third instructions are named `entry_names`."""
    fill = "".join(f"\n%f{k} (x: f32[8]) -> f32[8] {{\n  %x{k} = f32[8] parameter(0)\n"
                   + "".join(f"  %n{k}_{j} = f32[8] negate(%{f'x{k}' if j == 0 else f'n{k}_{j - 1}'})\n" for j in range(20))
                   + f"  ROOT %r{k} = f32[8] negate(%n{k}_19)\n}}\n" for k in range(10))
    a, b = entry_names
    return ("HloModule m, is_scheduled=true\n\n%neg (a: f32[8]) -> f32[8] {\n  %a = f32[8] parameter(0)\n"
            "  ROOT %y = f32[8] negate(%a)\n}\n\n%w (v: f32[8]) -> f32[8] {\n  %v = f32[8] parameter(0)\n"
            "  %s = ((f32[8]), f32[8], s32[]) call-start(%v), to_apply=%neg\n  ROOT %d = f32[8] call-done(%s)\n}\n"
            + fill + f"\nENTRY %e (p: f32[8]) -> f32[8] {{\n  %p = f32[8] parameter(0)\n  %{a} = f32[8] negate(%p)\n"
            f"  %{b} = f32[8] negate(%{a})\n  ROOT %c = f32[8] call(%{b}), to_apply=%w\n}}\n")


@pytest.mark.parametrize("line, sugar", [
    ("  %s = ((f32[8]), f32[8], s32[]) call-start(%v), to_apply=%neg", True),
    ("  %s = ((f32[8]), f32[8]) reduce-scatter-start (%v), dimensions={0}", True),
    ("  %s = ((f32[8]), f32[8], s32[]) fusion-start(%v), kind=kLoop, calls=%f", True),
    ("  %s = (f32[8], f32[64]) all-gather-start(%v), dimensions={0}", False),  # XLA's own async opcode
    ("  %s = (f32[8], f32[8]) collective-permute-start(%v), source_target_pairs={{0,1}}", False),
    ("  %s = f32[8] negate(%v), metadata={op_name=\"f\"}", False),
])
def test_a_half_looks_for_async_sugar_in_the_other(line, sugar):
    """The child parsing the head looks at the tail's text for async sugar (whose hidden names
    could meet the head's): found where a read would find it; the starts of XLA's own async
    opcodes are not sugar."""
    text = "HloModule m\n\nENTRY %e (v: f32[8]) -> f32[8] {\n  %v = f32[8] parameter(0)\n" + line + "\n}\n"
    assert may_write_sugar(text) is sugar
    assert may_write_sugar(text, text.index("ENTRY")) is sugar and not may_write_sugar(text, 0, text.index("ENTRY"))


def test_a_renamed_body_with_an_error_reports_the_first_error_in_the_text():
    """Only the bodies XLA's uniquer renames are read at the parse (`Renames`): where one
    does not read, the error is still the first a full parse meets, in an earlier body."""
    text = ("HloModule m, is_scheduled=true\n\n%neg (a: f32[8]) -> f32[8] {\n  %a = f32[8] parameter(0)\n"
            "  ROOT %y = f32[8] negate(%a)\n}\n\n%bad (x: f32[8]) -> f32[8] {\n  %x = f32[8] parameter(0)\n"
            "  ROOT %z = f32[8] negate(%nowhere)\n}\n\n%w (v: f32[8]) -> f32[8] {\n  %v = f32[8] parameter(0)\n"
            "  %s = ((f32[8]), f32[8], s32[]) call-start(%v), to_apply=%neg\n  ROOT %d = f32[8] call-done(%elsewhere)\n}\n\n"
            "ENTRY %e (p: f32[8]) -> f32[8] {\n  %p = f32[8] parameter(0)\n  %call = f32[8] negate(%p)\n"
            "  %q = f32[8] call(%call), to_apply=%bad\n  ROOT %c = f32[8] call(%q), to_apply=%w\n}\n")
    errors = []
    for lazy in (False, True):
        with pytest.raises(HloSyntaxError) as e:
            hloscope.parse_all(text, "f.hlo", lazy=lazy)
        errors.append(str(e.value))
    assert "nowhere" in errors[0] and errors[1] == errors[0]


@pytest.mark.parametrize("entry_names", [("call", "async_param"), ("q", "r"), ("call", "r"), ("call.1", "call")])
def test_async_sugar_in_the_head_renames_the_tails_names_as_xla_does(entry_names, in_two):
    """XLA names the computation it builds for the head's async sugar (`async_param`, `call`)
    before it reads the entry: the tail's instructions of those names are renamed, though
    the tail writes no sugar. Without such names, the tail's bodies stay unread; with names
    of the wrapped opcode's root only (`call`, `call.1`), so do those that write none."""
    xc = needs_xla()
    text = _sugar_module(entry_names)
    first, second = _halves(text)
    assert "call-start" in first and "call-start" not in second and "ENTRY" in second
    printed = xc.hlo.hlo_module_from_text(text).to_string()
    xla_names = re.findall(r"^\s+(?:ROOT )?%([\w.\-]+) = ", printed[printed.index("\nENTRY"):], re.M)
    (two,) = hloscope.parse_all(text, "f.hlo", lazy=True)
    assert len(in_two) == 1
    assert [i.name for i in two.entry.instructions] == xla_names
    if entry_names == ("q", "r"):
        assert not two.computations[-2].is_read  # a filler of the tail
    else:
        assert xla_names[1:3] != list(entry_names)
    if "async_param" not in entry_names:
        assert not any(c.is_read for c in two.computations[2:-1])  # the fillers, either half
    (one,) = hloscope.parse_all(text)
    assert [i.name for c in one.computations for i in c.instructions] == [
        i.name for c in two.computations for i in c.instructions]


@pytest.mark.parametrize("spelling", ["as written", "zero-led"])
def test_an_instruction_name_repeated_across_the_halves_is_renamed_as_in_one_process(spelling, in_two, monkeypatch):
    import re

    text = (FIXTURES / "cpu_fsdp" / "module.hlo.txt").read_text()
    first, second = _halves(text)
    (module,) = _sequential(text, monkeypatch)
    assert getattr(module.entry, "body", None).start >= len(first)
    early = module.computations[0].instructions[0].name
    root, dot, suffix = early.rpartition(".")
    if spelling == "as written":
        name = early
    else:  # the same name to XLA's uniquer: `x.05` is `x.5`, `x.0` is `x`
        name = f"{root}.0{suffix}" if dot and suffix.isdigit() else f"{early}.0"
    late = module.entry.instructions[1].name
    at = second.index(f"\n{module.entry.text_name} (" if not module.entry.is_entry else "\nENTRY")
    entry_text = re.sub(rf"%{re.escape(late)}(?![\w.\-])", f"%{name}", second[at:])
    (two,) = hloscope.parse_all(first + second[:at] + entry_text, "f.hlo", lazy=True)
    assert len(in_two) == 1
    (one,) = _sequential(first + second[:at] + entry_text, monkeypatch)
    assert _instructions(two) == _instructions(one)
    names = [i.name for c in two.computations for i in c.instructions]
    assert len(set(names)) == len(names) and name not in [i.name for i in two.entry.instructions]


@pytest.mark.parametrize("name", ["cpu_scan_layers", "gpu_hsdp_accum2"])
def test_the_parent_reads_the_schedule_in_its_part_while_the_child_works(name, in_two, monkeypatch):
    """The entry (in the parent's tail), and the loop bodies there it runs, are read by the
    parse; each keeps its place in the text, so the outline is the sequential parse's."""
    from hloscope.analysis.callgraph import scheduled_computations

    monkeypatch.setattr(runtime.Child, "ready", lambda self: False)  # a child slower than any read
    text = (FIXTURES / name / "module.hlo.txt").read_text()
    (two,) = hloscope.parse_all(text, "f.hlo", lazy=True)
    assert in_two == [two]
    at = split._split_point(text)
    (one,) = _sequential(text, monkeypatch)
    assert _outline(two) == _outline(one)  # before the walk below reads `one`'s bodies
    # What the schedule runs that the parent can reach in its part, from the entry.
    expected, stack = set(), [one.entry]
    while stack:
        comp = stack.pop()
        if getattr(comp, "body", None).start >= at and comp.name not in expected:
            expected.add(comp.name)
            stack += [c for i in comp.instructions if i.info.runs_callees for c in i.called_computations]
    assert {c.name for c in two.computations if getattr(c, "is_read", True)} == expected
    assert len(expected) > 1 and expected <= {c.name for c in scheduled_computations(one)}
    assert _instructions(two) == _instructions(one)


def test_the_parent_stops_reading_the_schedule_when_the_child_is_done(in_two, monkeypatch):
    monkeypatch.setattr(runtime.Child, "ready", lambda self: True)
    (two,) = hloscope.parse_all((FIXTURES / "cpu_fsdp" / "module.hlo.txt").read_text(), "f.hlo", lazy=True)
    assert in_two == [two] and not any(getattr(c, "is_read", True) for c in two.computations)


def test_a_schedule_body_that_does_not_read_fails_on_use_as_in_one_process(in_two, monkeypatch):
    text = (FIXTURES / "cpu_fsdp" / "module.hlo.txt").read_text()
    (one,) = _sequential(text, monkeypatch)
    root = one.entry.root
    operand = root.operands[0].name
    at = text.index(f"ROOT %{root.name} = ")
    line_end = text.index("\n", at)
    broken = text[:at] + text[at:line_end].replace(f"%{operand}", "%undefined_operand", 1) + text[line_end:]
    monkeypatch.setattr(runtime.Child, "ready", lambda self: False)
    (two,) = hloscope.parse_all(broken, "f.hlo", lazy=True)  # the parse itself does not fail
    assert in_two == [two] and not getattr(two.entry, "is_read", True)
    with pytest.raises(HloSyntaxError) as got:
        _ = two.entry.instructions
    (seq,) = _sequential(broken, monkeypatch)
    with pytest.raises(HloSyntaxError) as expected:
        _ = seq.entry.instructions
    assert str(got.value) == str(expected.value) and "undefined_operand" in str(got.value)


def test_small_texts_and_several_modules_are_read_in_one_process(monkeypatch):
    text = (FIXTURES / "cpu_fsdp" / "module.hlo.txt").read_text()
    assert split._split_point(text) is None  # under MIN_CHARS
    monkeypatch.setattr(split, "MIN_CHARS", 0)
    assert split._split_point(text + "\n" + text) is None


def test_the_diff_with_its_second_side_forked_is_the_same(monkeypatch):
    """`hloscope.diff` works out B's side in a forked child (sent back as plain data): the
    result is the one worked out in one process."""
    monkeypatch.setenv("HLOSCOPE_CACHE", "0")
    a, b = (FIXTURES / name / "module.hlo.txt" for name in ("cpu_hsdp_accum1", "cpu_remat_full"))
    monkeypatch.setenv("HLOSCOPE_JOBS", "1")
    expected = hloscope.diff(hloscope.load(a), hloscope.load(b)).to_dict()
    monkeypatch.delenv("HLOSCOPE_JOBS")
    children = _spy(monkeypatch, runtime, "in_child")
    assert hloscope.diff(hloscope.load(a), hloscope.load(b)).to_dict() == expected
    assert children and children[0] is not None  # B's side was worked out by a child


def test_a_diff_of_kept_results_forks_nothing(monkeypatch, tmp_path):
    """A second diff of the same pair reads every result from the cache (`kept`): no child."""
    from hloscope.api.module import kept

    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HLOSCOPE_CACHE", raising=False)
    a, b = (FIXTURES / name / "module.hlo.txt" for name in ("cpu_hsdp_accum1", "cpu_remat_full"))
    assert not kept(hloscope.load(b))
    first = hloscope.diff(hloscope.load(a), hloscope.load(b)).to_dict()
    assert kept(hloscope.load(a)) and kept(hloscope.load(b))
    children = _spy(monkeypatch, runtime, "in_child")
    assert hloscope.diff(hloscope.load(a), hloscope.load(b)).to_dict() == first
    assert children == []


def test_cpus_taken_by_other_work_leave_no_room_for_helpers(monkeypatch):
    """While the diff's two sides keep the CPUs busy, neither starts helpers; after, both can."""
    monkeypatch.setattr(runtime.os, "sched_getaffinity", lambda pid: {0, 1})
    if not runtime.can_fork():
        pytest.skip("this process cannot fork")
    with runtime.taking_cpus(1):
        assert not runtime.can_fork()
    assert runtime.can_fork()


def _diff_cli(a, b, *more):
    from click.testing import CliRunner

    from hloscope.cli import cli

    return CliRunner().invoke(cli, ["diff", str(a), str(b), *more])


def test_the_diff_with_b_read_ahead_is_the_same(monkeypatch, tmp_path):
    """`hloscope diff` has a child parse B's text into the cache while A's is parsed here,
    then work out B's side into the cache while A's is worked out here (`reading_ahead`
    with `work_out_side`): the report is the one worked out in one process."""
    from hloscope.api import compare, loading
    from hloscope.api import module as module_api
    from hloscope.speed import cache, seam

    a, b = (FIXTURES / name / "module.hlo.txt" for name in ("cpu_hsdp_accum1", "cpu_remat_full"))
    monkeypatch.delenv("HLOSCOPE_CACHE", raising=False)
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "one"))
    monkeypatch.setenv("HLOSCOPE_JOBS", "1")
    expected = _diff_cli(a, b, "--json")
    assert expected.exit_code == 0, expected.output
    monkeypatch.delenv("HLOSCOPE_JOBS")
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "two"))
    monkeypatch.setattr(loading, "READ_AHEAD_MIN_BYTES", 0)
    jobs = []
    started = runtime.in_child_sending

    def spy(fn, *args):
        # The work the child does: what `in_child` and `seam.ahead` wrap.
        jobs.append((args[0] if fn in (runtime._send_result, seam._with_a_cpu_taken) else fn, started(fn, *args)))
        return jobs[-1][1]

    monkeypatch.setattr(runtime, "in_child_sending", spy)
    stored = _spy(monkeypatch, cache, "lookup")
    worked_out = _spy(monkeypatch, compare, "work_out_side")
    models = _spy(monkeypatch, module_api, "build_memory_model")
    reads = []
    read = loading.read_bytes
    monkeypatch.setattr(loading, "read_bytes", lambda path: reads.append(path) or read(path))
    got = _diff_cli(a, b, "--json")
    assert got.exit_code == 0, got.output
    assert got.output == expected.output
    assert jobs and jobs[0][0] is loading._read_ahead and jobs[0][1] is not None  # the read-ahead child
    assert stored[-1] is not None  # B's outline, which the child kept, was read from the cache
    assert reads == [str(a)]  # B's file was read and hashed by the child alone
    assert worked_out == []  # called in the child only
    assert seam._as_plain not in [fn for fn, _ in jobs]  # no second child for B's side
    assert [m.module.name for m in models] == [hloscope.load(a).name]  # here, A's memory model only


def test_the_diff_picture_with_b_read_ahead_is_the_same(monkeypatch, tmp_path):
    """`hloscope diff --html` with B read ahead: the child works out what the picture draws of
    B too (its role timelines, into the cache), so that this process builds A's memory model
    only, and the page is the one drawn in one process."""
    from hloscope.api import loading
    from hloscope.api import module as module_api

    a, b = (FIXTURES / name / "module.hlo.txt" for name in ("cpu_hsdp_accum1", "cpu_remat_full"))
    one, two = tmp_path / "one.html", tmp_path / "two.html"
    monkeypatch.delenv("HLOSCOPE_CACHE", raising=False)
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "one"))
    monkeypatch.setenv("HLOSCOPE_JOBS", "1")
    expected = _diff_cli(a, b, "--html", str(one))
    assert expected.exit_code == 0, expected.output
    monkeypatch.delenv("HLOSCOPE_JOBS")
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "two"))
    monkeypatch.setattr(loading, "READ_AHEAD_MIN_BYTES", 0)
    models = _spy(monkeypatch, module_api, "build_memory_model")
    got = _diff_cli(a, b, "--html", str(two))
    assert got.exit_code == 0, got.output
    assert got.output.replace(str(two), "OUT") == expected.output.replace(str(one), "OUT")  # `wrote OUT`
    assert two.read_bytes() == one.read_bytes()
    assert [m.module.name for m in models] == [hloscope.load(a).name]  # here, A's memory model only


def test_a_file_changed_after_the_read_ahead_child_hashed_it_is_said(monkeypatch, tmp_path):
    """Inside a read-ahead block, an input the child kept is loaded from its outline under the
    hash the child found, without reading the file; the file is read when a computation is
    asked for, and if it no longer hashes so, the command says the file changed."""
    from hloscope.api import loading

    path = tmp_path / "b.hlo"
    text = (FIXTURES / "cpu_hsdp_accum1" / "module.hlo.txt").read_text()
    path.write_text(text)
    monkeypatch.delenv("HLOSCOPE_CACHE", raising=False)
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HLOSCOPE_JOBS", raising=False)
    monkeypatch.setattr(loading, "READ_AHEAD_MIN_BYTES", 0)
    with loading.reading_ahead([str(path)]) as ahead:
        assert ahead.stored()
        path.write_text(text.replace("HloModule ", "HloModule changed_", 1))
        (module,) = loading.load_all(str(path), lazy=True)
        assert module.name == hloscope.parse(text).name  # the kept header: the file unread
        with pytest.raises(loading.InputError, match="changed while hloscope read it"):
            module.computations
    (module,) = loading.load_all(str(path), lazy=True)  # after the block: read and hashed here
    assert module.name.startswith("changed_")


BAD = ("HloModule m, is_scheduled=true\n\nunused (u: f32[2]) -> f32[2] {\n  u = f32[2] parameter(0)\n"
       "  ROOT v = f32[2] negate(NAME)\n}\n\nENTRY e (p: f32[8]) -> f32[8] {\n  p = f32[8] parameter(0)\n"
       "  ROOT r = f32[8] negate(p)\n}\n")
"""A module whose unread body uses NAME: an error of the read, or of the parse when NAME is
not a name."""


@pytest.mark.parametrize("found_by", ["read", "parse"])
@pytest.mark.parametrize("bad", ["b", "ab"])
def test_a_read_ahead_input_with_an_error_is_reported_in_the_command_order(bad, found_by, monkeypatch, tmp_path):
    """A child that meets an error keeps nothing; the error reported is the one the command
    meets without the child: B's, unless A holds one too."""
    from hloscope.api import loading

    good = FIXTURES / "cpu_hsdp_accum1" / "module.hlo.txt"
    a, b = tmp_path / "a.hlo", tmp_path / "b.hlo"
    name = "in_{}" if found_by == "read" else "in_{} +"
    a.write_text(BAD.replace("NAME", name.format("a")) if "a" in bad else good.read_text())
    b.write_text(BAD.replace("NAME", name.format("b")))
    monkeypatch.delenv("HLOSCOPE_CACHE", raising=False)
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HLOSCOPE_JOBS", "1")
    expected = _diff_cli(a, b)
    monkeypatch.delenv("HLOSCOPE_JOBS")
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "cache2"))
    monkeypatch.setattr(loading, "READ_AHEAD_MIN_BYTES", 0)
    children = _spy(monkeypatch, runtime, "in_child_sending")
    got = _diff_cli(a, b)
    assert children and children[0] is not None
    assert isinstance(expected.exception, HloSyntaxError)  # `main` says it, exit 2
    assert isinstance(got.exception, HloSyntaxError)
    assert str(got.exception) == str(expected.exception)
    assert f"{bad[0]}.hlo:5:" in str(got.exception)
    assert ("is not defined" in str(got.exception)) == (found_by == "read")


_IN_A_JAX_PROCESS = """
import warnings, sys
warnings.simplefilter("always")
import jax.numpy as jnp
jnp.ones(1).block_until_ready()  # a backend: JAX's threads run
import hloscope
from hloscope.speed import runtime
a, b = sys.argv[1:3]
print("forks" if runtime.can_fork() else "does not fork")
print(sorted(hloscope.diff(hloscope.load(a), hloscope.load(b)).to_dict()))
"""


def test_a_process_with_other_threads_does_not_fork(tmp_path):
    """A child forked from a JAX process (a CI test calling `hloscope.diff`) would inherit
    locks its threads hold, and JAX warns at every fork: hloscope does the work itself
    there. A process without threads, as a command's, forks."""
    import subprocess
    import sys

    from .conftest import ROOT

    env = dict(os.environ, HLOSCOPE_CACHE="0")
    env.pop("HLOSCOPE_JOBS", None)
    a, b = (str(FIXTURES / name / "module.hlo.txt") for name in ("cpu_hsdp_accum1", "cpu_remat_full"))
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nothing forks anyway")
    plain = subprocess.run([sys.executable, "-c", "from hloscope.speed import runtime; print(runtime.can_fork())"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True)
    assert plain.stdout.strip() == "True"
    run = subprocess.run([sys.executable, "-c", _IN_A_JAX_PROCESS, a, b], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    assert run.stdout.splitlines()[0] == "does not fork"
    assert "fork" not in run.stderr, run.stderr  # JAX's "os.fork() was called" warning


def test_a_fork_in_one_thread_says_nothing_of_jax():
    """JAX's at-fork hook warns of every fork once it has a backend, threads or not; hloscope
    forks only a process that holds one thread, so that warning is noise it keeps out of the
    user's run. (Importing jaxlib starts threads, so the child here installs a hook that warns
    as JAX's does, checked against JAX's source.)"""
    import inspect
    import subprocess
    import sys

    from jax._src import xla_bridge

    message = "os.fork() was called. os.fork() is incompatible with multithreaded code, "
    assert message in inspect.getsource(xla_bridge._at_fork)
    script = (
        "import os, warnings\n"
        f"os.register_at_fork(before=lambda: warnings.warn({message!r}, RuntimeWarning, stacklevel=2))\n"
        "from hloscope.speed import runtime\n"
        "assert len(os.listdir('/proc/self/task')) == 1\n"
        "child = runtime.in_child_sending(lambda send: send('done'))\n"
        "assert child is not None and child.receive() == 'done'\n"
    )
    r = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", script], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "HLOSCOPE_JOBS": "2"})
    assert r.returncode == 0, r.stderr
    assert "os.fork() was called" not in r.stderr  # a hook's exception is printed, not raised


def _bodies_with_errors(bad: tuple, count: int = 40) -> str:
    """A module of `count` computations nothing calls, those at `bad` naming an undefined
    operand, and an entry of its own; with "alias" in `bad`, the header aliases an output
    the entry's result does not have (an error the entry's read does not find)."""
    comps = "".join(f"%c{k} (a{k}: f32[8]) -> f32[8] {{\n  %a{k} = f32[8] parameter(0)\n"
                    f"  ROOT %r{k} = f32[8] negate(%{'nowhere' if k in bad else f'a{k}'})\n}}\n\n" for k in range(count))
    alias = ", input_output_alias={ {4}: (0, {}, may-alias) }" if "alias" in bad else ""
    return f"HloModule m{alias}\n\n{comps}ENTRY %e (p: f32[8]) -> f32[8] {{\n  %p = f32[8] parameter(0)\n  ROOT %q = f32[8] negate(%p)\n}}\n"


@pytest.mark.parametrize("slow", ["job", "here", "neither", "job fails"])
@pytest.mark.parametrize("bad", [(5, 35), (35,), (5,), (), ("alias",), (35, "alias")])
def test_the_verdict_checked_from_both_ends_is_the_full_parses(slow, bad, monkeypatch, tmp_path):
    """The verdict's job checks the unread bodies from the first, this process from the last
    once its analysis is done, until they meet: the error reported is the full parse's (the
    first in the text), whichever side is slow, and when the job fails; the entry, read by
    the analysis meanwhile, has its aliases checked all the same."""
    text = _bodies_with_errors(bad).replace("HloModule m", "HloModule m, is_scheduled=true", 1)
    if bad:
        with pytest.raises(HloSyntaxError) as full:
            hloscope.parse(text, "bad.hlo")
    parent = os.getpid()
    check = lazy._check

    def timed_check(*args):
        if (os.getpid() != parent) == (slow == "job"):
            time.sleep(0.01)
        if slow == "job fails" and os.getpid() != parent:
            raise RuntimeError("the job fails")
        return check(*args)

    if slow != "neither":
        monkeypatch.setattr(lazy, "_check", timed_check)
    monkeypatch.setattr(lazy, "CHECK_ELSEWHERE_CHARS", 0)
    monkeypatch.setattr(lazy, "PROGRESS_REPORTS", 10)
    monkeypatch.delenv("HLOSCOPE_JOBS", raising=False)
    monkeypatch.setenv("HLOSCOPE_CACHE", "0")
    path = tmp_path / "bad.hlo"
    path.write_text(text)
    started = _spy(monkeypatch, runtime, "in_child_sending")
    for analysis in ("collectives", "memory"):  # the memory's reads the entry, the collectives' not
        module = hloscope.load(path, lazy=True)
        if bad:
            with pytest.raises(HloSyntaxError) as lazily:
                getattr(module, analysis)()
            assert str(lazily.value) == str(full.value).replace("bad.hlo", str(path))
        else:
            getattr(module, analysis)()
        assert started and started[-1] is not None  # the check ran in a job
