"""Computations whose bodies are read when first asked for, and the full parse's verdict on them.

A lazy parse (hloscope.text.parser with `LAZY`) leaves each printed body as a span of the
text (`BodyText`) inside a `LazyComputation`: the IR's Computation, whose `instructions` are
read on first use. Fused computations are most of a large dump, and most commands read few.

What a full parse would report of the unread bodies (an undefined operand, a result that
is not the header's) is not lost: the module's `Verdict` reads them all, keeping nothing,
the first time a question needs it, or in a forked job while an analysis runs
(`check_elsewhere`, `settle`); the error reported is always the first in text order.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence

from ..errors import HloSyntaxError
from ..ir.attributes import Attributes
from ..ir.module import Computation, Instruction, Module
from ..ir.structure import PERCENT_NAME
from ..text.body import BodyText
from ..text.checks import check_aliases, check_result
from . import runtime
from .copies import Original, alike_to, copies_of
from .executor import Executor, Job


class LazyComputation(Computation):
    """A Computation whose body is a span of the text until its instructions are asked for."""

    __slots__ = ("body", "span", "copy_of", "alike", "recipe", "renamed", "_opcodes")

    def __init__(self, name: str, is_entry: bool, attributes: Attributes, line: int, signature,
                 body: BodyText, alike: object | None = None):
        super().__init__(name, None, is_entry, None, attributes, line, signature)
        self.body: BodyText | None = body
        """The body's text while unread (kept after `read_keeping_outline`)."""
        self.span: BodyText = body
        """Where the body lies in the text, read or not: the module's text is searched
        through it (`module_writes_any`)."""
        self.copy_of: Computation | None = None
        """The computation whose body this one's repeats up to the names of its instructions
        and of the computations they call, when `read_all` found so (hloscope.speed.copies):
        its instructions are made from the original's when first asked for."""
        self.alike = alike
        """Where the lazy parse found the body's text up to names (`printed.up_to_names`): a
        token only the bodies alike so share; None where it did not."""
        self.recipe: Original | None = None
        """The body read before that this one repeats, once `read_all` found so: up to names
        (`copy_of`), or up to names and metadata values (its own: `copy_of` stays None)."""
        self.renamed: Sequence[tuple[int, str]] = ()
        """(position, name) of the instructions XLA's uniquer renames (the text writes
        another name): given them whenever the body is read."""
        self._opcodes: frozenset[str] | None = None

    @property
    def instructions(self) -> list[Instruction]:
        if self._instructions is None:
            self._read()
        return self._instructions  # type: ignore[return-value]

    @property
    def root(self) -> Instruction:
        if self._instructions is None:
            self._read()
        return self._root  # type: ignore[return-value]

    @property
    def is_read(self) -> bool:
        return self._instructions is not None

    def _read(self, in_text_order: bool = False, copies: dict | None = None) -> None:
        instructions, root, self.copy_of = _read_body(self, in_text_order, copies)
        if instructions is None:
            return  # a copy of `copy_of`, made when first asked for
        for inst in instructions:
            inst.computation = self
        for k, name in self.renamed:
            instructions[k].name = name
        self._instructions, self._root, self.body = instructions, root, None

    def read_keeping_outline(self) -> None:
        """Read the body now, and keep where it lies in the text: the module's outline can
        still be cached, and `mentions` still searches the text. Raises HloSyntaxError as
        the read on first use would (the body then stays unread)."""
        if self._instructions is None:
            body = self.body
            self._read()
            self.body = body

    def mentions(self, literals: tuple[str, ...]) -> bool:
        """False only when the body's text certainly holds none of `literals`. Unsure (True)
        without the text, or while the module's verdict is unknown or an error: the caller
        then reads the body, and the read reports the error, as a full parse would have."""
        body = self.body
        if body is None or not _sound(self):
            return True
        return body.mentions(literals)

    def holds(self, opcodes: tuple[str, ...]) -> bool:
        """False only when the body certainly holds no instruction with one of `opcodes`
        (spelled as the text writes them). An instruction line writes blanks between its
        shape and its opcode, so the unread text then holds the opcode after a space or a
        tab; a read body answers exactly, a known copy as its original."""
        if self._instructions is None and self.recipe is not None:
            return holds_any(self.recipe.computation, opcodes)
        if self._instructions is not None:
            present = self._opcodes
            if present is None:
                present = self._opcodes = frozenset([i.opcode for i in self._instructions])
            return not present.isdisjoint(opcodes)
        return self.mentions(_spelled(opcodes))

    def unread_body(self) -> BodyText | None:
        """The body's text, while it is unread and the module's bodies read without an error:
        then single instructions may be cut from it (`BodyText.instruction_named`)."""
        if self._instructions is not None or self.body is None or not _sound(self):
            return None
        return self.body


