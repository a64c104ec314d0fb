"""Issue 29's speed protocol, measured as written, on both kinds of module, with PASS/FAIL.

Run on demand (not a test), from any directory:

    python benchmarks/protocol.py                          # this checkout's hloscope
    python benchmarks/protocol.py --repo /work/wt/before --repo /work/main   # side by side
    python benchmarks/protocol.py --repeat 3 --mechanisms --json out.json --markdown out.md

The modules (generated and cached by benchmarks/parse.py under benchmarks/out/, git-ignored;
built here if missing, ~4 min each):

  repeating  train_step_L32_H16_d256_ff1024_s128_b16.hlo: the 32-layer step whose layers'
             computations repeat up to names ("default"); diff pair: its s96 ("diff_b").
  distinct   ..._s128_b16_distinct.hlo: the same model with widths of each layer's own, so no
             body repeats another ("distinct"); diff pair: its s96 ("distinct_b").

What is measured, per module (the issue's "Must show" → Speed):

  XLA        `xc.hlo.hlo_module_from_text(text)` in this process, the file already read, best of
             --repeat: the unit of every ratio. Timed again at the module's end (drift check,
             not used). For `diff` the unit is XLA's parse of A alone.
  full       `hloscope.parse_all(text)` (full, eager), best of --repeat, timed in one child per
             checkout (a package cannot be imported twice in one process); the grammar is
             built before the timing by one parse of a small fixture.   Target ≤ 2×.
  cold       `python -m hloscope memory FILE`, `count-collectives FILE`, `diff A B` in a fresh
             process, with a cache directory (HLOSCOPE_CACHE_DIR) refilled before each run
             from one that has seen hloscope (memory, count-collectives and diff run on small
             fixtures: the grammar's tables are there) but not these files; best of --repeat.
             Always the same path: Lark keys its grammar tables by their file's path too.
             Targets: memory, count-collectives ≤ 1.6×; diff ≤ 3× (of XLA's parse of A).
  warm       the same command again, with the cache the last cold run filled.   Target ≤ 0.25×.
  RSS        each cold child's peak RSS from os.wait4's ru_maxrss (the largest of the process
             and the helpers it forked and reaped, not their sum).   Target ≤ 4× the file
             (for diff: A's file).

Every child is started by a small launcher (`python -S`), which forks it and reads its rusage
with os.wait4: a child forked from this process (which holds jax, the text and XLA's module)
would report this process's RSS as its own peak, as Linux keeps the pre-exec high-water mark.
Wall time is taken around the child alone (not the launcher's start); CPU time (user + system,
the reaped helpers included) is printed beside it. Python's bytecode for every checkout is
compiled once into a prefix of the benchmark's own (PYTHONPYCACHEPREFIX) by the priming runs,
as an installed copy has it; nothing is written into the checkouts.

With several --repo, every step runs each checkout in turn within each repetition (A, B, A,
B, ...), so that the machine's drift falls on both alike; each child runs with cwd = its
checkout and PYTHONPATH = its checkout (checked: the priming run prints hloscope.__file__).

`--mechanisms`: `memory` and `count-collectives` cold (`diff` for read-ahead) with each speed
mechanism turned off in turn, against a baseline run in the same repetitions. Where hloscope has a switch (an
environment variable) it is used; where it has none, the benchmark's child sets a module
constant or replaces a function before hloscope's CLI starts (`patch` rows: hloscope's code is
not changed; a checkout without that constant or function shows n/a). The table says where a
switch would go. Each run's output is hashed: a mechanism turned off must not change it.

The machine may be shared: load average at the start and end, CPU time beside wall time, and
for every run how many CPUs other work kept busy meanwhile ("others' CPUs", from /proc/stat:
the machine's busy time less the child's own); --quiet S waits up to S seconds before each run
for other work to drop under half a CPU, and --max-others C runs a run again (at most --retries
times) where other work took more than C CPUs meanwhile, XLA's parses included. The machine's speed drifts too: XLA's parse is timed
again in this process just before each cold and warm run, and each run's ratio to it (the
median over the repetitions, "× XLA paired") is printed beside the best-of verdict, which
stays the protocol's. Mechanism gains are given as best-of differences and as the median of
each repetition's run less the baseline run of that repetition.

Also the unit's check: `--xla-in-child` times XLA's parse in the full-parse child as well.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _load_parse_bench():
    """benchmarks/parse.py as a module (module configs, paths, generation)."""
    spec = importlib.util.spec_from_file_location("hloscope_bench_parse", HERE / "parse.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


P = _load_parse_bench()

TARGETS = {"full": 2.0, "cold": 1.6, "diff_cold": 3.0, "warm": 0.25, "rss": 4.0}

MODULES = {  # kind -> (config of A, config of its diff pair B)
    "repeating": ("default", "diff_b"),
    "distinct": ("distinct", "distinct_b"),
}

PRIME_A = REPO / "fixtures" / "cpu_fsdp" / "module.hlo.txt"
PRIME_B = REPO / "fixtures" / "cpu_hsdp_accum1" / "module.hlo.txt"

TIMEOUT = 600.0


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} CPUs)"
    except OSError:
        return "?"


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


# ─── the speed mechanisms and their switches ────────────────────────────────────────────

NO_HOOK = 97
"""Exit status of the patching child when a checkout lacks the constant or function to patch."""

BIG = 1 << 62


@dataclass(frozen=True)
class Mechanism:
    name: str
    what: str
    switch: str
    """"env" (hloscope's own switch), "patch" (set by the benchmark's child), or "none"."""
    env: dict = field(default_factory=dict)
    patches: tuple = ()
    """(kind, module, attribute, value): kind "set" (attribute = value), "const" (a function
    returning value), "force_kwargs" (the function called with value's keyword arguments)."""
    commands: tuple = ("memory", "count-collectives")
    where: str = ""
    """Where hloscope would take a switch (for "patch" and "none" rows): file and function."""


MECHANISMS = (
    Mechanism("forks (all)", "every forked helper: parse in two, check elsewhere, background outline write, "
              "read-ahead, diff's B side", "env", env={"HLOSCOPE_JOBS": "1"},
              where="hloscope/settings.py jobs_allowed (HLOSCOPE_JOBS=1), read by speed/runtime.py can_fork"),
    Mechanism("parse in two", "a large text's lazy parse split between this process and a child", "patch",
              patches=(("set", "hloscope.speed.split", "MIN_CHARS", BIG),),
              where="hloscope/speed/split.py _split_point (MIN_CHARS), called from speed/seam.py parse_lazily"),
    Mechanism("check elsewhere", "the full parse's verdict on unread bodies found by a child during the analysis",
              "patch", patches=(("set", "hloscope.speed.lazy", "CHECK_ELSEWHERE_CHARS", BIG),),
              where="hloscope/speed/lazy.py Verdict.sound (CHECK_ELSEWHERE_CHARS); speed/seam.py analyzing"),
    Mechanism("background outline write", "the outline written to the cache by a child", "patch",
              patches=(("set", "hloscope.speed.cache", "BACKGROUND_MIN_CHARS", BIG),),
              where="hloscope/speed/cache.py store (BACKGROUND_MIN_CHARS, before runtime.in_background)"),
    Mechanism("copies", "a body repeating one read before, up to names, made from it instead of read", "patch",
              patches=(("const", "hloscope.speed.lazy", "copies_of", [None, [], [], None, 0]),),
              where="hloscope/speed/lazy.py read_all / _read_or_copy / Verdict._first_error (copies_of)"),
    Mechanism("repeats skip the pattern", "the lazy cut: a body matched before up to names is not matched again",
              "patch", patches=(("const", "hloscope.text.printed", "_matched_before", (None, None, None)),),
              where="hloscope/text/printed.py _printed_computations (_matched_before)"),
    Mechanism("lazy bodies", "bodies cut into instructions on first use (off: the commands parse in full)",
              "patch", patches=(("force_kwargs", "hloscope.api.loading", "parse_all", {"lazy": False}),),
              where="hloscope/cli/commands/__init__.py load_inputs (lazy=True) / api/loading.py load_all"),
    Mechanism("GC switching", "the cyclic collector switched off (the command, and each parse and analysis)",
              "patch", patches=(("const", "gc", "disable", None),),
              where="hloscope/speed/runtime.py no_cyclic_gc, no_cyclic_gc_from_now (the CLI's, seam.one_command)"),
    Mechanism("malloc trim", "freed parse buffers handed back to the system (malloc_trim)", "patch",
              patches=(("const", "hloscope.speed.runtime", "trim", None),),
              where="hloscope/speed/runtime.py trim"),
    Mechanism("caches (all)", "outlines, results and Lark's grammar tables (cold then also builds the grammar)",
              "env", env={"HLOSCOPE_CACHE": "0"},
              where="hloscope/settings.py cache_enabled (HLOSCOPE_CACHE=0; also `hloscope --no-cache`)"),
    Mechanism("read-ahead", "diff: B read (and its side worked out) by a child while A is read", "patch",
              patches=(("set", "hloscope.api.loading", "READ_AHEAD_MIN_BYTES", BIG),), commands=("diff",),
              where="hloscope/api/loading.py reading_ahead (READ_AHEAD_MIN_BYTES), through speed/seam.py ahead"),
)

UNSWITCHED = (
    ("diff's B side in a child", "hloscope/api/compare.py sides (speed/seam.py meanwhile): only HLOSCOPE_JOBS=1, "
     "which stops every fork; with read-ahead on, the read-ahead child works B's side out instead"),
    ("outline cache (warm path)", "its gain is the cold → warm rows of the main table; HLOSCOPE_CACHE=0 turns "
     "it off with the rest"),
    ("answers from the text of unread bodies", "hloscope/speed/facts.py TextFacts (writes_any, holds_any, "
     "same_as, in-place pairs): part of lazy bodies (off with them), no switch of their own"),
)

# The child that applies a mechanism's patches, then runs hloscope's CLI as `-m hloscope` would.
# It also counts the forks this process makes, by the hloscope function that asked (the first
# frame outside speed/runtime.py), and writes them to stderr as it exits: which mechanisms ran.
_PATCHING = r"""
import collections, importlib, json, os, sys, traceback
_forks, _fork, _exit, _main = collections.Counter(), os.fork, os._exit, os.getpid()
def _counting_fork():
    site = "?"
    for f in reversed(traceback.extract_stack()[:-1]):
        if "hloscope" in f.filename and not f.filename.endswith("runtime.py"):
            site = f.name
            break
    pid = _fork()
    if pid and os.getpid() == _main:
        _forks[site] += 1
    return pid
def _reporting_exit(code):
    if os.getpid() == _main:
        sys.stderr.write("\nBENCH_FORKS " + json.dumps(dict(_forks)) + "\n")
        sys.stderr.flush()
    _exit(code)
os.fork, os._exit = _counting_fork, _reporting_exit
patches = json.loads(sys.argv[1])
del sys.argv[1]
sys.argv[0] = "hloscope"
for kind, module, attribute, value in patches:
    try:
        mod = importlib.import_module(module)
        original = getattr(mod, attribute)
    except (ImportError, AttributeError):
        sys.stderr.write("no hook %s.%s in this checkout\n" % (module, attribute))
        sys.exit(97)
    if kind == "set":
        setattr(mod, attribute, value)
    elif kind == "const":
        setattr(mod, attribute, lambda *a, _v=value, **k: _v)
    elif kind == "force_kwargs":
        def forced(*a, _f=original, _k=value, **k):
            k.update(_k)
            return _f(*a, **k)
        setattr(mod, attribute, forced)
from hloscope.cli import main
main()
"""

# The launcher: forks the command, waits with os.wait4, writes wall/cpu/peak RSS as JSON.
_LAUNCHER = r"""
import json, os, sys, time
out, argv = sys.argv[1], sys.argv[2:]
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
with open(out, "w") as f:
    json.dump({"wall": wall, "user": ru.ru_utime, "sys": ru.ru_stime, "maxrss_kib": ru.ru_maxrss,
               "rc": os.waitstatus_to_exitcode(status)}, f)
"""

# hloscope's full parse, timed in a child of the checkout (best of `repeat`, the text read first).
_FULL_PARSE = r"""
import gc, json, sys, time
path, prime, repeat, out, with_xla = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
import hloscope
with open(prime) as f:
    hloscope.parse_all(f.read())  # the grammar and its tables, outside the timings
with open(path) as f:
    text = f.read()
def timed(fn):
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        del result
    return times
res = {"file": hloscope.__file__, "hloscope": timed(lambda: hloscope.parse_all(text))}
if with_xla:
    from jax._src.lib import xla_client as xc
    res["xla"] = timed(lambda: xc.hlo.hlo_module_from_text(text))
with open(out, "w") as f:
    json.dump(res, f)
"""


# ─── checkouts and their children ──────────────────────────────────────────────────────


@dataclass
class Checkout:
    path: Path
    label: str
    commit: str
    work: Path
    template: Path | None = None
    """A cache directory that has seen hloscope (primed), copied for every cold run."""

    @property
    def cache(self) -> Path:
        """The cache directory every run of this checkout uses, refilled from `template` for
        each cold run. Always the same path: Lark keys its grammar tables by the cache file's
        path too (the `cache` option is part of its hash), so a copy elsewhere is rebuilt."""
        return self.work / "cache"

    def env(self, cache_dir: Path | None, extra: dict | None = None) -> dict:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONDONTWRITEBYTECODE", "HLOSCOPE_CACHE", "HLOSCOPE_JOBS", "HLOSCOPE_CACHE_DIR",
                            "PYTHONPATH", "HLOSCOPE_DEBUG")}
        env["PYTHONPATH"] = str(self.path)
        env["PYTHONPYCACHEPREFIX"] = str(self.work.parent / "pycache")
        if cache_dir is not None:
            env["HLOSCOPE_CACHE_DIR"] = str(cache_dir)
        env.update(extra or {})
        return env


