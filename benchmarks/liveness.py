"""Time the liveness analysis of a synthetic ≥150K-instruction scheduled module.

    python benchmarks/liveness.py [--instructions 150000] [--pack]
    python benchmarks/liveness.py --file benchmarks/out/train_step_L32_H16_d256_ff1024_s128_b16.hlo

The module is one long scheduled entry computation, as a big unrolled training step looks:
chains of elementwise ops over a handful of array sizes, each value read again a few hundred
steps later (long live ranges overlapping), with periodic tuples and get-tuple-elements.
Generation and parsing are timed apart from the analysis.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def synthesize(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    shapes = ["f32[64,128]{1,0}", "f32[128,512]{1,0}", "f32[256]{0}", "f32[32,32]{1,0}"]
    lines = ["HloModule synthetic_unrolled, is_scheduled=true", "", "ENTRY main {"]
    names_by_shape: dict[str, list[str]] = {s: [] for s in shapes}
    for k, s in enumerate(shapes):
        lines.append(f"  p{k} = {s} parameter({k})")
        names_by_shape[s].append(f"p{k}")
    count = len(shapes)
    i = 0
    ops = ["add", "multiply", "subtract", "maximum"]
    while count < n - 1:
        s = shapes[rng.randrange(len(shapes))]
        pool = names_by_shape[s]
        a = pool[-1]
        b = pool[max(0, len(pool) - 1 - rng.randrange(1, 400))] if len(pool) > 1 else a
        if i % 97 == 96:
            lines.append(f"  t{i} = ({s}, {s}) tuple({a}, {b})")
            lines.append(f"  v{i} = {s} get-tuple-element(t{i}), index=1")
            count += 2
        else:
            lines.append(f"  v{i} = {s} {ops[i % len(ops)]}({a}, {b})")
            count += 1
        pool.append(f"v{i}")
        i += 1
    outs = [names_by_shape[s][-1] for s in shapes]
    lines.append(f"  ROOT out = ({', '.join(shapes)}) tuple({', '.join(outs)})")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instructions", type=int, default=150_000)
    parser.add_argument("--pack", action="store_true", help="also time the best-fit packing (analyze_memory)")
    parser.add_argument("--file", help="time hloscope.load(FILE), then module.memory(), of a real module instead")
    args = parser.parse_args()
    if args.file:
        time_file(args.file)
        return

    import hloscope
    from hloscope.analysis.dataflow import analyze_dataflow
    from hloscope.analysis.liveness import compute_live_ranges, live_bytes_timeline

    t0 = time.perf_counter()
    text = synthesize(args.instructions)
    t1 = time.perf_counter()
    module = hloscope.parse(text)
    # The parsed module is millions of long-lived objects; without this the cyclic GC's full
    # collections rescan them (seconds here) in whichever phase happens to trigger one.
    import gc

    gc.collect()
    gc.freeze()
    t2 = time.perf_counter()
    df = analyze_dataflow(module)
    t3 = time.perf_counter()
    live = compute_live_ranges(df)
    t4 = time.perf_counter()
    timeline = live_bytes_timeline(live)
    peak = max(timeline)
    t5 = time.perf_counter()
    print(f"instructions        {module.instruction_count}")
    print(f"values              {len(df.values)}")
    print(f"generate            {t1 - t0:.2f} s")
    print(f"parse               {t2 - t1:.2f} s")
    print(f"dataflow            {t3 - t2:.2f} s")
    print(f"live ranges         {t4 - t3:.2f} s")
    print(f"timeline + peak     {t5 - t4:.2f} s   (max live {peak} bytes)")
    print(f"liveness analysis   {t5 - t2:.2f} s   (dataflow + live ranges + timeline; target <= 2 s)")
    if args.pack:
        t6 = time.perf_counter()
        from hloscope.analysis.memory import analyze_memory

        result = analyze_memory(module)
        t7 = time.perf_counter()
        print(f"analyze_memory      {t7 - t6:.2f} s   (temp {result.temp_bytes} bytes)")


def time_file(path: str) -> None:
    import gc

    import hloscope

    t0 = time.perf_counter()
    module = hloscope.load(path)
    gc.collect()
    gc.freeze()
    t1 = time.perf_counter()
    result = module.memory()
    t2 = time.perf_counter()
    print(f"instructions        {module.instruction_count}")
    print(f"load                {t1 - t0:.2f} s")
    print(f"memory()            {t2 - t1:.2f} s   (temp {result.temp_bytes} bytes, peak at {result.peak_at})")


if __name__ == "__main__":
    main()
