"""`hloscope.sweep(factory, grid, target=...)`: compile every variant of a train step for a
target (each in a fresh process, or a Dask task), read each compiled text with hloscope's
analyses, rank the variants and say why each differs from its best neighbour.

The compiled texts are kept in a cache directory keyed by the script's content, the factory,
the knobs, the target, the XLA flags and the jax version: a rerun compiles nothing, and the
analyses of a text already read come from hloscope's own result cache.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from importlib import metadata
import inspect
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..analysis.roofline import roofline as estimate
from ..api.compare import diff
from ..api.loading import load
from ..budget import parse_size
from ..errors import HloscopeError
from ..settings import cache_root
from .grid import apart, label, one_apart, variants
from .launch import available_memory, run_local, run_on_cluster
from .result import SweepResult, Variant
from .targets import Target, parse_target

H100_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "h100_sxm.txtpb")
"""XLA's H100 SXM target description (xla/backends/gpu/target_config), for deviceless compiles."""
CACHEABLE_STAGES = ("factory", "compile")
"""Failures that are a function of the cache key (the script, knobs, target): kept, so a
rerun does not try again. A timeout, the memory limit or a missing plugin are not."""

Progress = Callable[[int, int, str], None]
"""`progress(done, total, what)`: called before the first compile and after each."""


class SweepError(HloscopeError):
    """A sweep that cannot start: no such script or function, a bad grid or target."""


def factory_source(factory: str | Callable) -> tuple[str, str]:
    """(script path, function name) of `SCRIPT.py:FUNCTION` or of a module-level function."""
    if callable(factory):
        path = inspect.getsourcefile(factory)
        if path is None or factory.__qualname__ != factory.__name__:
            raise SweepError(f"{factory!r}: a factory must be a module-level function of a script")
        return os.path.abspath(path), factory.__name__
    script, colon, function = str(factory).rpartition(":")
    if not colon or not script or not function.isidentifier():
        raise SweepError(f"{factory!r}: expected SCRIPT.py:FUNCTION")
    if not os.path.isfile(script):
        raise SweepError(f"{script}: no such script")
    return os.path.abspath(script), function


def check_plugins(target: Target) -> None:
    """Raise SweepError, saying what to install, when this interpreter (the workers') lacks
    jax or the plugin that compiles for `target` without the device."""
    needs = {"tpu": (("libtpu",), 'jax[tpu] (libtpu)'),
             "cuda": (("jax_cuda12_plugin", "jax_plugins.xla_cuda12"), "jax-cuda12-plugin and jax-cuda12-pjrt")}
    if importlib.util.find_spec("jax") is None:
        raise SweepError("a sweep compiles with jax, which this Python lacks: pip install jax")
    chip = target.chip
    if chip is None:
        return
    modules, what = needs[chip.platform]
    if not any(_found(m) for m in modules):
        raise SweepError(f"{target.name}: compiling for {target.kind} without a device needs {what}, which this "
                         f'Python lacks: pip install "hloscope[accelerators]"')


