"""Names as XLA's parser makes them unique, and whether a module's names need it.

XLA's parser gives every computation and every instruction of a module a name of its own
(its NameUniquer, by numeric `.N` suffixes); hloscope renames as it does. Whether any name
would change is judged from the names alone (`Renames.of`), so a lazily read module's
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
    suffix; the first holder keeps its name. A suffix is written as XLA writes the number
    it reads (`x.007` is `x.7`, `x.-0` is `x.0`).
    """

    def __init__(self):
        self._ids: dict[str, _SequentialIds] = {}

    def unique(self, name: str) -> str:
        root, wanted = numbered(name)
        ids = self._ids.get(root)
        if ids is None:
            ids = self._ids[root] = _SequentialIds()
        got = ids.register(0 if wanted is None else wanted)
        if got == 0:
            return root if wanted is None else f"{root}.0"
        return f"{root}.{got}"


def numbered(name: str) -> tuple[str, int | None]:
    """(root, number) as XLA's NameUniquer reads a name: `x.N`, N an integer of 64 bits
    (a sign allowed, as `absl::SimpleAtoi` reads it), is root `x` and number N; any other
    name is its own root, with no number."""
    root, dot, suffix = name.rpartition(".")
    if dot and root and _INTEGER.fullmatch(suffix):
        number = int(suffix)
        if -(1 << 63) <= number < (1 << 63):
            return root, number
    return name, None


_INTEGER = re.compile(r"-?[0-9]+")


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
    if len(set(names)) == len(names) and not any(map(_zero_led, names)):
        # Distinct names meet in the uniquer only through a zero-led suffix (`x`, `x.0`;
        # `x.1`, `x.01`), which it also rewrites (`x.00` is `x.0`): without one, it keeps all.
        return
    uniquer = _NameUniquer()
    for comp in comps:
        comp.name = uniquer.unique(comp.name)


def _name_facts(comp, body) -> tuple[list[str], list[str]]:
    """What `Renames.of` looks at in one computation, read or not (`body`: its unread
    body's text): its instruction names and the opcode each of its async sugar starts wraps
    (`reduce-scatter` for `reduce-scatter-start`), in text order; from an unread body, a
    start a string seems to write too (a name more for XLA's hidden ones: never one too few)."""
    if body is None:
        names = [i.name for i in comp.instructions]
        starts = [i.opcode for i in comp.instructions if i.opcode in _SUGAR_STARTS]
    else:
        names = body.names()
        if body.source.find("#", body.start, body.end) >= 0:
            names += _element_names(body.source, body.start, body.end)
        # The regex starts with a character class (slow to scan for): look for the literal first.
        starts = ([m + "-start" for m in _START_IN_TEXT.findall(body.source, body.start, body.end)]
                  if body.source.find("-start", body.start, body.end) >= 0 else ())
    return names, [op[: -len("-start")] for op in starts if op in _SUGAR_STARTS]


