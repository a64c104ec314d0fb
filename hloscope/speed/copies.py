"""Bodies read as copies of bodies read before.

A compilation repeats computations: a model's layers fuse into the same fusions, each printed
once per call site under fresh names (on a 32-layer train step, 12,510 of 14,491 bodies, 89%
of the instructions, repeat an earlier body up to names). When every body of a module is read
in text order (`lazy.read_all`), a body that repeats one read before is known as a copy of
it instead of being cut and parsed again, and built from it only when its instructions are
asked for (most analyses ask the original, `LazyComputation.copy_of`): new instructions with the
original's opcode, shape, literal, parameter number, attributes (the same objects: they are
written alike) and callees, operands at the same positions, and the copy's own names and lines.

A body is copied only where reading it would give exactly that:

- its text is the original's with each `%name` replaced, one name for one (so every operand
  resolves to the instruction at the same position, as the read's name lookup would);
- the original's `%name`s are exactly its instructions' names, their operands' and the
  computations they call, in the order a line writes them, and no `%` is written elsewhere
  (a control predecessor, or a name in a string, would be the copy's own, not the original's).

A copy's instructions call the computations its own text names, at the places the original
names its callees: those attributes are the copy's own (its text), the others the
original's. Every check a read makes of a body (names defined once and before use, the opcode
rules, which count callees) then says of the copy what it said of the original, which read
without an error; the caller checks each copy's root against its own header, which is not
part of the body. Callees are the module's to check (`references.check_references`), and an
analysis that prices or models a copy by its original asks about the copy's own callees.

A model's layers often differ in their metadata alone (`op_name=".../layers_17/..."`: on a
64-layer GPU step, 5,766 bodies are 5,766 texts up to names, 199 up to names and metadata).
Bodies are therefore keyed by their text up to names and the values of `metadata={...}`: a
copy whose metadata differs from its original's writes its own, where the original's
metadata attributes are (`LazyComputation.copy_of` stays None for it: what analyses ask of
the original, e.g. whether an op recomputes, may depend on the metadata). A value is left
out of the key where it is a brace group of plain characters and double-quoted strings on
one line; an original's copies are made so only where each such value is one instruction's
`metadata` attribute (else they are read): any other value there reads the same way.
"""

from __future__ import annotations

import hashlib
import re
from typing import NamedTuple

from ..ir.attributes import Attributes
from ..ir.module import Computation, Instruction
from ..ir.structure import PERCENT_NAME, callees_written, name_pattern


_CUT_AT_NAMES = re.compile(f"({PERCENT_NAME.pattern})", re.ASCII)
_METADATA = re.compile(r""", metadata=(\{(?:[^{}"'\n]++|"(?:[^"\\\n]++|\\.)*+")*+\})""")
"""A `metadata=` value that a copy may write its own of: braces around plain characters and
double-quoted strings, on one line (the grammar reads any such as one group), after `, ` as
XLA prints it (a literal start keeps the search fast)."""
_ANOTHER = "\x00"
"""What stands for each metadata value in a key (a text that writes it is keyed whole)."""


class Known(NamedTuple):
    """What one pass of reads knows of a body (`copies_of`)."""

    original: Original | None
    """The body read before that it repeats, up to names or up to names and metadata values;
    else None."""
    keys: tuple
    """Those under which the caller keeps this body as an original once read
    (`copies[key] = Original.of(...)` for each), or as a copy writing its own metadata
    (`alike_to`); () when one written so was read already."""
    names: list[str]
    """Its `%name`s."""
    same: Computation | None
    """When it repeats `original` up to names: the computation it repeats so (that one or a
    copy of it); None when it writes its own metadata, or repeats nothing."""
    values: int
    """How many metadata values a key leaves out."""


