"""The free memory before the weights (SGLang's baseline P) when nothing was measured: the GPU's total
as nvidia-smi / rocm-smi prints it, less what the CUDA/HIP context, cuBLAS/hipBLASLt workspaces, NCCL/RCCL
and the custom all-reduce buffers take before "Load weight begin" (P is measured after distributed
init: 0.5.9 model_runner.init_torch_distributed, 0.5.23 distributed/bootstrap.measure_pre_model_load_memory).

Every figure is `total - P` read from a real log's "Load weight begin. avail mem=" line, with the card
and TP the log or its thread names. Logs where another process held memory (sgl-project/sglang#7495:
75.02 GiB free on an 80 GB H100) are left out. Where a card has no log its family's figure is used,
and the error says how far the family's logs spread.

card (nvidia-smi MiB)      TP  SGLang       P GiB   total-P  source
L4 (23034)                 4   0.4.3.post4  21.63   0.86     ../shared/logs 001 (didier-durand/llms-in-clouds
                                                             docs/sglang.md) and 012 (sglang#4062)
RTX 4070 Ti SUPER (16376)  1   0.4.5.post1  15.27   0.72     ../shared/logs 021 (sglang#5576)
RTX 4090 (24564)           1   dev 2025-03  22.46   1.53     ../shared/logs 018 (sglang#4897), a desktop card
RTX 4090 (24564)           2   dev 2026-04  22.93   1.06     tests/core/test_fit_reallogs.py "qwen3.5-9b"
24 GB, Docker Desktop      1   0.4.9        22.39   1.60     test_fit_reallogs "llama-3.1-8b 24GB"
H100 80GB (81559)          1   0.4.1        78.81   0.84     test_fit_reallogs (docs.sglang.ai quick start)
H100 80GB (81559)          1   0.5.2x       78.48   1.17     test_fit_reallogs "qwen3-30b-a3b fp8"
B200 (183359)              1   0.5.10       177.57  1.49     test_fit_reallogs "qwen3-8b b200"
MI300X (196592)            1   0.3.x        191.33  0.65     test_fit_reallogs "llama-3-8b mi300x"
MI355X (294912)            8   0.5.8        283.53  4.47     test_fit_reallogs "kimi-k2.5", "glm-5" (283.50)

Error: the same card differs by up to 0.33 GiB between releases (H100: 0.84 vs 1.17) and consumer
cards by up to 0.8 GiB (a desktop session holds memory); ROCm at TP > 1 rests on one card's logs.
"""

from __future__ import annotations

from dataclasses import dataclass

from sgtui.core.gpus import GpuSpec, is_rocm, preset_name

_HOPPER = frozenset({"H100-80G", "H100-PCIe", "H800", "H100-NVL", "H800-NVL", "H20", "GH200", "H200"})
_BLACKWELL = frozenset({"B200", "B300", "GB200", "RTX-PRO-6000", "RTX-5090", "RTX-5080"})


@dataclass(frozen=True)
class Baseline:
    """GiB lost before the baseline, its error (GiB, either way), and where the figure comes from."""

    loss_gib: float
    error_gib: float
    basis: str


# (cards, TP > 1?, loss, error, basis): the first row matching the card and TP wins.
_ROWS: tuple[tuple[frozenset[str], bool | None, float, float, str], ...] = (
    (frozenset({"MI355X"}), True, 4.47, 0.5, "MI355X at TP 8, two SGLang 0.5.8 logs (4.47, 4.50)"),
    (
        frozenset({"MI300X", "MI308X", "MI325X", "MI355X", "MI250X"}),
        False,
        0.65,
        0.5,
        "MI300X at TP 1, SGLang 0.3",
    ),
    (
        frozenset({"H100-80G", "H100-PCIe", "H800"}),
        False,
        1.0,
        0.2,
        "H100 at TP 1: 0.84 (0.4.1) and 1.17 (0.5.2x)",
    ),
    (_HOPPER, None, 1.2, 0.4, "Hopper family: H100 logs 0.84-1.17, plus NCCL at TP > 1"),
    (_BLACKWELL, None, 1.5, 0.4, "B200 at TP 1, SGLang 0.5.10: 1.49"),
    (frozenset({"L4"}), True, 0.86, 0.2, "L4 at TP 4, SGLang 0.4.3: 0.86"),
    (frozenset({"RTX-4090"}), True, 1.06, 0.3, "RTX 4090 at TP 2: 1.06"),
)
_ROCM_MULTI = Baseline(4.47, 3.0, "ROCm at TP > 1: only MI355X logs (4.47 at TP 8); other cards unmeasured")
_ROCM_ONE = Baseline(0.65, 0.5, "ROCm at TP 1: MI300X (0.65)")
_OTHER = Baseline(
    1.06, 0.5, "NVIDIA cards without a log of their own: the median of L4/RTX 4070/4090 logs, 0.72-1.60"
)


def estimated_loss(gpu: GpuSpec, tp: int) -> Baseline:
    """What a card loses before SGLang's baseline at this TP size, from the table above."""
    name = preset_name(gpu.name) or ""
    multi = tp > 1
    for cards, wants_multi, loss, error, basis in _ROWS:
        if name in cards and (wants_multi is None or wants_multi == multi):
            return Baseline(loss, error, basis)
    if is_rocm(gpu.name):
        return _ROCM_MULTI if multi else _ROCM_ONE
    return _OTHER
