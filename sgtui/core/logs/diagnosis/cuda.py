"""CUDA diagnoses: out of memory at startup or while serving (serving levers), CUDA graph capture failures,
and fatal signals / CUDA faults (what they usually mean in SGLang, what to try)."""

from __future__ import annotations

from sgtui.core.logs.diagnosis.common import (
    LOWER_COST,
    LOWER_MFS,
    Context,
    Diagnosis,
    Suggestion,
    gib,
    mfs_suggestion,
    phase_words,
)
from sgtui.core.logs.diagnosis.crash import crash, kernel_resources
from sgtui.core.logs.diagnosis.memory import smaller_weights
from sgtui.core.logs.diagnosis.serving import SERVING_PHASES, serving_oom


def graph_bs_flag(ctx: Context) -> str:
    return "--cuda-graph-max-bs-decode" if ctx.new_style else "--cuda-graph-max-bs"


def graph_memory_suggestions(ctx: Context) -> list[Suggestion]:
    mfs = ctx.num("mem_fraction_static")
    out: list[Suggestion] = []
    bs = ctx.num("cuda_graph_max_bs") or ctx.num("cuda_graph_max_bs_captured")
    target_bs = str(max(1, int(bs) // 2)) if bs else "16"
    now = f" from {int(bs)}" if bs else ""
    out.append(
        Suggestion(
            graph_bs_flag(ctx),
            target_bs,
            f"Capture CUDA graphs for batch sizes up to {target_bs}{now}: less graph memory; larger decode "
            "batches run without graphs (slower).",
        )
    )
    if mfs is not None:
        out.append(mfs_suggestion(mfs, max(0.5, round(mfs - 0.05, 2)), LOWER_COST))
    else:
        out.append(
            Suggestion("--mem-fraction-static", None, f"{LOWER_MFS} --mem-fraction-static: {LOWER_COST}")
        )
    if ctx.facts.get("enable_torch_compile") is True:
        out.append(
            Suggestion(
                "--enable-torch-compile",
                "false",
                "Drop --enable-torch-compile: compiled graphs need extra memory at capture time; decoding is "
                "somewhat slower without it.",
            )
        )
    return out


def cuda_oom(ctx: Context) -> Diagnosis:
    values = ctx.error.values
    lines = [f"CUDA ran out of memory while {phase_words(ctx.phase)}."]
    if values.get("tried_gib") is not None:
        lines.append(f"It tried to allocate {gib(values['tried_gib'])}")
        if values.get("gpu_free_gib") is not None:
            lines[-1] += f" with {gib(values['gpu_free_gib'])} free of {gib(values.get('gpu_total_gib'))}"
        lines[-1] += "."
    baseline = ctx.num("load_weight_begin_avail_gib")
    fallback = transformers_fallback(ctx)
    if fallback is not None and ctx.phase in ("starting", "distributed_init", "loading_weights"):
        return _fallback_oom(ctx, lines, fallback)
    if ctx.phase in ("starting", "distributed_init", "loading_weights"):
        if baseline is not None:
            lines.append(f"{gib(baseline)} per GPU was free when the weights started loading.")
        lines.append("The weights do not fit in what is free on each GPU.")
        suggestions = smaller_weights(ctx, ctx.num("weight_mem_gib"))
        suggestions.append(
            Suggestion(
                None, None, "Check the GPU panel for other processes (or a killed run) still holding memory."
            )
        )
        return Diagnosis(
            "CUDA out of memory while loading the weights", " ".join(lines), suggestions, "cuda_oom"
        )
    if ctx.phase in SERVING_PHASES:
        return serving_oom(ctx)
    pool_end = ctx.num("memory_pool_end_avail_gib")
    if pool_end is not None:
        lines.append(
            f"After the pools were allocated {gib(pool_end)} per GPU was left for graphs and activations."
        )
    return Diagnosis(
        f"CUDA out of memory while {phase_words(ctx.phase)}",
        " ".join(lines),
        graph_memory_suggestions(ctx),
        "cuda_oom",
    )


def transformers_fallback(ctx: Context) -> str | None:
    """The architecture SGLang runs through its generic Transformers backend (the log's "X has no SGLang
    implementation, falling back to Transformers implementation", or --model-impl transformers), else None."""
    arch = ctx.facts.get("transformers_fallback")
    if isinstance(arch, str) and arch:
        return arch
    return "the model" if ctx.facts.get("model_impl") == "transformers" else None


def _fallback_oom(ctx: Context, lines: list[str], arch: str) -> Diagnosis:
    """The Transformers backend (sglang/srt/models/transformers.py, `TransformersForCausalLM.tensor_parallel`:
    "Currently only supports linear layers") shards only the nn.Linear layers the model's tensor-parallel plan
    names: fused MoE experts and every other layer load whole on each GPU, so more GPUs or a quantization
    flag do not shrink them the way SGLang's own model for the architecture would."""
    lines.append(
        f"{arch} has no SGLang implementation in this release, so it runs through the Transformers fallback, "
        "which shards only the linear layers of the model's tensor-parallel plan: everything else, MoE "
        "experts included, is loaded whole on every GPU. That, not the number of GPUs, is why the weights do "
        "not fit."
    )
    suggestions = [
        Suggestion(
            None,
            None,
            f"Use an SGLang release with native support for {arch} (its release notes or "
            "python/sglang/srt/models/ list the architectures): it shards experts and weights over "
            "--tp-size.",
        ),
        Suggestion(
            None,
            None,
            "More GPUs or --quantization do not help while the fallback loads those layers whole on each "
            "GPU.",
        ),
    ]
    return Diagnosis(
        "CUDA out of memory while loading the weights (the Transformers fallback)",
        " ".join(lines),
        suggestions,
        "cuda_oom",
    )


def cuda_graph_failed(ctx: Context) -> Diagnosis:
    if ctx.error.values.get("crash"):
        return crash(ctx)
    if ctx.error.values.get("kernel_resource"):
        return kernel_resources(ctx)
    text = ctx.error.text
    oom = bool(ctx.error.values.get("oom")) or "out of memory" in text
    pool_end = ctx.num("memory_pool_end_avail_gib")
    begin = ctx.num("cuda_graph_begin_avail_gib")
    numbers = ""
    if pool_end is not None or begin is not None:
        numbers = f" Free per GPU when capture began: {gib(begin if begin is not None else pool_end)}."
    if oom:
        values = ctx.error.values
        tried = ""
        if values.get("tried_gib") is not None:
            tried = f" It tried to allocate {gib(values['tried_gib'])}"
            if values.get("gpu_free_gib") is not None:
                tried += f" with {gib(values['gpu_free_gib'])} free of {gib(values.get('gpu_total_gib'))}"
            tried += "."
        detail = (
            "CUDA graph capture ran out of memory: the graphs did not fit in the slack the pools left."
            + tried
            + numbers
        )
        return Diagnosis(
            "CUDA graph capture ran out of memory",
            detail,
            graph_memory_suggestions(ctx),
            "cuda_graph_failed",
        )
    if ctx.error.values.get("cut"):
        frame = ctx.error.values.get("last_frame")
        where = f" (its last frame shown is in {frame})" if frame else ""
        detail = (
            f"CUDA graph capture crashed: the log ends inside its traceback{where}, before the exception "
            "line, so the error itself is not in this log." + numbers
        )
    else:
        detail = (
            f"CUDA graph capture crashed with an error that is not about memory: "
            f"{text.strip()[:300].rstrip('.')}. The kernel named in the traceback failed while being "
            "captured." + numbers
        )
    suggestions = [
        Suggestion(
            "--disable-cuda-graph",
            None,
            "Start without CUDA graphs to confirm the capture is the problem; decoding is much slower "
            "without them.",
        ),
        Suggestion(
            "--attention-backend",
            None,
            "Try another attention backend (e.g. triton or flashinfer): the failing kernel may be "
            "backend-specific.",
        ),
        Suggestion(
            None, None, "Upgrade SGLang (and its kernel packages): capture crashes are often fixed there."
        ),
    ]
    return Diagnosis("CUDA graph capture failed", detail, suggestions, "cuda_graph_failed")
