"""Speed benchmark (issue #5): is a 100 MB dump analyzed interactively?

Run on demand (not a test):

    python benchmarks/speed.py                # 22 MB module, + the ≈ 54 and ≈ 117 MB ones if built
    python benchmarks/speed.py --large        # build the bigger modules if missing (~35 min)
    python benchmarks/speed.py --small-only   # only the 22 MB module
    python benchmarks/speed.py --repeat 5     # runs per timing (the best is reported)
    python benchmarks/speed.py --diff-only    # only `hloscope diff` of the 22 MB module and its pair

For each module (generated and cached by benchmarks/parse.py) it prints, in one run:

  in-process   XLA's C++ parser (`hlo_module_from_text`), hloscope's full parse
               (`parse_all`) and lazy parse, and the analyses on an already parsed module;
  end-to-end   `python -m hloscope memory FILE` and `python -m hloscope count-collectives
               FILE` as subprocesses (interpreter start included, cwd = the repo so the
               working tree is what runs), cold (parsed-module cache cleared before each run)
               and warm (cache populated), with each child's peak RSS (os.wait4, per child);
               also `python -c pass`, `import hloscope.cli` and `import + load_all` so the
               end-to-end time can be split into interpreter, imports, parse and analysis;
  targets      PASS/FAIL next to the values: full parse ≤ 3× XLA's; end-to-end ≤ 2× XLA's
               first parse cold and ≤ 0.5× warm (`hloscope diff` of two modules: ≤ 3× and
               ≤ 0.5× XLA's first parse of one); peak RSS ≤ 5× the file; and, with both
               modules, the larger modules' times ≤ 5.5× the small one's.

XLA's parse is timed like for like. The in-process rows (hloscope's parse in this process,
repeated) are set against XLA's parse repeated in this process. The end-to-end rows (a
fresh hloscope process reading the file once) are set against XLA's first parse in a fresh
process (`xla_first_parse`: jax's import and the file's read not timed, nor the module's
destruction), as a tool reading the file once parses it. The two differ by 10-15% on the
22 MB module: a first parse takes ~49K page faults (~0.1 s of system time) that repeats in
one process do not, their allocator holding the memory a parse needs already; every
hloscope process pays its own.

The machine may be shared: every timing is the best of --repeat runs, CPU time is printed
beside wall time, and the load average is printed at the start and the end. Its speed also
drifts (1.2-1.5x over minutes): each end-to-end run is printed against XLA's first parse
timed just before it (`PairedXla`), beside the best-of verdicts.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))


def _load_parse_bench():
    """benchmarks/parse.py as a module (generation, module paths, parser fingerprint)."""
    spec = importlib.util.spec_from_file_location("hloscope_bench_parse", HERE / "parse.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


P = _load_parse_bench()

TARGET_PARSE_X_XLA = 3.0
TARGET_COLD_X_XLA = 2.0
TARGET_WARM_X_XLA = 0.5
TARGET_DIFF_COLD_X_XLA = 3.0
TARGET_DIFF_WARM_X_XLA = 0.5
TARGET_SCALING = 5.5
TARGET_RSS_X_FILE = 5.0


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f"  ({os.cpu_count()} CPUs)"
    except OSError:
        return "?"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


# ─── the parsed-module cache (hloscope/api/cache.py) ─────────────────────


class ModuleCache:
    """Where hloscope keeps parsed-module outlines and analysis results (hloscope/api/cache.py),
    so 'cold' can clear them. Only those two directories are cleared, never the grammar
    cache beside them (HLOSCOPE_CACHE=0 would turn all off, and a cold start then also
    rebuilds the grammar, ~2 s)."""

    def __init__(self) -> None:
        from hloscope.speed import cache

        self.modules = Path(cache.private_dir("modules"))
        self.results = Path(cache.private_dir("results"))

    def clear(self) -> None:
        for d in (self.modules, self.results):
            shutil.rmtree(d, ignore_errors=True)

    def clear_results(self) -> None:
        """Keep the outlines: what a second, different command on the same file finds."""
        shutil.rmtree(self.results, ignore_errors=True)

    def describe(self) -> str:
        return (f"hloscope/api/cache.py; cold = {self.modules} and {self.results} cleared before each run; "
                "warm = both kept; 'outline only' = results cleared (another command ran first)")


# ─── one child process, measured on its own ─────────────────────────────────────────────


TIMEOUT = 600.0  # seconds per child; --timeout
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run_child(argv: list[str], extra_env: dict | None = None, capture_err: bool = False) -> dict:
    """Wall time, CPU time and peak RSS (MB) of one child, from os.wait4's own rusage.
    A child still running after TIMEOUT s is killed and reported as timed out."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra_env or {})
    timed_out = False
    # Peak RSS comes from /usr/bin/time (%M): a child forked from this process would report
    # this process's RSS at fork as its own peak (Linux keeps the pre-exec high-water mark).
    timef = tempfile.NamedTemporaryFile(suffix=".time", delete=False) if GNU_TIME else None  # noqa: SIM115
    cmd = [GNU_TIME, "-f", "%M", "-o", timef.name, *argv] if GNU_TIME else argv
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                             start_new_session=True)  # a group of its own, to kill on timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > TIMEOUT:
                os.killpg(p.pid, signal.SIGKILL)
                timed_out = True
                _, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.005)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0 and not timed_out:
            err.seek(0)
            raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}:\n{err.read().decode()[-2000:]}")
        out_bytes = out.tell()
        err.seek(0)
        err_text = err.read().decode(errors="replace") if capture_err else ""
    rss = ru.ru_maxrss / 1024
    if timef is not None:
        try:
            rss = int(Path(timef.name).read_text().split()[-1]) / 1024
        except (ValueError, IndexError, OSError):
            pass  # killed before time wrote it: keep wait4's figure (an upper bound)
        timef.close()
        os.unlink(timef.name)
    r = {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": rss, "out": out_bytes,
         "timeout": timed_out, "err": err_text}
    print(f"    {wall:8.2f} s wall {r['cpu']:8.2f} s cpu {r['rss']:7.0f} MB"
          f"{'  TIMED OUT' if timed_out else ''}  {' '.join(Path(a).name if '/' in a else a for a in argv[1:])[:70]}",
          flush=True)
    return r


