"""Memory diagnoses: not enough memory for the KV/Mamba pools (the arithmetic, the fraction that would
work), unbalanced GPUs."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from sgtui.core.fit.report import first_offered
from sgtui.core.logs.diagnosis.common import (
    RAISE_MFS,
    Context,
    Diagnosis,
    Suggestion,
    fmt_mfs,
    gib,
    mfs_suggestion,
    phase_words,
    raise_cost,
    with_fit,
)

MAX_MFS = 0.98
LOW_MFS = 0.5  # below this a --mem-fraction-static is a mistake, not a tuning choice
MIN_SLACK_GIB = 2.0  # below this, CUDA graphs and activations rarely fit: shrink the weights instead
HYBRID_CLASSES = re.compile(
    r"Qwen3Next|Qwen3_5|Qwen3\.5|Mamba|Hybrid|NemotronH|Jamba|FalconH|Lfm2|KimiLinear|Zamba"
)


def not_enough_memory(ctx: Context) -> Diagnosis:
    f = ctx.num
    baseline = f("load_weight_begin_avail_gib") or ctx.fit_num("baseline_free_gib")
    weights = f("weight_mem_gib") or ctx.fit_num("weights_gib")
    if weights is not None and weights < 0:
        weights = 0.0  # a measurement's noise ("mem usage=-0.01 GB" from 0.5.23's CPU engine): nothing taken
    after = f("avail_mem_after_weights_gib")
    derived = ""
    if baseline is None and weights is not None and after is not None:
        baseline, derived = weights + after, " (free after the weights + the weights)"
    if after is None and baseline is not None and weights is not None:
        after = baseline - weights
    mfs = f("mem_fraction_static") or ctx.fit_num("mem_fraction_static")
    draft = f("draft_weight_mem_gib")
    lines = [f"SGLang had no memory left for the KV cache pool when it sized it ({phase_words(ctx.phase)})."]
    mamba_pool = ctx.error.values.get("pool") == "mamba"
    if mamba_pool:
        reqs = ctx.error.values.get("max_num_reqs")
        lines[0] = (
            "The hybrid model's Mamba/linear-attention state cache got too little memory to serve even one "
            f"request ({phase_words(ctx.phase)}"
            + (f"; SGLang computed room for {int(reqs)} requests" if isinstance(reqs, int | float) else "")
            + ")."
        )
    if baseline is not None:
        lines.append(f"Free memory per GPU before the weights (the baseline): {gib(baseline)}{derived}.")
    if weights is not None:
        lines.append(
            f"The weights took {gib(weights)} per GPU" + (f", leaving {gib(after)}." if after else ".")
        )
    if draft is not None:
        lines.append(f"The speculative draft model's weights took another {gib(draft)} per GPU.")
    rest = None
    if mfs is not None and baseline is not None:
        slack = baseline * (1 - mfs)
        lines.append(
            f"--mem-fraction-static {fmt_mfs(mfs)} keeps {gib(slack)} (baseline x (1 - {fmt_mfs(mfs)})) "
            "back for CUDA graphs and activations"
        )
        if after is not None:
            rest = after - slack
            lines[-1] += f", so the pools got {gib(after)} - {gib(slack)} = {gib(rest)}."
            if rest <= 0:
                lines.append("Nothing was left: the weights alone exceed the static budget.")
        else:
            lines[-1] += "."
    elif mfs is not None:
        lines.append(f"--mem-fraction-static was {fmt_mfs(mfs)}.")
    suggestions: list[Suggestion] = []
    if mamba_pool:
        mrr = ctx.num("max_running_requests")
        suggestions.append(
            Suggestion(
                "--max-running-requests",
                str(max(1, int(mrr) // 2)) if mrr else None,
                "Fewer concurrent requests need fewer Mamba state slots; fewer requests run at once.",
            )
        )
    suggestions += _mamba_speculative_suggestions(ctx, rest, lines)
    suggestions += _extra_buffer_suggestion(ctx)
    need = max(
        (v for v in (f("min_viable_mem_fraction_static"), f("min_viable_mem_fraction_static_mtp")) if v),
        default=None,
    )
    if need is None and after is not None and baseline:
        need = 1 - after / baseline
    if need is not None and mfs is not None and need < mfs:
        # The pools did get memory; something inside them (Mamba state, speculative copies) took it all.
        lines.append(
            f"The pools did get {gib(rest)}, so what they hold before the KV cache (Mamba state, its "
            "speculative copies, the request table) took it all."
        )
        need = None
    shrink = need is None and mfs is None
    if need is not None:
        target = math.ceil((need + 0.02) * 100) / 100
        lines.append(f"The smallest --mem-fraction-static that leaves the pools any memory is {need:.3f}.")
        slack_ok = baseline is None or baseline * (1 - target) >= MIN_SLACK_GIB
        if target <= MAX_MFS and slack_ok:
            suggestions.append(mfs_suggestion(mfs, target, raise_cost(baseline, target)))
        else:
            shrink = True
            lines.append("That leaves too little slack for CUDA graphs and activations: shrink the weights.")
    elif mfs is not None and mfs < LOW_MFS:
        # Far below SGLang's own choice (0.8-0.9 on most GPUs): a wrapper or a typo set it, and +0.05 steps
        # would take many failed launches.
        lines.append(
            f"{fmt_mfs(mfs)} is far below what SGLang picks by itself (about 0.8-0.9), so almost nothing "
            "was left for the pools."
        )
        suggestions.append(mfs_suggestion(mfs, 0.85, raise_cost(baseline, 0.85)))
    elif mfs is not None:
        target = min(0.95, round(mfs + 0.05, 2))
        if target > mfs:
            suggestions.append(mfs_suggestion(mfs, target, raise_cost(baseline, target)))
    else:
        suggestions.append(
            Suggestion(
                "--mem-fraction-static",
                None,
                f"{RAISE_MFS} --mem-fraction-static (e.g. by 0.05): {raise_cost(None, 0.9)}",
            )
        )
    if shrink or (weights and baseline and weights > 0.85 * baseline):
        suggestions += smaller_weights(ctx, weights)
    suggestions = with_fit(ctx, suggestions)
    title = (
        "Not enough GPU memory for the Mamba state cache"
        if mamba_pool
        else "Not enough GPU memory for the KV cache"
    )
    return Diagnosis(title, " ".join(lines), suggestions, "not_enough_memory")


def _mamba_speculative_suggestions(ctx: Context, rest: float | None, lines: list[str]) -> list[Suggestion]:
    """Hybrid (Mamba/linear-attention) models with speculative decoding: state per request x draft tokens."""
    fit = ctx.fit or {}
    mamba = fit.get("mamba") if isinstance(fit.get("mamba"), Mapping) else None
    mrr_now = ctx.num("max_running_requests") or ctx.fit_num("max_running_requests")
    if mamba:
        spec = mamba.get("spec_state_gib") or 0.0
        state = mamba.get("state_gib") or 0.0
        budget = ctx.fit_num("rest_gib") or rest
        mrr = ctx.fit_num("max_running_requests") or mrr_now
        if not spec or not budget or not mrr or spec < 0.25 * budget:
            return []
        per_request = (spec + state) / mrr
        draft = fit.get("speculative_num_draft_tokens") or ctx.facts.get("speculative_num_draft_tokens")
        target = _largest_power_of_two_under(mrr, lambda n: n * per_request <= 0.25 * budget)
        tokens = f" x {draft} draft tokens" if draft else ""
        lines.append(
            f"Speculative decoding keeps Mamba state for every running request{tokens}: {int(mrr)} requests "
            f"reserve {spec:.2f} GiB of the {budget:.2f} GiB pool budget "
            f"(plus {state:.2f} GiB of regular state)."
        )
        if target is None:
            return []
        return [
            Suggestion(
                "--max-running-requests",
                str(target),
                f"{target} concurrent requests reserve about {target * per_request:.2f} GiB instead of "
                f"{spec + state:.2f} GiB, leaving the rest to the KV cache; fewer requests run at once.",
            )
        ]
    hybrid = (
        bool(HYBRID_CLASSES.search(str(ctx.facts.get("model_class", "")))) or "mamba_cache_size" in ctx.facts
    )
    spec_on = ctx.facts.get("speculative_algorithm") not in (None, "None", "")
    if not (hybrid and spec_on):
        return []
    lines.append(
        "This is a hybrid (Mamba/linear-attention) model with speculative decoding: each running request "
        "keeps Mamba state for every draft token, taken from the same pool budget before the KV cache."
    )
    current = f" from {int(mrr_now)}" if mrr_now else ""
    return [
        Suggestion(
            "--max-running-requests",
            "8",
            f"Cap concurrent requests{current} to 8: the speculative Mamba state shrinks in proportion, "
            "leaving memory for the KV cache; fewer requests run at once.",
        )
    ]


def _largest_power_of_two_under(limit: float, ok: Callable[[int], bool]) -> int | None:
    n = 1
    best = None
    while n < limit:
        if ok(n):
            best = n
        n *= 2
    return best


def _extra_buffer_suggestion(ctx: Context) -> list[Suggestion]:
    fit_mamba = (ctx.fit or {}).get("mamba")
    fit_strategy = fit_mamba.get("strategy") if isinstance(fit_mamba, Mapping) else None
    strategy = str(ctx.facts.get("mamba_strategy") or fit_strategy or "")
    if "extra_buffer" not in strategy:
        return []
    flag = "--mamba-radix-cache-strategy" if ctx.new_style else "--mamba-scheduler-strategy"
    return [
        Suggestion(
            flag,
            "no_buffer",
            "extra_buffer keeps several Mamba state slots per request (4-5x the state); no_buffer keeps one, "
            "at the cost of prefix-cache hits on hybrid models.",
        )
    ]


def smaller_weights(ctx: Context, weights: float | None) -> list[Suggestion]:
    tp = ctx.facts.get("tp_size")
    out: list[Suggestion] = []
    if isinstance(tp, int) and tp >= 1:
        per = f" ({gib(weights / 2)} of weights per GPU instead of {gib(weights)})" if weights else ""
        out.append(
            Suggestion(
                "--tp-size",
                str(tp * 2),
                f"Split the model over {tp * 2} GPUs{per}; needs that many free GPUs.",
            )
        )
    else:
        out.append(
            Suggestion("--tp-size", None, "Split the model over more GPUs; needs that many free GPUs.")
        )
    if ctx.facts.get("quantization") in (None, "None") and "quantization_loaded" not in ctx.facts:
        out.append(
            Suggestion(
                "--quantization",
                "fp8",
                "FP8 weights take about half the memory of bf16 ones, at a small accuracy cost "
                "(or use a pre-quantized checkpoint).",
            )
        )
    return out


def memory_unbalanced(ctx: Context) -> Diagnosis:
    detail = (
        "The GPUs of this launch had very different amounts of free memory: another process holds memory on "
        "at least one of them (SGLang sizes every rank from the poorest one, so it refuses)."
    )
    values = ctx.error.values
    poorest = values.get("min_per_gpu_memory", values.get("pre_model_load_memory"))
    local = values.get("local_gpu_memory")
    if isinstance(poorest, int | float) and isinstance(local, int | float):
        detail += (
            f" The poorest GPU had {gib(float(poorest))} free, this rank's GPU {gib(float(local))} "
            "(SGLang wants at least 90% of it everywhere)."
        )
    suggestions = [
        Suggestion(
            None,
            None,
            "Find the process in the GPU panel (or nvidia-smi) and stop it; a killed run can hold "
            "memory until its whole process group is gone.",
        ),
        Suggestion("CUDA_VISIBLE_DEVICES", None, "An environment variable: launch on GPUs that are free."),
    ]
    return Diagnosis("GPU memory unbalanced across ranks", detail, suggestions, "memory_unbalanced")


# The error classes where the fit's ranking of fixes answers the failure (memory at startup).
FIT_FIX_CLASSES = frozenset({"not_enough_memory", "cuda_oom", "cuda_graph_failed"})


def fit_first_fix(fit: Mapping[str, Any] | None) -> Suggestion | None:
    """The fit report's first fix (`FitReport.first_fix()`: the first ranked one that fits, else the
    first tight one) as a suggestion, so the diagnosis offers what `sgtui fit` and the TUI offer."""
    fixes = (fit or {}).get("fixes")
    if not isinstance(fixes, list):
        return None
    ranked = [f for f in fixes if isinstance(f, Mapping) and f.get("flag")]
    fix = first_offered(ranked, lambda f: f.get("verdict"))
    if fix is None:
        return None
    value = fix.get("value")
    shown = None if value is None or value is True else str(value)
    why = str(fix.get("why") or "")
    return Suggestion(str(fix["flag"]), shown, f"{why} (the fit's first fix: {fix['verdict']})".strip())


def lead_with_fit_fix(diagnosis: Diagnosis, fit: Mapping[str, Any] | None) -> Diagnosis:
    """`diagnosis` with the fit's first fix as its first suggestion (replacing its own for that flag)."""
    first = fit_first_fix(fit)
    if first is None or diagnosis.error_class not in FIT_FIX_CLASSES:
        return diagnosis
    rest = [s for s in diagnosis.suggestions if s.flag != first.flag]
    return replace(diagnosis, suggestions=[first, *rest])
