"""Names as XLA's parser makes them unique, and whether a module's names need it.

XLA's parser gives every computation and every instruction of a module a name of its own
(its NameUniquer, by numeric `.N` suffixes); hloscope renames as it does. Whether any name
would change is judged from the names alone (`renames_needed`), so a lazily read module's
bodies stay unread when none would; the two parts of a parallel parse find their names
each (`NameFacts`) and the join judges them together.
"""

from __future__ import annotations

import re
from array import array

from ..ir import opcodes
from ..ir.attributes import decode_names


_PRIMITIVE_TYPE = re.compile(
    r"pred|[su](?:1|2|4|8|16|32|64)|b?f16|f32|f64|c64|c128|f[468]e\d+m\d+[a-z0-9]*|token|opaque")
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_.\-]")


def xla_sanitized_name(name: str) -> str:
    """A name as XLA's NameUniquer::GetSanitizedName makes it legal: a first character that
    is no letter or `_` becomes `_`, and so does any other character but letters, digits,
    `_`, `.` and `-`; an element type's name gets a `_` after it; a leading `__` (but
    `__xla_`) becomes `a_`. XLA names the get-tuple-element of an operand `t#0` so: `t_0`."""
    if not name:
        return name
    if not (name[0].isascii() and (name[0].isalpha() or name[0] == "_")):
        name = "_" + name[1:]
    name = name[0] + _NOT_IN_NAME.sub("_", name[1:])
    if _PRIMITIVE_TYPE.fullmatch(name):
        name += "_"
    if name.startswith("__") and not name.startswith("__xla_"):
        name = "a" + name[1:]
    return name


class _NameUniquer:
    """XLA's NameUniquer: names are made unique by their numeric `.N` suffix.

    A second `x` becomes `x.1`; a written `x.1` that is then taken becomes the next free
    suffix; the first holder keeps its name.
    """

    def __init__(self):
        self._ids: dict[str, _SequentialIds] = {}

    def unique(self, name: str) -> str:
        root, sep, suffix = name.rpartition(".")
        if sep and root and suffix.isdigit():
            wanted, has_suffix = int(suffix), True
        else:
            root, wanted, has_suffix = name, 0, False
        ids = self._ids.get(root)
        if ids is None:
            ids = self._ids[root] = _SequentialIds()
        got = ids.register(wanted)
        if got != wanted or (got == 0 and has_suffix and suffix != "0"):
            return f"{root}.{got}"
        return name


class _SequentialIds:
    """The numeric suffixes taken for one name root (XLA's SequentialIdGenerator)."""

    __slots__ = ("next", "used")

    def __init__(self):
        self.used: set[int] = set()
        self.next = 0

    def register(self, wanted: int) -> int:
        if wanted not in self.used:
            self.used.add(wanted)
            return wanted
        while self.next in self.used:
            self.next += 1
        self.used.add(self.next)
        self.next += 1
        return self.next - 1


def uniquify_computation_names(comps) -> None:
    """Rename computations whose names repeat (inline ones are all `_`), as XLA does."""
    names = [c.name for c in comps]
    if len(set(names)) == len(names) and not any(".0" in n and _ZERO_SUFFIX.search(n) for n in names):
        # Distinct names meet in the uniquer only through a zero-led suffix (`x`, `x.0`;
        # `x.1`, `x.01`), which it also rewrites (`x.00` is `x.0`): without one, it keeps all.
        return
    uniquer = _NameUniquer()
    for comp in comps:
        comp.name = uniquer.unique(comp.name)


def _name_facts(comp, body) -> tuple[list[str], list[str]]:
    """What `renames_needed` looks at in one computation, read or not (`body`: its unread
    body's text): its instruction names and the opcodes it wraps as async sugar
    (`reduce-scatter` for `reduce-scatter-start`)."""
    if body is None:
        names = [i.name for i in comp.instructions]
        starts = {i.opcode for i in comp.instructions}
    else:
        names = body.names()
        if body.source.find("#", body.start, body.end) >= 0:
            names += _element_names(body.source, body.start, body.end)
        # The regex starts with a character class (slow to scan for): look for the literal first.
        starts = ({m + "-start" for m in _START_IN_TEXT.findall(body.source, body.start, body.end)}
                  if body.source.find("-start", body.start, body.end) >= 0 else ())
    return names, [op[: -len("-start")] for op in starts if op in _SUGAR_STARTS]


