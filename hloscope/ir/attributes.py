"""Attribute values: kept as written, decoded on first use.

The grammar reads each `, name=value` as one token. Most values are never looked at, so an
instruction keeps the raw tokens and splits them into a name → text mapping only when asked;
decoders, chosen by attribute name as XLA's parser chooses them, turn a value's text into data
and cache the result. An attribute hloscope has no decoder for is still kept as its text.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

from lark import Token

from ..errors import HloscopeError
from ..grammar import attribute_pattern

_STRING = r'"(?:[^"\\]|\\.)*"'
_KEY_VALUE = re.compile(r'([A-Za-z_][\w.\-]*)\s*=\s*(' + _STRING + r"|\{[^{}]*\}|[^\s,}]+)")
_INT = re.compile(r"-?[0-9]+")


def unquote(text: str) -> str:
    """The content of an HLO string literal (C escapes resolved)."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        body = text[1:-1]
        if "\\" not in body:
            return body
        try:
            return json.loads('"' + body.replace("\\'", "'") + '"')
        except ValueError:
            return body.encode("latin-1", "backslashreplace").decode("unicode_escape")
    return text


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside brackets and strings."""
    parts, depth, start, quote = [], 0, 0, ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _strip_braces(text: str) -> str:
    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        return text[1:-1]
    return text


# ─── decoders ──────────────────────────────────────────────────────────────────────────


def decode_int_list(text: str) -> tuple[int, ...]:
    """`{1,0}` → (1, 0)."""
    return tuple(int(x) for x in _INT.findall(text))


def decode_int(text: str) -> int:
    """An integer attribute (`channel_id=3`); AttributeValueError for anything else."""
    value = text.strip()
    if not _INT.fullmatch(value):
        raise AttributeValueError(f"expects an integer, not {value[:20]!r}", len(text) - len(text.lstrip()))
    return int(value)


def decode_bool(text: str) -> bool:
    return text.strip() in ("true", "{true}")


_NESTED = re.compile(r"[{\[(\"']")


def decode_names(text: str) -> tuple[str, ...]:
    """`%add` or `{%a, %b}` → ('add',) / ('a', 'b'): computation or instruction names."""
    inner = _strip_braces(text)
    if not _NESTED.search(inner):
        return tuple(p.strip().lstrip("%") for p in inner.split(",") if p.strip())
    return tuple(p.lstrip("%") for p in split_top_level(inner))


def decode_key_values(text: str) -> dict[str, Any]:
    """`{op_type="dot" op_name="jit(f)/dot" source_line=12}` → dict; strings unquoted,
    integers as int, everything else as its text."""
    out: dict[str, Any] = {}
    for key, value in _KEY_VALUE.findall(_strip_braces(text)):
        if value.startswith('"'):
            out[key] = unquote(value)
        elif _INT.fullmatch(value):
            out[key] = int(value)
        else:
            out[key] = value
    return out


def decode_json(text: str) -> Any:
    """`backend_config`: JSON, written either bare (`{"a":1}`) or as a quoted string."""
    text = text.strip()
    if text.startswith(("'", '"')):
        text = unquote(text)
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text


def decode_pairs(text: str) -> tuple[tuple[int, int], ...]:
    """`source_target_pairs={{0,1},{1,2}}` → ((0, 1), (1, 2))."""
    return tuple(tuple(decode_int_list(p)) for p in split_top_level(_strip_braces(text)))  # type: ignore[misc]


@dataclass(frozen=True, slots=True)
class OperandAlias:
    """One `output_to_operand_aliasing` entry: output `{index}` shares operand N's `{index}`."""

    output_index: tuple[int, ...]
    operand: int
    operand_index: tuple[int, ...]


def decode_output_to_operand_aliasing(text: str) -> tuple[OperandAlias, ...]:
    """`{{0}: (1, {}), {1}: (0, {2})}`."""
    out = []
    for m in re.finditer(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}", text):
        out.append(OperandAlias(decode_int_list(m.group(1)), int(m.group(2)), decode_int_list(m.group(3))))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ParameterAlias:
    """One module `input_output_alias` entry: output `{index}` is entry parameter N's `{index}`
    (its buffer donated to the output)."""

    output_index: tuple[int, ...]
    parameter: int
    parameter_index: tuple[int, ...]
    kind: str = "may-alias"
    """`may-alias` or `must-alias`, as written; XLA takes `may-alias` when none is."""


