"""Shapes and layouts: frozen values with exact byte sizes.

Array shapes are parsed from their text (`f32[8,128]{1,0:T(8,128)S(1)}`) once per distinct
string and interned, so the thousands of instructions that share a shape share one object.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

# Bits per element of each primitive type, as in xla/primitive_util. Sub-byte types occupy a
# whole byte each unless the layout packs them (`E(4)`), which is what ShapeUtil::ByteSizeOf does.
ELEMENT_BITS: dict[str, int] = {
    "pred": 8,
    "s1": 1, "s2": 2, "s4": 4, "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "u1": 1, "u2": 2, "u4": 4, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64,
    "c64": 64, "c128": 128,
    "f4e2m1fn": 4, "f6e2m3fn": 6, "f6e3m2fn": 6, "f8e8m0fnu": 8,
    "f8e5m2": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3b11fnuz": 8, "f8e5m2fnuz": 8,
    "f8e4m3fnuz": 8, "f8e3m4": 8,
    "token": 0, "opaque": 0,
}

POINTER_SIZE = 8
"""Bytes of one entry of a tuple's pointer table (XLA's CPU and GPU backends use 8)."""

UNBOUNDED = -1
"""Size recorded for an unbounded dynamic dimension (`?`)."""


@dataclass(frozen=True, slots=True)
class Layout:
    """A layout as printed inside `{...}` after an array shape."""

    minor_to_major: tuple[int, ...]
    """Dimension numbers, most minor first."""
    tiles: tuple[tuple[int, ...], ...] = ()
    """Tiles `T(8,128)(2,1)`, outermost first; `*` (combine dimensions) is recorded as -1."""
    element_size_in_bits: int = 0
    """`E(n)`: packed element size, 0 when unset."""
    memory_space: int = 0
    """`S(n)`: 0 is device memory, 5 host memory on GPU and TPU, others backend-specific."""
    text: str = ""
    """The layout as written, without braces."""


@dataclass(frozen=True, slots=True, eq=False)
class Shape:
    """An array shape, a tuple of shapes, or a token.

    Shapes compare by their text form; two occurrences of the same text are the same object.
    """

    element_type: str
    """Primitive type name (`f32`, `bf16`, ...), or `tuple`."""
    dimensions: tuple[int, ...] = ()
    """Sizes; a bounded dynamic dimension `<=N` records N, an unbounded `?` records -1."""
    dynamic: tuple[bool, ...] = ()
    """Which dimensions are dynamic."""
    layout: Layout | None = None
    tuple_shapes: tuple["Shape", ...] = ()
    text: str = field(default="", repr=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Shape) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __str__(self) -> str:
        return self.text

    @property
    def is_tuple(self) -> bool:
        return self.element_type == "tuple"

    @property
    def is_array(self) -> bool:
        return self.element_type not in ("tuple", "token", "opaque", "buffer", "unknown")

    @property
    def rank(self) -> int:
        return len(self.dimensions)

    @property
    def element_count(self) -> int:
        n = 1
        for d in self.dimensions:
            n *= d
        return n

    @property
    def memory_space(self) -> int:
        return self.layout.memory_space if self.layout else 0

    @property
    def byte_size(self) -> int:
        """Bytes of this shape's own buffer, as XLA's ShapeUtil::ByteSizeOf with 8-byte pointers.

        A tuple's own buffer is its pointer table; its elements are separate buffers. Bounded
        dynamic dimensions count at their bound; a shape with an unbounded one has size 0.
        """
        if self.is_tuple:
            return POINTER_SIZE * len(self.tuple_shapes)
        if self.element_type == "buffer":
            return self.tuple_shapes[0].byte_size
        bits = ELEMENT_BITS.get(self.element_type, 0)
        if bits == 0 or UNBOUNDED in self.dimensions:
            return 0
        n = self.element_count
        packed = self.layout.element_size_in_bits if self.layout else 0
        if packed:
            return (n * packed + 7) // 8
        return n * max(1, bits // 8)

    @property
    def total_byte_size(self) -> int:
        """Bytes of every array leaf together (tuple pointer tables excluded)."""
        return sum(leaf.byte_size for _, leaf in self.leaves())

    def leaves(self, prefix: tuple[int, ...] = ()):
        """Yield `(shape_index, array_shape)` for each non-tuple leaf, in order."""
        if self.is_tuple:
            for i, sub in enumerate(self.tuple_shapes):
                yield from sub.leaves(prefix + (i,))
        else:
            yield prefix, self

    def subshapes(self, prefix: tuple[int, ...] = ()):
        """Yield `(shape_index, shape)` for every subshape, tuples included, pre-order."""
        yield prefix, self
        for i, sub in enumerate(self.tuple_shapes):
            yield from sub.subshapes(prefix + (i,))

    def at(self, index: tuple[int, ...]) -> "Shape":
        """The subshape at a shape index, e.g. `(1, 0)`."""
        shape = self
        for i in index:
            shape = shape.tuple_shapes[i]
        return shape


_ARRAY = re.compile(r"([a-z][a-z0-9]*)\s*\[([^\]]*)\]\s*(?:\{(.*)\})?\Z", re.S)
_SPACE = re.compile(r"\s+")
_TAG = re.compile(r"([A-Z]+|#)\(([^()]*(?:\([^()]*\)[^()]*)*)\)")


class ShapeError(ValueError):
    """A shape's text is not a valid HLO shape."""


