"""Frozen analysis results as plain data (lists, dicts, scalars) and back: the form the cache
writes as JSON and a forked child sends over its pipe. Only the dataclasses a caller names
(`allowed`) are rebuilt, so data read back can make nothing but those results."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

_SCALARS = (bool, int, float, str)


def allowing(types: tuple[type, ...]) -> dict[str, type]:
    """The `allowed` argument for these dataclasses."""
    return {t.__qualname__: t for t in types}


def encode(x: Any, allowed: dict[str, type]) -> Any:
    """JSON for plain data: a tuple as {"t": [...]}, a dict as {"d": [[k, v], ...]} (keys of
    any type), a dataclass of `allowed` as {"c": name, "f": [fields...]}."""
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, list):
        return [encode(v, allowed) for v in x]
    if isinstance(x, tuple):
        if all(v is None or type(v) in _SCALARS for v in x):
            return {"s": list(x)}  # a long timeline: decoded without a call per element
        return {"t": [encode(v, allowed) for v in x]}
    if isinstance(x, dict):
        return {"d": [[encode(k, allowed), encode(v, allowed)] for k, v in x.items()]}
    cls = type(x)
    if allowed.get(cls.__qualname__) is cls:
        fields = [getattr(x, name) for name in _field_names(cls)]
        return {"c": cls.__qualname__,
                "f": [v if v is None or type(v) in _SCALARS else encode(v, allowed) for v in fields]}
    raise TypeError(f"not plain data: {cls.__qualname__}")


@functools.lru_cache(maxsize=None)
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


_CONTAINERS = (list, dict)


def decode(x: Any, allowed: dict[str, type]) -> Any:
    # Scalars are passed through without a call each: a memory result holds thousands.
    if type(x) is list:
        return [decode(v, allowed) if type(v) in _CONTAINERS else v for v in x]
    if type(x) is not dict:
        return x
    if "s" in x:
        return _scalars(x["s"])
    if "t" in x:
        return tuple([decode(v, allowed) if type(v) in _CONTAINERS else v for v in x["t"]])
    if "d" in x:
        return {decode(k, allowed): decode(v, allowed) for k, v in x["d"]}
    return allowed[x["c"]](*[decode(v, allowed) if type(v) in _CONTAINERS else v for v in x["f"]])


def rebuilding(allowed: dict[str, type]):
    """`json.loads`'s object_hook that rebuilds what `encode` wrote as the text is read, each
    object once its contents are: what `decode` makes of the loaded data, with one call per
    object and none per list (a third less time on a memory result of 1 MB). Any other
    object is left as it is."""

    def rebuild(x: dict) -> Any:
        if "c" in x:
            return allowed[x["c"]](*x["f"])
        if "s" in x:
            return _scalars(x["s"])
        if "t" in x:
            return tuple(x["t"])
        if "d" in x:
            return dict(x["d"])
        return x

    return rebuild


def _scalars(items: list) -> tuple:
    """A tuple `encode` wrote as scalars ({"s": [...]}); ValueError if it holds anything else."""
    if not all(v is None or type(v) in _SCALARS for v in items):
        raise ValueError("not scalars")
    return tuple(items)
