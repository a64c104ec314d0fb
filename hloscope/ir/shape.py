"""Shapes and layouts: frozen values with exact byte sizes.

Array shapes are parsed from their text (`f32[8,128]{1,0:T(8,128)S(1)}`) once per distinct
string and interned, so the thousands of instructions that share a shape share one object.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from .values import AttributeValueError, Reader

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
    rest: tuple = field(default=(), repr=False, compare=False)
    """What else the layout says that only XLA's check of a tuple's elements reads: (tail
    padding L(n), whether it names an index or pointer type, split configs SC(d:i,...))."""


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
    def padded_byte_size(self) -> int:
        """Bytes the buffer occupies: `byte_size`, with a tiled layout's padding (XLA
        ShapeUtil::ArraySize). The first tile pads the most minor dimensions up to its
        sizes (a missing dimension counts as 1); sub-tiles add none, as in XLA::

            f32[3,100]{1,0:T(8,128)}     8 x 128 elements   = 4096 bytes (byte_size 1200)
            f32[]{:T(128)}               128 elements       =  512 bytes
            bf16[20,128]{1,0:T(8,128)(2,1)}  24 x 128 x 2   = 6144 bytes

        A shape without tiles (every CPU and GPU layout) is exactly `byte_size`."""
        layout = self.layout
        if self.is_tuple or layout is None or not layout.tiles or not self.is_array:
            return self.byte_size
        bits = ELEMENT_BITS.get(self.element_type, 0)
        if bits == 0 or UNBOUNDED in self.dimensions:
            return 0
        tile = layout.tiles[0]
        order = layout.minor_to_major
        dims = self.dimensions
        n = 1
        for k in range(max(len(tile), len(order))):
            size = dims[order[k]] if k < len(order) and order[k] < len(dims) else 1
            if k < len(tile):
                t = tile[len(tile) - 1 - k]
                if t > 0:  # `*` (combine dimensions, -1) pads nothing
                    size = -(-size // t) * t
            n *= size
        packed = layout.element_size_in_bits
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
_INT64_MAX = (1 << 63) - 1
_DIMENSION = re.compile(r"\s*(?:(\?)|(<=)?\s*([0-9]+))\s*\Z")


class ShapeError(ValueError):
    """A shape's text is not a valid HLO shape; `offset` is where in that text it goes wrong."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset

    def shifted(self, by: int) -> "ShapeError":
        """The same error, for the text it was found in placed `by` characters further on."""
        return ShapeError(str(self), self.offset + by)


@functools.lru_cache(maxsize=None)
def parse_array_shape(text: str) -> Shape:
    """Parse one array shape token (`f32[2,<=3]{1,0:T(8,128)}`); interned by its text.

    Raises ShapeError, as XLA's parser refuses them, for a malformed size, a size beyond
    int64, and a layout that is not `minor_to_major[:attributes]` with one entry per
    dimension."""
    m = _ARRAY.match(text)
    if not m:
        raise ShapeError(f"not an array shape: {text[:40]!r}", 0)
    etype, dims_text, layout_text = m.groups()
    if etype not in ELEMENT_BITS:
        fp = re.fullmatch(r"f([468])e\d+m\d+[a-z0-9]*", etype)
        if fp is None:
            raise ShapeError(f"unknown element type {etype!r}", 0)
        ELEMENT_BITS[etype] = int(fp.group(1))  # a small float format newer than this table
    dims: list[int] = []
    dynamic: list[bool] = []
    if dims_text.strip():
        at = m.start(2)
        for piece in dims_text.split(","):
            d = _DIMENSION.match(piece)
            if d is None or (d.group(3) is not None and int(d.group(3)) > _INT64_MAX):
                blank = len(piece) - len(piece.lstrip())
                raise ShapeError(f"expects a dimension size (N, <=N or ?), not {piece.strip()[:20]!r}", at + blank)
            if d.group(1):
                dims.append(UNBOUNDED)
                dynamic.append(True)
            else:
                dims.append(int(d.group(3)))
                dynamic.append(d.group(2) is not None)
            at += len(piece) + 1
    layout = _parse_layout(layout_text, len(dims), m.start(3)) if layout_text is not None else None
    # XLA prints shapes without spaces; hand-written ones may have some.
    canonical = _SPACE.sub("", text) if any(c.isspace() for c in text) else text
    return Shape(etype, tuple(dims), tuple(dynamic), layout, (), canonical)