class NameFacts:
    """What `Renames.of` reads of a run of computations: their instruction names (or the
    names' hashes), whether a name repeats among them, those with a zero-led suffix, the
    opcodes they wrap as async sugar, and, computation by computation, the opcodes its sugar
    wraps and the roots of its names that XLA's hidden names take (`sugar`). The two parts
    of a parallel parse each find theirs, as hashes (`hashed`): 8 bytes a name, where its
    string takes about 60, and `plain()` crosses to the forked parent, whose `hash` is the
    child's."""

    __slots__ = ("computations", "hashes", "names", "repeats", "sugar", "wrapped", "zero_led")

    def __init__(self, hashes: bytes | array | None, repeats: bool, zero_led: list[str], wrapped=(),
                 sugar=None, computations: int = 0, names: list[str] | None = None):
        if hashes is not None and not isinstance(hashes, array):
            hashes = array("q", hashes)  # from `plain()`'s bytes
        self.hashes = hashes
        self.names = names
        self.repeats = repeats
        self.zero_led = zero_led
        self.wrapped = set(wrapped)
        self.sugar: list[tuple[int, list[str], list[str]]] | None = sugar
        """(k, wrapped, roots) for each computation (the k-th of these) that has any: the
        opcodes its async sugar wraps, and the roots of its names that XLA's hidden names
        take (`async_param`, an opcode async sugar wraps). None where they were not looked
        for (no sugar in sight)."""
        self.computations = computations

    @classmethod
    def of(cls, comps, body_of=lambda comp: None, sugar_elsewhere: bool = False, hashed: bool = False) -> NameFacts:
        """The facts of `comps`; `body_of(comp)`: its unread body's text, None once read.
        `sugar_elsewhere`: the module (these computations or others) may write async sugar,
        whose hidden names could meet these: what they could meet is found in the same pass.
        `hashed`: keep the names' hashes, found one computation at a time, not the names (a
        read body's names are its instructions' strings, which cost nothing more to keep, an
        unread one's new strings)."""
        names: list[str] | None = None if hashed else []
        hashes = array("q") if hashed else None
        zero_led: list[str] = []
        wrapped: set[str] = set()
        sugar: list | None = [] if sugar_elsewhere else None
        for k, comp in enumerate(comps):
            comp_names, comp_wrapped = _name_facts(comp, body_of(comp))
            if hashes is not None:
                hashes.extend(map(hash, comp_names))
            else:
                names += comp_names
            zero_led += [n for n in comp_names if _zero_led(n)]
            wrapped.update(comp_wrapped)
            if sugar is not None:
                _add_sugar(sugar, k, comp_wrapped, comp_names)
        if wrapped and sugar is None:  # their own sugar's hidden names may meet theirs
            sugar = []
            for k, comp in enumerate(comps):
                _add_sugar(sugar, k, *_name_facts(comp, body_of(comp))[::-1])
        # A repeated name; hashed, a repeated hash: a repeated name, or (rarely) two names of
        # one hash, taken for one. (A set of strings takes the hashes they keep: faster.)
        keys = names if names is not None else hashes
        return cls(hashes, len(set(keys)) != len(keys), zero_led, wrapped, sugar, len(comps), names)

    def keys(self):
        """The names' hashes."""
        return self.hashes if self.hashes is not None else map(hash, self.names)

    def plain(self) -> tuple:
        """Hashed facts as plain data, for `NameFacts(*plain)` in the forked parent."""
        return (self.hashes.tobytes(), self.repeats, self.zero_led, sorted(self.wrapped), self.sugar,
                self.computations)

    def __len__(self) -> int:
        return len(self.hashes if self.hashes is not None else self.names)


class Renames:
    """What making a module's instruction names unique renames (`of`): nothing (`roots`
    empty), any name (`roots` None), or only names of `roots`, which hidden names of async
    sugar take too, in the computations at `computations` (module order) that write such
    names or such sugar; names of other roots are kept."""

    __slots__ = ("computations", "roots")

    def __init__(self, roots: frozenset[str] | None, computations: tuple[int, ...] = ()):
        self.roots, self.computations = roots, computations

    @classmethod
    def of(cls, parts: list[NameFacts]) -> Renames:
        """Judged from the names alone (unread bodies are not read); exact up to two names of
        one hash, where it errs on the side of renaming. `parts`: the names of the module's
        computations, in runs.

        Distinct names collide only through a suffix with a leading zero (`x` and `x.0`,
        `x.1` and `x.01`), and with the names XLA takes for the computations it builds
        around async sugar (`async_param`, the wrapped opcode's name); a zero-led suffix
        other than `.0` is rewritten even alone (`x.007` is `x.7`). XLA's uniquer keeps one
        count per root: where no written name repeats, hidden names rename only names of
        their roots (`uniquify_instruction_names(..., roots)`)."""
        if any(p.repeats for p in parts):
            return cls(None)
        # Each run's names are distinct: a repeat is a name shared by two runs (a shared hash).
        for k, later in enumerate(parts[1:], 1):
            if any(_share(earlier, later) for earlier in parts[:k]):
                return cls(None)
        zero_led = [n for p in parts for n in p.zero_led]
        if zero_led:
            every = set().union(*(p.keys() for p in parts))
            for name in zero_led:
                root, number = numbered(name)
                if name != f"{root}.{number}" or hash(root) in every:  # rewritten, or `x` beside `x.0`
                    return cls(None)
        wrapped = set().union(*(p.wrapped for p in parts))
        if not wrapped:
            return cls(frozenset())
        if any(p.sugar is None for p in parts):
            return cls(None)
        named = {root for p in parts for _, _, roots in p.sugar for root in roots}
        if "async_param" in named:  # how many a start names so, only a read tells
            return cls(None)
        roots = frozenset(wrapped & named)
        touched: list[int] = []
        offset = 0
        for p in parts:
            touched += [offset + k for k, ops, names in p.sugar
                        if not roots.isdisjoint(ops) or not roots.isdisjoint(names)]
            offset += p.computations
        return cls(roots, tuple(touched) if roots else ())


