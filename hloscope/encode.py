"""Frozen results as JSON objects: the one encoder behind every result's `to_dict()`.

A result's object holds its fields in order, each value encoded in turn: a result as its own
`to_dict()`, a tuple or list as a list, a dict with its values encoded, a scalar or None as
itself. A field whose JSON differs from the plain field says how in its metadata
(`field(metadata=as_json(...))`): under another key, not at all, computed, or placed after
another key. What the object shows that is no field (a property, a constant) is listed in the
class's `json_extra`, placed the same way.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Mapping
from typing import Any

_METADATA = "json"
_SCALARS = (str, int, float, bool)


@dataclasses.dataclass(frozen=True, slots=True)
class Shown:
    """How one value appears in its result's JSON object."""

    key: str | None = None
    """Its key; None: the field's name."""
    omit: bool = False
    """Not shown at all."""
    get: str | Callable[[Any], Any] | None = None
    """Where the value comes from instead of the field: an attribute's name, or a function of
    the result."""
    value: Callable[[Any], Any] | None = None
    """A function of the value giving what is shown (a dict sorted, a tuple of pairs as a dict)."""
    after: str | None = None
    """The key it follows, then what follows it in turn (what follows one key follows it in
    the order declared, fields first); None: its own place (a field's, or the end)."""
    omit_none: bool = False
    """Not shown when None."""


def as_json(key: str | None = None, *, omit: bool = False, get: str | Callable[[Any], Any] | None = None,
            value: Callable[[Any], Any] | None = None, after: str | None = None,
            omit_none: bool = False) -> dict[str, Shown]:
    """A field's metadata for how the JSON shows it (see Shown)."""
    return {_METADATA: Shown(key, omit, get, value, after, omit_none)}


def extra(key: str, get: str | Callable[[Any], Any] | None = None, *, after: str | None = None) -> Shown:
    """A value the JSON shows that is no field: the attribute `get` (by default `key`, e.g. a
    property), or `get(result)`; after the key `after`, else at the end."""
    return Shown(key, get=get if get is not None else key, after=after)


class Encoded:
    """A frozen result whose `to_dict()` is `encode(self)`."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return encode(self)


def encode(result: Any, more: Mapping[str, Any] | None = None, after: str | None = None) -> dict[str, Any]:
    """The JSON object of a frozen dataclass (see this module's docstring); `more`, values a
    caller adds (what depends on `to_dict`'s arguments), right after the key `after` or at
    the end."""
    out: dict[str, Any] = {}
    if more and after is not None and after not in (key for key, *_ in _plan(type(result))):
        raise KeyError(f"{type(result).__qualname__} shows no {after!r} to add after")
    for key, get, value, omit_none in _plan(type(result)):
        v = get(result)
        if v is None:
            if omit_none:
                continue
        elif value is not None:
            v = encode_value(value(v))
        elif type(v) not in _SCALARS:
            v = encode_value(v)
        out[key] = v
        if more and key == after:
            out.update((k, encode_value(x)) for k, x in more.items())
    if more and after is None:
        out.update((k, encode_value(x)) for k, x in more.items())
    return out


def encode_value(v: Any) -> Any:
    """One value as JSON data (see this module's docstring)."""
    if v is None or isinstance(v, _SCALARS):
        return v
    to_dict = getattr(v, "to_dict", None)
    if to_dict is not None:
        return to_dict()
    if isinstance(v, (tuple, list)):
        return [encode_value(x) for x in v]
    if isinstance(v, dict):
        return {k: encode_value(x) for k, x in v.items()}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return encode(v)
    raise TypeError(f"no JSON for a {type(v).__qualname__}")


def by_key(mapping: Mapping[Any, Any]) -> dict[str, Any]:
    """A mapping with keys of any type (a memory space's number) as JSON shows it: sorted by
    key, the keys as strings."""
    return {str(k): v for k, v in sorted(mapping.items())}


@functools.cache
def _plan(cls: type) -> tuple[tuple[str, Callable[[Any], Any], Callable[[Any], Any] | None, bool], ...]:
    """(key, getter, value, omit_none) for each value `cls`'s JSON shows, in order."""
    shown: list[Shown] = []
    for f in dataclasses.fields(cls):
        s = f.metadata.get(_METADATA, Shown())
        if not s.omit:
            shown.append(dataclasses.replace(s, key=s.key or f.name, get=s.get or f.name))
    shown += getattr(cls, "json_extra", ())
    keys = [s.key for s in shown]
    if len(set(keys)) != len(keys):
        raise TypeError(f"{cls.__qualname__}: a JSON key shown twice: {keys}")
    followers: dict[str | None, list[Shown]] = {}
    for s in shown:
        if s.after is not None and s.after not in keys:
            raise TypeError(f"{cls.__qualname__}: {s.key} comes after {s.after}, which is not shown")
        followers.setdefault(s.after, []).append(s)
    ordered: list[Shown] = []

    def place(s: Shown) -> None:
        ordered.append(s)
        for f in followers.get(s.key, ()):
            place(f)

    for s in followers.get(None, ()):
        place(s)
    if len(ordered) != len(shown):
        raise TypeError(f"{cls.__qualname__}: JSON keys placed after each other in a circle")
    return tuple((s.key, _getter(s.get), s.value, s.omit_none) for s in ordered)  # type: ignore[arg-type]


def _getter(get: str | Callable[[Any], Any]) -> Callable[[Any], Any]:
    return operator.attrgetter(get) if isinstance(get, str) else get
