"""What the SGLang stand-in will do, worked out before it does it: pool sizes from the fit report, the
notes and errors SGLang prints for a given launch, and where a model's config comes from.

Pure functions of the flags, the model facts and the fit report, so the tests can check them directly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sgtui.sim import logfmt

if TYPE_CHECKING:
    from sgtui.core.model import ModelFacts
    from sgtui.core.sglang.flags import LaunchSpec

MODELS_DIR = Path(__file__).with_name("models")
GIB = 2**30


def cuda_oom_text(device: int, total_gib: float, free_gib: float, in_use: float, want_gib: float) -> str:
    """PyTorch's allocator error, as printed when a tensor does not fit."""
    free_mib = max(free_gib, 0.0) * 1024
    return (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {want_gib:.2f} GiB. GPU {device} "
        f"has a total capacity of {total_gib:.2f} GiB of which {free_mib:.2f} MiB is free. Including "
        f"non-PyTorch memory, this process has {in_use:.2f} GiB memory in use. Of the allocated memory "
        f"{max(in_use - 1, 0):.2f} GiB is allocated by PyTorch, and 20.00 MiB is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )


GRAPH_HINTS = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose "
)


@dataclass
class PoolPlan:
    """The pool sizes the fit engine predicts, in the units the log prints."""

    tokens: int
    k_gib: float
    total_gib: float
    max_running: int
    context_len: int
    mamba: tuple[int, float, float, float | None, float | None] | None
    draft_k_gib: float
    draft_arch: str

    @classmethod
    def from_report(cls, report: dict[str, Any], facts: ModelFacts, spec: LaunchSpec) -> PoolPlan:
        tokens = int(report.get("max_total_num_tokens") or 0)
        cell = float(report.get("kv_cell_bytes") or 0)
        page = spec.page_size or 1
        k_gib = (tokens + page) * cell / 2 / GIB
        max_running = int(report.get("max_running_requests") or 1)
        context_len = int(report.get("context_length") or facts.context_length)
        draft_tokens = spec.speculative_num_draft_tokens or (4 if spec.speculative_algorithm else 0)
        req_gib = (max_running + 1) * (context_len + 4 + draft_tokens) * 4 / GIB
        mamba = None
        mamba_gib = 0.0
        m = report.get("mamba")
        if isinstance(m, dict):
            state = float(m.get("state_gib") or 0.0)
            inter = float(m["spec_state_gib"]) if m.get("spec_state_gib") else None
            share = conv_fraction(facts, spec.tp_size)
            conv = m.get("conv_state_gib", state * share)
            ssm = m.get("ssm_state_gib", state * (1 - share))
            inter_ssm = inter_conv = None  # printed only with speculative decoding
            if inter is not None:
                inter_ssm = float(m.get("intermediate_ssm_gib", inter * (1 - share)))
                inter_conv = float(m.get("intermediate_conv_gib", inter * share))
            mamba = (int(m.get("max_mamba_cache_size") or 0), float(conv), float(ssm), inter_ssm, inter_conv)
            mamba_gib = state + (inter or 0.0)
        full_layers = max(int(getattr(facts, "full_attention_layers", facts.num_layers)), 1)
        draft_layers = (
            1 if getattr(facts, "is_gdn_hybrid", False) else max(getattr(facts, "mtp_layers", 1), 1)
        )
        draft_k = (tokens + page) * cell / full_layers * draft_layers / 2 / GIB
        return cls(
            tokens=tokens,
            k_gib=k_gib,
            total_gib=2 * k_gib + mamba_gib + req_gib,
            max_running=max_running,
            context_len=context_len,
            mamba=mamba,
            draft_k_gib=draft_k,
            draft_arch=(facts.architecture.replace("ForConditionalGeneration", "ForCausalLM") + "MTP"),
        )