def best_child(argv, repeat: int, before=None, extra_env=None) -> dict:
    runs = []
    for _ in range(repeat):
        if before:
            before()
        runs.append(run_child(argv, extra_env))
        if runs[-1]["timeout"]:
            break  # no point repeating a run that did not finish
    best = min(runs, key=lambda r: r["wall"])
    return {**best, "runs": [r["wall"] for r in runs], "rss_max": max(r["rss"] for r in runs),
            "timeout": all(r["timeout"] for r in runs)}


_XLA_FIRST_PARSE = """\
import sys, time
from jax._src.lib import xla_client as xc
text = open(sys.argv[1]).read()
t0 = time.perf_counter()
module = xc.hlo.hlo_module_from_text(text)
sys.stdout.write("%.6f" % (time.perf_counter() - t0))
"""


def xla_first_parse(path: Path) -> float:
    """XLA's parse of `path` as a tool reading the file once parses it: the first parse in a
    fresh process. Not timed: jax's import, the file's read and the module's destruction
    (kept alive until the time is taken; a hloscope process exits without freeing)."""
    out = subprocess.run([sys.executable, "-c", _XLA_FIRST_PARSE, str(path)], capture_output=True,
                         text=True, check=True, stdin=subprocess.DEVNULL)
    return float(out.stdout)


def best_first_parse(path: Path, repeat: int) -> tuple[float, list[float]]:
    """The best of `repeat` fresh processes' first parses of `path` (`xla_first_parse`)."""
    times = [xla_first_parse(path) for _ in range(repeat)]
    return min(times), times


