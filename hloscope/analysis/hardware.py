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


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("h100", "NVIDIA H100 SXM5 80GB", 989.4e12, 3.35e12, 900e9,
               "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100): BF16 Tensor Core "
               "1,979 TFLOPS with sparsity (989.4 dense), HBM3 3.35 TB/s, NVLink 900 GB/s"),
        Target("a100", "NVIDIA A100 SXM4 80GB", 312e12, 2.039e12, 600e9,
               "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100): BF16 Tensor Core "
               "312 TFLOPS dense, HBM2e 2,039 GB/s, NVLink 600 GB/s"),
        Target("tpu-v5e", "Google Cloud TPU v5e", 197e12, 819e9, 400e9,
               "cloud.google.com/tpu/docs/v5e: 197 TFLOPs bf16 per chip, HBM2 819 GBps, "
               "bidirectional ICI 400 GBps per chip"),
        Target("tpu-v5p", "Google Cloud TPU v5p", 459e12, 2765e9, 1200e9,
               "cloud.google.com/tpu/docs/v5p: 459 TFLOPs bf16 per chip, HBM2e 2765 GBps, "
               "bidirectional ICI 1200 GBps per chip"),
        Target("tpu-v6e", "Google Cloud TPU v6e (Trillium)", 918e12, 1638e9, 800e9,
               "cloud.google.com/tpu/docs/v6e: 918 TFLOPs bf16 per chip, HBM 1638 GBps, "
               "bidirectional ICI 800 GBps per chip"),
    )
}
"""Published peak figures, the one table of them (sources in each entry)."""


__all__ = ["TARGETS", "Target"]