def _parse_layout(text: str, rank: int, at: int = 0) -> Layout:
    """A layout's text (inside its braces, which start at `at` in the shape's text)."""
    m = _PLAIN_LAYOUT.fullmatch(text)
    if m is not None:  # as XLA prints most layouts: `1,0`, `1,0:T(8,128)(2,1)S(1)`
        minor_to_major = tuple(int(x) for x in m.group(1).split(",")) if m.group(1) else ()
        memory_space = int(m.group(4) or 0)
        if len(minor_to_major) != rank:
            minor_to_major = _memory_space_only(minor_to_major, rank, memory_space, at)
        tiles = tuple(tuple(-1 if d == "*" else int(d) for d in t.split(",")) if t else ()
                      for t in _TILE.findall(m.group(2) or ""))
        return Layout(minor_to_major, tiles, int(m.group(3) or 0), memory_space, text)
    try:
        return _read_layout(Reader("{" + text + "}"), text, rank, at)
    except AttributeValueError as e:
        raise ShapeError(str(e), at + max(e.offset - 1, 0)) from None


# A layout as XLA prints it: minor_to_major, then tiles, element size and memory space.
_PLAIN_LAYOUT = re.compile(r"(-?[0-9]{1,18}(?:,-?[0-9]{1,18})*)?(?::(?:T((?:\((?:[0-9]{1,18}|\*)(?:,(?:[0-9]{1,18}|\*))*\))+))?"
                           r"(?:E\((-?[0-9]{1,18})\))?(?:S\((-?[0-9]{1,18})\))?)?")
_TILE = re.compile(r"\(([^()]*)\)")
_PRIMITIVE_TYPES = frozenset(ELEMENT_BITS) | {"tuple", "buffer"}


def _read_layout(r: Reader, text: str, rank: int, at: int) -> Layout:
    """XLA's ParseLayout: `minor_to_major` then, after a colon, each of D(...), T(...)...,
    L(n), #(type), *(type), E(n), S(n), SC(...), P(shape), M(n), in that order and each at
    most once. Like XLA, a part that fails to read is dropped where it stops, and the layout
    stands if its closing brace comes next (`{0:E(}` reads as `{0}`); a physical shape P(...)
    is refused, as XLA refuses it on any array."""
    r.expect("{", "expects '{'")
    minor_to_major: list[int] = []
    tiles: list[tuple[int, ...]] = []
    splits: list[tuple[int, tuple[int, ...]]] = []
    element_bits = memory_space = 0
    tail, typed = 1, False
    if r.kind != "}":
        if r.kind == "int":
            minor_to_major.append(r.int64("a dimension number"))
            while r.eat(","):
                minor_to_major.append(r.int64("a dimension number"))
        if r.eat(":"):
            if _at_word(r, "D"):
                r.next()
                _try(_dim_level_types, r)
            if _at_word(r, "T"):
                r.next()
                _try(_tiles, r, tiles)
            if _at_word(r, "L"):
                r.next()
                at_l = r.token.at
                tail = _try(_int_in_parentheses, r)
                if tail is not None and tail < 1:  # XLA fails a CHECK on it
                    raise AttributeValueError("expects a tail padding alignment L(n) of at least 1", at_l + 1)
                tail = 1 if tail is None else tail
            for mark in ("#", "*"):  # index and pointer primitive types, `#(u32)`
                if r.eat(mark):
                    r.eat("(")
                    if r.kind == "ident" and r.token.text in _PRIMITIVE_TYPES:
                        r.next()
                        typed = True
                    r.eat(")")
            if _at_word(r, "E"):
                r.next()
                element_bits = _try(_int_in_parentheses, r) or 0
            if _at_word(r, "S"):
                r.next()
                memory_space = _try(_int_in_parentheses, r) or 0
            if _at_word(r, "SC"):
                r.next()
                _try(_split_configs, r, splits)
            if _at_word(r, "P"):
                raise r.error("a physical shape P(...) in the layout of an array (XLA refuses it)")
            if _at_word(r, "M"):
                r.next()
                _try(_int_in_parentheses, r)
    if r.kind != "}":
        raise r.error(f"unexpected {r.token.text[:10] or r.kind!r} in the layout")
    r.next()
    if not r.at_end():
        raise r.error("unexpected text after the layout")
    if len(minor_to_major) != rank:
        minor_to_major = list(_memory_space_only(tuple(minor_to_major), rank, memory_space, at))
    rest = (tail, typed, tuple(splits)) if (tail, typed, splits) != (1, False, []) else ()
    return Layout(tuple(minor_to_major), tuple(tiles), element_bits, memory_space, text, rest)


def _memory_space_only(minor_to_major: tuple[int, ...], rank: int, memory_space: int, at: int) -> tuple[int, ...]:
    """A layout that orders no dimension but names a memory space, `{:S(1)}`, which the
    newest XLA reads (and prints) as the default order in that space; any other layout
    must order every dimension, as XLA's parser requires."""
    if not minor_to_major and memory_space != 0:
        return tuple(range(rank - 1, -1, -1))
    raise ShapeError(f"the layout orders {len(minor_to_major)} dimensions of a shape of rank {rank}", at)