@functools.lru_cache(maxsize=64)
def _spelled(opcodes: tuple[str, ...]) -> tuple[str, ...]:
    """What an unread body holding an instruction of one of `opcodes` writes: the opcode
    after a blank, or for get-tuple-element an operand `t#0` (the newest XLA's dumps)."""
    literals = tuple(blank + op for op in opcodes for blank in (" ", "\t"))
    return literals + ("#",) if "get-tuple-element" in opcodes else literals


def module_writes_any(module: Module, literals: tuple[str, ...]) -> bool:
    """False only when no body of `module` writes any of `literals`: every computation is
    one of the text's (read or not) and the text holds none. True when unsure, as
    `LazyComputation.mentions` is (and while an unread body's verdict is unknown or an error)."""
    sources = {}
    unread = False
    for comp in module.computations:
        if not isinstance(comp, LazyComputation):
            return True
        source = comp.span.source
        sources[id(source)] = source
        unread = unread or comp._instructions is None
    if unread and not Verdict.of(module).sound():
        return True
    return any(literal in source for source in sources.values() for literal in literals)


def holds_any(comp: Computation, opcodes: tuple[str, ...]) -> bool:
    if isinstance(comp, LazyComputation):
        return comp.holds(opcodes)
    return any(inst.opcode in opcodes for inst in comp.instructions)


class Lazy:
    """The parser's maker of unread computations (`unread.UnreadBodies`)."""

    def computation(self, name, is_entry, attributes, line, signature, body, alike=None) -> Computation:
        return LazyComputation(name, is_entry, attributes, line, signature, body, alike)

    def body_of(self, computation: Computation) -> BodyText | None:
        if isinstance(computation, LazyComputation) and not computation.is_read:
            return computation.body
        return None

    def read(self, computation: Computation) -> None:
        if isinstance(computation, LazyComputation):
            computation.read_keeping_outline()

    def renamed(self, computation: Computation, names: Sequence[tuple[int, str]]) -> None:
        if isinstance(computation, LazyComputation):
            computation.renamed = names

    def finish(self, module: Module) -> None:
        if any(self.body_of(c) is not None for c in module.computations):
            Verdict.of(module)


LAZY = Lazy()


# ─── reading one body ────────────────────────────────────────────────────────────────


def _read_body(comp: LazyComputation, in_text_order: bool, copies: dict | None):
    """(instructions, root, the computation it repeats or None) for `comp`; (None, None,
    original) when a pass with `copies` finds that it repeats `original`: it is then made
    as a copy of it when first asked for.

    The first read of a body of a module checks all its unread bodies first (`Verdict`):
    the first error a full parse would report is reported by whichever body is read. Unless
    the module's bodies are being read `in_text_order`, all of them, this one the first
    left: then the first error a read meets is that error, and the check would only read
    them twice. `copies`: see hloscope.speed.copies."""
    body = comp.body
    original = comp.recipe
    if original is not None:  # known to repeat it, and to read without an error
        with runtime.no_cyclic_gc():
            own = comp.copy_of is not original.computation
            return (*original.copy(body.text, body.line, own_metadata=own), comp.copy_of)
    module = comp.module
    if module is None:
        return (*_read(comp, users=True), None)
    verdict = Verdict.of(module)
    if in_text_order and not verdict.known:
        verdict.drop_job()  # these reads decide: the first error they meet is the verdict
        try:
            instructions, root, original = _read_or_copy(comp, copies)
            if comp is module.entry:  # never a known copy (`_read_or_copy`)
                check_aliases(module, root, first_body=_first_body(module))
        except HloSyntaxError as e:
            verdict.decide(e)
            raise
        return instructions, root, original
    if not verdict.sound():
        raise verdict.error
    try:
        return _read_or_copy(comp, copies)
    except HloSyntaxError as e:
        if verdict.known:
            raise
        raise (verdict.settle() or e) from None  # checked elsewhere: the first error is the job's


