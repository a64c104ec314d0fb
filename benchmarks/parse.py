"""Parse-speed benchmark: hloscope vs XLA's C++ HLO parser on a large, real HLO module.

Run on demand (not a test):

    python benchmarks/parse.py              # ≥ 20 MB module (generated once, cached)
    python benchmarks/parse.py --large      # ≈ 54 MB module (slow to compile; see --help)
    python benchmarks/parse.py --xlarge     # ≈ 117 MB module (layers in lax.scan groups)
    python benchmarks/parse.py --profile    # + cProfile of hloscope's parse (top 25)
    python benchmarks/parse.py --breakdown  # + lexer / LALR / callbacks split, tokens by type
    python benchmarks/parse.py --file some.hlo   # any HLO text instead of the generated one

The module is a transformer-style train step (unrolled layers and attention heads, Adam,
FSDP-sharded over 8 fake CPU devices so there are all-gathers and reduce-scatters), compiled
by JAX in a child process (so XLA_FLAGS applies) and cached as `compiled.as_text()` under
benchmarks/out/ (git-ignored). Generation runs only when the cached file is missing.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import gc
import io
import os
import pstats
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT = HERE / "out"
sys.path.insert(0, str(REPO))

# layers, heads (unrolled per head), d_model, d_ff, seq, batch.
CONFIGS = {
    # ≈ 22 MB of text, ≈ 3.5-4 min to compile on a 2-core machine.
    "default": dict(layers=32, heads=16, d=256, ff=1024, seq=128, batch=16),
    # The second side of `hloscope diff` in speed.py: the default model with a shorter
    # sequence, as a user comparing two sequence lengths would.
    "diff_b": dict(layers=32, heads=16, d=256, ff=1024, seq=96, batch=16),
    # ≈ 54 MB of text: about the most this machine (24 GB, shared) compiles within ~12 GB.
    # Compile memory grows quadratically with the instructions: a transient spike during
    # XLA's CPU `fusion` pass (seen in pass logs + RSS trace; presumably its reachability map
    # over the whole entry computation) on top of a ~linear baseline. Generator peak RSS
    # (/usr/bin/time %M), 16 heads: 8 layers 0.79 GB, 16 → 1.41 GB, 32 (scoped) → 3.4 GB,
    # 64 (scoped) → 9.7 GB; 144 layers was OOM-killed at 24 GB.
    # So ≥ 100 MB of a single unrolled computation would need ~27 GB or more. Same model as
    # "default" with twice the layers, plus jax.named_scope module paths in op_name
    # metadata (scopes=True, see _gen_hlo.py; +21% text per instruction): 54.2 MB,
    # 2.0× the default's instructions (379K); lower 63 s + compile 632 s (~12 min) on 2 cores.
    # Optional: only built with --large.
    "large": dict(layers=64, heads=16, d=256, ff=1024, seq=128, batch=16, scopes=True),
    # ≈ 117 MB: the ≥ 100 MB module, which cannot be one unrolled computation on this machine
    # (above). The same layers, scoped, in 18 `lax.scan`s of 2 iterations over 4 unrolled
    # layers each (groups, see _gen_hlo.py): 72 layers of text, each computation small enough
    # for the fusion pass. Optional: only built with --xlarge.
    "xlarge": dict(layers=72, heads=16, d=256, ff=1024, seq=128, batch=16, scopes=True, groups=18),
    # ≈ 20 MB whose bodies do not repeat: the default model with widths of its own in every
    # layer (distinct, see _gen_hlo.py), so no computation is another's up to names. Speed
    # work is measured on both this and the default, whose layers' computations repeat.
    "distinct": dict(layers=32, heads=16, d=256, ff=1024, seq=128, batch=16, distinct=True),
    # Its pair for `hloscope diff` in speed.py: a shorter sequence, as "diff_b".
    "distinct_b": dict(layers=32, heads=16, d=256, ff=1024, seq=96, batch=16, distinct=True),
}


def rss_mb() -> float:
    """Peak RSS of this process so far, in MB (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def module_path(cfg: dict) -> Path:
    c = cfg
    scoped = "_scoped" if c.get("scopes") else ""
    grouped = f"_G{c['groups']}" if c.get("groups") else ""
    distinct = "_distinct" if c.get("distinct") else ""
    return OUT / (f"train_step_L{c['layers']}_H{c['heads']}_d{c['d']}_ff{c['ff']}_s{c['seq']}_b{c['batch']}"
                  f"{scoped}{grouped}{distinct}.hlo")


def ensure_module(cfg: dict) -> Path:
    path = module_path(cfg)
    if path.exists():
        print(f"using cached {path.relative_to(REPO)}", flush=True)
        return path
    OUT.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    flag = "--xla_force_host_platform_device_count=8"
    if flag not in env.get("XLA_FLAGS", ""):
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flag).strip()
    env.setdefault("JAX_PLATFORMS", "cpu")
    args = [str(cfg[k]) for k in ("layers", "heads", "d", "ff", "seq", "batch")]
    if cfg.get("scopes") or cfg.get("groups") or cfg.get("distinct"):
        # jax.named_scope module paths in op_name metadata; layers in lax.scan groups; widths
        # of each layer's own (_gen_hlo.py)
        args += ["1" if cfg.get("scopes") else "0", str(cfg.get("groups", 0)), "1" if cfg.get("distinct") else "0"]
    print(f"generating {path.relative_to(REPO)} (JAX compile in a subprocess) ...", flush=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(HERE / "_gen_hlo.py"), str(path), *args], env=env, check=True)
    print(f"generated in {time.perf_counter() - t0:.0f} s", flush=True)
    return path


