"""GPU presets: total memory in MiB exactly as nvidia-smi prints it.

SGLang picks its defaults (chunked prefill, CUDA-graph batch sizes, the automatic
--mem-fraction-static) from this number, so a preset must be the driver's figure, not the
marketing one: an "80 GB" H100 reports 81559 MiB.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from sgtui.core.errors import UserError

# name -> MiB. Where each figure comes from:
#   [brief]  the project's task brief (figures seen in real nvidia-smi output on those cards);
#   [smi]    nvidia-smi tables in public repositories, found with the project's code search
#            (e.g. "0MiB / 97871MiB" under "NVIDIA H20", "0MiB / 183359MiB" under "NVIDIA B200");
#   [log]    the only total consistent with an automatic mem_fraction_static in a real SGLang log.
GPU_PRESETS: dict[str, int] = {
    "T4": 15360,  # [smi] Tesla T4
    "RTX-4080": 16376,  # [smi] NVIDIA GeForce RTX 4080 (also RTX 4070 Ti SUPER, RTX A4000)
    "L4": 23034,  # [brief]
    "A10": 23028,  # [smi] NVIDIA A10 and A10G print the same total
    "A10G": 23028,  # [smi]
    "RTX-4090": 24564,  # [brief]
    "RTX-5090": 32607,  # [smi] NVIDIA GeForce RTX 5090
    "A100-40G": 40960,  # [brief]
    "L40S": 46068,  # [brief]
    "A6000": 49140,  # [brief] RTX A6000
    "A100-80G": 81920,  # [brief]
    "H100-80G": 81559,  # [brief] H100 80GB HBM3 (SXM)
    "H20": 97871,  # [smi] NVIDIA H20 (96 GB)
    "GH200": 97871,  # [smi] GH200 480GB shows its 96 GB HBM as 97871 MiB
    "RTX-PRO-6000": 97887,  # [brief] RTX PRO 6000 Blackwell
    "H200": 143771,  # [brief], also [smi] "NVIDIA H200 NVL (143771 MiB)"
    "B200": 183359,  # [smi] NVIDIA B200
    "MI355X": 294912,  # [log] 288 GiB: SGLang 0.5.8's automatic 0.908 at TP 8 (27136 MiB kept back)
}

_ALIASES: dict[str, str] = {
    "A100": "A100-80G",
    "H100": "H100-80G",
    "RTXA6000": "A6000",
    "4090": "RTX-4090",
    "5090": "RTX-5090",
    "PRO6000": "RTX-PRO-6000",
    "RTXPRO6000BLACKWELL": "RTX-PRO-6000",
    "TESLAT4": "T4",
    "4080": "RTX-4080",
}

# nvidia-smi's own names ("NVIDIA H100 80GB HBM3", "A100-SXM4-40GB"), matched on the normalised key.
_SMI_NAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), name)
    for pattern, name in (
        (r"^H100(?!NVL)", "H100-80G"),
        (r"^A100.*40GB", "A100-40G"),
        (r"^A100", "A100-80G"),
        (r"^H200", "H200"),
        (r"^GH200", "GH200"),
        (r"^H20(?!0)", "H20"),
        (r"^B200", "B200"),
        (r"^RTXPRO6000", "RTX-PRO-6000"),
        (r"^RTXA6000", "A6000"),
        (r"^L40S", "L40S"),
        (r"^RTX4090", "RTX-4090"),
        (r"^RTX4080", "RTX-4080"),
        (r"^RTX5090", "RTX-5090"),
        (r"^A10G", "A10G"),
    )
)

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(mib|mb|m|gib|gb|g)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model: a display name and its total memory as nvidia-smi reports it."""

    name: str
    mib: int

    @property
    def gib(self) -> float:
        return self.mib / 1024


def _key(text: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", text.upper()).removeprefix("NVIDIA").removeprefix("GEFORCE")


_BY_KEY: dict[str, str] = {_key(name): name for name in GPU_PRESETS} | {
    _key(alias): target for alias, target in _ALIASES.items()
}


def parse_gpu(text: str) -> GpuSpec:
    """A preset name (any case or punctuation: "h100 80g", "RTX_PRO_6000") or a size ("49140MiB", "48GiB")."""
    raw = text.strip()
    key = _key(raw)
    name = _BY_KEY.get(key) or next((n for pattern, n in _SMI_NAMES if pattern.search(key)), None)
    if name is not None:
        return GpuSpec(name=name, mib=GPU_PRESETS[name])
    size = _SIZE.match(raw)
    if size and (size.group(2) or float(size.group(1)) >= 1024):
        value = float(size.group(1))
        unit = (size.group(2) or "mib").lower()
        mib = round(value * 1024) if unit.startswith("g") else round(value)
        if mib > 0:
            return GpuSpec(name=f"{mib} MiB GPU", mib=mib)
        raise UserError(f"--gpu {text!r}: a GPU needs a positive memory size, such as 49140MiB or 48GiB")
    if size:
        raise UserError(f"--gpu {text!r}: give a unit, such as {raw}GiB or {raw}MiB")
    presets = ", ".join(GPU_PRESETS)
    raise UserError(f"--gpu {text!r}: unknown GPU; use one of {presets}, or a size such as 49140MiB or 48GiB")


# What sits between a card's total and the free memory at "Load weight begin": CUDA, cuBLAS and NCCL
# (an L4 at TP 4: 0.86 GiB; an H100 at TP 1: about 0.8 GiB; a B200: 1.5 GiB), plus whatever else holds
# memory on the card (sgl-project/sglang#7495: 75.02 GiB free on an 80 GB H100).
CONTEXT_MIN_GIB = 0.2
CONTEXT_MAX_GIB = 6.0
CONTEXT_TYPICAL_GIB = 0.75


def guess_gpu_from_free(free_gib: float) -> GpuSpec:
    """The GPU a measured baseline most likely came from: the smallest preset whose total leaves room
    for the CUDA context (and, within a few GiB, other holders), else free + a typical context.
    SGLang's automatic mem-fraction-static depends on the card's total, so a close guess matters when
    the flags leave it automatic."""
    fits = [
        (mib, name)
        for name, mib in GPU_PRESETS.items()
        if free_gib + CONTEXT_MIN_GIB <= mib / 1024 <= free_gib + CONTEXT_MAX_GIB
    ]
    if fits:
        mib, name = min(fits)
        return GpuSpec(name=f"{name} (guessed from --free-gib)", mib=mib)
    mib = math.ceil((free_gib + CONTEXT_TYPICAL_GIB) * 1024)
    return GpuSpec(name=f"{mib} MiB GPU (assumed from --free-gib)", mib=mib)
