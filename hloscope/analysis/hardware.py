"""Published peak figures of the accelerators the roofline estimate knows: the one catalogue of
them, each entry with its source."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Target:
    """Published peak figures of one accelerator (per chip or GPU)."""

    name: str
    description: str
    peak_flops: float
    """Dense bf16 matrix FLOP/s."""
    hbm_bytes_per_second: float
    interconnect_bytes_per_second: float
    """Chip-to-chip bandwidth, bidirectional, as published."""
    source: str
    hbm_bytes: int = 0
    """Device memory of one chip, as published."""
    f32_matmul: str = "bf16 passes"
    """How f32 matmuls run: `tf32` (GPU tensor cores: DEFAULT and HIGH precision in TF32, HIGHEST
    on the f32 units) or `bf16 passes` (TPU: DEFAULT 1 bf16 pass, HIGH 3, HIGHEST 6)."""
    tf32_flops: float | None = None
    f32_flops: float | None = None
    """Dense f32 FLOP/s without tensor cores (GPU: HIGHEST precision)."""
    f64_flops: float | None = None
    int8_ops: float | None = None
    f8_flops: float | None = None

    def matmul_peak(self, arithmetic: str) -> tuple[float, str]:
        """The peak FLOP/s of matmuls in one `arithmetic` (`cost.matmul_arithmetic`) and what that
        peak is: `(989.4e12, "bf16")`; the bf16 peak, said so, where none is published."""
        operand, passes = arithmetic, 1
        if arithmetic.startswith("dot_"):  # an algorithm: dot_bf16_bf16_f32_x6, dot_tf32_tf32_f32
            parts = arithmetic[4:].split("_")
            operand = "f8" if "f8" in parts else parts[0]
            passes = int(parts[-1][1:]) if parts[-1][:1] == "x" and parts[-1][1:].isdigit() else 1
            if operand == "f32":
                operand, arithmetic = "f32/highest", "f32/highest"
        if operand in ("f32", "f32/high", "f32/highest"):
            if self.f32_matmul == "tf32":
                operand = "f32/highest" if operand == "f32/highest" else "tf32"
            else:
                operand, passes = "bf16", {"f32": 1, "f32/high": 3, "f32/highest": 6}[operand]
        peaks = {"bf16": (self.peak_flops, "bf16"), "f16": (self.peak_flops, "bf16"),
                 "tf32": (self.tf32_flops, "tf32"), "f32/highest": (self.f32_flops, "f32"),
                 "f64": (self.f64_flops, "f64"), "s8": (self.int8_ops, "int8"), "u8": (self.int8_ops, "int8"),
                 "f8": (self.f8_flops, "fp8")}
        key = "f8" if operand.startswith("f8") else operand
        peak, what = peaks.get(key, (None, key))
        if peak is None:
            return self.peak_flops / passes, f"{arithmetic}: no published peak, counted at bf16's"
        return peak / passes, what if passes == 1 else f"{what} × {passes} passes"


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("h100", "NVIDIA H100 SXM5 80GB", 989.4e12, 3.35e12, 900e9,
               "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100), SXM5, dense (half "
               "the sparsity figures): BF16 989.4 TFLOPS, TF32 494.7, FP32 66.9, FP64 tensor 66.9, FP8 1,979, "
               "INT8 1,979 TOPS; 80 GB HBM3 at 3.35 TB/s, NVLink 900 GB/s",
               hbm_bytes=80 * 10**9, f32_matmul="tf32", tf32_flops=494.7e12, f32_flops=66.9e12, f64_flops=66.9e12,
               int8_ops=1979e12, f8_flops=1979e12),
        Target("a100", "NVIDIA A100 SXM4 80GB", 312e12, 2.039e12, 600e9,
               "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100), dense: BF16 312 "
               "TFLOPS, TF32 156, FP32 19.5, FP64 tensor 19.5, INT8 624 TOPS; 80 GB HBM2e at 2,039 GB/s, NVLink "
               "600 GB/s",
               hbm_bytes=80 * 10**9, f32_matmul="tf32", tf32_flops=156e12, f32_flops=19.5e12, f64_flops=19.5e12, int8_ops=624e12),
        Target("tpu-v5e", "Google Cloud TPU v5e", 197e12, 819e9, 400e9,
               "cloud.google.com/tpu/docs/v5e: 197 TFLOPs bf16 and 394 TOPs int8 per chip, 16 GiB HBM2 at 819 "
               "GBps, bidirectional ICI 400 GBps per chip; f32 matmuls as 1, 3 or 6 bf16 passes (jax.lax.Precision)",
               hbm_bytes=16 << 30, int8_ops=394e12),
        Target("tpu-v5p", "Google Cloud TPU v5p", 459e12, 2765e9, 1200e9,
               "cloud.google.com/tpu/docs/v5p: 459 TFLOPs bf16 and 918 TOPs int8 per chip, 95 GiB HBM2e at 2765 "
               "GBps, bidirectional ICI 1200 GBps per chip; f32 matmuls as 1, 3 or 6 bf16 passes (jax.lax.Precision)",
               hbm_bytes=95 << 30, int8_ops=918e12),
        Target("tpu-v6e", "Google Cloud TPU v6e (Trillium)", 918e12, 1638e9, 800e9,
               "cloud.google.com/tpu/docs/v6e: 918 TFLOPs bf16 and 1836 TOPs int8 per chip, 32 GiB HBM at 1638 "
               "GBps, bidirectional ICI 800 GBps per chip; f32 matmuls as 1, 3 or 6 bf16 passes (jax.lax.Precision)",
               hbm_bytes=32 << 30, int8_ops=1836e12),
    )
}
"""Published peak figures, the one table of them (sources in each entry)."""


__all__ = ["TARGETS", "Target"]
