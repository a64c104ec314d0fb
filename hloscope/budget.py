"""Budgets: limits on a module's collectives (and temp memory), checked in CI or in pytest.

A budget says, per collective kind, a maximum (`max_collectives`) or an exact number
(`expect_collectives`) of collectives, counted statically (instructions in the text, an async
pair once) or, with `dynamic=True`, per step (× known while trip counts); and optionally a
maximum of temp memory (`max_temp`, bytes). `check` returns the violations; `assert_budget`
raises `AssertionError` naming each kind, its budget and the actual count.

A budget file is TOML, either a standalone file or the `[tool.hloscope]` table of a
pyproject.toml, with these keys (a standalone file may also use a `[tool.hloscope]` table):

    max-temp = "40GiB"          # bytes, or a size with a unit (KB/MB/GB = 1000^n, KiB/MiB/GiB = 1024^n)
    dynamic = false             # count per step (× trip counts) instead of statically
    [max]                       # in pyproject.toml: [tool.hloscope.max]
    all-gather = 200
    total = 400                 # every collective together (send/recv excluded)
    [expect]
    reduce-scatter = 12
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from . import snapshots
from .analysis.collectives import KNOWN_KINDS
from .analysis.diff import DiffResult
from .analysis.diff import diff as diff_sides
from .api.compare import diff, side
from .api.loading import from_compiled, load
from .encode import Encoded, as_json, extra
from .errors import HloscopeError
from .units import human_bytes

BUDGET_KINDS = KNOWN_KINDS + ("total",)
"""Keys a collective budget may name: each collective kind, `send`, `recv`, and `total`."""

class BudgetError(HloscopeError):
    """A budget that cannot be read or applied (bad file, unknown kind, bad size)."""


@dataclass(frozen=True, slots=True)
class Violation(Encoded):
    """One budget a module does not keep."""

    module: str
    """The module's name."""
    rule: str
    """`max` (more than allowed), `expect` (not the expected number) or `max-temp`."""
    subject: str
    """The collective kind (`all-gather`, ..., `total`) or `temp` for `max-temp`."""
    budget: int
    """The limit, or the expected count; bytes for `max-temp`."""
    actual: int | None
    """The count (bytes for `max-temp`); None when a dynamic count is unknown."""
    dynamic: bool = False
    """Counts are per step (× trip counts) rather than static."""
    detail: str = field(default="", metadata=as_json(omit=True))
    """For `max-growth`: the diff's explanation (its sentence and leading causes), in `message`."""
    json_extra = (extra("message"),)

    @property
    def message(self) -> str:
        what = "dynamic count" if self.dynamic else "count"
        if self.rule == "max-growth":
            return (f"{self.module}: temp memory {_size(self.actual)} grew past the budget {_size(self.budget)} "
                    f"(baseline + max-growth). {self.detail}")
        if self.rule == "max-temp":
            return f"{self.module}: temp memory {_size(self.actual)} exceeds the budget max-temp={_size(self.budget)}"
        if self.actual is None:
            return (f"{self.module}: {self.subject}: {what} unknown (a while loop has no known_trip_count), "
                    f"cannot check budget {self.rule} {self.subject}={self.budget}")
        if self.rule == "max":
            return (f"{self.module}: {self.subject}: {what} {self.actual} exceeds the budget "
                    f"max {self.subject}={self.budget}")
        return (f"{self.module}: {self.subject}: {what} {self.actual} differs from the expected "
                f"{self.subject}={self.budget}")


_EXACT_TO_GIB = {"KiB": 2, "MiB": 2, "GiB": 2}
"""How a budget's message writes sizes: exact, then in KiB, MiB or GiB (a budget is set in them)."""


def _size(n: int | None) -> str:
    """`42949672960` → `42949672960 bytes (40.00 GiB)`."""
    return "unknown" if n is None else human_bytes(n, _EXACT_TO_GIB, exact=True)


_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*")