class AliasSyntaxError(ValueError):
    """A malformed `input_output_alias` entry; `offset` is where it starts in the text."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


_SHAPE_INDEX = r"\{\s*(?:-?\d+\s*(?:,\s*-?\d+\s*)*)?\}"
_ALIAS_ENTRY = re.compile(
    "(" + _SHAPE_INDEX + r")\s*:\s*\(\s*(\d+)\s*,\s*(" + _SHAPE_INDEX + r")\s*(?:,\s*([\w\-]+)\s*)?\)"
)
_ENTRY_END = re.compile(r"\s*(?:,|\Z)")


def decode_input_output_alias(text: str, strict: bool = False) -> tuple[ParameterAlias, ...]:
    """`{ {0}: (0, {}, may-alias), {1}: (1, {2}) }` → one ParameterAlias per entry.

    Lenient by default (analyses: what is not an entry is skipped). `strict` reads it as
    XLA's parser does, the braces and every entry, and raises AliasSyntaxError at the first
    entry it cannot read (`offset` into `text`, at its first non-blank character)."""
    if not strict:
        return tuple(_alias(m) for m in _ALIAS_ENTRY.finditer(text))
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise AliasSyntaxError("expects '{' to start input_output_alias", text.find(body))
    base = text.find(body) + 1
    inner = body[1:-1]
    out = []
    pos = 0
    while inner[pos:].strip():
        start = len(inner) - len(inner[pos:].lstrip())
        m = _ALIAS_ENTRY.match(inner, start)
        end = _ENTRY_END.match(inner, m.end()) if m is not None else None
        if end is None:
            raise AliasSyntaxError("malformed input_output_alias entry", base + start)
        out.append(_alias(m))
        pos = end.end()
    return tuple(out)


def input_output_alias_offsets(text: str) -> tuple[int, ...]:
    """Where each entry `decode_input_output_alias(text)` finds starts in `text`."""
    return tuple(m.start() for m in _ALIAS_ENTRY.finditer(text))


def _alias(m: re.Match) -> ParameterAlias:
    return ParameterAlias(decode_int_list(m.group(1)), int(m.group(2)), decode_int_list(m.group(3)),
                          m.group(4) or "may-alias")


MAX_PARTICIPANTS = 1 << 24
"""Most devices a replica-group attribute may span (16M; the largest systems have a few
hundred thousand). The iota and mesh forms describe their groups in a few characters, so
their size is checked against this before anything is listed: a corrupted `[1,99999999999]
<=[99999999999]` is an error, not an allocation. An explicit list is bounded by its text."""


class AttributeValueError(HloscopeError, ValueError):
    """An attribute's value is not what XLA's parser reads for that attribute; `offset` is
    where in the value text it goes wrong."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True, slots=True)
class ReplicaGroups:
    """Replica groups in any of XLA's three printed forms.

    - explicit: `{{0,1},{2,3}}`; `{}` means one group of every participant;
    - iota: `[4,2]<=[2,4]T(1,0)`: reshape(transpose(reshape(iota, [2,4]), (1,0)), [4,2]);
    - named mesh: `mesh['x'=4,'y'=2] {'x'}`: groups along the listed axes of a row-major mesh.

    The number of groups and their size are known from the text alone; `groups`, the device
    ids, are listed only when asked for.
    """

    form: str
    """`explicit`, `iota`, `mesh` or `empty`."""
    text: str
    num_groups: int | None
    """None for `{}` (all participants, count unknown here)."""
    group_size: int | None
    """Participants per group (the largest, for explicit groups of unequal sizes); None for `{}`."""
    spec: tuple = field(default=(), repr=False, compare=False)
    """What `groups` lists the ids from: the explicit groups, or the iota or mesh parameters."""

    @property
    def groups(self) -> tuple[tuple[int, ...], ...] | None:
        """Device or replica ids per group; None for `{}`."""
        if self.form == "empty":
            return None
        if self.form == "explicit":
            return self.spec
        if self.form == "iota":
            return _iota_groups(*self.spec)
        return _mesh_groups(*self.spec)

    def to_dict(self) -> dict:
        return {
            "form": self.form,
            "num_groups": self.num_groups,
            "group_size": self.group_size,
        }


def _product(sizes) -> int:
    total = 1
    for n in sizes:
        total *= n
    return total