def _read_or_copy(comp: LazyComputation, copies: dict | None):
    """A read; or, with `copies` (kept for one pass over the module in text order), for a
    body that repeats one read before up to names and metadata (hloscope.speed.copies) and
    declares the same result: (None, None, the computation it repeats up to names, None
    when there is none), the original kept as the recipe of this body's instructions
    (`recipe`), made when first asked for."""
    if copies is None or comp.renamed:  # a renamed body is neither a copy nor an original
        return (*_read(comp, users=True), None)
    text = comp.body.text
    original, keys, names, same, values = copies_of(copies, text, comp.alike)
    if _reads_as_copy(original, comp, names):
        comp.recipe = original
        if same is None:  # it writes its own metadata: the first of its kind
            alike_to(copies, keys, original, comp)
        return None, None, same
    instructions, root = _read(comp, users=True)  # raises what a read finds
    original = Original.of(comp, instructions, text, comp.body.line, names, values) if keys else None
    for key in keys:
        copies[key] = original
    return instructions, root, None


def _read(comp: LazyComputation, users: bool):
    with runtime.no_cyclic_gc():
        return comp.body.read(comp, users)


def _reads_as_copy(original: Original | None, computation, names: list[str]) -> bool:
    """Whether the body of `computation` (its `%name`s: `names`) reads as a copy of
    `original` (a body read before, without an error): it repeats it name for name
    (hloscope.speed.copies), declares the same result, and is not the entry (whose read also
    checks the module's aliases)."""
    return (original is not None and computation is not computation.module.entry
            and original.repeated_by(names) is not None and _result_fits(computation, original.root))


def _result_fits(computation, root: Instruction) -> bool:
    """Whether a copy's root is the result its own header declares."""
    try:
        check_result(computation.signature, root, computation.name, computation.line)
    except HloSyntaxError:
        return False  # read instead, which reports it with the source line
    return True


def _first_body(module: Module) -> BodyText | None:
    """The module's first unread body in the text (its header lies before it)."""
    bodies = [c.body for c in module.computations if isinstance(c, LazyComputation) and c.body is not None]
    return min(bodies, key=lambda b: b.start) if bodies else None


def _sound(comp: LazyComputation) -> bool:
    """Whether the module's unread bodies are known to read without an error."""
    module = comp.module
    return module is not None and Verdict.of(module).sound()


# ─── the module's verdict ────────────────────────────────────────────────────────────