def _add_sugar(sugar: list, k: int, wrapped: list[str], names: list[str]) -> None:
    """`NameFacts.sugar`'s entry for the k-th computation, with these names and its sugar's
    wrapped opcodes."""
    # A hidden root holds no `.`: `numbered` is asked only of names whose last `.` follows one.
    roots = sorted({root for root in (numbered(n)[0] for n in names if n.rpartition(".")[0] in _HIDDEN_ROOTS
                                      or n in _HIDDEN_ROOTS) if root in _HIDDEN_ROOTS})
    if wrapped or roots:
        sugar.append((k, wrapped, roots))


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
_START_IN_TEXT = re.compile(r"[ \t]([a-z][a-z0-9\-]*)-start\s*\(")  # OPCODE: blanks and newlines before `(`
_START_CALL = re.compile(r"-start\s*\(")  # led by a literal: found fast in a whole text
_OPCODE = re.compile(r"[a-z][a-z0-9\-]*")
_HIDDEN_ROOTS = frozenset(("async_param",) + _SUGAR_WRAPPED)
_ZERO_SUFFIX = re.compile(r".\.-?0\d*$")


def _zero_led(name: str) -> bool:
    """Whether a name's number is zero-led (`x.0`, `x.05`, `x.-0`): one that may meet another
    name's in XLA's uniquer, or be rewritten there."""
    return (".0" in name or ".-0" in name) and _ZERO_SUFFIX.search(name) is not None


def uniquify_instruction_names(comps, roots: frozenset[str] | None = None) -> list[tuple]:
    """Rename instructions whose names repeat, as XLA's parser does: one uniquer for the
    module, computations in module order, instructions in text order. With `roots` (not
    `async_param`), only names of those roots, in `comps` (the computations that write
    them or sugar wrapping them: `Renames`). What it renamed: (computation, [(position of
    the instruction, its new name), ...]) for each computation with a name changed."""
    instructions = _NameUniquer()
    by_name = None
    changed = []
    for comp in comps:
        # Async sugar (`call-start`, `reduce-scatter-start`, ...) makes XLA build a wrapped
        # computation while it reads the enclosing one; its names are taken first.
        for inst in comp.instructions:
            op = opcodes.info(inst.opcode)
            if op.async_role == "start" and op.canonical == "async-start" and op.wrapped:
                if roots is None:
                    if by_name is None:
                        by_name = {c.text_name: c for c in comps}
                    for _ in range(wrapped_parameters(inst, by_name)):
                        instructions.unique("async_param")
                if roots is None or op.wrapped in roots:
                    instructions.unique(op.wrapped)
        renamed = []
        for k, inst in enumerate(comp.instructions):
            if roots is None or numbered(inst.name)[0] in roots:
                name = instructions.unique(inst.name)
                if name != inst.name:
                    inst.name = name
                    renamed.append((k, name))
        if renamed:
            changed.append((comp, renamed))
    return changed


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