class NameFacts:
    """What `renames_needed` reads of a run of computations: their instruction names (or
    the names' hashes), whether a name repeats among them, those with a zero-led suffix,
    the opcodes they wrap as async sugar, and the names among them of the form XLA's hidden
    ones take (`sugar_roots`). The two parts of a parallel parse each find theirs, as
    hashes (`hashed`): 8 bytes a name, where its string takes about 60, and `plain()`
    crosses to the forked parent, whose `hash` is the child's."""

    __slots__ = ("hashes", "names", "repeats", "sugar_roots", "wrapped", "zero_led")

    def __init__(self, hashes: bytes | array | None, repeats: bool, zero_led: list[str], wrapped=(),
                 sugar_roots=None, names: list[str] | None = None):
        if hashes is not None and not isinstance(hashes, array):
            hashes = array("q", hashes)  # from `plain()`'s bytes
        self.hashes = hashes
        self.names = names
        self.repeats = repeats
        self.zero_led = zero_led
        self.wrapped = set(wrapped)
        self.sugar_roots: frozenset[str] | None = None if sugar_roots is None else frozenset(sugar_roots)
        """The roots `r` (`async_param`, or an opcode async sugar wraps) of the names `r` or
        `r.N` among these; None where they were not looked for (no sugar in sight)."""

    @classmethod
    def of(cls, comps, body_of=lambda comp: None, sugar_elsewhere: bool = False, hashed: bool = False) -> NameFacts:
        """The facts of `comps`; `body_of(comp)`: its unread body's text, None once read.
        `sugar_elsewhere`: other computations of the module may write async sugar (their
        hidden names may then meet these). `hashed`: keep the names' hashes, found one
        computation at a time, not the names (a read body's names are its instructions'
        strings, which cost nothing more to keep, an unread one's new strings)."""
        names: list[str] | None = None if hashed else []
        hashes = array("q") if hashed else None
        zero_led: list[str] = []
        wrapped: set[str] = set()
        roots: set[str] | None = set() if sugar_elsewhere else None
        for comp in comps:
            comp_names, comp_wrapped = _name_facts(comp, body_of(comp))
            if hashes is not None:
                hashes.extend(map(hash, comp_names))
            else:
                names += comp_names
            zero_led += [n for n in comp_names if ".0" in n and _ZERO_SUFFIX.search(n)]
            wrapped.update(comp_wrapped)
            if roots is not None:
                roots |= _sugar_roots(comp_names)
        if wrapped and roots is None:  # their own sugar's hidden names may meet theirs
            roots = (_sugar_roots(names) if names is not None
                     else set().union(*(_sugar_roots(_name_facts(c, body_of(c))[0]) for c in comps)))
        # A repeated name; hashed, a repeated hash: a repeated name, or (rarely) two names of
        # one hash, taken for one. (A set of strings takes the hashes they keep: faster.)
        keys = names if names is not None else hashes
        return cls(hashes, len(set(keys)) != len(keys), zero_led, wrapped, roots, names)

    def keys(self):
        """The names' hashes."""
        return self.hashes if self.hashes is not None else map(hash, self.names)

    def plain(self) -> tuple:
        """Hashed facts as plain data, for `NameFacts(*plain)` in the forked parent."""
        return (self.hashes.tobytes(), self.repeats, self.zero_led, sorted(self.wrapped),
                None if self.sugar_roots is None else sorted(self.sugar_roots))

    def __len__(self) -> int:
        return len(self.hashes if self.hashes is not None else self.names)


def renames_needed(parts: list[NameFacts]) -> bool:
    """Whether making instruction names unique would rename any, judged from the names
    alone (unread bodies are not read); exact up to XLA's hidden async names, and up to two
    names of one hash, where it errs on the side of yes. `parts`: the names of the module's
    computations, in runs.

    Distinct names collide only through a suffix with a leading zero (`x` and `x.0`, `x.1`
    and `x.01`), and with the names XLA takes for the computations it builds around async
    sugar (`async_param`, the wrapped opcode's name).
    """
    if any(p.repeats for p in parts):
        return True
    # Each run's names are distinct: a repeat is a name shared by two runs (a shared hash).
    for k, later in enumerate(parts[1:], 1):
        if any(_share(earlier, later) for earlier in parts[:k]):
            return True
    zero_led = [n for p in parts for n in p.zero_led]
    if zero_led:
        every = set().union(*(p.keys() for p in parts))
        seen: set[tuple[str, int]] = set()
        for name in zero_led:
            root, _, suffix = name.rpartition(".")
            key = (root, int(suffix))
            if key in seen or hash(root if key[1] == 0 else f"{root}.{key[1]}") in every:
                return True
            seen.add(key)
    wrapped = set().union(*(p.wrapped for p in parts))
    if wrapped:
        hidden = wrapped | {"async_param"}
        if any(p.sugar_roots is None or not hidden.isdisjoint(p.sugar_roots) for p in parts):
            return True
    return False


def _share(a: NameFacts, b: NameFacts) -> bool:
    """Whether two runs share a hash, found through a set of the smaller run's (five times
    their array: one such set at a time)."""
    smaller, larger = (a, b) if len(a) <= len(b) else (b, a)
    return not set(smaller.keys()).isdisjoint(larger.keys())


