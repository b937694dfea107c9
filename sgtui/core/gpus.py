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

# name -> MiB, the "Memory-Usage" total nvidia-smi prints (rocm-smi's VRAM total for AMD). Where each
# figure comes from:
#   [seen X]   printed by nvidia-smi / rocm-smi in public material X (an issue or PR thread); [nvml] is
#              a public table of NVML totals observed in production (a GPU-rental validator's
#              VRAM pre-check, found by code search: file 59322749610 of the project's search index);
#   [brief]    the project's task brief (figures seen in real nvidia-smi output on those cards);
#   [log]      the only total consistent with an automatic mem_fraction_static in a real SGLang log;
#   [derived]  not seen printed: worked out from a sibling card with the same memory, or from the
#              capacity, as the comment says. Correct it when a real nvidia-smi line turns up.
GPU_PRESETS: dict[str, int] = {
    "RTX-2080-Ti": 11264,  # [seen] "9773MiB /  11264MiB" in nvidia-smi tables (code search)
    "T4": 15360,  # [seen modal-labs/modal-client#2797] Tesla T4
    "RTX-5080": 16303,  # [derived] 16 GiB GDDR7 less what the RTX 5090 (32607 of 32768) loses per 16 GiB
    "RTX-4080": 16376,  # [smi] NVIDIA GeForce RTX 4080 (also RTX 4070 Ti SUPER, RTX A4000)
    "A10": 23028,  # [seen modal-labs/modal-client#2797] NVIDIA A10; the A10G prints the same
    "A10G": 23028,  # [seen modal-labs/modal-client#2797]
    "L4": 23034,  # [seen modal-labs/modal-client#2797] 22.49 GiB usable, not 24
    "RTX-4090": 24564,  # [brief]
    "RTX-3090": 24576,  # [seen noonghunna/club-3090#1128] "22598MiB / 24576MiB"
    "A30": 24576,  # [derived] 24 GiB HBM2 (ECC off); with ECC on the driver keeps back a little more
    "RTX-5090": 32607,  # [seen noonghunna/club-3090#845] "0MiB / 32607MiB"
    "A100-40G": 40960,  # [seen modal-labs/modal-client#2797]
    "L20": 46068,  # [seen] "9MiB / 46068MiB" under "NVIDIA L20" (code search); 49140 with ECC off
    "L40": 46068,  # [nvml] 46068 (75 %), 49140 (25 %, ECC off)
    "L40S": 46068,  # [seen modal-labs/modal-client#2797]
    "A6000": 49140,  # [brief] RTX A6000
    "MI250X": 65520,  # [derived] 64 GiB per GCD (rocm-smi lists each GCD of an MI250X as a GPU)
    "H100-80G": 81559,  # [seen modal-labs/modal-client#2797, google/gvisor#10413] H100 80GB HBM3 (SXM)
    "H100-PCIe": 81559,  # [nvml]
    "H800": 81559,  # [derived] the H100 SXM's memory (ai-dynamo/aiconfigurator#968: identical HBM)
    "A100-80G": 81920,  # [seen modal-labs/modal-client#2797]
    "A800": 81920,  # [seen vllm-project/vllm#41519, dexmal/dexbotic#41] A800 80GB PCIe / SXM4
    "H100-NVL": 95830,  # [seen NVIDIA/gpu-admin-tools#4] "0MiB / 95830MiB", also [nvml]
    "H800-NVL": 95830,  # [derived] the H100 NVL's 94 GB
    "H20": 97871,  # [smi] NVIDIA H20 (96 GB)
    "GH200": 97871,  # [smi] GH200 480GB shows its 96 GB HBM as 97871 MiB
    "RTX-PRO-6000": 97887,  # [brief] RTX PRO 6000 Blackwell (Server and Workstation Edition)
    "H200": 143771,  # [seen sgl-project/sglang#3196], also [smi] "NVIDIA H200 NVL (143771 MiB)"
    "B200": 183359,  # [smi] NVIDIA B200
    "GB200": 189471,  # [derived] 185 GiB of HBM3e per GB200 GPU; not seen printed
    "MI300X": 196592,  # [derived] 8 x 25767706624 B, one CPX partition's size (ROCm/legacy-rocm-build#4750)
    "MI308X": 196592,  # [derived] the same 192 GB HBM3 as the MI300X
    "MI325X": 262144,  # [derived] 256 GiB HBM3E
    "B300": 275040,  # [nvml] NVIDIA B300 SXM6 AC
    "MI355X": 294912,  # [log] 288 GiB: SGLang 0.5.8's automatic 0.908 at TP 8 (27136 MiB kept back)
}

# The presets whose size is [derived], not seen printed: accepted by name, never guessed from a baseline.
DERIVED_SIZES = frozenset(
    {"RTX-5080", "A30", "MI250X", "H800", "H800-NVL", "GB200", "MI300X", "MI308X", "MI325X"}
)