class PairedXla:
    """XLA's first parse of one file in a fresh process (`xla_first_parse`), timed again just
    before each run of a child. The machine's speed drifts by 1.2-1.5x over minutes: a run's
    ratio to the XLA parse just before it follows the code, where a best-of time against a
    best-of XLA time taken minutes earlier follows the machine. The verdicts stay best-of;
    these ratios are printed beside."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.times: dict[str, list[float]] = {}

    def before(self, key: str, then=None):
        """A `before` for `best_child`: XLA's parse timed (under `key`), then `then()`."""
        def run() -> None:
            self.times.setdefault(key, []).append(xla_first_parse(self.path))
            if then is not None:
                then()
        return run

    def line(self, key: str, label: str, child: dict) -> str:
        """Each run of `child` against XLA's parse just before it, and their median."""
        pairs = list(zip(self.times.get(key, []), child["runs"]))
        if not pairs:
            return f"  {label}: no paired runs"
        ratios = sorted(t / x for x, t in pairs)
        return (f"  {label}, each run against XLA's first parse just before it: "
                + "  ".join(f"{t:.2f}/{x:.2f} s = {t / x:.2f}×" for x, t in pairs)
                + f"  (median {ratios[len(ratios) // 2]:.2f}×)")


# ─── one module ─────────────────────────────────────────────────────────────────────────


def bench_module(path: Path, repeat: int, cache: ModuleCache) -> dict:
    import hloscope
    from hloscope.text import parser as hp

    size = path.stat().st_size
    text = path.read_text()
    r: dict = {"path": path, "mb": size / 1e6, "size": size}
    print(f"\n=== {path.relative_to(REPO)}  ({size / 1e6:.1f} MB) ===", flush=True)

    # ── in-process ──
    hp._lark()  # the grammar (cached on disk): outside the timings
    from jax._src.lib import xla_client as xc

    print("  XLA C++ parse ...", flush=True)
    r["xla"], r["xla_all"] = P.best_of(lambda: xc.hlo.hlo_module_from_text(text), repeat)
    print(f"    {r['xla']:.2f} s", flush=True)
    print("  hloscope parse_all ...", flush=True)
    r["full"], r["full_all"] = P.best_of(lambda: hloscope.parse_all(text), repeat)
    print(f"    {r['full']:.2f} s", flush=True)
    print("  hloscope parse_all(lazy=True) ...", flush=True)
    r["lazy"], r["lazy_all"] = P.best_of(lambda: hloscope.parse_all(text, lazy=True), repeat)
    print(f"    {r['lazy']:.2f} s", flush=True)

    modules = hloscope.parse_all(text)
    r["insts"], r["comps"] = P.count_instructions(modules)
    del modules
    text = None  # the children below read the file themselves
    gc.collect()
    print("  XLA C++ parse, first in a fresh process ...", flush=True)
    r["xla_first"], r["xla_first_all"] = best_first_parse(path, repeat)
    print(f"    {r['xla_first']:.2f} s", flush=True)
    paired = r["paired"] = PairedXla(path)

    # The analyses alone, each once on a fully parsed module, in a child (so --timeout
    # bounds them too): parse, then time only the analysis.
    print("  analyses (in a child, parse not timed) ...", flush=True)
    # Through the Module's methods, as the commands run them (the forking executor included).
    for key, name in (("an_memory", "memory"), ("an_coll", "collectives")):
        code = (f"import sys, time, hloscope; "
                f"ms = hloscope.load_all(sys.argv[1]); t0 = time.perf_counter(); [m.{name}() for m in ms]; "
                f"sys.stderr.write('ANALYSIS %.6f\\n' % (time.perf_counter() - t0))")
        # No result cache: the analysis must run (the grammar is built outside the timing).
        c = run_child([sys.executable, "-c", code, str(path)], extra_env={"HLOSCOPE_CACHE": "0"}, capture_err=True)
        r[key] = float(c["err"].split("ANALYSIS ")[1].split()[0]) if "ANALYSIS " in c["err"] else None
        r[key + "_child"] = c
        print(f"    {name}: " + (f"{r[key]:.2f} s" if r[key] is not None else "did not finish"), flush=True)

    # ── subprocesses ──
    py = sys.executable
    f = str(path)
    print("  subprocesses: interpreter, imports, load_all ...", flush=True)
    r["py_pass"] = best_child([py, "-c", "pass"], repeat)
    r["imp_cli"] = best_child([py, "-c", "import hloscope.cli"], repeat)
    r["imp_cmds"] = best_child(
        [py, "-c", ("import hloscope.cli, hloscope.cli.commands.memory, hloscope.cli.commands.collectives, "
                    "hloscope.text.parser, hloscope.analysis.memory, hloscope.analysis.collectives, hloscope.report")], repeat)
    # As the commands load a file: lazily, through the cache (cleared, so this parses).
    r["load_cold"] = best_child([py, "-c", "import sys, hloscope; hloscope.load_all(sys.argv[1], lazy=True)", f],
                                repeat, before=cache.clear)
    for key, cmd in (("memory", "memory"), ("coll", "count-collectives")):
        argv = [py, "-m", "hloscope", cmd, f]
        print(f"  subprocesses: hloscope {cmd} cold ...", flush=True)
        r[f"{key}_cold"] = best_child(argv, repeat, before=paired.before(f"{key}_cold", cache.clear))
        cache.clear()
        if r[f"{key}_cold"]["timeout"]:
            r[f"{key}_warm"] = r[f"{key}_outline"] = r[f"{key}_cold"]
            continue
        r[f"{key}_first"] = run_child(argv)  # populates the cache
        print(f"  subprocesses: hloscope {cmd} warm ...", flush=True)
        r[f"{key}_warm"] = best_child(argv, repeat, before=paired.before(f"{key}_warm"))
        print(f"  subprocesses: hloscope {cmd}, outline cached, result not ...", flush=True)
        r[f"{key}_outline"] = best_child(argv, repeat, before=cache.clear_results)
    cache.clear()
    return r


