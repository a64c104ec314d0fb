"""What a compiled heap packer would give: hloscope's best fit (the packing of CPU's and GPU's
temp heaps, XLA's GlobalDecreasingSizeBestFitHeap in its two orders) against the same
algorithm in C (benchmarks/native_packer.c), on the groups a module's memory analysis packs.
A measurement for a decision, not a part of hloscope: the package has no compiled code.

    python benchmarks/native_packer.py [MODULE ...]    # default: the protocol's four CPU steps
    python benchmarks/native_packer.py --cli diff A B   # hloscope's CLI, packing in C

Each packing the memory analysis runs is captured (its groups in order, the alignment, the
heap to beat), then run again by hloscope's `best_fit` and by the C one (compiled here with
`cc`), best of --repeat each; the heaps and every group's offset must be the same (exit 1
otherwise). With --cli, the rest of the line is a hloscope command, run in this process with
its best fit replaced by the C one (cache and processes as the environment says), to time
whole commands with it (e.g. under /usr/bin/time, as benchmarks/protocol.py runs them cold)."""

from __future__ import annotations

import argparse
import array
import ctypes
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import hloscope  # noqa: E402
from hloscope.analysis.heap import best_fit as bf  # noqa: E402
from hloscope.analysis.heap.algorithm import merge_intervals  # noqa: E402
from hloscope.cli import main as hloscope_main  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
DEFAULT = ["train_step_L32_H16_d256_ff1024_s128_b16.hlo", "train_step_L32_H16_d256_ff1024_s96_b16.hlo",
           "train_step_L32_H16_d256_ff1024_s128_b16_distinct.hlo",
           "train_step_L32_H16_d256_ff1024_s96_b16_distinct.hlo"]
_P = ctypes.POINTER(ctypes.c_int64)


def compiled() -> ctypes.CDLL:
    """native_packer.c, compiled (into benchmarks/out/, again when the source is newer) and
    loaded: a timed command does not pay for the compiler."""
    source, lib = ROOT / "benchmarks" / "native_packer.c", OUT / "native_packer.so"
    if not lib.exists() or lib.stat().st_mtime < source.stat().st_mtime:
        OUT.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=OUT) as directory:
            built = os.path.join(directory, lib.name)
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", built, str(source)], check=True)
            os.replace(built, lib)
    dll = ctypes.CDLL(str(lib))
    dll.best_fit.restype = ctypes.c_int64
    dll.best_fit.argtypes = [ctypes.c_int64, _P, _P, _P, _P, ctypes.c_int64, ctypes.c_int64, _P]
    return dll


def captured(path: Path) -> list[tuple[list, int, int | None]]:
    """(groups in packing order, alignment, limit) of every best fit `memory()` runs on `path`."""
    calls = []
    original = bf.best_fit

    def spy(groups, alignment, limit=None):
        calls.append((list(groups), alignment, limit))
        return original(groups, alignment, limit)

    bf.best_fit = spy
    try:
        for module in hloscope.load_all(path, lazy=True):
            if module.is_scheduled:
                module.memory()
    finally:
        bf.best_fit = original
    return calls


def native(dll: ctypes.CDLL, groups, alignment: int, limit: int | None):
    """(heap bytes or None, offsets by id(group)), seconds to pass the groups, seconds to pack."""
    start = time.perf_counter()
    units = array.array("q", [-(-g.size // alignment) for g in groups])
    sizes = array.array("q", [g.size for g in groups])
    starts, flat = array.array("q", [0]), array.array("q")
    for g in groups:
        for s, e in merge_intervals(g.intervals):
            flat.extend((s, e))
        starts.append(len(flat) // 2)
    offsets = array.array("q", bytes(8 * len(groups)))

    def pointer(a: array.array):
        return ctypes.cast(a.buffer_info()[0], _P)

    passed = time.perf_counter()
    heap = dll.best_fit(len(groups), pointer(units), pointer(sizes), pointer(starts), pointer(flat), alignment,
                        -1 if limit is None else limit, pointer(offsets))
    done = time.perf_counter()
    if heap < 0:
        return None, passed - start, done - passed
    return (heap, {id(g): o * alignment for g, o in zip(groups, offsets)}), passed - start, done - passed


def packing_in_c(dll: ctypes.CDLL):
    """A drop-in `best_fit` that packs in C."""
    def best_fit(groups, alignment, limit=None):
        if not groups:
            return 0, {}
        packed, _, _ = native(dll, groups, alignment, limit)
        return packed
    return best_fit


def best_of(n: int, fn):
    runs = [fn() for _ in range(n)]
    return min(runs, key=lambda r: r[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("modules", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cli", nargs=argparse.REMAINDER, help="a hloscope command to run with the C packer")
    args = ap.parse_args()
    dll = compiled()
    if args.cli is not None:
        bf.best_fit = packing_in_c(dll)  # what `BestFit.pack` calls
        sys.argv = ["hloscope", *args.cli]
        hloscope_main()  # exits
    # One process, nothing kept: every packing is run, and none read back from the cache.
    os.environ["HLOSCOPE_CACHE"], os.environ["HLOSCOPE_JOBS"] = "0", "1"
    paths = args.modules or [OUT / name for name in DEFAULT]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        print(f"missing: {', '.join(missing)} (benchmarks/parse.py makes the default ones)", file=sys.stderr)
        return 2
    print("| module | groups | heap to beat | Python s | C s (+ passing them) | same heap and offsets |")
    print("|---|---|---|---|---|---|")
    for path in paths:
        for groups, alignment, limit in captured(path):
            def python():
                t = time.perf_counter()
                out = bf.best_fit(groups, alignment, limit)
                return out, time.perf_counter() - t
            py, py_s = best_of(args.repeat, python)
            c, pass_s, c_s = best_of(args.repeat, lambda: native(dll, groups, alignment, limit))
            same = (py is None and c is None) or (
                py is not None and c is not None and py[0] == c[0]
                and all(py[1][id(g)] == c[1][id(g)] for g in groups))
            label = path.name if path.parent.resolve() == OUT.resolve() else f"{path.parent.name}/{path.name}"
            print(f"| {label} | {len(groups)} | {limit if limit is not None else '-'} | {py_s:.3f} | "
                  f"{c_s:.3f} (+ {pass_s:.3f}) | {'yes' if same else 'NO'} |")
            if not same:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