class Verdict:
    """What a full parse says of a lazily read module's unread bodies, found on the first
    question asked of one (a read, `mentions`, `unread_body`): each unread body is read as a
    read would read it, keeping nothing, the entry's with the checks that need its body. The
    bodies of a module that holds an error answer every question about their text as unsure,
    and a read of any of them reports the first error in text order, the one a full parse
    reports: a command that reads only some bodies gives the full parse's verdict all the same.

    While an analysis lets the check run elsewhere (`check_elsewhere`, an executor), the
    first question starts it there and is answered as if no error were found; the caller
    then `settle`s before it answers, and a read that fails meanwhile settles first: either
    way the error reported is the first in text order, as without the job. Settling, this
    process checks the bodies from the last while the job goes on from the first."""

    __slots__ = ("error", "executor", "first", "job", "known", "order", "_module", "__weakref__")

    _of: "weakref.WeakKeyDictionary[Module, Verdict]" = weakref.WeakKeyDictionary()

    def __init__(self, module: Module):
        # Weakly: `_of` keeps a verdict while its module lives, and a value that held its
        # key would keep both for as long as the process.
        self._module = weakref.ref(module)
        self.error: HloSyntaxError | None = None
        self.known = False
        self.executor: Executor | None = None
        self.job: Job | None = None
        self.order: list[int] = []
        """Where the bodies a job checks are among the module's computations, in text order
        (places, not computations: a verdict must not hold its module)."""
        self.first: BodyText | None = None
        """The module's first unread body when the job started (`_check`)."""

    @property
    def module(self) -> Module:
        """The module judged (alive while its verdict is asked: `of` is asked with it)."""
        return self._module()

    @classmethod
    def of(cls, module: Module) -> "Verdict":
        """The verdict on `module`, shared by all its unread bodies."""
        verdict = cls._of.get(module)
        if verdict is None:
            verdict = cls._of[module] = cls(module)
        return verdict

    def sound(self) -> bool:
        """Whether every unread body reads without an error (found once; assumed while the
        check runs elsewhere, until `settle`)."""
        if not self.known:
            if self.job is None and self.executor is not None and _unread_chars(self.module) >= CHECK_ELSEWHERE_CHARS:
                module = self.module
                self.order = _places_to_check(module)
                self.first = _first_body(module)
                self.job = self.executor.stream(_check_sending, module, self.order, self.first)
            if self.job is not None:
                return True
            self.known, self.error = True, self._first_error()
        return self.error is None

    def settle(self) -> HloSyntaxError | None:
        """The verdict, waiting for a check under way elsewhere, and meanwhile checking its
        bodies from the last, until the two meet (or doing it here, if that failed or none
        ran)."""
        if not self.known:
            job, self.job = self.job, None
            self.error = self._meeting(job) if job is not None else self._first_error()
            self.known, self.order, self.first = True, [], None
        return self.error

    def decide(self, error: HloSyntaxError) -> None:
        """The verdict found by reading every unread body in text order."""
        self.drop_job()
        self.known, self.error = True, error

    def drop_job(self) -> None:
        """Stop a check under way elsewhere: reads in text order will say what it would."""
        if self.job is not None:
            self.job.cancel()
            self.job = None

    def _first_error(self) -> HloSyntaxError | None:
        """The first error a read of the unread bodies meets, in text order; None if none."""
        module = self.module
        return _first_error_of(module, [module.computations[k] for k in _places_to_check(module)], _first_body(module))

    def _meeting(self, job: Job) -> HloSyntaxError | None:
        """The first error of `self.order`, the bodies the job checks in text order, telling
        how far it has come (`_check_sending`): the bodies after it are checked here, from
        the last, until the two meet. The job's error, if any, comes first in the text;
        else the first this process found."""
        module, first = self.module, self.first
        order = [module.computations[k] for k in self.order]
        copies: dict = {}
        reached, back = 0, len(order)
        found: tuple[int, HloSyntaxError] | None = None  # the first error found here, and where
        while reached < back:
            while reached < back and job.ready():
                message = job.receive()
                if message is None:  # the job failed: the rest is checked here, in text order
                    error = _first_error_of(module, order[reached:back], first)
                    return error if error is not None else (found[1] if found else None)
                if message[0] == "error":  # the first of the bodies up to it: first, unless one here is before it
                    job.cancel()
                    at = message[1]
                    if found is not None and found[0] < at:
                        return found[1]
                    return HloSyntaxError(*message[2:5], source_line=message[5], filename=message[6])
                reached = message[1]
            if reached >= back:
                break
            back -= 1
            comp = order[back]
            error = _check(module, comp, copies, first)
            if error is not None:
                found = (back, error)  # before any found so far
        job.cancel()
        return found[1] if found else None


def _places_to_check(module: Module) -> list[int]:
    """Where the bodies the verdict checks are among the module's computations, in text
    order: the unread ones, but known copies."""
    return [k for k, c in enumerate(module.computations)
            if isinstance(c, LazyComputation) and not c.is_read and c.recipe is None and c.body is not None]


def _first_error_of(module: Module, comps: list[LazyComputation], first: BodyText | None) -> HloSyntaxError | None:
    """The first error a read of `comps` (unread bodies of `module`, in text order) meets;
    `first`: as for `_check`."""
    copies: dict = {}
    for comp in comps:
        error = _check(module, comp, copies, first)
        if error is not None:
            return error
    return None


def _check(module: Module, comp: LazyComputation, copies: dict, first: BodyText | None) -> HloSyntaxError | None:
    """The error a read of `comp`'s unread body meets, None if none, keeping nothing: a
    body that repeats one checked before (in `copies`, kept for one pass) is checked as its
    copy, that one read again (`_Checked`) once a repeat shows up (up to metadata, a
    second one). `first`: the module's first unread body, where the entry's aliases'
    errors point."""
    body = comp.body
    try:
        if comp.is_read:  # since the pass began: its read checked all but the entry's aliases
            if comp is module.entry:
                check_aliases(module, comp.root, first_body=first)
            return None
    except HloSyntaxError as e:
        return e
    if comp.recipe is not None or body is None:
        return None  # known to repeat a body that read without an error
    text = body.text
    original, keys, names, same, values = copies_of(copies, text, comp.alike)
    if original.__class__ is _Checked:
        # A repeat up to metadata alone is read until the second one: its original is read
        # again and kept for the pass, which pays where a kind repeats, as layers do.
        original = original.original() if same is not None or original.repeated() else None
    if _reads_as_copy(original, comp, names):
        return None  # it reads as a copy of a body that read without an error
    try:
        with runtime.no_cyclic_gc():
            instructions, root = body.read(comp, users=False)
        if comp is module.entry:
            check_aliases(module, root, first_body=first)
    except HloSyntaxError as e:
        return e
    del instructions, root
    checked = _Checked(comp, body, values) if keys else None
    for key in keys:
        copies[key] = checked
    return None