def best_of(fn, n: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(n):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        del result
    return min(times), times


def count_instructions(modules) -> tuple[int, int]:
    comps = sum(len(m.computations) for m in modules)
    insts = sum(len(c.instructions) for m in modules for c in m.computations)
    return insts, comps


# ─── timing ────────────────────────────────────────────────────────────────────────────


def run_timings(text: str, repeat: int) -> dict:
    import hloscope
    from hloscope import grammar as hloscope_grammar  # noqa: F401
    from hloscope.text import parser as hp

    mb = len(text.encode()) / 1e6
    r: dict = {"mb": mb, "rss_text": rss_mb()}

    # hloscope first, so "cold" really is the first call in this process (grammar build
    # included) and the peak RSS after it is hloscope's alone.
    gc.collect()
    t0 = time.perf_counter()
    modules = hloscope.parse_all(text)
    r["hs_cold"] = time.perf_counter() - t0
    r["insts"], r["comps"] = count_instructions(modules)
    r["rss_hs"] = rss_mb()
    del modules
    # Warm runs reuse the grammar and the shape intern caches (parse_array_shape).
    r["hs_warm"], r["hs_warm_all"] = best_of(lambda: hloscope.parse_all(text), repeat)
    # The reference engine: the grammar's specification alone (engine="lark"), once, warm.
    r["hs_lark"], _ = best_of(lambda: hloscope.parse_all(text, engine="lark"), 1)

    # The one-time grammar build on its own (lru_cache cleared, rebuilt).
    hp._lark.cache_clear()
    t0 = time.perf_counter()
    hp._lark()
    r["grammar_build"] = time.perf_counter() - t0

    from jax._src.lib import xla_client as xc

    r["xla"], r["xla_all"] = best_of(lambda: xc.hlo.hlo_module_from_text(text), repeat)
    r["rss_end"] = rss_mb()
    return r


def print_table(r: dict) -> None:
    mb = r["mb"]
    rows = [
        ("XLA C++ (hlo_module_from_text)", r["xla"]),
        ("hloscope parse_all, warm", r["hs_warm"]),
        ("hloscope parse_all, cold", r["hs_cold"]),
        ("hloscope engine=\"lark\" (spec only)", r["hs_lark"]),
    ]
    print()
    print(f"file size          {mb:10.1f} MB")
    print(f"instructions       {r['insts']:10,d}   (hloscope; {r['comps']:,d} computations)")
    print(f"bytes/instruction  {mb * 1e6 / r['insts']:10.0f}")
    print()
    print(f"{'parser':34s} {'time s':>8s} {'MB/s':>8s} {'µs/inst':>8s} {'× XLA':>7s}")
    for name, t in rows:
        print(f"{name:34s} {t:8.2f} {mb / t:8.2f} {t / r['insts'] * 1e6:8.1f} {t / r['xla']:7.1f}")
    print()
    print("runs (s): XLA " + " ".join(f"{t:.2f}" for t in r["xla_all"])
          + " | hloscope warm " + " ".join(f"{t:.2f}" for t in r["hs_warm_all"]))
    print(f"grammar build (lark, one-time): {r['grammar_build']:.2f} s")
    print(f"ratio hloscope/XLA: warm {r['hs_warm'] / r['xla']:.1f}×, cold {r['hs_cold'] / r['xla']:.1f}×")
    print(f"peak RSS (MB): text loaded {r['rss_text']:.0f} · after hloscope cold parse "
          f"{r['rss_hs']:.0f} · end, after XLA too {r['rss_end']:.0f}")


# ─── profile ───────────────────────────────────────────────────────────────────────────


def run_profile(text: str, top: int = 25) -> None:
    import hloscope
    from hloscope import grammar as hloscope_grammar  # noqa: F401
    from hloscope.text import parser as hp

    hp._lark()  # build outside the profile
    prof = cProfile.Profile()
    prof.enable()
    modules = hloscope.parse_all(text)
    prof.disable()
    del modules
    for key, title in (("cumulative", "cumulative time"), ("tottime", "total (own) time")):
        s = io.StringIO()
        pstats.Stats(prof, stream=s).strip_dirs().sort_stats(key).print_stats(top)
        out = s.getvalue()
        body = out[out.index("   ncalls"):] if "   ncalls" in out else out
        print(f"\n── cProfile: top {top} by {title} ──")
        print(body.rstrip())


# ─── breakdown: lexer vs LALR driver vs builder callbacks; tokens by type ───────────────


def run_breakdown(text: str, repeat: int) -> None:
    import lark
    from lark.lexer import LexerState, TextSlice

    import hloscope
    from hloscope import grammar as hloscope_grammar  # noqa: F401
    from hloscope.text import parser as hp

    grammar = hloscope_grammar.text()

    # 1. A parser identical to hloscope's but whose callbacks do nothing: lexer + LALR loop +
    #    lark's child filtering, without our IR building.
    probe = lark.Lark(grammar, parser="lalr", lexer="contextual", maybe_placeholders=False)
    names = {r.alias or r.origin.name for r in probe.rules}
    # Lark's own helper rules (`__x_star_3`) build lists by mutating their first child, as
    # they do in hloscope's parser (which defines no callbacks for them): leave them to lark.
    names = {str(n) for n in names if not str(n).startswith("_")}
    # Each callback returns one shared empty Tree: lark expands inlined rules through
    # `.children`, so None will not do, and a shared object costs no allocation.
    empty = lark.Tree("noop", [])
    Noop = type("Noop", (lark.Transformer,), {n: (lambda self, c: empty) for n in names})
    noop = lark.Lark(grammar, parser="lalr", lexer="contextual", maybe_placeholders=False,
                     transformer=Noop(visit_tokens=False))

    # 2. Record which contextual sub-lexer the parser asked for at each token, then replay
    #    lexing alone with the same sub-lexers: the lexer's time without the parser.
    ctx = noop.parser.lexer
    positions: list[int] = []
    counts: collections.Counter = collections.Counter()
    chars: collections.Counter = collections.Counter()
    real_lex = ctx.lex

    def recording_lex(lexer_state, parser_state):
        lexers = ctx.lexers
        try:
            while True:
                pos = parser_state.position
                positions.append(pos)
                tok = lexers[pos].next_token(lexer_state, parser_state)
                counts[tok.type] += 1
                chars[tok.type] += len(tok)
                yield tok
        except EOFError:
            pass

    ctx.lex = recording_lex
    noop.parse(text)
    ctx.lex = real_lex
    n_tokens = sum(counts.values())

    def lex_only():
        state = LexerState(TextSlice.cast_from(text))
        lexers = ctx.lexers
        n = 0
        try:
            for pos in positions:
                lexers[pos].next_token(state, None)
                n += 1
        except EOFError:
            pass
        return n

    t_lex, _ = best_of(lex_only, repeat)
    t_noop, _ = best_of(lambda: noop.parse(text), repeat)
    hp._lark()
    t_full, _ = best_of(lambda: hloscope.parse_all(text), repeat)
    modules = hloscope.parse_all(text)
    insts, _ = count_instructions(modules)

    # 3. What the callbacks do besides building objects: shapes (interned) and attributes.
    from hloscope.ir.shape import parse_array_shape

    info = parse_array_shape.cache_info()
    # (Attributes are split on first use; len() splits them, outside the timed runs.)
    n_attr = sum(len(i.attributes) for m in modules for c in m.computations for i in c.instructions)
    del modules

    print(f"\n── breakdown (best of {repeat}, warm) ──")
    print(f"{'stage':44s} {'time s':>8s} {'share':>7s} {'ns/token':>9s}")
    rows = [
        ("lexer only (replayed contextual lexer)", t_lex),
        ("LALR loop + lark callback wrappers", t_noop - t_lex),
        ("hloscope _Builder callbacks + IR + resolve", t_full - t_noop),
    ]
    for name, t in rows:
        print(f"{name:44s} {t:8.2f} {t / t_full:7.0%} {t / n_tokens * 1e9:9.0f}")
    print(f"{'total hloscope parse_all':44s} {t_full:8.2f} {1:7.0%} {t_full / n_tokens * 1e9:9.0f}")
    print(f"\ntokens: {n_tokens:,d} ({n_tokens / insts:.1f} per instruction, "
          f"{len(text) / n_tokens:.0f} chars per token); instructions {insts:,d}")
    print(f"shape cache: {info.currsize:,d} distinct array-shape strings, {info.hits:,d} hits so far; "
          f"attributes: {n_attr:,d} ({n_attr / insts:.1f}/instruction)")
    print(f"\n{'terminal':16s} {'tokens':>11s} {'share':>7s} {'/inst':>7s} {'chars':>13s} {'chars/tok':>9s}")
    for typ, n in counts.most_common():
        print(f"{typ:16s} {n:11,d} {n / n_tokens:7.1%} {n / insts:7.2f} {chars[typ]:13,d} {chars[typ] / n:9.1f}")


def parser_fingerprint() -> str:
    """Which parser is measured: the commit, and a hash of parser.py + grammar as on disk."""
    import hashlib

    h = hashlib.sha1()
    for rel in ("hloscope/text/parser.py", "grammars/hlo.lark", "grammars/hlo_fast.lark"):
        h.update((REPO / rel).read_bytes())
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--",
                                "hloscope/text/parser.py", "grammars/"],
                               capture_output=True, text=True).stdout.strip()
    except OSError:
        head, dirty = "?", ""
    return f"HEAD {head}{' + uncommitted parser/grammar edits' if dirty else ''}, sources sha1 {h.hexdigest()[:10]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--large", action="store_true",
                    help="use the ≈ 54 MB module (compiling it takes ~12 min and ~10 GB on 2 cores)")
    ap.add_argument("--xlarge", action="store_true", help="use the ≈ 117 MB module (layers in lax.scan groups)")
    ap.add_argument("--file", help="benchmark this HLO text file instead of the generated module")
    ap.add_argument("--repeat", type=int, default=3, help="runs per timing (best is reported)")
    ap.add_argument("--profile", action="store_true", help="cProfile hloscope's parse; top 25")
    ap.add_argument("--breakdown", action="store_true",
                    help="split parse time into lexer / LALR / callbacks and count tokens by type")
    ap.add_argument("--no-timing", action="store_true", help="skip the XLA/hloscope timing table")
    args = ap.parse_args(argv)

    path = Path(args.file) if args.file else ensure_module(
        CONFIGS["xlarge" if args.xlarge else "large" if args.large else "default"])
    text = path.read_text()
    print(f"module: {path} ({len(text) / 1e6:.1f} MB)", flush=True)
    print(f"parser under test: {parser_fingerprint()}", flush=True)

    if not args.no_timing:
        print_table(run_timings(text, args.repeat))
    if args.breakdown:
        run_breakdown(text, args.repeat)
    if args.profile:
        run_profile(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
