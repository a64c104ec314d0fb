"""Attribute values: kept as written, decoded on first use.

The grammar reads each `, name=value` as one token. Most values are never looked at, so an
instruction keeps the raw tokens and splits them into a name → text mapping only when asked;
decoders, chosen by attribute name as XLA's parser chooses them, turn a value's text into data
and cache the result. An attribute hloscope has no decoder for is still kept as its text.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from ..grammar import attribute_pattern
from .replica_groups import MAX_PARTICIPANTS, ReplicaGroups, decode_replica_groups  # noqa: F401 (re-exported)
from .values import AttributeValueError, int_lists, xla_int  # noqa: F401 (AttributeValueError re-exported)

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
    """An integer attribute (`channel_id=3`), read as XLA reads an int64 (2^64 - 1 is -1);
    AttributeValueError for anything else."""
    value = text.strip()
    number = xla_int(value) if _INT.fullmatch(value) else None
    if number is None:
        raise AttributeValueError(f"expects an integer, not {value[:20]!r}", len(text) - len(text.lstrip()))
    return number


def decode_bool(text: str) -> bool:
    return text.strip() in ("true", "{true}")


_NESTED = re.compile(r"[{\[(\"']")


def decode_names(text: str) -> tuple[str, ...]:
    """`%add` or `{%a, %b}` → ('add',) / ('a', 'b'): computation or instruction names (`add:`,
    a colon glued to a name, is the name, as XLA's lexer reads it)."""
    inner = _strip_braces(text)
    if not _NESTED.search(inner):
        return tuple(p.strip().lstrip("%").removesuffix(":") for p in inner.split(",") if p.strip())
    return tuple(p.lstrip("%").removesuffix(":") for p in split_top_level(inner))


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
    """`source_target_pairs={{0,1},{1,2}}` → ((0, 1), (1, 2)), read as XLA reads it (a list
    of int64 lists, each of two); AttributeValueError for anything else."""
    pairs = int_lists(text, "device ids (integers)")
    for pair in pairs:
        if len(pair) != 2:
            raise AttributeValueError("expects 'source_target_pairs=' to be a list of pairs", 0)
    return tuple((a, b) for a, b in pairs)


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


# A shape index as XLA's ParseShapeIndex reads it (a comma may close the list: `{0,}`).
SHAPE_INDEX = r"\{\s*(?:-?\d+\s*(?:,\s*-?\d+\s*)*(?:,\s*)?)?\}"
# An entry; XLA reads one whose parameter number is missing (its number is then undefined).
# The kind is a name as XLA's ParseName reads it: `must-alias`, `%must-alias`, `must-alias:`.
_ALIAS_ENTRY = re.compile(
    "(" + SHAPE_INDEX + r")\s*:\s*\(\s*(\d+)?\s*,\s*(" + SHAPE_INDEX + r")\s*"
    r"(?:,\s*(%[A-Za-z_][\w.\-]*|[A-Za-z_][\w.\-]*:?|[\w\-]+)\s*)?\)"
)
_ENTRY_END = re.compile(r"\s*(?:,|\Z)")


def decode_input_output_alias(text: str, strict: bool = False, keep_repeats: bool = False
                               ) -> tuple[ParameterAlias, ...]:
    """`{ {0}: (0, {}, may-alias), {1}: (1, {2}) }` → one ParameterAlias per entry. An output
    index named again is dropped, as XLA keeps the first (its aliases are a map by output
    index), unless `keep_repeats` (one entry per written entry, in text order).

    Lenient by default (analyses: what is not an entry is skipped). `strict` reads it as
    XLA's parser does, the braces and every entry, and raises AliasSyntaxError at the first
    entry it cannot read (`offset` into `text`, at its first non-blank character)."""
    if not strict:
        return _first_per_output([_alias(m) for m in _ALIAS_ENTRY.finditer(text)], keep_repeats)
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
        if m.group(4) is not None and _alias_kind(m.group(4)) not in ("may-alias", "must-alias"):
            raise AliasSyntaxError(f"unexpected aliasing kind {m.group(4)!r}: may-alias or must-alias",
                                   base + m.start(4))
        if m.group(2) is not None and (xla_int(m.group(2)) or 0) < 0:  # XLA: param_number >= 0
            raise AliasSyntaxError("expects a parameter number of at least 0", base + m.start(2))
        out.append(_alias(m))
        pos = end.end()
    return _first_per_output(out, keep_repeats)


def _first_per_output(aliases: list[ParameterAlias], keep_repeats: bool) -> tuple[ParameterAlias, ...]:
    if keep_repeats or len({a.output_index for a in aliases}) == len(aliases):
        return tuple(aliases)
    seen: set[tuple[int, ...]] = set()
    out = []
    for a in aliases:
        if a.output_index not in seen:
            seen.add(a.output_index)
            out.append(a)
    return tuple(out)


def input_output_alias_offsets(text: str) -> tuple[int, ...]:
    """Where each entry `decode_input_output_alias(text)` finds starts in `text`."""
    return tuple(m.start() for m in _ALIAS_ENTRY.finditer(text))


def _alias(m: re.Match) -> ParameterAlias:
    number = int(m.group(2)) if m.group(2) is not None else NO_PARAMETER
    return ParameterAlias(decode_int_list(m.group(1)), number, decode_int_list(m.group(3)),
                          _alias_kind(m.group(4)) if m.group(4) else "may-alias")


def _alias_kind(written: str) -> str:
    """An alias kind as XLA's ParseName reads it: the name without its `%` or its glued `:`."""
    return written[1:] if written[0] == "%" else written.removesuffix(":")


NO_PARAMETER = -1
"""The parameter of an alias written without its number (XLA reads `{0}: (, {})` with a
number it leaves undefined): one no parameter has, so the alias names none."""


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


@functools.lru_cache(maxsize=16)
def _any_attribute(names: tuple[str, ...]) -> re.Pattern[str]:
    # From the comma the ATTRIBUTE terminal starts with: `re` finds candidates by that
    # character, several times faster than trying the names at every place.
    return re.compile(r",\s*(?:" + "|".join(re.escape(n) for n in names) + ")=")


def writes_any_key(text: str, names: tuple[str, ...], start: int = 0, end: int | None = None) -> bool:
    """False only when `text[start:end]` holds no attribute `, name=` of one of `names` (as
    the grammar's ATTRIBUTE terminal writes it): then no attribute list in it holds one."""
    return _any_attribute(names).search(text, start, len(text) if end is None else end) is not None


def callees_in_tail(tail: str) -> tuple[str, ...] | None:
    """The computations an instruction's attribute tail (a run of the grammar's ATTRIBUTE
    tokens) names, found without cutting it apart where that is exact; None where it is not
    (the caller cuts: `Instruction.called_computation_names`).

    Exact when the tail writes one `, name=` of `COMPUTATION_ATTRIBUTES` (every attribute
    starts so), nothing before it holds a quote or bracket (a comma there can only start an
    attribute, so this one does), and its value is one plain piece up to a comma or the end
    (so the grammar's ATTR_VALUE is that piece): a fusion's `kind=kLoop, calls=%f, ...`."""
    search = _any_attribute(COMPUTATION_ATTRIBUTES).search
    key = search(tail)
    if key is None:
        return ()
    if search(tail, key.end()) is not None or _QUOTE_OR_BRACKET.search(tail, 0, key.start()) is not None:
        return None
    value = _PLAIN_VALUE_TO_COMMA.match(tail, key.end())
    return decode_names(value.group(1)) if value is not None else None


_QUOTE_OR_BRACKET = re.compile(r"[\"'{}\[\]()]")
_PLAIN_VALUE_TO_COMMA = re.compile(r"\s*([^\s,{}\[\]()\"']++)(?=,|\Z)")
"""An attribute value that is one plain piece (the grammar's _VALUE_PLAIN), then `,` or the end."""


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

    def split_tail(self) -> list[tuple[str, int]]:
        """The tail cut into `, name=value` pieces with the grammar's own ATTRIBUTE terminal:
        (piece, where it starts in the tail) of each."""
        return [(m.group(0), m.start()) for m in attribute_pattern().finditer(self.tail)]

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

    def keys_written(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """Those of `names` the attributes may hold, in the order of `names`: each whose
        `name=` the text writes (one search for all of them, no cutting), or that was cut
        already. Any attribute of one of `names` is among them."""
        raw = self._raw
        found = {name for name in names if name in raw} if raw is not None else set()
        tail = self.tail
        if tail:
            found.update(key[:-1] for key in _any_key(names).findall(tail))
        elif raw is None:
            findall = _any_key(names).findall
            for token in self._tokens:
                found.update(key[:-1] for key in findall(token))
        return tuple(name for name in names if name in found) if found else ()

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


NO_ATTRIBUTES = Attributes(())
"""The attributes of a computation that writes none: one object serves them all (a lookup
only ever finds nothing in it), not one per computation of a large module."""
