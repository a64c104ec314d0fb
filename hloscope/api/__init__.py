"""The api layer: reading HLO into analysable modules, with the cache and the executor wired in."""

from .loading import from_compiled, load, load_all, parse, parse_all
from .module import Module

__all__ = ["Module", "from_compiled", "load", "load_all", "parse", "parse_all"]