def print_module(r: dict) -> list[tuple[str, bool]]:
    checks: list[tuple[str, bool]] = []
    mb, xla = r["mb"], r["xla"]
    name = r["path"].name
    print(f"\n── {name}: {mb:.1f} MB, {r['insts']:,d} instructions in {r['comps']:,d} computations ──")
    print(f"\nin-process, best of {len(r['xla_all'])}   {'time s':>8s} {'MB/s':>7s} {'× XLA':>7s}  target")
    rows = [
        ("XLA C++ hlo_module_from_text", xla, None),
        ("hloscope parse_all (full)", r["full"], TARGET_PARSE_X_XLA),
        ("hloscope parse_all(lazy=True)", r["lazy"], None),
    ]
    for label, t, target in rows:
        tgt = ""
        if target is not None:
            ok = t <= target * xla
            tgt = f"≤ {target:g}× XLA  {verdict(ok)}"
            checks.append((f"{name}: full parse ≤ {target:g}× XLA ({t / xla:.2f}×)", ok))
        print(f"{label:32s} {t:8.2f} {mb / t:7.1f} {t / xla:7.2f}  {tgt}")
    for label, key in (("analyze_memory (parsed module)", "an_memory"),
                       ("analyze_collectives (parsed)", "an_coll")):
        t = r[key]
        c = r[key + "_child"]
        shown = f"{t:8.2f}" if t is not None else f"  > {c['wall']:.0f} (killed)"
        print(f"{label:32s} {shown} {'':7s} {(t / xla if t is not None else float('nan')):7.2f}  "
              f"(child: parse + analysis peak RSS {c['rss']:.0f} MB)")
    print("runs (s): XLA " + " ".join(f"{t:.2f}" for t in r["xla_all"])
          + " | full " + " ".join(f"{t:.2f}" for t in r["full_all"])
          + " | lazy " + " ".join(f"{t:.2f}" for t in r["lazy_all"]))

    first = r["xla_first"]
    print(f"\nsubprocess (cwd = repo), best     {'wall s':>7s} {'cpu s':>6s} {'× XLA':>6s} "
          f"{'RSS MB':>7s} {'RSS/file':>8s}  targets (time · RSS); × XLA: its first parse in a fresh "
          f"process, best {first:.2f} s (runs {' '.join(f'{t:.2f}' for t in r['xla_first_all'])})")
    rows = [
        ("python -c pass", r["py_pass"], None),
        ("import hloscope.cli", r["imp_cli"], None),
        ("import cli + commands + analyses", r["imp_cmds"], None),
        ("import + load_all(FILE, lazy), cold", r["load_cold"], None),
        ("hloscope memory, cold", r["memory_cold"], TARGET_COLD_X_XLA),
        ("hloscope memory, warm", r["memory_warm"], TARGET_WARM_X_XLA),
        ("  memory, outline only", r["memory_outline"], None),
        ("hloscope count-collectives, cold", r["coll_cold"], TARGET_COLD_X_XLA),
        ("hloscope count-collectives, warm", r["coll_warm"], TARGET_WARM_X_XLA),
        ("  count-collectives, outline only", r["coll_outline"], None),
    ]
    for label, c, target in rows:
        rss_ratio = c["rss_max"] * 2**20 / r["size"]
        tgt = ""
        if target is not None:
            ok_t = c["wall"] <= target * first
            ok_m = rss_ratio <= TARGET_RSS_X_FILE
            tgt = f"≤ {target:g}× {verdict(ok_t)} · ≤ {TARGET_RSS_X_FILE:g}× {verdict(ok_m)}"
            checks.append((f"{name}: {label} ≤ {target:g}× XLA's first parse ({c['wall'] / first:.2f}×)", ok_t))
            checks.append((f"{name}: {label} peak RSS ≤ {TARGET_RSS_X_FILE:g}× file ({rss_ratio:.2f}×)", ok_m))
        print(f"{label:34s} {c['wall']:7.2f} {c['cpu']:6.2f} {c['wall'] / first:6.2f} "
              f"{c['rss_max']:7.0f} {rss_ratio:8.2f}  {tgt}"
              f"{f'  (killed after {TIMEOUT:g} s: times/RSS are lower bounds)' if c.get('timeout') else ''}")
    for key in ("memory", "coll"):
        first = r.get(f"{key}_first")
        if first:
            print(f"  ({'memory' if key == 'memory' else 'count-collectives'} first run after clearing, "
                  f"writes the cache: {first['wall']:.2f} s, RSS {first['rss']:.0f} MB)")
    for key, label in (("memory_cold", "memory cold"), ("memory_warm", "memory warm"),
                       ("coll_cold", "count-collectives cold"), ("coll_warm", "count-collectives warm")):
        print(r["paired"].line(key, label, r[key]))
    print("runs (s): " + " | ".join(
        f"{k} " + " ".join(f"{t:.2f}" for t in r[k]["runs"])
        for k in ("memory_cold", "memory_warm", "memory_outline", "coll_cold", "coll_warm", "coll_outline")))

    # Where a cold end-to-end run goes (from the rows above; all best-of, so approximate).
    interp = r["py_pass"]["wall"]
    imports = r["imp_cmds"]["wall"] - interp
    load = r["load_cold"]["wall"] - r["imp_cli"]["wall"]
    print("\ncold end-to-end split (approx.: differences of best-of wall times from separate runs, "
          "so a small part can come out negative on a loaded machine):")
    for label, key, an in (("memory", "memory_cold", r["an_memory"]), ("count-collectives", "coll_cold", r["an_coll"])):
        total = r[key]["wall"]
        an = float("nan") if an is None else an
        rest = total - interp - imports - load
        print(f"  {label:18s} {total:6.2f} s = interpreter {interp:.2f} + imports {imports:.2f} + "
              f"read+lazy parse {load:.2f} + analysis+report {rest:.2f} (in-process analysis of a fully "
              f"parsed module {an:.2f})")
    return checks