def parse_size(value: int | str) -> int:
    """`40GiB` → 42949672960; `1.5MB` → 1500000; an int is bytes. KB/MB/GB are powers of 1000,
    KiB/MiB/GiB (and K/M/G) powers of 1024."""
    if isinstance(value, bool):
        raise BudgetError(f"not a size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise BudgetError(f"a size cannot be negative: {value}")
        return value
    m = _SIZE.fullmatch(str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise BudgetError(f"not a size: {value!r} (write e.g. 40GiB, 512MB or a number of bytes)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def _kind_counts(mapping: Mapping[str, Any] | None, what: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for kind, n in (mapping or {}).items():
        if kind not in BUDGET_KINDS:
            raise BudgetError(f"{what}: unknown collective kind {kind!r}; known: {', '.join(BUDGET_KINDS)}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise BudgetError(f"{what}: {kind} must be a non-negative integer, not {n!r}")
        out[kind] = n
    return out


# ─── temp memory ──────────────────────────────────────────────────────────────────────


def temp_bytes(module) -> int:
    """XLA's temp size of `module`, as hloscope's memory analysis reproduces it."""
    return module.memory().temp_bytes


# ─── checking ──────────────────────────────────────────────────────────────────────────


def _as_module(module_or_compiled):
    if hasattr(module_or_compiled, "as_text"):  # a jax compiled (or lowered) object
        return from_compiled(module_or_compiled)
    return module_or_compiled


def check(module, max_temp: int | str | None = None, max_collectives: Mapping[str, int] | None = None,
          expect_collectives: Mapping[str, int] | None = None, dynamic: bool = False,
          baseline=None, max_growth: float | str | None = None) -> tuple[Violation, ...]:
    """The budgets `module` (a Module, or a jax compiled object) does not keep; () when all hold.

    `max_collectives` / `expect_collectives` map a kind (`all-gather`, ..., `send`, `recv`,
    `total`) to a count; counts are static unless `dynamic` (then × known trip counts; an
    unknown dynamic count is a violation, with `actual` None). `max_temp` is bytes or a size
    string such as `"40GiB"`. With `baseline` (a Module or jax compiled object of the same
    program, a snapshot's path or data (hloscope.snapshots), or the path of an HLO file) and
    `max_growth` (a fraction, or a string such as `"5%"`), temp memory may grow at most that
    much over the baseline's; the violation's message is the diff's explanation.
    """
    module = _as_module(module)
    maxes = _kind_counts(max_collectives, "max_collectives")
    expects = _kind_counts(expect_collectives, "expect_collectives")
    limit = parse_size(max_temp) if max_temp is not None else None
    out: list[Violation] = []
    if maxes or expects:
        result = module.collectives()
        for rule, budgets in (("max", maxes), ("expect", expects)):
            for kind, budget in budgets.items():
                actual = result.count(kind, dynamic=dynamic)
                bad = actual is None or (actual > budget if rule == "max" else actual != budget)
                if bad:
                    out.append(Violation(module.name, rule, kind, budget, actual, dynamic))
    if limit is not None:
        actual = temp_bytes(module)
        if actual > limit:
            out.append(Violation(module.name, "max-temp", "temp", limit, actual))
    if baseline is not None:
        out.extend(_growth(module, as_baseline(baseline), parse_growth(max_growth if max_growth is not None else 0)))
    return tuple(out)


def as_baseline(baseline):
    """A baseline as `check` compares with it: a Module, or a snapshot's data (a dict)."""
    if isinstance(baseline, dict):
        return snapshots.validated(baseline)
    if isinstance(baseline, (str, os.PathLike)):
        return snapshots.read(baseline) if snapshots.looks_like_snapshot(baseline) else load(baseline)
    return _as_module(baseline)


def parse_growth(value: float | str) -> float:
    """`"5%"`, `"0.05"` or 0.05 → 0.05."""
    if isinstance(value, (int, float)):
        growth = float(value)
    else:
        text = str(value).strip()
        try:
            growth = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise BudgetError(f"max-growth: {value!r} is not a fraction or a percentage (e.g. 5%)") from None
    if growth < 0:
        raise BudgetError(f"max-growth: {value!r} is negative")
    return growth


def _growth(module, baseline, growth: float) -> list[Violation]:
    """The max-growth violation of `module` against `baseline` (a Module or a snapshot's data)."""
    snap = baseline if isinstance(baseline, dict) else None
    new = temp_bytes(module)
    old = snap["memory"]["temp_bytes"] if snap is not None else temp_bytes(baseline)
    allowed = int(old * (1 + growth))
    if new <= allowed:
        return []
    result = growth_diff(module, baseline)
    return [Violation(module.name, "max-growth", "temp", allowed, new, detail=explanation(result, snap, module))]


def growth_diff(module, baseline) -> DiffResult:
    """The diff of `module` against `baseline` (a Module or a snapshot's data), as a check words it."""
    names = ("the baseline", "this compilation")
    if isinstance(baseline, dict):
        return diff_sides(snapshots.side(baseline), side(module), names=names)
    return diff(baseline, module, names=names)


def explanation(result: DiffResult, snap: dict | None = None, module=None) -> str:
    """A check's words for a diff against its baseline: the sentence, the leading causes, and
    against a snapshot what it cannot say (its buffers below the cut, another program's key)."""
    leading = "; ".join(f"{c.role or c.kind} {human_bytes(c.bytes, _EXACT_TO_GIB, sign=True, exact=True)}"
                        for c in result.causes[:3])
    words = f"{result.summary} Leading causes: {leading}."
    if snap is None:
        return words
    kept = result.a.brief()
    cut = snapshots.below_cut(kept, [c.role for c in result.causes[:3] if c.role])
    if cut:
        words += (f" The baseline is a snapshot naming the {kept.cut} largest buffers of each role; below its cut "
                  "it counts without naming " + ", ".join(
                      f"{n} {role.replace('_', ' ')} buffer{'s' if n != 1 else ''} ({human_bytes(b, digits=1)})"
                      for role, n, b in cut) + ".")
    other = snapshots.mismatch(snap, module) if module is not None else None
    if other:
        words += f" Note: {other}."
    return words


def assert_budget(module_or_compiled, max_temp: int | str | None = None,
                  max_collectives: Mapping[str, int] | None = None,
                  expect_collectives: Mapping[str, int] | None = None, dynamic: bool = False,
                  baseline=None, max_growth: float | str | None = None) -> None:
    """`check`, raising AssertionError that lists every violation (kind, budget, actual)."""
    violations = check(module_or_compiled, max_temp=max_temp, max_collectives=max_collectives,
                       expect_collectives=expect_collectives, dynamic=dynamic, baseline=baseline,
                       max_growth=max_growth)
    if violations:
        lines = "\n".join(f"  {v.message}" for v in violations)
        raise AssertionError(f"hloscope budget violated ({len(violations)}):\n{lines}")


# ─── budget files ──────────────────────────────────────────────────────────────────────

_FILE_KEYS = {
    "max-temp": "max_temp", "max_temp": "max_temp",
    "max": "max_collectives", "max-collectives": "max_collectives", "max_collectives": "max_collectives",
    "expect": "expect_collectives", "expect-collectives": "expect_collectives",
    "expect_collectives": "expect_collectives",
    "dynamic": "dynamic",
}


@dataclass(frozen=True, slots=True)
class Budget(Encoded):
    """A set of budgets, as `check` takes them (keyword arguments via `as_kwargs()`), and as a
    budget file writes them (`to_dict()`)."""

    max_temp: int | None = None
    """Bytes."""
    max_collectives: tuple[tuple[str, int], ...] = field(default=(), metadata=as_json(key="max", value=dict))
    expect_collectives: tuple[tuple[str, int], ...] = field(default=(), metadata=as_json(key="expect", value=dict))
    dynamic: bool = False

    @property
    def empty(self) -> bool:
        return self.max_temp is None and not self.max_collectives and not self.expect_collectives

    def merged(self, other: "Budget") -> "Budget":
        """`other` overriding `self`, kind by kind."""
        return Budget(
            max_temp=other.max_temp if other.max_temp is not None else self.max_temp,
            max_collectives=tuple({**dict(self.max_collectives), **dict(other.max_collectives)}.items()),
            expect_collectives=tuple({**dict(self.expect_collectives), **dict(other.expect_collectives)}.items()),
            dynamic=self.dynamic or other.dynamic,
        )

    def as_kwargs(self) -> dict[str, Any]:
        return {
            "max_temp": self.max_temp,
            "max_collectives": dict(self.max_collectives),
            "expect_collectives": dict(self.expect_collectives),
            "dynamic": self.dynamic,
        }


def budget_from_mapping(table: Mapping[str, Any], where: str = "budget") -> Budget:
    """A Budget from the keys of a budget table (see this module's docstring)."""
    fields: dict[str, Any] = {}
    for key, value in table.items():
        name = _FILE_KEYS.get(key)
        if name is None:
            raise BudgetError(f"{where}: unknown key {key!r}; known: max-temp, dynamic, max, expect")
        fields[name] = value
    dynamic = fields.get("dynamic", False)
    if not isinstance(dynamic, bool):
        raise BudgetError(f"{where}: dynamic must be true or false, not {dynamic!r}")
    for name in ("max_collectives", "expect_collectives"):
        if name in fields and not isinstance(fields[name], Mapping):
            raise BudgetError(f"{where}: {name.split('_')[0]} must be a table of kind = count")
    try:
        max_temp = parse_size(fields["max_temp"]) if fields.get("max_temp") is not None else None
    except BudgetError as e:
        raise BudgetError(f"{where}: max-temp: {e}") from None
    return Budget(
        max_temp=max_temp,
        max_collectives=tuple(_kind_counts(fields.get("max_collectives"), f"{where}: max").items()),
        expect_collectives=tuple(_kind_counts(fields.get("expect_collectives"), f"{where}: expect").items()),
        dynamic=dynamic,
    )


def load_budget(path: str) -> Budget:
    """A budget file: `[tool.hloscope]` of a pyproject.toml, or a standalone TOML file."""
    import os
    import tomllib

    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise BudgetError(f"{path}: error: not valid TOML: {e}") from None
    tool = data.get("tool", {})
    table = tool.get("hloscope") if isinstance(tool, dict) else None
    if table is None:
        if os.path.basename(path) == "pyproject.toml" or "tool" in data or "project" in data:
            raise BudgetError(f"{path}: error: no [tool.hloscope] table")
        table = data
    return budget_from_mapping(table, f"{path}: error")
