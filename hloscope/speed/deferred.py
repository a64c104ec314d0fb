"""Modules whose computations are made when first asked for: a command whose results the cache
keeps (a warm `diff`, the side of B a read-ahead child worked out) reads a module's name and
header and never makes its tens of thousands of computations (docs/speed.md)."""

from __future__ import annotations

import weakref
from collections.abc import Callable

from ..ir.attributes import Attributes
from ..ir.module import Computation, Module

_MADE = frozenset(("computations", "entry", "_by_name", "_by_text_name"))
"""The slots a Module fills from its computations: unset until they are made."""

_making: "weakref.WeakKeyDictionary[Module, Callable[[], list[Computation]]]" = weakref.WeakKeyDictionary()


class DeferredModule(Module):
    """A Module whose computations come from `make()` the first time one of the slots made
    of them is read (Python asks `__getattr__` only for an attribute it does not find)."""

    __slots__ = ()

    @classmethod
    def of(cls, name: str, attributes: Attributes, tables: dict[str, dict[int, str]],
           make: Callable[[], list[Computation]]) -> "DeferredModule":
        """The module of this header; `make()` gives its computations, the entry among them."""
        module = cls.__new__(cls)
        module.name, module.attributes, module.tables = name, attributes, tables
        module.source_path = None
        module._frame_sources = {}
        _making[module] = make
        return module

    def __getattr__(self, name: str):
        make = _making.get(self) if name in _MADE else None
        if make is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        computations = make()
        del _making[self]
        source_path = self.source_path
        Module.__init__(self, self.name, self.attributes, computations,
                        next(c for c in computations if c.is_entry), self.tables)
        self.source_path = source_path
        return getattr(self, name)
