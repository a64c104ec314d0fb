"""Large steps compiled for the TPU and GPU targets without a device, for speed on modules
other than the CPU steps of benchmarks/parse.py (whose XLA prints no async sugar, and whose
fusions call no fusions). Not a test; run on demand:

    python benchmarks/target_steps.py tpu 48 OUT.hlo        # fixtures/llama.py's HSDP step, v5e 2x4
    python benchmarks/target_steps.py gpu 96 OUT.hlo        # fixtures/generate.py's HSDP step, 8 H100
    python benchmarks/target_steps.py tpu-flash 32 OUT.hlo  # the llama step with Pallas flash attention

LAYERS unrolled layers (TPU: the llama step, layers unrolled, HSDP; GPU: gpu_hsdp_accum1's
model at d_model 512, d_ff 2048, batch 8, seq 128, two microbatches; tpu-flash: the TPU
step with Pallas flash attention, `tpu_custom_call` kernels under shard_map). 48 TPU layers
make a 23 MB text, 96 GPU layers 18.6 MB, 16 and 32 tpu-flash layers 7.5 and 15 MB; a step
of a few layers fewer is a `diff` pair. Measure them with `python benchmarks/protocol.py
--files A B`. The environment is the fixtures': JAX_PLATFORMS=cpu, eight host devices (set
here before jax is imported).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fixtures"))

import generate  # noqa: E402
import llama  # noqa: E402


def compiled_text(target: str, layers: int) -> str:
    """`compiled.as_text()` of the step of `target` ("tpu", "tpu-flash" or "gpu") with `layers` layers."""
    if target in ("tpu", "tpu-flash"):
        attention = "flash" if target == "tpu-flash" else "einsum"
        spec = llama.llama_spec("hsdp", False, attention=attention, n_layers=layers)
        compiled, _ = llama.build_and_compile_llama("step", spec)
    else:
        model = dict(n_layers=layers, d_model=512, d_ff=2048, batch=8, base_seq=128)
        spec = dict(generate.FIXTURES["gpu_hsdp_accum1"], accum=2, model=model)
        compiled, _ = generate.build_and_compile("step", spec, ROOT.parent / "shared" / "targets")
    return compiled.as_text()


def main(argv: list[str]) -> None:
    target, layers, out = argv[0], int(argv[1]), Path(argv[2])
    start = time.time()
    out.write_text(compiled_text(target, layers))
    print(f"{out}: {out.stat().st_size / 1e6:.1f} MB, compiled in {time.time() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
