"""What a sweep compiles for: `cpu:N`, `h100:N`, `tpu-v5e:2x4`, `tpu-v5p:2x2x2`, `tpu-v6e:2x4`.

A target names its devices (host CPU devices, or an accelerator topology JAX describes without
the device, ../shared/DESIGN.md "Accelerator HLO without an accelerator"), the memory a device
has (what `fits` is checked against) and the roofline entry of hloscope.analysis.hardware
its step time is estimated with.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..analysis.hardware import TARGETS
from ..errors import HloscopeError


@dataclass(frozen=True, slots=True)
class Chip:
    """An accelerator a sweep compiles for without the device."""

    platform: str
    """The PJRT platform `get_topology_desc` is asked for (`tpu`, `cuda`)."""
    topology_name: str
    """JAX's name of the chip in `get_topology_desc(topology_name=...)` (`v5e`, `h100`)."""
    roofline: str
    """Its entry in hloscope.analysis.hardware.TARGETS: its published figures, memory included."""

    @property
    def hbm_bytes(self) -> int:
        """Device memory of one chip, as published (hardware.TARGETS, with its source)."""
        return TARGETS[self.roofline].hbm_bytes


CHIPS: dict[str, Chip] = {
    # XLA's h100_sxm target description says device_memory_size 84942979072 bytes (79.1 GiB);
    # the datasheet's 80 GB is what fits is checked against.
    "h100": Chip("cuda", "h100", "h100"),
    "tpu-v5e": Chip("tpu", "v5e", "tpu-v5e"),
    "tpu-v5p": Chip("tpu", "v5p", "tpu-v5p"),
    "tpu-v6e": Chip("tpu", "v6e", "tpu-v6e"),
}
"""The accelerators a sweep knows, by the name a target starts with."""

TARGET_FORMS = "cpu:N, h100:N, tpu-v5e:AxB (e.g. tpu-v5e:2x4), tpu-v5p:AxBxC (e.g. tpu-v5p:2x2x2), tpu-v6e:AxB"


class TargetError(HloscopeError):
    """A target string hloscope does not know."""


@dataclass(frozen=True, slots=True)
class Target:
    """One sweep target: `name` as given (`tpu-v5e:2x4`), its kind and devices."""

    name: str
    kind: str
    """`cpu`, or a key of CHIPS."""
    devices: int
    topology: str
    """`N` for cpu, the topology (`2x4`, `1x1x8`) for accelerators."""

    @property
    def chip(self) -> Chip | None:
        return CHIPS.get(self.kind)

    @property
    def hbm_bytes(self) -> int | None:
        """What one device holds; None for host devices (no limit but `--hbm`)."""
        return self.chip.hbm_bytes if self.chip else None

    @property
    def roofline(self) -> str | None:
        """The hardware entry a step-time ESTIMATE uses; None for host devices."""
        return self.chip.roofline if self.chip else None

    def request(self) -> dict:
        """What the worker needs to make the devices (plain data: it crosses processes)."""
        chip = self.chip
        return {"name": self.name, "kind": self.kind, "devices": self.devices, "topology": self.topology,
                "platform": chip.platform if chip else "cpu", "topology_name": chip.topology_name if chip else None}


def parse_target(text: str) -> Target:
    """`cpu:8` → Target; raises TargetError naming the forms it knows."""
    m = re.fullmatch(r"([a-z0-9-]+):([0-9x]+)", text.strip().lower())
    if not m:
        raise TargetError(f"target {text!r}: expected one of {TARGET_FORMS}")
    kind, topology = m.groups()
    if kind == "cpu" or kind == "h100":
        if not topology.isdigit() or int(topology) < 1:
            raise TargetError(f"target {text!r}: {kind}:N takes a number of devices")
        n = int(topology)
        if kind == "h100":
            # JAX's CUDA topology is slices x hosts x devices per host; a host holds 8.
            if n > 8 and n % 8:
                raise TargetError(f"target {text!r}: more than 8 H100s come in hosts of 8")
            topology = f"1x1x{n}" if n <= 8 else f"1x{n // 8}x8"
        return Target(text, kind, n, topology)
    if kind not in CHIPS:
        raise TargetError(f"target {text!r}: unknown chip {kind!r}; expected one of {TARGET_FORMS}")
    dims = topology.split("x")
    if not all(d.isdigit() and int(d) > 0 for d in dims) or len(dims) not in (2, 3):
        raise TargetError(f"target {text!r}: a TPU topology is AxB or AxBxC")
    return Target(text, kind, math.prod(int(d) for d in dims), topology)


__all__ = ["CHIPS", "Chip", "Target", "TargetError", "parse_target"]