def _sizes(text: str, at: int, what: str) -> tuple[int, ...]:
    """Comma-separated non-negative integers (a list's text, starting at `at` in the value)."""
    if not text.strip():
        return ()
    out = []
    for piece in text.split(","):
        if not _DIGITS.fullmatch(piece.strip()):
            raise AttributeValueError(f"expects {what} (non-negative integers), not {piece.strip()[:20]!r}",
                                      at + len(piece) - len(piece.lstrip()))
        out.append(int(piece))
        at += len(piece) + 1
    return tuple(out)


def _bounded(total: int, at: int) -> None:
    if total > MAX_PARTICIPANTS:
        raise AttributeValueError(f"replica groups over {total} devices: more than {MAX_PARTICIPANTS} is not a "
                                  "device count, the text is corrupt", at)


def _permutation(perm: tuple[int, ...], rank: int, at: int) -> None:
    if sorted(perm) != list(range(rank)):
        raise AttributeValueError(f"T({','.join(map(str, perm))}) is not a permutation of {rank} dimensions", at)


_IOTA = re.compile(r"\[([^\[\]]*)\]\s*<=\s*\[([^\[\]]*)\](?:\s*T\(([^()]*)\))?\s*\Z")
_MESH = re.compile(r"mesh\s*\[")
_MESH_PARTS = re.compile(
    r"mesh\s*\[(?P<axes>[^\]]*)\]\s*(?:,\s*device_ids\s*=\s*\((?P<ids>[^()]*(?:\([^()]*\)[^()]*)*)\))?"
    r"\s*(?:\{(?P<chosen>[^{}]*)\})?\s*\Z")
_AXIS = re.compile(r"\s*('[^']*'|\"[^\"]*\"|\w+)\s*=\s*(\d+)\s*\Z")
_AXIS_NAME = re.compile(r"'[^']*'|\"[^\"]*\"|\w+")
_DEVICE_IOTA = re.compile(r"\s*\[([^\[\]]*)\]\s*(?:T\(([^()]*)\))?\s*\Z")


def _decode_iota(text: str, m: re.Match) -> ReplicaGroups:
    shape = _sizes(m.group(1), m.start(1), "group dimensions")
    reshape = _sizes(m.group(2), m.start(2), "iota dimensions")
    if len(shape) != 2:
        raise AttributeValueError("expects [number of groups, group size] before '<='", 0)
    if not reshape:
        raise AttributeValueError("expects the iota's dimensions after '<='", m.start(2))
    total = _product(reshape)
    _bounded(total, m.start(2))
    if _product(shape) != total:
        raise AttributeValueError(f"{shape[0]}x{shape[1]} groups do not hold the {total} devices of the iota", 0)
    perm = tuple(range(len(reshape)))
    if m.group(3) is not None:
        perm = _sizes(m.group(3), m.start(3), "a permutation")
        _permutation(perm, len(reshape), m.start(3))
    return ReplicaGroups("iota", text, shape[0], shape[1], (shape, reshape, perm))


def _decode_mesh(text: str) -> ReplicaGroups:
    """`mesh['x'=4,'y'=2], device_ids=([2,4]T(1,0)) {'x'}`: the mesh is row-major over its
    axes; `device_ids` (iota form or an explicit list) says which device sits at each mesh
    position, the identity when absent; groups run along the axes in braces."""
    m = _MESH_PARTS.match(text)
    if m is None:
        raise AttributeValueError("expects mesh[axis=size,...], an optional device_ids=(...) and {axes}", 0)
    names: list[str] = []
    sizes: list[int] = []
    at = m.start("axes")
    for piece in m.group("axes").split(",") if m.group("axes").strip() else ():
        a = _AXIS.match(piece)
        if a is None:
            raise AttributeValueError(f"expects axis=size in the mesh, not {piece.strip()[:20]!r}", at)
        name = unquote(a.group(1))
        if name in names:
            raise AttributeValueError(f"mesh axis {name!r} is named twice", at)
        names.append(name)
        sizes.append(int(a.group(2)))
        at += len(piece) + 1
    total = _product(sizes)
    _bounded(total, m.start("axes"))
    inner: list[int] = []
    if m.group("chosen") is not None:
        for chosen in _AXIS_NAME.findall(m.group("chosen")):
            name = unquote(chosen)
            if name not in names or names.index(name) in inner:
                raise AttributeValueError(f"{name!r} is not an axis of the mesh (or is listed twice)", m.start("chosen"))
            inner.append(names.index(name))
    devices: tuple = ("identity",)
    if m.group("ids") is not None:
        spec, at = m.group("ids"), m.start("ids")
        im = _DEVICE_IOTA.match(spec)
        if im:
            reshape = _sizes(im.group(1), at + im.start(1), "device_ids dimensions")
            perm = (_sizes(im.group(2), at + im.start(2), "a permutation") if im.group(2) is not None
                    else tuple(range(len(reshape))))
            _permutation(perm, len(reshape), at)
            if _product(reshape) != total:
                raise AttributeValueError(f"device_ids list {_product(reshape)} devices for a mesh of {total}", at)
            devices = ("iota", reshape, perm)
        else:
            ids = _sizes(spec, at, "device ids")
            if len(ids) != total:
                raise AttributeValueError(f"device_ids lists {len(ids)} devices for a mesh of {total}", at)
            devices = ("list", ids)
    group_size = _product(sizes[k] for k in inner)
    num_groups = _product(sizes[k] for k in range(len(sizes)) if k not in inner)
    return ReplicaGroups("mesh", text, num_groups, group_size, (tuple(sizes), tuple(inner), devices))


