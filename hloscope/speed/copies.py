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
"""

from __future__ import annotations

import hashlib
import re

from ..ir.attributes import Attributes
from ..ir.module import Computation, Instruction
from ..ir.structure import PERCENT_NAME, callees_written, name_pattern


_CUT_AT_NAMES = re.compile(f"({PERCENT_NAME.pattern})", re.ASCII)


def copies_of(copies: dict, text: str, alike: object | None = None) -> tuple[Original | None, tuple, list[str]]:
    """(the original `text` repeats, (), its `%name`s) when one was read in this pass
    (`copies`, a dict kept for the pass); else (None, the keys under which the caller keeps
    this body as an original once read: `copies[key] = Original.of(...)` for each, its
    `%name`s), or (None, (), its `%name`s) when a body written so was read already and
    cannot be copied.

    A body's key is (a digest of) its text up to names (`printed.up_to_names`); `alike`, when
    the lazy parse found that text, is a token that stands for it (`LazyBody.alike`): the
    names are then all there is to find. Bodies of a text parsed in two parts meet under
    the text."""
    if alike is not None and alike in copies:
        return copies[alike], (), PERCENT_NAME.findall(text)
    # One pass cuts the text at its names: the key is the rest, each name a `%` (`up_to_names`).
    parts = _CUT_AT_NAMES.split(text)
    key, names = _digest("%".join(parts[0::2])), parts[1::2]
    if key in copies:
        original = copies[key]
        if alike is not None:
            copies[alike] = original
        return original, (), names
    return None, (key,) if alike is None else (key, alike), names


def _digest(key: str) -> bytes:
    """A 16-byte BLAKE2b digest of a body's text up to names, which stands for it in `copies`:
    on a module whose bodies do not repeat, the texts would keep the module's text again."""
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class Original:
    """A body read in the pass, which later bodies repeating it are copies of."""

    __slots__ = ("computation", "instructions", "line", "names", "pattern", "recipe")

    def __init__(self, computation: Computation, instructions: list[Instruction], names: list[str], line: int):
        self.computation = computation
        self.instructions = instructions
        self.names = names
        self.pattern = name_pattern(names)
        self.line = line
        self.recipe: list | None = None  # built at the first copy: most bodies are never repeated

    @classmethod
    def of(cls, computation: Computation, instructions: list[Instruction], text: str,
           line: int, names: list[str]) -> Original | None:
        """The body read from `text` at `line` (its `%name`s: `names`) as an original, or None
        when its copies could not be read so (see the module's docstring)."""
        # Where each name stands is found at the first copy (`_recipe`): most bodies have none.
        # Nor one with instructions its text does not write: nested ones, and the
        # get-tuple-elements of `t#i` operands (a `#` may also be in a layout or a string).
        if text.count("%") != len(names) or "#" in text or any(inst.nested for inst in instructions):
            return None
        return cls(computation, instructions, names, line)

    @property
    def root(self) -> Instruction:
        """The original's root, whose shape a copy's root has."""
        return next(inst for inst in reversed(self.instructions) if inst.is_root)

    def repeated_by(self, names: list[str]) -> list[str] | None:
        """`names`, the `%name`s of a body that repeats this one up to them, when they stand
        one for one for the original's (it then reads as a copy, without an error but for
        its header's result); else None."""
        if name_pattern(names) != self.pattern:
            return None
        if self.recipe is None:
            self.recipe = self._recipe() or []  # [] once found not to fit: every repeat is read
        return names if self.recipe else None

    def copy(self, text: str, line: int) -> tuple[list[Instruction], Instruction] | None:
        """(instructions, root) of the body `text` at `line`, which repeats this one up to
        `%name`s; None when its names do not stand one for one for the original's."""
        names = self.repeated_by(PERCENT_NAME.findall(text))
        if names is None:
            return None
        out: list[Instruction] = []
        append = out.append
        root = None
        for at, opcode, shape, positions, attributes, offset, is_root, literal, number, called in self.recipe:
            operands = [out[k] for k in positions]
            if called.__class__ is _Callees:  # the copy's own callees, where the original names its
                attributes, called = called.of(names)
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
        operands', then its callees' (the order a line writes them in)."""
        names, line = self.names, self.line
        index = {id(inst): k for k, inst in enumerate(self.instructions)}
        recipe = []
        at = 0
        for inst in self.instructions:
            operands = inst.operands
            if at + len(operands) >= len(names) or names[at][1:] != inst.name:
                return None
            for k, o in enumerate(operands, at + 1):
                if names[k][1:] != o.name:
                    return None
            called = inst.called_computation_names
            after = at + 1 + len(operands)
            if inst.attributes.mentions("%"):
                written = callees_written(inst)
                if written is None or names[after:after + len(written)] != written:
                    return None
                called = _Callees(inst.attributes.tail, after, written, called)
                after += len(written)
            recipe.append((at, inst.opcode, inst.shape, [index[id(o)] for o in operands], inst.attributes,
                           inst.line - line, inst.is_root, inst.literal, inst.parameter_number, called))
            at = after
        return recipe if at == len(names) else None


class _Callees:
    """How a copy writes its callees where an original instruction writes its own: the
    attributes' text cut at the names, and where each name is among a body's `%name`s."""

    __slots__ = ("at", "order", "pieces")

    def __init__(self, tail: str, at: int, written: list[str], called: tuple[str, ...]):
        self.pieces = PERCENT_NAME.split(tail)
        self.at = at
        # `called_computation_names` lists them in XLA's order of the attributes, not the text's.
        self.order = [at + written.index("%" + name) for name in called]

    def of(self, names: list[str]) -> tuple[Attributes, tuple[str, ...]]:
        """(the copy's attributes, the computations it calls) from the copy's `%name`s."""
        pieces, at = self.pieces, self.at
        text = pieces[0] + "".join(names[at + k] + piece for k, piece in enumerate(pieces[1:]))
        return Attributes((), text), tuple(names[k][1:] for k in self.order)