def print_scaling(small: dict, large: dict) -> list[tuple[str, bool]]:
    checks = []
    size_ratio = large["size"] / small["size"]
    print(f"\n── scaling {small['path'].name} → {large['path'].name} ──")
    print(f"file size ×{size_ratio:.2f}, instructions ×{large['insts'] / small['insts']:.2f}")
    print(f"{'':34s} {'small s':>8s} {'large s':>8s} {'ratio':>6s}  target")
    rows = [
        ("XLA C++ parse", small["xla"], large["xla"], False),
        ("hloscope parse_all (full)", small["full"], large["full"], True),
        ("hloscope parse_all(lazy=True)", small["lazy"], large["lazy"], False),
        ("hloscope memory, cold", small["memory_cold"]["wall"], large["memory_cold"]["wall"], True),
        ("hloscope memory, warm", small["memory_warm"]["wall"], large["memory_warm"]["wall"], False),
        ("hloscope count-collectives, cold", small["coll_cold"]["wall"], large["coll_cold"]["wall"], True),
        ("hloscope count-collectives, warm", small["coll_warm"]["wall"], large["coll_warm"]["wall"], False),
        ("memory, cold: peak RSS (MB)", small["memory_cold"]["rss_max"], large["memory_cold"]["rss_max"], False),
    ]
    killed = {k for k in ("memory_cold", "memory_warm", "coll_cold", "coll_warm")
              if small[k].get("timeout") or large[k].get("timeout")}
    for label, a, b, target in rows:
        ratio = b / a
        key = {"hloscope memory, cold": "memory_cold", "hloscope memory, warm": "memory_warm",
               "hloscope count-collectives, cold": "coll_cold",
               "hloscope count-collectives, warm": "coll_warm"}.get(label)
        tgt = ""
        if target:
            ok = ratio <= TARGET_SCALING and key not in killed
            tgt = f"≤ {TARGET_SCALING:g}×  {verdict(ok)}"
            checks.append((f"scaling: {label} ×{ratio:.2f}", ok))
        if key in killed:
            tgt += "  (a run was killed: not a valid ratio)"
        print(f"{label:34s} {a:8.2f} {b:8.2f} {ratio:6.2f}  {tgt}")
    return checks