_ALIASES: dict[str, str] = {
    "A100": "A100-80G",
    "H100": "H100-80G",
    "H100SXM": "H100-80G",
    "H200NVL": "H200",
    "RTXA6000": "A6000",
    "4090": "RTX-4090",
    "5090": "RTX-5090",
    "3090": "RTX-3090",
    "2080TI": "RTX-2080-Ti",
    "PRO6000": "RTX-PRO-6000",
    "RTXPRO6000BLACKWELL": "RTX-PRO-6000",
    "TESLAT4": "T4",
    "4080": "RTX-4080",
    "5080": "RTX-5080",
}

# nvidia-smi's and rocm-smi's own names ("NVIDIA H100 80GB HBM3", "A100-SXM4-40GB", "AMD Instinct
# MI300X"), matched in order on the normalised key (upper case, no punctuation, no vendor prefix).
_SMI_NAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), name)
    for pattern, name in (
        (r"^H100NVL", "H100-NVL"),
        (r"^H100PCIE", "H100-PCIe"),
        (r"^H100", "H100-80G"),
        (r"^H800NVL", "H800-NVL"),
        (r"^H800", "H800"),
        (r"^A100.*40GB", "A100-40G"),
        (r"^A100", "A100-80G"),
        (r"^A800", "A800"),
        (r"^H200", "H200"),
        (r"^GH200", "GH200"),
        (r"^GB200", "GB200"),
        (r"^H20(?!0)", "H20"),
        (r"^B200", "B200"),
        (r"^B300", "B300"),
        (r"^RTXPRO6000", "RTX-PRO-6000"),
        (r"^RTXA6000", "A6000"),
        (r"^L40S", "L40S"),
        (r"^L40", "L40"),
        (r"^L20", "L20"),
        (r"^L4(?!\d)", "L4"),
        (r"^RTX2080TI", "RTX-2080-Ti"),
        (r"^RTX3090", "RTX-3090"),
        (r"^RTX4090", "RTX-4090"),
        (r"^RTX4080", "RTX-4080"),
        (r"^RTX5090", "RTX-5090"),
        (r"^RTX5080", "RTX-5080"),
        (r"^A10G", "A10G"),
        (r"^A10(?!\d)", "A10"),
        (r"^A30", "A30"),
        (r"^MI250", "MI250X"),
        (r"^MI300X", "MI300X"),
        (r"^MI308", "MI308X"),
        (r"^MI325", "MI325X"),
        (r"^MI355", "MI355X"),
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
    key = re.sub(r"[^A-Z0-9]", "", text.upper())
    for prefix in ("NVIDIA", "GEFORCE", "TESLA", "AMDINSTINCT", "AMD", "INSTINCT"):
        key = key.removeprefix(prefix)
    return key


_BY_KEY: dict[str, str] = {_key(name): name for name in GPU_PRESETS} | {
    _key(alias): target for alias, target in _ALIASES.items()
}


def preset_name(text: str) -> str | None:
    """The preset a preset or printed name means ("NVIDIA H100 80GB HBM3" -> "H100-80G"), else None."""
    key = _key(text.strip())
    return _BY_KEY.get(key) or next((n for pattern, n in _SMI_NAMES if pattern.search(key)), None)


def is_rocm(name: str) -> bool:
    """An AMD Instinct card (SGLang runs on ROCm there), by preset or printed name."""
    preset = preset_name(name) or ""
    return preset.startswith("MI") or name.strip().upper().startswith(("AMD", "MI"))


def parse_gpu(text: str) -> GpuSpec:
    """A preset name (any case or punctuation: "h100 80g", "RTX_PRO_6000"), a name as nvidia-smi or
    rocm-smi prints it ("NVIDIA L40S", "AMD Instinct MI300X") or a size ("49140MiB", "48GiB")."""
    raw = text.strip()
    name = preset_name(raw)
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
    """The GPU a measured baseline most likely came from: the smallest preset (of those whose size was
    seen printed) whose total leaves room for the CUDA context (and, within a few GiB, other holders),
    else free + a typical context. Cards that print the same total are all named ("L40S/L20/L40").
    SGLang's automatic mem-fraction-static depends on the card's total, so a close guess matters when
    the flags leave it automatic."""
    fits = [
        (mib, name)
        for name, mib in GPU_PRESETS.items()
        if name not in DERIVED_SIZES
        and free_gib + CONTEXT_MIN_GIB <= mib / 1024 <= free_gib + CONTEXT_MAX_GIB
    ]
    if fits:
        mib = min(fits)[0]
        names = sorted((name for size, name in fits if size == mib), key=_GUESS_ORDER.index)
        return GpuSpec(name=f"{'/'.join(names)} (guessed from --free-gib)", mib=mib)
    mib = math.ceil((free_gib + CONTEXT_TYPICAL_GIB) * 1024)
    return GpuSpec(name=f"{mib} MiB GPU (assumed from --free-gib)", mib=mib)


# Same-size cards, the most common first (the order a guess names them in).
_GUESS_ORDER = sorted(
    GPU_PRESETS,
    key=lambda n: (
        0 if n in ("L40S", "H100-80G", "A100-80G", "A10", "H20", "RTX-3090") else 1,
        list(GPU_PRESETS).index(n),
    ),
)