def conv_fraction(facts: ModelFacts, tp: int) -> float:
    """Share of one Mamba slot taken by the conv state (the rest is the SSM state)."""
    lin = getattr(facts, "linear", None)
    if lin is None:
        return 0.05
    conv_dim = lin.value_head_dim * lin.num_value_heads + 2 * lin.num_key_heads * lin.key_head_dim
    conv = conv_dim / tp * (lin.conv_kernel_dim - 1) * 2
    ssm_bytes = 2 if (lin.ssm_dtype or "float32") in ("bfloat16", "float16") else 4
    ssm = lin.num_value_heads / tp * lin.value_head_dim * lin.key_head_dim * ssm_bytes
    return conv / (conv + ssm)


def report_dtype(report: dict[str, Any], facts: ModelFacts) -> str:
    return str(report.get("dtype") or facts.dtype or "bfloat16").removeprefix("torch.")


def default_chunked_prefill(gpu_gib: float) -> int:
    if gpu_gib < 35:
        return 2048
    if gpu_gib < 60:
        return 4096
    return 8192 if gpu_gib < 160 else 16384


def capture_sizes(spec: LaunchSpec, report: dict[str, Any]) -> list[int]:
    """Decode batch sizes captured as CUDA graphs: SGLang's list, up to max_running_requests."""
    limit = spec.cuda_graph_max_bs or 32
    limit = min(limit, int(report.get("max_running_requests") or limit))
    sizes = [1, 2, 4, 8, 12, *range(16, 257, 8)]
    picked = [s for s in sizes if s <= limit]
    if limit not in picked:
        picked.append(limit)
    return sorted(set(picked))


def exception_text(error: str, default_type: str) -> str:
    """The error as Python prints it: `Type: message` (fit reports may give just the message)."""
    head = error.split(":", 1)[0]
    if head.replace(".", "").isidentifier() and (head.endswith("Error") or head.endswith("Exception")):
        return error
    if error.startswith("Loaded weights leave") or "is not compatible with radix cache" in error:
        return f"ValueError: {error}"
    return f"{default_type}: {error}"


def server_arg_notes(spec: LaunchSpec, facts: ModelFacts, version: str) -> list[str]:
    """Lines ServerArgs logs while it adjusts the arguments, before the server_args line."""
    notes = []
    arch = facts.architecture
    hybrid = getattr(facts, "is_gdn_hybrid", False)
    if spec.speculative_algorithm and hybrid and logfmt.version_tuple(version) <= (0, 5, 9):
        notes.append(
            f"Disabling radix cache since speculative decoding for {arch} is not supported with radix cache "
            "yet."
        )
    if spec.speculative_algorithm and spec.max_running_requests is None:
        notes.append(
            "Max running requests is reset to 48 for speculative decoding. You can override this by "
            "explicitly setting --max-running-requests."
        )
    return notes


def radix_conflict(spec: LaunchSpec, facts: ModelFacts, version: str) -> str | None:
    """0.5.11 refuses speculative decoding on hybrid models with the radix cache under no_buffer."""
    if logfmt.version_tuple(version) != (0, 5, 11):
        return None
    no_buffer = (spec.mamba_strategy or "auto").lower() in ("auto", "no_buffer")
    hybrid = getattr(facts, "is_gdn_hybrid", False)
    if not (spec.speculative_algorithm and hybrid and no_buffer and not spec.disable_radix_cache):
        return None
    return (
        f"ValueError: Speculative decoding for {facts.architecture} is not compatible with radix cache "
        "when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, "
        "please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1."
    )


def model_folder(model_path: str | None) -> Path | None:
    """A local model folder as given, else the built-in catalogue entry named like its last component."""
    if not model_path:
        return None
    given = Path(model_path)
    if (given / "config.json").is_file():
        return given
    name = given.name.lower()
    for entry in MODELS_DIR.iterdir() if MODELS_DIR.is_dir() else ():
        if entry.name.lower() == name and (entry / "config.json").is_file():
            return entry
    return None


def shard_count(folder: Path | None) -> int:
    """Files of the checkpoint (distinct values of the safetensors index's weight_map)."""
    if folder is None:
        return 1
    index = folder / "model.safetensors.index.json"
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
        return max(1, len(set(data.get("weight_map", {}).values())))
    except (OSError, ValueError):
        return 1