def _at_word(r: Reader, word: str) -> bool:
    return r.kind == "ident" and r.token.text == word


class _Refused(AttributeValueError):
    """What XLA refuses inside a layout's part even though it ignores the part's failure
    (a failed CHECK)."""


def _try(read, *args):
    """`read(*args)`, or None where it stops at what it cannot read (XLA ignores what its
    layout's parts return: whatever they read is read)."""
    try:
        return read(*args)
    except _Refused:
        raise
    except AttributeValueError:
        return None


def _int_in_parentheses(r: Reader) -> int:
    """`(n)`; n even without its `)`, which XLA has read by then (ParseLayoutIntAttribute)."""
    r.expect("(", "expects '('")
    value = r.int64()
    r.eat(")")
    return value


def _dim_level_types(r: Reader) -> None:
    r.expect("(", "expects '('")
    if r.kind != ")":
        while True:
            if not (r.kind == "ident" and r.token.text in ("D", "C", "S", "H")):
                raise r.error("expects a dimension level type (D, C, S or H)")
            r.next()
            r.eat("+")
            r.eat("~")
            if not r.eat(","):
                break
    r.expect(")", "expects ')'")


def _tiles(r: Reader, tiles: list) -> None:
    """`(dims)` at least once, each dimension an integer or `*` (combine dimensions, -1)."""
    while True:
        tile: list[int] = []
        tiles.append(())
        r.expect("(", "expects '('")
        if r.kind != ")":
            while True:
                if r.eat("*"):
                    tile.append(-1)
                else:
                    t = r.token
                    size = r.int64("a tile size")
                    if size < 0:  # XLA fails a CHECK on it
                        raise _Refused(f"expects tile sizes (N or *), not {size}", t.at)
                    tile.append(size)
                tiles[-1] = tuple(tile)
                if not r.eat(","):
                    break
        r.expect(")", "expects ')'")
        if r.kind != "(":
            return


def _split_configs(r: Reader, splits: list) -> None:
    while True:
        r.expect("(", "expects '('")
        dim = r.int64("a dimension")
        indices: list[int] = []
        splits.append((dim, ()))
        r.expect(":", "expects ':'")
        if r.kind != ")":
            indices.append(r.int64("a split index"))
            splits[-1] = (dim, tuple(indices))
            while r.eat(","):
                indices.append(r.int64("a split index"))
                splits[-1] = (dim, tuple(indices))
        r.expect(")", "expects ')'")
        if r.kind != "(":
            return


_TUPLES: dict[tuple[Shape, ...], Shape] = {}


class TupleElementError(ShapeError):
    """An element of a tuple shape that XLA refuses there; `element` is its position."""

    def __init__(self, message: str, element: int):
        super().__init__(message, 0)
        self.element = element


def tuple_shape(elements) -> Shape:
    """The tuple of the given shapes (interned). Raises TupleElementError for an array
    element XLA's parser refuses in a tuple: it validates a tuple's elements
    (ShapeUtil::ValidateShapeWithOptionalLayout), where it leaves an array alone."""
    key = tuple(elements)
    shape = _TUPLES.get(key)
    if shape is None:
        for k, element in enumerate(key):
            problem = _problem_in_tuple(element)
            if problem:
                raise TupleElementError(f"in a tuple, XLA refuses {element.text}: {problem}", k)
        text = "(" + ", ".join(s.text for s in key) + ")"
        shape = _TUPLES[key] = Shape("tuple", (), (), None, key, text)
    return shape