def _mesh_groups(sizes: tuple[int, ...], inner: tuple[int, ...], devices: tuple) -> tuple[tuple[int, ...], ...]:
    """Groups of a named mesh: devices that differ only along the `inner` axes."""
    total = _product(sizes)
    if devices[0] == "iota":
        ids = tuple(d for g in _iota_groups((total,), devices[1], devices[2]) for d in g)
    elif devices[0] == "list":
        ids = devices[1]
    else:
        ids = tuple(range(total))
    strides = [1] * len(sizes)
    for k in range(len(sizes) - 2, -1, -1):
        strides[k] = strides[k + 1] * sizes[k + 1]
    outer = [k for k in range(len(sizes)) if k not in inner]
    groups = []
    for o in itertools.product(*(range(sizes[k]) for k in outer)):
        base = sum(i * strides[k] for i, k in zip(o, outer))
        groups.append(
            tuple(ids[base + sum(i * strides[k] for i, k in zip(g, inner))]
                  for g in itertools.product(*(range(sizes[k]) for k in inner)))
        )
    return tuple(groups)


def _iota_groups(shape: tuple[int, ...], reshape: tuple[int, ...], perm: tuple[int, ...]):
    total = 1
    for d in reshape:
        total *= d
    # Element at multi-index i of the transposed array is the iota value at the permuted index.
    strides = [1] * len(reshape)
    for k in range(len(reshape) - 2, -1, -1):
        strides[k] = strides[k + 1] * reshape[k + 1]
    tdims = [reshape[p] for p in perm]
    flat = []
    for idx in itertools.product(*(range(d) for d in tdims)):
        flat.append(sum(idx[j] * strides[perm[j]] for j in range(len(perm))))
    size = shape[-1] if shape else total
    if size == 0:
        return tuple(() for _ in range(shape[0])) if shape else ()
    return tuple(tuple(flat[i : i + size]) for i in range(0, len(flat), size))


_EXPLICIT_GROUP = re.compile(r"\s*\{([^{}]*)\}\s*(,|\Z)")
_DIGITS = re.compile(r"[0-9]+")


def _decode_explicit(text: str) -> ReplicaGroups:
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise AttributeValueError("expects {{ids...}, ...}, [groups,size]<=[dims] or mesh[...]", 0)
    inner, base = body[1:-1], text.find(body) + 1
    if not inner.strip():
        return ReplicaGroups("empty", text, None, None)
    groups = []
    pos = 0
    while pos < len(inner):
        g = _EXPLICIT_GROUP.match(inner, pos)
        if g is None:
            blank = len(inner[pos:]) - len(inner[pos:].lstrip())
            raise AttributeValueError("expects a group {id,...}", base + pos + blank)
        groups.append(_sizes(g.group(1), base + g.start(1), "device ids"))
        pos = g.end()
        if g.group(2) and not inner[pos:].strip():
            raise AttributeValueError("expects a group {id,...} after ','", base + g.start(2))
    sizes = {len(g) for g in groups}
    return ReplicaGroups("explicit", text, len(groups), max(sizes), tuple(groups))