def bench_diff(a: dict, b_path: Path, repeat: int, cache: ModuleCache) -> list[tuple[str, bool]]:
    """`hloscope diff A B` of the ≈22 MB module against a second compilation of the model
    (a shorter sequence), cold and warm; targets against XLA's parse of A alone, first in a
    fresh process (`xla_first_parse`), as each run of the diff reads its files."""
    py = sys.executable
    argv = [py, "-m", "hloscope", "diff", str(a["path"]), str(b_path)]
    print(f"\n── hloscope diff {a['path'].name} {b_path.name} ──", flush=True)
    paired = PairedXla(a["path"])  # see PairedXla: the machine's speed drifts
    cold = best_child(argv, repeat, before=paired.before("cold", cache.clear))
    cache.clear()
    run_child(argv)
    warm = best_child(argv, repeat, before=paired.before("warm"))
    cache.clear()
    first, hot = a["xla_first"], a["xla"]
    checks = []
    for kind, c in (("cold", cold), ("warm", warm)):
        print(paired.line(kind, kind, c))
    print(f"  XLA's parse of A, first in a fresh process: best {first:.2f} s (runs "
          f"{' '.join(f'{t:.2f}' for t in a['xla_first_all'])}); repeated in one process: best {hot:.2f} s")
    for label, c, target in (("hloscope diff, cold", cold, TARGET_DIFF_COLD_X_XLA),
                             ("hloscope diff, warm", warm, TARGET_DIFF_WARM_X_XLA)):
        ok = c["wall"] <= target * first
        print(f"{label:34s} {c['wall']:7.2f} s  {c['wall'] / first:5.2f}× XLA's first parse of A  "
              f"(≤ {target:g}× {verdict(ok)}; {c['wall'] / hot:.2f}× its repeated parse)"
              f"  RSS {c['rss_max']:.0f} MB  runs {' '.join(f'{t:.2f}' for t in c['runs'])}")
        checks.append((f"{label} ≤ {target:g}× XLA's first parse of A ({c['wall'] / first:.2f}×)", ok))
    return checks


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--large", action="store_true",
                   help="also the ≈ 54 MB and ≈ 117 MB modules, built first if missing (~12 min, ~10 GB RSS "
                        "on 2 cores for the first; ~20 min, ~6 GB for the second)")
    g.add_argument("--small-only", action="store_true", help="only the ≈22 MB module")
    g.add_argument("--diff-only", action="store_true",
                   help="only `hloscope diff` (and XLA's parse of its A, best of --repeat)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per timing (best is reported)")
    ap.add_argument("--no-diff", action="store_true",
                    help="skip `hloscope diff` (its second module takes ~4 min to build the first time)")
    ap.add_argument("--timeout", type=float, default=TIMEOUT,
                    help="kill a subprocess still running after this many seconds (default %(default)g)")
    args = ap.parse_args(argv)
    globals()["TIMEOUT"] = args.timeout

    print(f"load average at start: {loadavg()}")
    print(f"python {platform.python_version()} ({sys.executable}), {platform.platform()}")
    print(f"parser under test: {P.parser_fingerprint()}")
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "hloscope", "grammars"],
                           capture_output=True, text=True, check=False).stdout.split("\n")
    dirty = [line[3:] for line in dirty if line.strip()]
    print(f"uncommitted edits under hloscope/, grammars/: {', '.join(dirty) or 'none'}")
    cache = ModuleCache()
    print(f"parsed-module cache: {cache.describe()}")
    # As `pip install` does: hloscope's modules byte-compiled once, so that each run below
    # does not compile them from source again (it would where PYTHONDONTWRITEBYTECODE is
    # set, ~0.1 s per run, a cost no installed copy pays).
    import compileall

    compiled = compileall.compile_dir(str(REPO / "hloscope"), quiet=1)
    print(f"hloscope byte-compiled (as an installed copy is): {'yes' if compiled else 'NO'}; "
          f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', 'unset')}")

    paths = [P.ensure_module(P.CONFIGS["default"])]
    if args.diff_only:
        from jax._src.lib import xla_client as xc

        text = paths[0].read_text()
        xla, _ = P.best_of(lambda: xc.hlo.hlo_module_from_text(text), args.repeat)
        del text
        first, first_all = best_first_parse(paths[0], args.repeat)
        a = {"path": paths[0], "xla": xla, "xla_first": first, "xla_first_all": first_all}
        checks = bench_diff(a, P.ensure_module(P.CONFIGS["diff_b"]), args.repeat, cache)
        print(f"\n── targets: {sum(ok for _, ok in checks)}/{len(checks)} PASS (XLA's first parse of A: "
              f"{first:.2f} s) ──")
        for label, ok in checks:
            print(f"  {verdict(ok)}  {label}")
        return 0
    for config in ("large", "xlarge"):
        bigger = P.module_path(P.CONFIGS[config])
        if args.large:
            paths.append(P.ensure_module(P.CONFIGS[config]))
        elif not args.small_only:
            if bigger.exists():
                paths.append(bigger)
            else:
                print(f"{bigger.relative_to(REPO)} not built: skipped (--large builds it)")

    results = [bench_module(p, args.repeat, cache) for p in paths]

    checks: list[tuple[str, bool]] = []
    for r in results:
        checks += print_module(r)
    for bigger in results[1:]:
        checks += print_scaling(results[0], bigger)
    if not args.no_diff:
        checks += bench_diff(results[0], P.ensure_module(P.CONFIGS["diff_b"]), args.repeat, cache)

    print(f"\n── targets: {sum(ok for _, ok in checks)}/{len(checks)} PASS ──")
    for label, ok in checks:
        print(f"  {verdict(ok)}  {label}")
    print(f"\nload average at end: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