def may_write_sugar(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether `text[start:end]` may write an async sugar start (`reduce-scatter-start(`);
    False only when it certainly does not. The starts of asynchronous collectives
    (`all-gather-start`), XLA's own opcodes, are not sugar."""
    end = len(text) if end is None else end
    for m in _START_CALL.finditer(text, start, end):
        before = text.rfind(" ", max(start, m.start() - 64), m.start())
        opcode = text[before + 1 : m.start()]
        if before < 0 or not _OPCODE.fullmatch(opcode) or opcode + "-start" in _SUGAR_STARTS:
            return True
    return False


def _sugar_roots(names: list[str]) -> set[str]:
    """The roots `r` of the names `r` or `r.N` (`N` a number) among `names` that XLA's
    hidden names for async sugar could take (`async_param`, a wrapped opcode's name)."""
    roots: set[str] = set()
    for name in names:
        root, dot, suffix = name.rpartition(".")
        if not (dot and suffix.isdigit()):
            root = name
        if root in _HIDDEN_ROOTS:
            roots.add(root)
    return roots


# An operand `t#i#j...` (a tuple element), as an unread body may write it: its names are found
# with some to spare (the regex may take a `#` in a string for one), never one short. A `#`
# the pattern does not explain (blanks or a comment inside `t # 0`) makes a name that no
# instruction can have repeat: a module with one is renamed, so read, as it should be.
_ELEMENT_REFERENCE = re.compile(r"(?<![\w.\-])%?([A-Za-z_][\w.\-]*)((?:#[0-9]+)+)")


def _element_names(source: str, start: int, end: int) -> list[str]:
    """The names of the get-tuple-elements XLA makes for the `t#i` operands of the body
    `source[start:end]` (one per path `t#i`, `t#i#j` in the computation), or more."""
    paths: set[str] = set()
    explained = 0
    for m in _ELEMENT_REFERENCE.finditer(source, start, end):
        path = m.group(1)
        for index in m.group(2).split("#")[1:]:
            path += f"#{int(index)}"
            paths.add(path)
        explained += m.group(2).count("#")
    names = sorted(xla_sanitized_name(p) for p in paths)
    if explained != source.count("#", start, end):
        names += ["#", "#"]  # unsure: a repeat, so the module is read and renamed exactly
    return names


# Async sugar starts (`reduce-scatter-start`, `call-start`, ...): XLA takes names for them.
_SUGAR_WRAPPED = tuple(op for op in opcodes.all_known() if opcodes.info(op + "-start").canonical == "async-start")
_SUGAR_STARTS = frozenset(op + "-start" for op in _SUGAR_WRAPPED)
_START_IN_TEXT = re.compile(r"[ \t]([a-z][a-z0-9\-]*)-start[ \t]*\(")
_START_CALL = re.compile(r"-start[ \t]*\(")  # led by a literal: found fast in a whole text
_OPCODE = re.compile(r"[a-z][a-z0-9\-]*")
_HIDDEN_ROOTS = frozenset(("async_param",) + _SUGAR_WRAPPED)
_ZERO_SUFFIX = re.compile(r".\.0\d*$")


def uniquify_instruction_names(comps) -> None:
    """Rename instructions whose names repeat, as XLA's parser does: one uniquer for the
    module, computations in module order, instructions in text order."""
    instructions = _NameUniquer()
    by_name = None
    for comp in comps:
        # Async sugar (`call-start`, `reduce-scatter-start`, ...) makes XLA build a wrapped
        # computation while it reads the enclosing one; its names are taken first.
        for inst in comp.instructions:
            op = opcodes.info(inst.opcode)
            if op.async_role == "start" and op.canonical == "async-start" and op.wrapped:
                if by_name is None:
                    by_name = {c.text_name: c for c in comps}
                for _ in range(wrapped_parameters(inst, by_name)):
                    instructions.unique("async_param")
                instructions.unique(op.wrapped)
        for inst in comp.instructions:
            inst.name = instructions.unique(inst.name)


def wrapped_parameters(start, computations: dict) -> int:
    """How many parameters (each named `async_param`) XLA's parser gives the computation it
    wraps the async sugar `start` in (`call-start`, ...), as the newest XLA counts them: the
    operand shapes the start's shape lists, `((operands...), result, context)` (at least the
    wrapped opcode's arity), and more for those a sugared async-update of the chain lists, or
    a wrapped call's or fusion's callee (`computations`: by name) takes. jaxlib 0.10.2
    counts the start's operands instead. The two agree on every text an XLA prints (its
    start's shape lists its operands, a callee takes them); where a text has them differ,
    which neither prints and both read, hloscope names as the newest does."""
    shape = start.shape
    if not (shape.is_tuple and shape.tuple_shapes and shape.tuple_shapes[0].is_tuple):
        return len(start.operands)  # no XLA reads such a start (left out, or of another form)
    op = opcodes.info(start.opcode)
    count = max(opcodes.info(op.wrapped).arity or 0, len(shape.tuple_shapes[0].tuple_shapes))
    if op.wrapped in ("call", "fusion"):
        key = "to_apply" if op.wrapped == "call" else "calls"
        value = start.attributes.get(key)
        names = decode_names(value) if value is not None else ()
        callee = computations.get(names[0]) if len(names) == 1 else None
        if callee is not None:
            count = max(count, len(callee.parameters))
    update = opcodes.info(op.wrapped + "-update").name
    chain = [u for u in start.users if u.opcode == update]
    while chain:
        link = chain.pop()
        if link.shape.is_tuple and link.shape.tuple_shapes and link.shape.tuple_shapes[0].is_tuple:
            count = max(count, len(link.shape.tuple_shapes[0].tuple_shapes))
        chain += [u for u in link.users if u.opcode == update]
    return count