def _problem_in_tuple(shape: Shape) -> str | None:
    """Why XLA's ValidateShapeWithOptionalLayout refuses an array shape (None if it does not):
    dimensions or bytes beyond int64, a layout whose minor_to_major is no permutation, that
    names an index or pointer type, has an empty tile or one of size < 1 (other than `*`), a
    negative element size, or split configs out of range."""
    if not shape.is_array or shape.element_type == "buffer":
        return None
    product = 1
    for d in shape.dimensions:
        if d != UNBOUNDED:
            product *= d
    if product * max(1, ELEMENT_BITS.get(shape.element_type, 8) // 8) > _INT64_MAX:
        return "its size overflows int64"
    layout = shape.layout
    if layout is None:
        return None
    rank = len(shape.dimensions)
    if sorted(layout.minor_to_major) != list(range(rank)):
        return "its layout's minor_to_major is not a permutation of its dimensions"
    tail, typed, splits = layout.rest or (1, False, ())
    if typed:
        return "its layout names an index or pointer type (sparse arrays only)"
    if any(not tile or any(d <= 0 and d != -1 for d in tile) for tile in layout.tiles):
        return "its layout has an empty tile or a tile dimension below 1"
    if layout.element_size_in_bits < 0:
        return "its layout's element size is negative"
    seen = set()
    for dim, indices in splits:
        if not 0 <= dim < rank or dim in seen:
            return "its layout splits a dimension out of range or twice"
        seen.add(dim)
        size = shape.dimensions[layout.minor_to_major[rank - 1 - dim]]
        if list(indices) != sorted(set(indices)) or (indices and (indices[0] <= 0 or indices[-1] >= size)):
            return "its layout's split indices are not increasing within the dimension"
    return None


UNKNOWN = Shape("unknown", text="")
"""The shape of an instruction written without one (XLA infers it; hloscope does not)."""


def buffer_shape(inner: Shape) -> Shape:
    """`b(f32[8])`: a buffer holding an array."""
    return Shape("buffer", (), (), None, (inner,), f"b({inner.text})")


@functools.lru_cache(maxsize=None)
def parse_shape(text: str) -> Shape:
    """Parse any shape text, tuples included (`(f32[2], (s32[], token[]))`); cached.
    Raises ShapeError (with where in `text`) for anything XLA's parser would not read."""
    body = text.strip()
    lead = len(text) - len(text.lstrip())
    if not body.startswith("("):
        try:
            return parse_array_shape(body)
        except ShapeError as e:
            raise e.shifted(lead) from None
    reader = _TupleReader(text, lead)
    shape = reader.shape(0)
    reader.skip_blanks()
    if reader.pos != len(text):
        raise ShapeError(f"unexpected {text[reader.pos:reader.pos + 10]!r} after the shape", reader.pos)
    return shape


_ARRAY_AT = re.compile(r"[a-z][a-z0-9]*\s*\[[^\]]*\](?:\s*(?=\{\s*[\-0-9:])\{(?:[^{}]|\{[^{}]*\})*\})?")
"""An array shape inside a tuple's text, as the grammar's ARRAY_SHAPE takes it."""
_MAX_NESTING = 64
"""Tuples nested deeper than this are refused (XLA prints four levels at most)."""


class _TupleReader:
    """Reads a tuple shape's text from `pos` on: elements separated by commas, `/*...*/`
    comments between them (XLA prints `/*index=5*/` in long tuples)."""

    def __init__(self, text: str, pos: int):
        self.text, self.pos = text, pos

    def skip_blanks(self) -> None:
        text = self.text
        while True:
            while self.pos < len(text) and text[self.pos].isspace():
                self.pos += 1
            if not text.startswith("/*", self.pos):
                return
            end = text.find("*/", self.pos + 2)
            if end < 0:
                raise ShapeError("unterminated comment in the shape", self.pos)
            self.pos = end + 2

    def shape(self, depth: int) -> Shape:
        text = self.text
        self.skip_blanks()
        if depth > _MAX_NESTING:
            raise ShapeError("tuple shapes nested too deeply", self.pos)
        start = self.pos
        if text.startswith("b(", start):
            self.pos += 1
            inner, _ = self.elements(depth + 1)  # XLA checks no layout in a buffer
            if len(inner) != 1 or inner[0].is_tuple:
                raise ShapeError("a buffer b(...) holds one array", start)
            return buffer_shape(inner[0])
        if not text.startswith("(", start):
            m = _ARRAY_AT.match(text, start)
            if not m:
                raise ShapeError(f"expects a shape, not {text[start:start + 20]!r}", start)
            self.pos = m.end()
            try:
                return parse_array_shape(m.group(0))
            except ShapeError as e:
                raise e.shifted(start) from None
        elements, starts = self.elements(depth)
        try:
            return tuple_shape(elements)
        except TupleElementError as e:
            raise ShapeError(str(e), starts[e.element]) from None

    def elements(self, depth: int) -> tuple[list[Shape], list[int]]:
        """The shapes of a parenthesized list (the `(` is at `pos`) and where each starts."""
        text = self.text
        self.pos += 1
        elements: list[Shape] = []
        starts: list[int] = []
        self.skip_blanks()
        if text.startswith(")", self.pos):
            self.pos += 1
            return elements, starts
        while True:
            self.skip_blanks()
            starts.append(self.pos)
            elements.append(self.shape(depth + 1))
            self.skip_blanks()
            if text.startswith(")", self.pos):
                self.pos += 1
                return elements, starts
            if not text.startswith(",", self.pos):
                raise ShapeError("expects ',' or ')' in the tuple shape", self.pos)
            self.pos += 1