class _Checked:
    """A body the check read without an error, neither its instructions nor its names kept
    (on a module whose bodies do not repeat, keeping them would hold the whole IR, or every
    name it writes): read again, as the original of its copies (hloscope.speed.copies), when
    a body repeats it."""

    __slots__ = ("body", "computation", "read_again", "repeats", "values", "_original")

    def __init__(self, computation: LazyComputation, body: BodyText, values: int):
        self.computation, self.body = computation, body
        self.values = values
        """How many metadata values its key leaves out (`copies_of`)."""
        self.read_again = False
        self.repeats = 0
        self._original: Original | None = None

    def repeated(self) -> bool:
        """Count a repeat up to metadata; whether it is the second or a later one."""
        self.repeats += 1
        return self.repeats > 1

    def original(self) -> Original | None:
        """The body as an original of its copies (None when its copies cannot be made so)."""
        if not self.read_again:
            self.read_again = True
            with runtime.no_cyclic_gc():
                instructions, _ = self.body.read(self.computation, users=False)  # read before: no error
            text = self.body.text
            self._original = Original.of(self.computation, instructions, text, self.body.line,
                                         PERCENT_NAME.findall(text), self.values)
        return self._original


CHECK_ELSEWHERE_CHARS = 4 << 20
"""From this much unread body text on, the check runs elsewhere when an analysis allows it
(~0.25 s of reading per 4 MB; a forked job costs a few ms)."""


def _unread_chars(module: Module) -> int:
    return sum(c.body.end - c.body.start for c in module.computations
               if isinstance(c, LazyComputation) and not c.is_read and c.body is not None)


def _check_sending(send, module: Module, order: list[int], first: BodyText | None) -> None:
    """In the job: check the bodies at `order` in text order, sending `("at", n)` once the
    first `n` read without an error (at most `PROGRESS_REPORTS` times), then
    `("at", len(order))`; or, at the first error, `("error", n, ...)`, the error as plain data."""
    copies: dict = {}
    every = max(1, -(-len(order) // PROGRESS_REPORTS))
    for n, comp in enumerate(module.computations[k] for k in order):
        if n % every == 0:
            send(("at", n))
        e = _check(module, comp, copies, first)
        if e is not None:
            send(("error", n, e.message, e.line, e.column, e.source_line, e.filename))
            return
    send(("at", len(order)))


PROGRESS_REPORTS = 256
"""The most reports of how far the job has come: nothing reads them until the analysis
settles, and past a pipe's 64 KB the job would wait for that."""


# ─── a module's bodies, all at once ──────────────────────────────────────────────────


def has_unread(module: Module) -> bool:
    return any(isinstance(c, LazyComputation) and not c.is_read and c.recipe is None for c in module.computations)


def check_elsewhere(module: Module, executor: Executor | None) -> None:
    """While an analysis runs, let the check of the unread bodies run through `executor`:
    reads go on meanwhile, and the caller `settle`s before it answers. None: back to
    checking at the first read."""
    verdict = Verdict._of.get(module)
    if verdict is not None:
        verdict.executor = executor


def settle(module: Module) -> None:
    """Raise what a full parse would report of the unread bodies, if anything (a check
    started elsewhere is waited for even when every body has been read since)."""
    verdict = Verdict._of.get(module)
    if verdict is not None and (verdict.job is not None or has_unread(module)):
        error = verdict.settle()
        if error is not None:
            raise error


def read_all(module: Module) -> None:
    """Read every unread body now, in text order: what an analysis that reads them all is
    preceded by. A lazily loaded module then reads each body once; read one by one, the
    first read would check every other body first (the verdict), and the analysis would read
    them again. A body that repeats one read before, up to its instructions' names (and
    metadata values), is known as a copy of it (`recipe`), and made from it only when its
    instructions are asked for."""
    copies: dict = {}
    for comp in module.computations:
        if isinstance(comp, LazyComputation) and not comp.is_read and comp.recipe is None:
            comp._read(in_text_order=True, copies=copies)
