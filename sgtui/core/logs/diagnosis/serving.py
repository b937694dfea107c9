"""Failures while the server serves requests: a CUDA OOM from one batch's activations, and its levers.

While serving, the static pools (weights, KV cache, CUDA graphs) already hold their share; what ran out is the
memory outside them that each forward pass needs for activations. So the levers shrink a batch's working set
(prefill chunk, concurrent requests, the longest prompt accepted, the largest graph) or LOWER
--mem-fraction-static to leave more memory outside the pools: the opposite of a startup "Not enough memory",
where raising it gives the KV pool more.
"""

from __future__ import annotations

from sgtui.core.logs.diagnosis.common import LOWER_COST, Context, Diagnosis, Suggestion, gib, mfs_suggestion

SERVING_PHASES = ("serving", "ready", "running")
_OPPOSITE = (
    ' This is the opposite of the startup case: a startup "Not enough memory" is fixed by raising it '
    "(more for the KV pool); here the pools got their share and what ran out is the memory outside them."
)


def serving_oom(ctx: Context) -> Diagnosis:
    values = ctx.error.values
    lines = [
        "CUDA ran out of memory while serving requests: a forward pass needed more activation memory than "
        "the static pools (weights, KV cache, CUDA graphs) left free."
    ]
    if values.get("tried_gib") is not None:
        lines.append(f"It tried to allocate {gib(values['tried_gib'])}")
        if values.get("gpu_free_gib") is not None:
            lines[-1] += f" with {gib(values['gpu_free_gib'])} free of {gib(values.get('gpu_total_gib'))}"
        lines[-1] += "."
    batch = values.get("last_batch")
    new_tokens = batch.get("new_tokens") if isinstance(batch, dict) else None
    if isinstance(batch, dict):
        what = ", ".join(
            f"{k.replace('_', ' ')} {v:,}" for k, v in batch.items() if isinstance(v, int) and k != "line"
        )
        lines.append(f"The batch running when it happened (line {batch.get('line')}): {what}.")
    free = ctx.num("available_gpu_mem_gib")
    if free is not None:
        lines.append(f"Free per GPU once the server was up: {gib(free)}.")
    mfs = ctx.num("mem_fraction_static")
    suggestions = [
        mfs_suggestion(mfs, max(0.5, round(mfs - 0.05, 2)), LOWER_COST + "." + _OPPOSITE)
        if mfs is not None
        else Suggestion(
            "--mem-fraction-static", None, f"Lower --mem-fraction-static by 0.05: {LOWER_COST}.{_OPPOSITE}"
        )
    ]
    chunk = ctx.num("chunked_prefill_size")
    suggestions.append(
        Suggestion(
            "--chunked-prefill-size",
            str(int(chunk) // 2) if chunk and chunk > 0 else "4096",
            "Prefill long prompts in smaller chunks: less activation memory per step; long prompts take more "
            "steps.",
        )
    )
    mrr = ctx.num("max_running_requests")
    suggestions.append(
        Suggestion(
            "--max-running-requests",
            str(max(1, int(mrr) // 2)) if mrr else None,
            "Fewer requests decoding at once: a smaller batch's activations; throughput under load drops.",
        )
    )
    context = ctx.num("context_length")
    if context is not None or new_tokens:
        cap = int(context) // 2 if context else None
        size = f" (now {int(context):,} tokens)" if context else ""
        suggestions.append(
            Suggestion(
                "--context-length",
                str(cap) if cap else None,
                f"Cap the longest prompt the server accepts{size}: a request that large is rejected with an "
                "error instead of taking the server down.",
            )
        )
    bs = ctx.num("cuda_graph_max_bs") or ctx.num("cuda_graph_max_bs_captured")
    flag = "--cuda-graph-max-bs-decode" if ctx.new_style else "--cuda-graph-max-bs"
    suggestions.append(
        Suggestion(
            flag,
            str(max(1, int(bs) // 2)) if bs else None,
            "Capture CUDA graphs for smaller batches: their memory is held for good, outside the KV pool; "
            "larger decode batches run without graphs (slower).",
        )
    )
    return Diagnosis("CUDA out of memory while serving requests", " ".join(lines), suggestions, "cuda_oom")