@functools.lru_cache(maxsize=1024)
def decode_replica_groups(text: str) -> ReplicaGroups:
    """Any of the three forms (see ReplicaGroups); raises AttributeValueError for a value XLA
    would not read, or that describes more than MAX_PARTICIPANTS devices, before listing any."""
    text = text.strip()
    m = _IOTA.match(text)
    if m:
        return _decode_iota(text, m)
    if _MESH.match(text):
        return _decode_mesh(text)
    return _decode_explicit(text)


COMPUTATION_ATTRIBUTES = (
    "to_apply",
    "calls",
    "body",
    "condition",
    "true_computation",
    "false_computation",
    "branch_computations",
    "called_computations",
    "select",
    "scatter",
)
"""Attributes whose value names computations this instruction calls, in XLA's order."""

DECODERS: dict[str, Callable[[str], Any]] = {
    **{name: decode_names for name in COMPUTATION_ATTRIBUTES},
    "control-predecessors": decode_names,
    "dimensions": decode_int_list,
    "slice_sizes": decode_int_list,
    "dynamic_slice_sizes": decode_int_list,
    "lhs_contracting_dims": decode_int_list,
    "rhs_contracting_dims": decode_int_list,
    "lhs_batch_dims": decode_int_list,
    "rhs_batch_dims": decode_int_list,
    "fft_length": decode_int_list,
    "channel_id": decode_int,
    "index": decode_int,
    "iota_dimension": decode_int,
    "feature_index": decode_int,
    "feature_group_count": decode_int,
    "batch_group_count": decode_int,
    "k": decode_int,
    "use_global_device_ids": decode_bool,
    "constrain_layout": decode_bool,
    "is_host_transfer": decode_bool,
    "custom_call_has_side_effect": decode_bool,
    "indices_are_sorted": decode_bool,
    "unique_indices": decode_bool,
    "is_stable": decode_bool,
    "metadata": decode_key_values,
    "frontend_attributes": decode_key_values,
    "statistics": decode_key_values,
    "backend_config": decode_json,
    "replica_groups": decode_replica_groups,
    "source_target_pairs": decode_pairs,
    "output_to_operand_aliasing": decode_output_to_operand_aliasing,
    "input_output_alias": decode_input_output_alias,
    "custom_call_target": unquote,
    "execution_thread": unquote,
    "async_execution_thread": unquote,
}
"""One decoder per attribute name; attributes absent here stay text."""


_ABSENT = object()