def _found(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # a parent package that is not there
        return False


def default_cache_dir() -> str:
    """`$HLOSCOPE_CACHE_DIR/sweep`, else `~/.cache/hloscope/sweep` (settings.cache_root)."""
    return os.path.join(cache_root(), "sweep")


def jax_version(python: str | None) -> str:
    """The jax the workers import (of `python`, else of this interpreter), without importing it here."""
    code = "import importlib.metadata as m; print(m.version('jax'))"
    try:
        if python is None or os.path.realpath(python) == os.path.realpath(sys.executable):
            return metadata.version("jax")  # reading metadata imports no jax
        return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    except Exception:
        return "unknown"


def cache_key(script_text: str, function: str, knobs: Mapping, target: Target, jax: str, xla_flags: str) -> str:
    payload = json.dumps({"script": hashlib.sha256(script_text.encode()).hexdigest(), "function": function,
                          "knobs": knobs, "target": target.name, "jax": jax, "xla_flags": xla_flags},
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def _request(script: str, text: str, function: str, knobs: dict, target: Target) -> dict:
    t = target.request()
    if target.kind == "h100":
        with open(H100_CONFIG) as f:
            t["target_config"] = f.read()
    return {"script_path": script, "script_text": text, "function": function, "knobs": knobs, "target": t,
            "cwd": os.getcwd()}


def _kept(directory: str) -> dict | None:
    """A cached answer: the text's path and XLA's figures, or a kept error."""
    text = os.path.join(directory, "module.hlo.txt")
    try:
        if os.path.exists(text):
            with open(os.path.join(directory, "xla.json")) as f:
                return {"hlo": text, "xla": json.load(f), "error": None}
        with open(os.path.join(directory, "error.json")) as f:
            return {"hlo": None, "xla": None, "error": json.load(f)["error"]}
    except (OSError, ValueError, KeyError):
        return None


def _keep(directory: str, answer: dict) -> dict:
    """Write a worker's answer into the cache (each file whole, then renamed); return it as `_kept` does."""
    os.makedirs(directory, exist_ok=True)

    def write(name: str, content: str) -> None:
        partial = os.path.join(directory, f".{name}.{os.getpid()}.part")
        with open(partial, "w") as f:
            f.write(content)
        os.replace(partial, os.path.join(directory, name))

    if answer["error"] is None:
        write("xla.json", json.dumps(answer["xla"], indent=1, sort_keys=True))
        write("module.hlo.txt", answer["text"])  # last: its presence says the entry is whole
        return {"hlo": os.path.join(directory, "module.hlo.txt"), "xla": answer["xla"], "error": None}
    if answer.get("stage") in CACHEABLE_STAGES:
        write("error.json", json.dumps({"error": answer["error"], "stage": answer["stage"]}))
    return {"hlo": None, "xla": None, "error": answer["error"]}


def _read(read: Callable, knobs: dict, entry: dict, hbm: int | None, roofline: str | None) -> Variant:
    """hloscope's reading of one compiled text (memory, cost, held gathers, roofline)."""
    module = read(entry["hlo"])
    memory, cost, gathers = module.memory(), module.cost(), module.held_gathers()
    est = estimate(cost, roofline) if roofline else None
    return Variant(knobs=knobs, rank=0, temp_bytes=memory.temp_bytes, argument_bytes=memory.argument_bytes,
                   output_bytes=memory.output_bytes, alias_bytes=memory.alias_bytes, total_bytes=memory.total_bytes,
                   peak_bytes=memory.peak_bytes, flops=cost.flops, flops_xla_convention=cost.flops_xla_convention,
                   recompute_flops=cost.recompute_flops, collective_bytes=cost.collective_bytes,
                   held_gathers=len(gathers.held), held_bytes_at_peak=gathers.held_bytes_at_peak,
                   fits=hbm is None or memory.total_bytes <= hbm,
                   step_time_estimate=est.seconds if est else None, bound=est.bound if est else None,
                   hlo=entry["hlo"], xla=entry["xla"], cached=entry.get("cached", False))


def rank_key(v: Variant) -> tuple:
    """Variants that fit first, then by estimated step time, then by what the device holds; failures last."""
    if not v.ok:
        return (2, 0.0, 0)
    time_ = v.step_time_estimate if v.step_time_estimate is not None else math.inf
    return (0 if v.fits else 1, time_, v.total_bytes)


def _why(read: Callable, rows: list[Variant]) -> list[Variant]:
    """Each variant with the sentence of its diff against its best-ranked neighbour one knob
    apart (`rows` are ranked: the lowest index is the best), and that neighbour's knobs."""
    out = []
    for v in rows:
        near = [(j, k) for j, w in enumerate(rows) if w.ok and w is not v and (k := one_apart(v.knobs, w.knobs))]
        if not v.ok or not near:
            out.append(v)
            continue
        j, knob = min(near)
        n = rows[j]
        d = diff(read(n.hlo), read(v.hlo), names=(f"{knob}={n.knobs[knob]}", f"{knob}={v.knobs[knob]}"))
        out.append(replace(v, why=d.summary, neighbour=dict(n.knobs)))
    return out


@dataclass(frozen=True)
class Workers:
    """Where and how the compiles run (see `sweep`'s arguments of the same names)."""

    jobs: int = 1
    cluster: Any = None
    python: str | None = None
    timeout: float = 1800.0
    worker_memory: int | str | None = None

    def memory_limit(self, variants: int) -> int | None:
        """What one compile may hold: `worker_memory`, else (locally) the available memory
        shared by the compiles that run at once."""
        if self.worker_memory is not None:
            return parse_size(self.worker_memory)
        free = available_memory() if self.cluster is None else None
        return free // max(1, min(self.jobs, variants)) if free else None

    def run(self, requests: list[dict]):
        limit = self.memory_limit(len(requests))
        if self.cluster is not None:
            return run_on_cluster(requests, self.cluster, self.python, self.timeout, limit)
        return run_local(requests, self.jobs, self.python, self.timeout, limit)


def _compiled(script: str, text: str, function: str, knobs: list[dict], target: Target, directory: str,
              workers: Workers, progress: Progress | None) -> tuple[list[dict], int]:
    """Each variant's cache entry (`_kept`), compiling those the cache lacks; and how many were compiled."""
    jax = jax_version(workers.python)
    flags = os.environ.get("XLA_FLAGS", "")
    paths = [os.path.join(directory, cache_key(text, function, k, target, jax, flags)) for k in knobs]
    entries: list[dict | None] = []
    for path in paths:
        kept = _kept(path)
        entries.append(dict(kept, cached=True) if kept else None)
    todo = [i for i, e in enumerate(entries) if e is None]
    if progress:
        progress(0, len(todo), "compiling" if todo else "all variants cached")
    if todo:
        answers = workers.run([_request(script, text, function, knobs[i], target) for i in todo])
        for done, (n, answer) in enumerate(answers, 1):
            i = todo[n]
            entries[i] = _keep(paths[i], answer)
            if progress:
                progress(done, len(todo), label(knobs[i]))
    return entries, len(todo)  # type: ignore[return-value]


def sweep(factory: str | Callable, grid: Mapping[str, Sequence], target: str | Target, *,
          hbm: int | str | None = None, jobs: int = 1, cluster: Any = None, cache_dir: str | None = None,
          timeout: float = 1800.0, worker_memory: int | str | None = None, python: str | None = None,
          roofline: str | None = None, diffs_to_best: bool = False, progress: Progress | None = None) -> SweepResult:
    """Compile `factory(devices, **knobs)` for every combination of `grid`'s values on `target`
    and rank the variants (see hloscope.sweeps).

    `factory`: `"SCRIPT.py:FUNCTION"` or a module-level function of a script; it is called in a
    fresh process per variant and returns `(fn, args)`. `target`: `cpu:N`, `h100:N`,
    `tpu-v5e:2x4`, ... `hbm`: the memory a device has (default: the chip's; none for cpu).
    `jobs`: variants compiled at once by local worker processes; `cluster`: a Dask scheduler's
    address (or a `distributed.Client`) to run them on instead. `worker_memory`: the host
    memory one compile may use before it is stopped (default: what is available / jobs).
    `python`: the interpreter the workers run (default: this one). `roofline`: the hardware
    entry the step time is estimated with (default: the target's chip; none for cpu).
    `diffs_to_best`: also diff each variant against the best (`SweepResult.to_best`, the HTML
    page's). `progress(done, total, what)`: told as the compiles go."""
    start = time.monotonic()
    script, function = factory_source(factory)
    try:
        target = target if isinstance(target, Target) else parse_target(target)
    except HloscopeError as e:
        raise SweepError(str(e)) from None
    grid = {str(k): list(v) for k, v in grid.items()}
    if not grid or not all(grid.values()):
        raise SweepError("a sweep needs at least one knob with at least one value")
    if python is None and cluster is None:
        check_plugins(target)
    limit = parse_size(hbm) if hbm is not None else target.hbm_bytes
    roofline = roofline or target.roofline
    with open(script) as f:
        text = f.read()
    knobs = variants(grid)
    entries, compiled = _compiled(script, text, function, knobs, target, cache_dir or default_cache_dir(),
                                  Workers(jobs, cluster, python, timeout, worker_memory), progress)
    # The last few modules read stay at hand: each is diffed against its neighbour and the best.
    read = functools.lru_cache(maxsize=4)(load)
    rows = [(_read(read, k, e, limit, roofline) if e["error"] is None else Variant(knobs=k, rank=0, error=e["error"]))
            for k, e in zip(knobs, entries)]
    rows.sort(key=rank_key)
    rows = _why(read, [replace(v, rank=n) for n, v in enumerate(rows, 1)])
    to_best = {}
    if diffs_to_best and rows and rows[0].ok:
        best = rows[0]
        for i, v in enumerate(rows[1:], 1):
            if v.ok:
                differ = apart(best.knobs, v.knobs)
                to_best[i] = diff(read(best.hlo), read(v.hlo), names=(label(best.knobs, differ), label(v.knobs, differ)))
    notes = []
    if roofline is None:
        notes.append(f"{target.name}: no published peaks to estimate a step time with (pass roofline=..., "
                     "--roofline); ranked by what the device holds")
    if limit is None:
        notes.append(f"{target.name}: no device memory to fit in (pass hbm=..., --hbm); every variant fits")
    shown = factory if isinstance(factory, str) else f"{script}:{function}"
    return SweepResult(target=target.name, hbm_bytes=limit, roofline=roofline, factory=shown,
                       grid=grid, variants=tuple(rows), compiled=compiled, seconds=time.monotonic() - start,
                       to_best=to_best, notes=tuple(notes))


__all__ = ["SweepError", "cache_key", "check_plugins", "default_cache_dir", "factory_source", "rank_key", "sweep"]
