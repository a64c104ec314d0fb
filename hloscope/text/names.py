"""Names as XLA's parser makes them unique, and whether a module's names need it.

XLA's parser gives every computation and every instruction of a module a name of its own
(its NameUniquer, by numeric `.N` suffixes); hloscope renames as it does. Whether any name
would change is judged from the names alone (`renames_needed`), so a lazily read module's
bodies stay unread when none would; the two parts of a parallel parse find their names
each (`NameFacts`) and the join judges them together.
"""

from __future__ import annotations

import re

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
    return names, [op[: -len("-start")] for op in starts if _SUGAR_STARTS.fullmatch(op)]


class NameFacts:
    """What `renames_needed` reads of a run of computations: their instruction names, whether
    one repeats among them, those with a zero-led suffix, and the opcodes they wrap as async
    sugar. The two parts of a parallel parse each find theirs (`plain()` crosses processes)."""

    __slots__ = ("_distinct", "names", "repeats", "wrapped", "zero_led")

    def __init__(self, names: list[str], repeats: bool | None = None, zero_led: list[str] | None = None,
                 wrapped=()):
        self.names = names
        self._distinct: set[str] | None = None
        self.repeats = len(self.distinct) != len(names) if repeats is None else repeats
        self.zero_led = ([n for n in names if ".0" in n and _ZERO_SUFFIX.search(n)]
                         if zero_led is None else zero_led)
        self.wrapped = set(wrapped)

    @classmethod
    def of(cls, comps, body_of=lambda comp: None) -> NameFacts:
        """The facts of `comps`; `body_of(comp)`: its unread body's text, None once read."""
        names: list[str] = []
        wrapped: set[str] = set()
        for comp in comps:
            comp_names, comp_wrapped = _name_facts(comp, body_of(comp))
            names += comp_names
            wrapped.update(comp_wrapped)
        return cls(names, wrapped=wrapped)

    @property
    def distinct(self) -> set[str]:
        if self._distinct is None:
            self._distinct = set(self.names)
        return self._distinct

    def has_set(self) -> bool:
        return self._distinct is not None

    def plain(self) -> tuple:
        return self.names, self.repeats, self.zero_led, sorted(self.wrapped)


def renames_needed(parts: list[NameFacts]) -> bool:
    """Whether making instruction names unique would rename any, judged from the names
    alone (unread bodies are not read); exact up to XLA's hidden async names, where it errs
    on the side of yes. `parts`: the names of the module's computations, in runs.

    Distinct names collide only through a suffix with a leading zero (`x` and `x.0`, `x.1`
    and `x.01`), and with the names XLA takes for the computations it builds around async
    sugar (`async_param`, the wrapped opcode's name).
    """
    if any(p.repeats for p in parts):
        return True
    # Each run's names are distinct: a repeat is a name shared by two runs (looked up in
    # whichever run's set is built already: one of 100K names takes 0.1 s to build).
    for k, later in enumerate(parts[1:], 1):
        for earlier in parts[:k]:
            built, other = (later, earlier) if later.has_set() and not earlier.has_set() else (earlier, later)
            if not built.distinct.isdisjoint(other.names):
                return True
    keys: set[tuple[str, int]] = set()
    for name in (n for p in parts for n in p.zero_led):
        root, _, suffix = name.rpartition(".")
        key = (root, int(suffix))
        written = root if key[1] == 0 else f"{root}.{key[1]}"
        if key in keys or any(written in p.distinct for p in parts):
            return True
        keys.add(key)
    wrapped = set().union(*(p.wrapped for p in parts))
    if wrapped:
        hidden = re.compile(r"^(?:async_param|" + "|".join(map(re.escape, wrapped)) + r")(?:\.\d+)?$", re.M)
        if any(hidden.search("\n".join(p.names)) for p in parts):
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
_SUGAR_STARTS = re.compile("|".join(re.escape(op) + "-start" for op in _SUGAR_WRAPPED))
_START_IN_TEXT = re.compile(r"[ \t]([a-z][a-z0-9\-]*)-start[ \t]*\(")
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