def copies_of(copies: dict, text: str, alike: object | None = None) -> Known:
    """What this pass (`copies`, a dict kept for it) knows of a body written `text`.

    The keys are (digests of) its text up to names, and up to names and metadata values.
    `alike`, when the lazy parse found the text up to names, is a token that stands for it
    (`LazyBody.alike`): the names are then all there is to find. Bodies of a text parsed in
    two parts meet under the keys."""
    if alike is not None and alike in copies:
        original, same = _found(copies[alike])
        return Known(original, (), PERCENT_NAME.findall(text), same, 0)
    # One pass cuts the text at its names: the key is the rest, each name a `%` (`up_to_names`).
    parts = _CUT_AT_NAMES.split(text)
    names, written = parts[1::2], "%".join(parts[0::2])
    key = _digest(written)
    if key in copies:
        found = copies[key]
        if alike is not None and found is not None:
            copies[alike] = found
        original, same = _found(found)
        return Known(original, (), names, same, 0)
    keys = (key,) if alike is None else (key, alike)
    pieces = _METADATA.split(written)
    if len(pieces) == 1 or _ANOTHER in written:
        return Known(None, keys, names, None, 0)
    free = _digest(_ANOTHER.join(pieces[0::2]))
    original = copies.get(free)
    if original is not None:  # its metadata differs (else the first key would have found it)
        return Known(original, keys, names, None, len(pieces) // 2)
    return Known(None, (free, *keys), names, None, len(pieces) // 2)


def alike_to(copies: dict, keys: tuple, original: Original, computation) -> None:
    """Keep `computation`, a copy of `original` whose metadata differs from it, under the
    `keys` `copies_of` gave: later bodies written alike up to names are the same as it."""
    for key in keys:
        copies[key] = (original, computation)


def _found(found) -> tuple:
    """(original, the computation a body is the same as up to names) of what `copies` keeps."""
    if found is None:
        return None, None
    return found if found.__class__ is tuple else (found, found.computation)


def written_in(text: str) -> tuple[list[str], list[str]]:
    """A body's `%name`s outside its metadata values, and those values."""
    pieces = _METADATA.split(text)
    return PERCENT_NAME.findall(_ANOTHER.join(pieces[0::2])), pieces[1::2]


def _digest(key: str) -> bytes:
    """A 16-byte BLAKE2b digest of a body's text up to names (and metadata values), which
    stands for it in `copies`: on a module whose bodies do not repeat, the texts would keep
    the module's text again."""
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class Original:
    """A body read in the pass, which later bodies repeating it are copies of."""

    __slots__ = ("computation", "instructions", "line", "names", "own_recipe", "pattern", "recipe", "values")

    def __init__(self, computation: Computation, instructions: list[Instruction], names: list[str],
                 values: int, line: int):
        self.computation = computation
        self.instructions = instructions
        self.names = names
        self.values = values
        """How many metadata values its key leaves out (`copies_of`)."""
        self.pattern = name_pattern(names)
        self.line = line
        self.recipe: list | None = None  # built at the first copy: most bodies are never repeated
        self.own_recipe: list | None = None
        """The recipe of copies that write their own metadata values."""

    @classmethod
    def of(cls, computation: Computation, instructions: list[Instruction], text: str,
           line: int, names: list[str], values: int) -> Original | None:
        """The body read from `text` at `line` (its `%name`s, and how many metadata values its
        key leaves out: `copies_of`) as an original, or None when its copies could not be
        read so (see the module's docstring)."""
        # Where each name stands is found at the first copy (`_recipe`): most bodies have none.
        # Nor one with instructions its text does not write: nested ones, and the
        # get-tuple-elements of `t#i` operands (a `#` may also be in a layout or a string).
        # A `%` in a metadata value: a copy keyed alike up to names could write another there.
        if text.count("%") != len(names) or "#" in text or any(inst.nested for inst in instructions):
            return None
        return cls(computation, instructions, names, values, line)

    @property
    def root(self) -> Instruction:
        """The original's root, whose shape a copy's root has."""
        return next(inst for inst in reversed(self.instructions) if inst.is_root)

    def repeated_by(self, names: list[str]) -> list[str] | None:
        """`names`, the `%name`s of a body that repeats this one up to them (and metadata
        values), when they stand one for one for the original's (it then reads as a copy,
        without an error but for its header's result); else None."""
        if name_pattern(names) != self.pattern:
            return None
        if self.recipe is None:
            # [] once found not to fit: every repeat is read
            self.own_recipe = self._recipe() or []
            # Where the metadata is the original's, its attributes are too.
            self.recipe = [entry if entry[-1].__class__ is not _Tail or entry[-1].order is not None
                           else (*entry[:-1], entry[-1].called) for entry in self.own_recipe]
        return names if self.recipe else None

    def copy(self, text: str, line: int, own_metadata: bool) -> tuple[list[Instruction], Instruction]:
        """(instructions, root) of the body `text` at `line`, known to repeat this one up to
        `%name`s standing one for one (`repeated_by`), and, with `own_metadata`, up to
        metadata values: it writes its own."""
        if own_metadata:
            names, metadata = written_in(text)
            recipe = self.own_recipe
        else:
            names, metadata = PERCENT_NAME.findall(text), None
            recipe = self.recipe
        out: list[Instruction] = []
        append = out.append
        root = None
        for at, opcode, shape, positions, attributes, offset, is_root, literal, number, called in recipe:
            operands = [out[k] for k in positions]
            if called.__class__ is _Tail:  # the copy's own callees or metadata, where the original writes its
                attributes, called = called.of(names, metadata)
            inst = Instruction(names[at][1:], opcode, shape, operands, attributes, line + offset, called)
            for o in operands:
                o.users.append(inst)
            if literal is not None:
                inst.literal = literal
            if number is not None:
                inst.parameter_number = number
            if is_root:
                inst.is_root = True
                root = inst
            append(inst)
        return out, root

    def _recipe(self) -> list | None:
        """Per instruction: where its name is among the `%name`s, and what a copy shares;
        None when the names are not, in text order, each instruction's name, then its
        operands', then its callees' (the order a line writes them in), or when the metadata
        values are not each one instruction's `metadata` attribute."""
        names, line = self.names, self.line
        index = {id(inst): k for k, inst in enumerate(self.instructions)}
        recipe = []
        at = 0
        values = 0
        for inst in self.instructions:
            operands = inst.operands
            if at + len(operands) >= len(names) or names[at][1:] != inst.name:
                return None
            for k, o in enumerate(operands, at + 1):
                if names[k][1:] != o.name:
                    return None
            called = inst.called_computation_names
            after = at + 1 + len(operands)
            attributes = inst.attributes
            written = None
            if attributes.mentions("%"):
                written = callees_written(inst)
                if written is None or names[after:after + len(written)] != written:
                    return None
            value = _metadata_value(attributes) if attributes.mentions("metadata=") else None
            if value is _NOT_ONE:
                return None
            if written is not None or value is not None:
                called = _Tail(attributes, called, after, written, values, value)
                after += len(written or ())
                values += value is not None
            recipe.append((at, inst.opcode, inst.shape, [index[id(o)] for o in operands], attributes,
                           inst.line - line, inst.is_root, inst.literal, inst.parameter_number, called))
            at = after
        return recipe if at == len(names) and values == self.values else None


_NOT_ONE = object()
"""What `_metadata_value` says of a tail whose metadata a copy cannot write its own of."""


def _metadata_value(attributes: Attributes):
    """Where the metadata value a key leaves out stands in an uncut attribute tail: its
    (start, end); None when the tail writes none; `_NOT_ONE` when it writes more than one,
    when it may stand inside a string, or when the tail is gone (cut apart).

    With no quote before it, a value there is read as one group whatever plain characters
    and strings it holds, and what follows is read alike: a copy may write its own there."""
    tail, _, tokens, raw = attributes.as_written()
    if not tail:  # a tail is kept whole until every attribute is cut off it
        return _NOT_ONE if tokens or raw else None
    found = _METADATA.search(tail)
    if found is None:
        return None
    start, end = found.span(1)
    if _METADATA.search(tail, end) is not None:
        return _NOT_ONE
    if _QUOTE.search(tail, 0, start) is None:
        return start, end
    for piece, at in attributes.split_tail():  # cut as the grammar reads it
        key, _, value = piece.lstrip(", \t\r\n").partition("=")
        if key == "metadata" and at + len(piece) - len(value.lstrip()) == start and value.strip() == found.group(1):
            return start, end
    return _NOT_ONE


_QUOTE = re.compile("[\"']")


class _Tail:
    """How a copy writes an attribute tail where the original's writes names of its own (its
    callees) or a metadata value: the tail cut there, and which of the copy's names and
    metadata values stand in each cut."""

    __slots__ = ("attributes", "called", "holes", "kept", "order", "pieces")

    def __init__(self, attributes: Attributes, called: tuple[str, ...], at: int, written: list[str] | None,
                 value_at: int, value: tuple[int, int] | None):
        self.attributes, self.called = attributes, called
        tail = attributes.tail
        cuts = []  # (start, end, hole): a hole k >= 0 is the k-th `%name`, -1 - m the m-th metadata value
        if written is not None:
            k = at
            for m in PERCENT_NAME.finditer(tail):  # none in an original's metadata (`Original.of`)
                cuts.append((m.start(), m.end(), k))
                k += 1
            # `called_computation_names` lists them in XLA's order of the attributes, not the text's.
            self.order: list[int] | None = [at + written.index("%" + name) for name in called]
        else:
            self.order = None
        self.kept = None if value is None else tail[value[0]:value[1]]
        """The original's metadata value, which a copy that writes the same keeps."""
        if value is not None:
            cuts.append((value[0], value[1], -1 - value_at))
        cuts.sort()
        self.pieces, self.holes = [], []
        end = 0
        for start, stop, hole in cuts:
            self.pieces.append(tail[end:start])
            self.holes.append(hole)
            end = stop
        self.pieces.append(tail[end:])

    def of(self, names: list[str], metadata: list[str] | None) -> tuple[Attributes, tuple[str, ...]]:
        """(the copy's attributes, the computations it calls) from the copy's `%name`s and
        metadata values (None: the original's)."""
        order = self.order
        if order is None and metadata is None:
            return self.attributes, self.called
        pieces = self.pieces
        out = [pieces[0]]
        for hole, piece in zip(self.holes, pieces[1:]):
            if hole >= 0:
                out.append(names[hole])
            else:
                out.append(self.kept if metadata is None else metadata[-1 - hole])
            out.append(piece)
        called = self.called if order is None else tuple(names[k][1:] for k in order)
        return Attributes((), "".join(out)), called