@functools.lru_cache(maxsize=None)
def parse_array_shape(text: str) -> Shape:
    """Parse one array shape token (`f32[2,<=3]{1,0:T(8,128)}`); interned by its text."""
    m = _ARRAY.match(text)
    if not m:
        raise ShapeError(f"not an array shape: {text!r}")
    etype, dims_text, layout_text = m.groups()
    if etype not in ELEMENT_BITS:
        fp = re.fullmatch(r"f([468])e\d+m\d+[a-z0-9]*", etype)
        if fp is None:
            raise ShapeError(f"unknown element type {etype!r}")
        ELEMENT_BITS[etype] = int(fp.group(1))  # a small float format newer than this table
    dims: list[int] = []
    dynamic: list[bool] = []
    for piece in dims_text.split(","):
        piece = piece.strip()
        if not piece:
            continue
        if piece == "?":
            dims.append(UNBOUNDED)
            dynamic.append(True)
        elif piece.startswith("<="):
            dims.append(int(piece[2:]))
            dynamic.append(True)
        else:
            dims.append(int(piece))
            dynamic.append(False)
    layout = _parse_layout(layout_text) if layout_text is not None else None
    # XLA prints shapes without spaces; hand-written ones may have some.
    canonical = _SPACE.sub("", text) if any(c.isspace() for c in text) else text
    return Shape(etype, tuple(dims), tuple(dynamic), layout, (), canonical)


def _parse_layout(text: str) -> Layout:
    order_text, _, tags = text.partition(":")
    minor_to_major = tuple(int(p) for p in order_text.split(",") if p.strip())
    tiles: list[tuple[int, ...]] = []
    element_bits = 0
    memory_space = 0
    for tag, args in _TAG.findall(tags):
        if tag == "T":
            tiles.append(tuple(-1 if a.strip() == "*" else int(a) for a in args.split(",") if a.strip()))
        elif tag == "E":
            element_bits = int(args)
        elif tag == "S":
            memory_space = int(args)
    # Consecutive tiles print as T(8,128)(2,1): the second group has no tag letter.
    for extra in re.findall(r"\)\(([0-9*,\s]+)\)", tags):
        tiles.append(tuple(-1 if a.strip() == "*" else int(a) for a in extra.split(",") if a.strip()))
    return Layout(minor_to_major, tuple(tiles), element_bits, memory_space, text)


_TUPLES: dict[tuple[Shape, ...], Shape] = {}


def tuple_shape(elements) -> Shape:
    """The tuple of the given shapes (interned)."""
    key = tuple(elements)
    shape = _TUPLES.get(key)
    if shape is None:
        text = "(" + ", ".join(s.text for s in key) + ")"
        shape = _TUPLES[key] = Shape("tuple", (), (), None, key, text)
    return shape


UNKNOWN = Shape("unknown", text="")
"""The shape of an instruction written without one (XLA infers it; hloscope does not)."""


def buffer_shape(inner: Shape) -> Shape:
    """`b(f32[8])`: a buffer holding an array."""
    return Shape("buffer", (), (), None, (inner,), f"b({inner.text})")


@functools.lru_cache(maxsize=None)
def parse_shape(text: str) -> Shape:
    """Parse any shape text, tuples included (`(f32[2], (s32[], token[]))`); cached."""
    text = text.strip()
    if not text.startswith("("):
        return parse_array_shape(text)
    pos = 0

    def parse_at() -> Shape:
        nonlocal pos
        while text[pos].isspace():
            pos += 1
        if text.startswith("b(", pos):
            pos += 1
            inner = parse_at()
            if len(inner.tuple_shapes) != 1:
                raise ShapeError(f"a buffer holds one array: {text!r}")
            return buffer_shape(inner.tuple_shapes[0])
        if text[pos] != "(":
            m = re.compile(r"[a-z][a-z0-9]*\[[^\]]*\](?:\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})?").match(text, pos)
            if not m:
                raise ShapeError(f"bad shape at {text[pos:pos + 20]!r}")
            pos = m.end()
            return parse_array_shape(m.group(0))
        pos += 1
        elements = []
        while True:
            while text[pos].isspace():
                pos += 1
            if text[pos] == ")":
                pos += 1
                return tuple_shape(elements)
            if text.startswith("/*", pos):
                pos = text.index("*/", pos) + 2
                continue
            elements.append(parse_at())
            while text[pos].isspace():
                pos += 1
            if text[pos] == ",":
                pos += 1

    return parse_at()