def describe_checkout(path: Path, work: Path) -> Checkout:
    path = path.resolve()
    git = lambda *a: subprocess.run(["git", "-C", str(path), *a], capture_output=True, text=True,  # noqa: E731
                                    check=False).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") or "?"
    dirty = git("status", "--porcelain", "--", "hloscope", "grammars")
    branch = git("rev-parse", "--abbrev-ref", "HEAD")
    label = f"{path.name}@{commit}{'+dirty' if dirty else ''}"
    if branch and branch != "HEAD":
        label = f"{path.name}({branch})@{commit}{'+dirty' if dirty else ''}"
    return Checkout(path, label, commit + ("+dirty" if dirty else ""), work)


_counter = [0]

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
QUIET = [0.0]
"""--quiet: how long to wait before each timed run for the machine's other work to calm down."""
MAX_OTHERS = [float("inf")]
"""--max-others: a timed run during which other work kept more CPUs busy is run again ..."""
RETRIES = [2]
"""... at most this many times (--retries); the last one counts whatever happened."""


def busy_seconds() -> float | None:
    """CPU seconds the whole machine has been busy since boot (/proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return (sum(v) - v[3] - v[4]) / TICK  # all but idle and iowait


def wait_quiet() -> float:
    """Wait, at most QUIET s, until other work uses less than half a CPU (sampled over 0.5 s
    while this process sleeps); the seconds waited."""
    waited = 0.0
    while waited < QUIET[0]:
        b0 = busy_seconds()
        time.sleep(0.5)
        b1 = busy_seconds()
        waited += 0.5
        if b0 is None or b1 is None or (b1 - b0) / 0.5 < 0.5:
            break
    return waited


def run_child(argv: list[str], checkout: Checkout, cache_dir: Path | None, extra_env: dict | None = None,
              label: str = "", quiet: bool = False, before=None, refill: bool = False) -> dict:
    """`run_once`, again where other work took more than --max-others CPUs meanwhile (at most
    --retries times). `refill`: the checkout's cache refilled from the primed one before each
    attempt (a cold run), and used whatever `cache_dir` says."""
    for attempt in range(RETRIES[0] + 1):
        if refill:
            cache_dir = fresh_cache(checkout)
        r = run_once(argv, checkout, cache_dir, extra_env, label, quiet, before)
        r["discarded"] = attempt
        if quiet or r["rc"] == NO_HOOK or not r["others"] > MAX_OTHERS[0] or attempt == RETRIES[0]:
            return r
        print(f"      (others took {r['others']:.1f} CPUs: run again)", flush=True)
    return r


def run_once(argv: list[str], checkout: Checkout, cache_dir: Path | None, extra_env: dict | None = None,
             label: str = "", quiet: bool = False, before=None) -> dict:
    """One child through the launcher: wall, cpu (s), peak RSS (MB), its stdout's hash, exit
    status, and how many CPUs other work kept busy meanwhile (`others`: the machine's busy time
    over the run, less the child's own CPU time, per second of wall time). Unless `quiet`
    (an untimed run), first wait for calm (--quiet), then `before()` (its value: `before`)."""
    _counter[0] += 1
    result_file = checkout.work.parent / f"launch-{_counter[0]}.json"
    waited = wait_quiet() if not quiet else 0.0
    before_value = before() if before is not None else None
    b0 = busy_seconds()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCHER, str(result_file), *argv], cwd=checkout.path,
                             env=checkout.env(cache_dir, extra_env), stdout=out, stderr=err,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        timed_out = False
        try:
            p.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            timed_out = True
        b1 = busy_seconds()
        out.seek(0)
        sha = hashlib.sha256(out.read()).hexdigest()[:12]
        err.seek(0)
        err_text = err.read().decode(errors="replace")
    try:
        data = json.loads(result_file.read_text())
        result_file.unlink()
    except (OSError, ValueError):
        data = {"wall": float("nan"), "user": float("nan"), "sys": float("nan"), "maxrss_kib": 0, "rc": -1}
    r = {"wall": data["wall"], "cpu": data["user"] + data["sys"], "rss_mb": data["maxrss_kib"] / 1024,
         "rc": data["rc"], "timeout": timed_out, "out": sha, "err": err_text[-2000:], "waited": waited,
         "before": before_value}
    if "BENCH_FORKS " in err_text:
        try:
            r["forks"] = json.loads(err_text.rsplit("BENCH_FORKS ", 1)[1].split("\n", 1)[0])
        except ValueError:
            pass
    r["others"] = (max(0.0, (b1 - b0) - r["cpu"]) / r["wall"]
                   if b0 is not None and b1 is not None and r["wall"] > 0 else float("nan"))
    if not quiet:
        status = "TIMED OUT" if timed_out else ("" if r["rc"] == 0 else f"exit {r['rc']}")
        paired = f" (XLA just before {before_value:.2f} s)" if isinstance(before_value, float) else ""
        print(f"    {checkout.label:28s} {r['wall']:7.2f} s wall {r['cpu']:7.2f} s cpu {r['rss_mb']:6.0f} MB  "
              f"others {r['others']:.1f} CPU{f', waited {waited:.0f} s' if waited >= 1 else ''}  "
              f"{label}{paired} {status}", flush=True)
        if r["rc"] not in (0, NO_HOOK) and not timed_out:
            print("      stderr: " + err_text[-600:].replace("\n", "\n      "), flush=True)
    return r


def prime(checkout: Checkout) -> None:
    """A cache directory that has seen hloscope: its commands run on small fixtures (Lark's
    grammar tables kept), and the checkout's bytecode compiled into the benchmark's prefix."""
    checkout.cache.mkdir(parents=True)
    py = sys.executable
    found = subprocess.run([py, "-c", "import hloscope, sys; sys.stdout.write(hloscope.__file__)"],
                           cwd=checkout.path, env=checkout.env(checkout.cache), capture_output=True,
                           text=True, check=False).stdout
    if not Path(found).resolve().is_relative_to(checkout.path):
        raise SystemExit(f"{checkout.path}: its children import hloscope from {found!r}, not from the checkout")
    for argv in (["memory", str(PRIME_A)], ["count-collectives", str(PRIME_A)], ["diff", str(PRIME_A), str(PRIME_B)]):
        r = run_child([py, "-m", "hloscope", *argv], checkout, checkout.cache, quiet=True)
        if r["rc"] != 0:
            raise SystemExit(f"{checkout.label}: priming `hloscope {' '.join(argv)}` failed:\n{r['err']}")
    # The patching child's own path (json, importlib) once too.
    run_child([py, "-c", _PATCHING, "[]", "count-collectives", str(PRIME_A)], checkout, checkout.cache, quiet=True)
    checkout.template = checkout.work / "primed-cache"
    shutil.copytree(checkout.cache, checkout.template)
    print(f"  {checkout.label}: hloscope from {Path(found).parent}; cache primed in {checkout.template}", flush=True)


def fresh_cache(checkout: Checkout) -> Path:
    """The checkout's cache directory refilled from the primed one: has seen hloscope, not
    the files measured."""
    shutil.rmtree(checkout.cache, ignore_errors=True)
    shutil.copytree(checkout.template, checkout.cache)
    return checkout.cache


def best(runs: list[dict]) -> dict:
    done = [r for r in runs if r["rc"] == 0 and not r["timeout"]]
    if not done:
        return {**runs[-1], "runs": [r["wall"] for r in runs], "ok": False}
    b = min(done, key=lambda r: r["wall"])
    paired = sorted(r["wall"] / r["before"] for r in done if isinstance(r.get("before"), float))
    return {**b, "runs": [r["wall"] for r in runs], "cpus": [r["cpu"] for r in runs],
            "others_all": [r["others"] for r in runs], "xla_before": [r.get("before") for r in runs],
            "paired": paired, "paired_median": median(paired) if paired else None,
            "rss_max": max(r["rss_mb"] for r in done), "outs": sorted({r["out"] for r in done}), "ok": True}


def median(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


# ─── one module, all checkouts ──────────────────────────────────────────────────────────


def xla_parse(text: str, repeat: int, gate: bool = True) -> list[float]:
    """XLA's parse of `text` in this process, `repeat` times; with `gate`, each after waiting
    for calm (--quiet) and again where other work took more than --max-others CPUs."""
    from jax._src.lib import xla_client as xc

    times = []
    for _ in range(repeat):
        for attempt in range(RETRIES[0] + 1):
            if gate:
                wait_quiet()
            gc.collect()
            b0, c0 = busy_seconds(), time.process_time()
            t0 = time.perf_counter()
            m = xc.hlo.hlo_module_from_text(text)
            wall = time.perf_counter() - t0
            b1, c1 = busy_seconds(), time.process_time()
            del m
            others = max(0.0, (b1 - b0) - (c1 - c0)) / wall if b0 is not None and b1 is not None else 0.0
            if not gate or not others > MAX_OTHERS[0] or attempt == RETRIES[0]:
                break
            print(f"      (XLA {wall:.2f} s; others took {others:.1f} CPUs: run again)", flush=True)
        times.append(wall)
    return times


def command_rows(kind: str, a: Path, b: Path, checkouts: list[Checkout], repeat: int, text: str | None) -> dict:
    """memory, count-collectives, diff: cold (fresh primed cache each run) then warm. With
    `text` (A's), XLA's parse of it is timed in this process just before each run."""
    py = sys.executable
    before = (lambda: xla_parse(text, 1, gate=False)[0]) if text is not None else None
    commands = {"memory": ["memory", str(a)], "count-collectives": ["count-collectives", str(a)],
                "diff": ["diff", str(a), str(b)]}
    out: dict = {}
    for name, args in commands.items():
        argv = [py, "-m", "hloscope", *args]
        print(f"  hloscope {name}, cold ...", flush=True)
        cold = {c.label: [] for c in checkouts}
        for _ in range(repeat):
            for c in checkouts:
                cold[c.label].append(run_child(argv, c, None, label=f"{name} cold ({kind})", before=before,
                                               refill=True))
        print(f"  hloscope {name}, warm (the last cold run's cache) ...", flush=True)
        warm = {c.label: [] for c in checkouts}
        for _ in range(repeat):
            for c in checkouts:
                warm[c.label].append(run_child(argv, c, c.cache, label=f"{name} warm ({kind})", before=before))
        for c in checkouts:
            out[(name, c.label)] = {"cold": best(cold[c.label]), "warm": best(warm[c.label])}
    return out


def full_parse(kind: str, a: Path, checkouts: list[Checkout], repeat: int, with_xla: bool) -> dict:
    out = {}
    print("  hloscope parse_all (full), in a child per checkout ...", flush=True)
    for c in checkouts:
        _counter[0] += 1
        res_file = c.work / f"full-{_counter[0]}.json"
        r = run_child([sys.executable, "-c", _FULL_PARSE, str(a), str(PRIME_A), str(repeat), str(res_file),
                       "1" if with_xla else "0"], c, None, label=f"full parse x{repeat} ({kind})", refill=True)
        try:
            data = json.loads(res_file.read_text())
        except (OSError, ValueError):
            data = {"hloscope": [float("nan")], "file": "?"}
        out[c.label] = {"best": min(data["hloscope"]), "runs": data["hloscope"], "xla_child": data.get("xla"),
                        "rss_mb": r["rss_mb"]}
        print(f"    {c.label:28s} parse_all best {min(data['hloscope']):.2f} s (runs "
              f"{' '.join(f'{t:.2f}' for t in data['hloscope'])})"
              + (f"; XLA in the same child best {min(data['xla']):.2f} s" if data.get("xla") else ""), flush=True)
    return out


def mechanism_rows(kind: str, a: Path, b: Path, checkouts: list[Checkout], repeat: int,
                   mechanisms: list[Mechanism]) -> dict:
    """Each mechanism off in turn, cold, interleaved with a baseline in every repetition."""
    py = sys.executable
    args = {"memory": ["memory", str(a)], "count-collectives": ["count-collectives", str(a)],
            "diff": ["diff", str(a), str(b)]}
    used = sorted({cmd for m in mechanisms for cmd in m.commands}, key=list(args).index)
    baseline = Mechanism("baseline", "everything on", "-", commands=tuple(used))
    runs: dict = {}
    skip: set = set()
    print(f"  mechanisms off in turn, cold ({', '.join(used)}; {repeat} repetitions) ...", flush=True)
    for rep in range(repeat):
        for m in (baseline, *mechanisms):
            for cmd in m.commands:
                for c in checkouts:
                    key = (m.name, cmd, c.label)
                    if key in skip:
                        continue
                    patches = [list(p) for p in m.patches]
                    argv = [py, "-c", _PATCHING, json.dumps(patches), *args[cmd]]
                    r = run_child(argv, c, None, m.env, refill=True,
                                  label=f"{cmd} cold, {m.name}{'' if m is baseline else ' off'} ({kind}) "
                                        f"[{rep + 1}/{repeat}]")
                    if r["rc"] == NO_HOOK:
                        skip.add(key)
                        runs[key] = None
                        continue
                    runs.setdefault(key, []).append(r)
    out = {}
    for key, v in runs.items():
        if not v:
            out[key] = None
            continue
        out[key] = best(v)
        base = runs.get(("baseline", key[1], key[2])) or []
        pairs = [(r, b) for r, b in zip(v, base) if r["rc"] == 0 == b["rc"] and not (r["timeout"] or b["timeout"])]
        out[key]["paired_gain"] = median([r["wall"] - b["wall"] for r, b in pairs]) if pairs else None
        out[key]["paired_cpu_gain"] = median([r["cpu"] - b["cpu"] for r, b in pairs]) if pairs else None
    return out


# ─── reporting ──────────────────────────────────────────────────────────────────────────


def fmt_s(x: float) -> str:
    return f"{x:.2f}"


def module_table(res: dict, checkouts: list[Checkout]) -> tuple[list[str], list[tuple[str, bool]]]:
    """Markdown rows of one module's results (each measure, then each checkout), and the
    (label, ok) checks."""
    kind, xla, size = res["kind"], res["xla"], res["size"]
    lines, checks = [], []

    def row(lab, measure, x, target, unit_note="", rss_target=True, paired=None):
        wall, cpu, rss = x["wall"], x.get("cpu"), x.get("rss_max")
        ratio = wall / xla
        ok = ratio <= target if target is not None else None
        rss_ratio = rss * 2**20 / size if rss is not None else None
        ok_rss = (rss_ratio <= TARGETS["rss"]) if (rss is not None and rss_target) else None
        if ok is not None:
            checks.append((f"{kind} · {lab} · {measure}: {ratio:.2f}× XLA ≤ {target:g}×", ok))
        if ok_rss is not None:
            checks.append((f"{kind} · {lab} · {measure}: peak RSS {rss_ratio:.2f}× file ≤ {TARGETS['rss']:g}×",
                           ok_rss))
        tgt = f"≤ {target:g}×{unit_note} {verdict(ok)}" if target is not None else ""
        rss_s = f"{rss:.0f} MB ({rss_ratio:.2f}×) {verdict(ok_rss) if ok_rss is not None else ''}" \
            if rss is not None else ""
        others = x.get("others")
        lines.append(f"| {kind} | {measure} | {lab} | {fmt_s(wall)} | {fmt_s(cpu) if cpu is not None else ''} | "
                     f"{ratio:.2f}× | {tgt} | {paired or ''} | {rss_s} | "
                     f"{f'{others:.1f}' if isinstance(others, float) else ''} |")

    lines.append(f"| {kind} | XLA hlo_module_from_text | (this process) | {fmt_s(xla)} |  | 1.00× | unit |"
                 f" runs {' '.join(fmt_s(t) for t in res['xla_runs'])}; at the end "
                 f"{' '.join(fmt_s(t) for t in res['xla_end_runs'])} |  |  |")
    for c in checkouts:
        f = res["full"][c.label]
        in_child = f"{f['best'] / min(f['xla_child']):.2f}× XLA in the same child" if f.get("xla_child") else ""
        row(c.label, "parse_all (full)", {"wall": f["best"]}, TARGETS["full"], paired=in_child)
    for cmd in ("memory", "count-collectives", "diff"):
        target_cold = TARGETS["diff_cold"] if cmd == "diff" else TARGETS["cold"]
        note = " of A" if cmd == "diff" else ""
        for phase, target in (("cold", target_cold), ("warm", TARGETS["warm"])):
            for c in checkouts:
                x = res["commands"][(cmd, c.label)][phase]
                if not x["ok"]:
                    lines.append(f"| {kind} | {cmd} {phase} | {c.label} | failed |  |  |  |  |  |  |")
                    checks.append((f"{kind} · {c.label} · {cmd} {phase}: did not finish", False))
                    continue
                paired = f"{x['paired_median']:.2f}× (median of {len(x['paired'])})" \
                    if x.get("paired_median") is not None else ""
                row(c.label, f"{cmd} {phase}", x, target, unit_note=note, rss_target=phase == "cold", paired=paired)
    return lines, checks


def mechanism_table(all_results: list[dict], checkouts: list[Checkout], mechanisms: list[Mechanism]) -> list[str]:
    lines = ["| module | command | mechanism off | switch | checkout | cold s (cpu s) | × XLA | gain: best-of | "
             "gain: median of pairs (cpu) | peak RSS MB | others' CPUs | forks (by whom) | output |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for res in all_results:
        mech = res.get("mechanisms")
        if not mech:
            continue
        kind, xla = res["kind"], res["xla"]
        for cmd in ("memory", "count-collectives", "diff"):
            for m in [Mechanism("baseline", "", "-")] + mechanisms:
                if cmd not in m.commands and m.name != "baseline":
                    continue
                for c in checkouts:
                    base = mech.get(("baseline", cmd, c.label))
                    if base is None:
                        continue
                    head = f"| {kind} | {cmd} | {m.name} | {m.switch} | {c.label} |"
                    r = mech.get((m.name, cmd, c.label))
                    if r is None:
                        lines.append(f"{head} n/a (no such hook in this checkout) |  |  |  |  |  |  |  |")
                        continue
                    if not r["ok"]:
                        lines.append(f"{head} failed |  |  |  |  |  |  |  |")
                        continue
                    gain = paired = ""
                    if m.name != "baseline":
                        gain = f"{r['wall'] - base['wall']:+.2f} s"
                        if r.get("paired_gain") is not None:
                            paired = f"{r['paired_gain']:+.2f} s ({r['paired_cpu_gain']:+.2f} s)"
                    same = "same" if r["outs"] == base["outs"] else f"DIFFERS ({','.join(r['outs'])})"
                    forks = r.get("forks")
                    forks = "?" if forks is None else (
                        f"{sum(forks.values())}: " + ", ".join(f"{k}×{v}" if v > 1 else k for k, v in sorted(forks.items()))
                        if forks else "0")
                    lines.append(f"{head} {r['wall']:.2f} ({r['cpu']:.2f}) | {r['wall'] / xla:.2f}× | {gain} | "
                                 f"{paired} | {r['rss_max']:.0f} | {r['others']:.1f} | {forks} | {same} |")
    return lines


def outputs_note(all_results: list[dict], checkouts: list[Checkout]) -> list[str]:
    """Whether each command printed the same thing cold and warm, and in every checkout."""
    notes = []
    for res in all_results:
        for cmd in ("memory", "count-collectives", "diff"):
            outs = {c.label: set(res["commands"][(cmd, c.label)]["cold"].get("outs", []))
                    | set(res["commands"][(cmd, c.label)]["warm"].get("outs", [])) for c in checkouts}
            every = set().union(*outs.values())
            if len(every) == 1:
                notes.append(f"{res['kind']} {cmd}: one output (sha256 {next(iter(every))}) cold and warm"
                             + (", in every checkout" if len(checkouts) > 1 else ""))
            else:
                notes.append(f"{res['kind']} {cmd}: OUTPUTS DIFFER: "
                             + "; ".join(f"{k}: {','.join(sorted(v))}" for k, v in outs.items()))
    return notes


# ─── main ───────────────────────────────────────────────────────────────────────────────


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", action="append", type=Path, metavar="DIR",
                    help="a checkout whose hloscope to measure (repeatable; default: this benchmark's own)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per timing, the best reported (default 3)")
    ap.add_argument("--modules", default="repeating,distinct",
                    help="which modules (default: repeating,distinct)")
    ap.add_argument("--files", nargs=2, type=Path, metavar=("A", "B"),
                    help="measure these two files (A, and B as A's diff pair) instead of the generated modules")
    ap.add_argument("--mechanisms", action="store_true",
                    help="also memory and count-collectives cold with each speed mechanism off in turn")
    ap.add_argument("--only", default=None, metavar="NAMES",
                    help="with --mechanisms: only these (comma-separated names, as the table writes them)")
    ap.add_argument("--mechanisms-only", action="store_true", help="skip the main table (with --mechanisms)")
    ap.add_argument("--xla-in-child", action="store_true",
                    help="also time XLA's parse in the full-parse child (a check on the unit)")
    ap.add_argument("--no-paired", action="store_true",
                    help="do not time XLA's parse again just before each cold and warm run (the paired "
                         "ratios, median, printed beside the best-of verdicts; ~1.5 s a run)")
    ap.add_argument("--quiet", type=float, default=0.0, metavar="S",
                    help="before each timed run, wait up to S seconds until other work on the machine uses "
                         "under half a CPU (default 0: do not wait)")
    ap.add_argument("--max-others", type=float, default=float("inf"), metavar="CPUS",
                    help="run a timed run again where other work kept more than CPUS busy meanwhile "
                         "(default: never); at most --retries times")
    ap.add_argument("--retries", type=int, default=2, help="see --max-others (default 2)")
    ap.add_argument("--json", type=Path, metavar="OUT", help="write every measurement as JSON")
    ap.add_argument("--markdown", type=Path, metavar="OUT", help="write the tables as markdown")
    ap.add_argument("--timeout", type=float, default=TIMEOUT, help="kill a child after this many seconds")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (caches, bytecode)")
    args = ap.parse_args(argv)
    globals()["TIMEOUT"] = args.timeout
    QUIET[0] = args.quiet
    MAX_OTHERS[0] = args.max_others
    RETRIES[0] = args.retries
    started = time.perf_counter()
    load_start = loadavg()

    work_root = Path(tempfile.mkdtemp(prefix="hloscope-protocol-"))
    repos = args.repo or [REPO]
    checkouts = []
    for i, path in enumerate(repos):
        w = work_root / f"checkout{i}"
        w.mkdir()
        checkouts.append(describe_checkout(path, w))
    if len({c.label for c in checkouts}) < len(checkouts):
        for i, c in enumerate(checkouts):
            c.label = f"{i + 1}:{c.label}"
    mechanisms = list(MECHANISMS)
    if args.only:
        wanted = {n.strip() for n in args.only.split(",")}
        mechanisms = [m for m in mechanisms if m.name in wanted]
        if not mechanisms:
            raise SystemExit(f"--only: none of {sorted(wanted)}; names: {', '.join(m.name for m in MECHANISMS)}")

    print(f"load average at start: {load_start}")
    print(f"python {platform.python_version()} ({sys.executable}), {platform.platform()}")
    print(f"checkouts: {', '.join(f'{c.label} = {c.path}' for c in checkouts)}")
    print(f"work directory (caches, bytecode): {work_root}")
    print("priming (a cache that has seen hloscope, bytecode compiled) ...", flush=True)
    for c in checkouts:
        prime(c)

    all_results = []
    try:
        chosen = [("given", *args.files)] if args.files else [
            (kind, P.ensure_module(P.CONFIGS[MODULES[kind][0]]), P.ensure_module(P.CONFIGS[MODULES[kind][1]]))
            for kind in args.modules.split(",")]
        for kind, a, b in chosen:
            a, b = a.resolve(), b.resolve()
            size = a.stat().st_size
            print(f"\n=== {kind}: {a.name} ({size / 1e6:.1f} MB), diff pair {b.name} "
                  f"({b.stat().st_size / 1e6:.1f} MB); load {loadavg()} ===", flush=True)
            text = a.read_text()
            print(f"  XLA hlo_module_from_text in this process, best of {args.repeat} ...", flush=True)
            xla_runs = xla_parse(text, args.repeat)
            print(f"    {min(xla_runs):.2f} s (runs {' '.join(fmt_s(t) for t in xla_runs)})", flush=True)
            res = {"kind": kind, "file": str(a), "pair": str(b), "size": size, "pair_size": b.stat().st_size,
                   "xla": min(xla_runs), "xla_runs": xla_runs, "load_at_start": loadavg()}
            if not args.mechanisms_only:
                res["full"] = full_parse(kind, a, checkouts, args.repeat, args.xla_in_child)
                res["commands"] = command_rows(kind, a, b, checkouts, args.repeat,
                                               None if args.no_paired else text)
            if args.mechanisms:
                res["mechanisms"] = mechanism_rows(kind, a, b, checkouts, args.repeat, mechanisms)
            res["xla_end_runs"] = xla_parse(text, args.repeat)
            del text
            gc.collect()
            print(f"  XLA again at the module's end: {' '.join(fmt_s(t) for t in res['xla_end_runs'])} s "
                  "(drift check, not used)", flush=True)
            res["load_at_end"] = loadavg()
            all_results.append(res)
    finally:
        if not args.keep:
            shutil.rmtree(work_root, ignore_errors=True)

    elapsed = time.perf_counter() - started
    load_end = loadavg()
    md: list[str] = [
        f"Speed, issue 29's protocol (benchmarks/protocol.py, --repeat {args.repeat}); "
        f"load average {load_start} at the start, {load_end} at the end; {elapsed / 60:.1f} min.",
        "Unit: XLA's `hlo_module_from_text` in the benchmark's process, best of "
        f"{args.repeat}, file already read (diff: XLA's parse of A); --quiet {args.quiet:g}, --max-others "
        f"{args.max_others:g} (--retries {args.retries}). Cold: fresh process, fresh cache "
        "that has seen hloscope (small fixtures) but not these files. Warm: again, cache populated. "
        "RSS: os.wait4 ru_maxrss of the child (its reaped helpers' peaks included, not summed), × the "
        "file (diff: × A's file).",
        "",
    ]
    checks: list[tuple[str, bool]] = []
    if not args.mechanisms_only:
        md += ["| module | measure | checkout | wall s | cpu s | × XLA | target | × XLA paired | "
               "peak RSS (× file) | others' CPUs |",
               "|---|---|---|---|---|---|---|---|---|---|"]
        for res in all_results:
            lines, ch = module_table(res, checkouts)
            md += lines
            checks += ch
        md += ["", "Modules: " + "; ".join(
            f"{r['kind']} = {Path(r['file']).name} ({r['size'] / 1e6:.1f} MB), pair {Path(r['pair']).name} "
            f"({r['pair_size'] / 1e6:.1f} MB)" for r in all_results)]
        md += [""] + [f"- {n}" for n in outputs_note(all_results, checkouts)]
    if args.mechanisms:
        md += ["", "Each mechanism off in turn (cold, best of "
               f"{args.repeat}; baseline in the same repetitions; gain = time off − time on, positive: the "
               "mechanism saves that much; best-of: the difference of the best runs; median of pairs: of "
               "each repetition's run less the baseline run just before it, CPU time's alike in brackets; "
               "others' CPUs: what other work on the machine took during the best run; forks: those the "
               "command's own process made in its best run, by the hloscope function that asked):", ""]
        md += mechanism_table(all_results, checkouts, mechanisms)
        md += ["", "| mechanism | what | switch | where a switch would go |", "|---|---|---|---|"]
        md += [f"| {m.name} | {m.what} | {m.switch}{' ' + ' '.join(f'{k}={v}' for k, v in m.env.items()) if m.env else ''}"
               f" | {m.where} |" for m in mechanisms]
        md += [f"| {name} | | none | {where} |" for name, where in UNSWITCHED]
    if checks:
        md += ["", f"Targets: {sum(ok for _, ok in checks)}/{len(checks)} PASS"]
        md += [f"- {verdict(ok)} {label}" for label, ok in checks]

    print("\n" + "\n".join(md))
    print(f"\nload average at end: {load_end}; benchmark took {elapsed:.0f} s")
    if args.markdown:
        args.markdown.write_text("\n".join(md) + "\n")
    if args.json:
        def plain(x):
            if isinstance(x, dict):
                return {(" · ".join(k) if isinstance(k, tuple) else k): plain(v) for k, v in x.items()}
            if isinstance(x, (list, tuple)):
                return [plain(v) for v in x]
            return x
        args.json.write_text(json.dumps(plain({
            "load_at_start": load_start, "load_at_end": load_end, "seconds": elapsed, "repeat": args.repeat,
            "python": sys.version, "targets": TARGETS,
            "checkouts": [{"label": c.label, "path": str(c.path), "commit": c.commit} for c in checkouts],
            "modules": all_results,
            "mechanisms": [{"name": m.name, "what": m.what, "switch": m.switch, "env": m.env,
                            "patches": [list(p) for p in m.patches], "commands": list(m.commands),
                            "where": m.where} for m in mechanisms] if args.mechanisms else [],
            "checks": [{"label": label, "ok": ok} for label, ok in checks],
        }), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