@functools.lru_cache(maxsize=16)
def _any_key(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("(?:" + "|".join(re.escape(n) for n in names) + ")=")


@functools.lru_cache(maxsize=1)
def _attribute_search():
    """`search` of the grammar's ATTRIBUTE terminal (cached: a lookup is a few microseconds)."""
    return attribute_pattern().search


class Attributes(Mapping[str, str]):
    """An instruction's (or module's, or computation's) attributes, in text order.

    As a mapping it gives each value's text; `decoded(name)` gives the value as data.
    """

    __slots__ = ("_tokens", "tail", "_raw", "_decoded", "_cut")

    def __init__(self, tokens: list[str] | tuple[str, ...] = (), tail: str = ""):
        self._tokens = tokens
        self.tail = tail
        """Attributes still as one string (`, a=1, b={..}`), cut apart as lookups need."""
        self._raw: dict[str, str] | None = None
        self._decoded: dict[str, Any] | None = None
        self._cut = 0
        """How far into `tail` attributes have been cut off into `_raw`."""

    def split_tail(self, token=None) -> list:
        """The tail cut into `, name=value` pieces with the grammar's own ATTRIBUTE terminal
        (as lark Tokens placed in the source when `token`, the tail's INSTRUCTION, is given)."""
        pieces = []
        tail = self.tail
        base = len(str(token)) - len(tail) if token is not None else 0
        for m in attribute_pattern().finditer(tail):
            if token is not None:
                pieces.append(Token("ATTRIBUTE", m.group(0), line=token.line, column=token.column + base + m.start()))
            else:
                pieces.append(m.group(0))
        return pieces

    def _cut_until(self, name: str | None) -> dict[str, str]:
        """Cut attributes off the tail, in text order, until `name` is cut (all when None).

        XLA prints an op's own attributes (`kind`, `calls`, `index`) before `metadata` and
        `backend_config`, the long ones: a lookup of the former leaves the latter uncut."""
        raw = self._raw
        if raw is None:
            raw = self._raw = {}
            if not self.tail:
                for token in self._tokens:
                    key, _, value = token.lstrip(", \t\r\n").partition("=")
                    raw.setdefault(key, value.strip())
                self._tokens = ()
                return raw
        if not self.tail:
            return raw
        for key, value, end in self._uncut():
            raw.setdefault(key, value)  # XLA rejects a repeated name; the first counts
            if key == name:
                self._cut = end
                return raw
        self.tail, self._cut = "", 0  # all cut
        return raw

    def _uncut(self) -> Iterator[tuple[str, str, int]]:
        """(name, value, where it ends) of each attribute of the tail not cut yet, in order."""
        search, tail, pos = _attribute_search(), self.tail, self._cut
        while (m := search(tail, pos)) is not None:
            pos = m.end()
            key, _, value = m.group(0).lstrip(", \t\r\n").partition("=")
            yield key, value.strip(), pos

    def mentions(self, text: str) -> bool:
        """False only when `text` certainly occurs in no attribute as written: a substring
        check, no cutting (the parser asks every instruction about control-predecessors)."""
        if self.tail:
            return text in self.tail
        if self._raw is None:
            return any(text in t for t in self._tokens)
        return True

    def written(self) -> list[str]:
        """The attributes as `, name=value` pieces, as the text has them (for keeping an
        outline): the tokens as read when nothing was cut apart yet."""
        if self._raw is None and not self.tail:
            return list(self._tokens)
        return [f", {k}={v}" for k, v in self.raw.items()]

    @property
    def raw(self) -> dict[str, str]:
        if self._raw is None or self.tail:
            return self._cut_until(None)
        return self._raw

    def may_hold(self, names: tuple[str, ...]) -> bool:
        """False only when there is certainly no attribute of one of `names`, found without
        cutting (the text is searched for `name=` once for all of them)."""
        raw = self._raw
        if raw is not None and any(name in raw for name in names):
            return True
        tail = self.tail
        if tail:
            return _any_key(names).search(tail) is not None
        if raw is not None:
            return False  # all cut
        search = _any_key(names).search
        return any(search(token) is not None for token in self._tokens)

    def _surely_absent(self, name: object) -> bool:
        """An uncut tail that does not hold `name=` holds no such attribute: most lookups
        (`"output_to_operand_aliasing" in attrs`) are answered without cutting it."""
        tail = self.tail
        return bool(tail) and name.__class__ is str and name + "=" not in tail

    def get(self, name: str, default: Any = None) -> Any:
        raw = self._raw
        if raw is not None and name in raw:
            return raw[name]
        if self._surely_absent(name):
            return default
        return self._cut_until(name).get(name, default)

    def as_written(self) -> tuple:
        """A value two attribute lists share only when they are written alike. Lists written
        alike may not share it once lookups have cut one apart and not the other."""
        raw = self._raw
        return self.tail, self._cut, tuple(self._tokens), tuple(raw.items()) if raw else ()

    def uncached(self, name: str) -> str | None:
        """`get(name)`, but what it cuts off the tail is not kept: for a lookup whose answer
        the caller keeps itself. A fusion's `calls` kept here would cost a dict, its key and
        value strings per instruction: tens of MB on a large module."""
        raw = self._raw
        if raw is not None and name in raw:
            return raw[name]
        tail = self.tail
        if not tail:
            return self.get(name)
        if name + "=" not in tail:
            return None
        for key, value, _ in self._uncut():
            if key == name:  # the first after the cut; one before it would be in `raw`
                return value
        return None

    def __getitem__(self, name: str) -> str:
        value = self.get(name, _ABSENT)
        if value is _ABSENT:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    def __contains__(self, name: object) -> bool:
        return self.get(name, _ABSENT) is not _ABSENT

    def decoded(self, name: str, default: Any = None) -> Any:
        """The value of `name` decoded as XLA reads it, or `default` when absent."""
        raw = self.get(name)
        if raw is None:
            return default
        cache = self._decoded
        if cache is None:
            cache = self._decoded = {}
        if name not in cache:
            decoder = DECODERS.get(name)
            cache[name] = decoder(raw) if decoder else raw
        return cache[name]

    def __repr__(self) -> str:
        return f"Attributes({self.raw!r})"
