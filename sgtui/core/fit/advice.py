"""Warnings with the number that would work, found by re-running the fit arithmetic.

Every suggestion is a search over the same model (never a rule of thumb), so "raise
--mem-fraction-static to at least 0.88" means 0.88 fits and 0.879 does not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from sgtui.core.fit.engine import TIGHT_SHARE
from sgtui.core.fit.report import FitReport, FitWarning
from sgtui.core.model import ModelFacts
from sgtui.core.sglang.flags import LaunchSpec
from sgtui.core.sglang.windows import window_for

Recompute = Callable[[LaunchSpec], FitReport]

RAISE_WHY = "more of the GPU for weights+KV; less slack for CUDA graphs and activations"
LOWER_WHY = "a smaller KV pool; more slack for CUDA graphs and activations"


def _first_true(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """Smallest n in [lo, hi] with ok(n), assuming ok is monotone (False...True)."""
    if lo > hi or not ok(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _last_true(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """Largest n in [lo, hi] with ok(n), assuming ok is monotone (True...False)."""
    if lo > hi or not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _mfs(spec: LaunchSpec, thousandths: int) -> LaunchSpec:
    return replace(spec, mem_fraction_static=thousandths / 1000)


def _strategy_flag(report: FitReport) -> str:
    """The Mamba strategy flag under the name the report's release knows."""
    return window_for(report.sglang_version).rules.strategy_flag


def _pools_fit(r: FitReport) -> bool:
    """SGLang gets past pool sizing (it may still run out of slack later): monotone in mfs."""
    return r.error is None or r.error.startswith("torch.OutOfMemoryError")


def _largest_roomy_fraction(spec: LaunchSpec, recompute: Recompute, current: int) -> int | None:
    """The largest mfs (in thousandths) below `current` that leaves roomy slack and still fits.

    Slack only grows as mfs falls while the KV pool shrinks, so "roomy slack" is monotone and the
    answer is its upper edge, provided the pools still fit there."""

    def roomy(t: int) -> bool:
        r = recompute(_mfs(spec, t))
        return r.slack_gib >= TIGHT_SHARE * r.activation_estimate_gib

    t = _last_true(1, current - 1, roomy)
    if t is None or recompute(_mfs(spec, t)).verdict != "fits":
        return None
    return t


def _summary(r: FitReport) -> str:
    if r.verdict == "fails":
        return "still fails"
    return f"{r.max_total_num_tokens:,} tokens, max_running_requests {r.max_running_requests} ({r.verdict})"


def advise(report: FitReport, recompute: Recompute, spec: LaunchSpec, model: ModelFacts) -> None:
    """Append warnings (in order of importance) to `report`."""
    w = report.warnings
    # the value the flag holds: SGLang may shrink it afterwards (aiter, multimodal), and a suggestion is
    # a flag value, so the search starts from the flag's own value
    current = round((spec.mem_fraction_static or report.mem_fraction_static) * 1000)

    def pools_fit_at(t: int) -> bool:
        return _pools_fit(recompute(_mfs(spec, t)))

    def holds_context_at(t: int) -> bool:
        r = recompute(_mfs(spec, t))
        return _pools_fit(r) and r.max_total_num_tokens >= r.context_length

    if report.available_after_weights_gib < 0:
        _weights_do_not_fit(report, spec)
    elif report.error and "radix cache" in report.error:
        no_radix = replace(spec, disable_radix_cache=True)
        alt = recompute(no_radix)
        w.append(
            FitWarning(
                "radix_cache_conflict",
                "SGLang refuses speculative decoding with the radix cache on a hybrid linear-attention model "
                f"under the no_buffer strategy. Add --disable-radix-cache: {_summary(alt)}.",
                "--disable-radix-cache",
                True,
            )
        )
        if alt.verdict == "fails":
            _spec_decoding_advice(alt, recompute, no_radix, model, into=report, prefix="With it, ")
    elif report.error and "memory capacity is unbalanced" in report.error:
        w.append(
            FitWarning(
                "unbalanced_gpus",
                "One GPU has more than 10 % less free memory than another: another process (or a killed "
                "run) still holds memory there. Free it first; SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0 "
                "skips the check, and then the poorest GPU sizes every rank.",
            )
        )
    elif report.error and "SWA pool" in report.error:
        w.append(
            FitWarning(
                "swa_pool_too_small",
                "The sliding-window pool (full tokens x --swa-full-tokens-ratio) must exceed the window plus "
                "one page: raise --swa-full-tokens-ratio, or give the KV pool more tokens (a larger or no "
                "--max-total-tokens, a higher --mem-fraction-static).",
                "--swa-full-tokens-ratio",
            )
        )
    elif report.error and "context_length" in report.error:
        w.append(
            FitWarning(
                "context_too_long",
                f"Lower --context-length to {model.context_length} (what the model's config allows), or set "
                "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 if you know the model handles more.",
                "--context-length",
                model.context_length,
            )
        )
    elif report.error and "extra_buffer is not compatible" in report.error:
        alt = recompute(replace(spec, mamba_strategy="no_buffer"))
        w.append(
            FitWarning(
                "extra_buffer_without_radix",
                f"Use {_strategy_flag(report)} no_buffer with --disable-radix-cache: {_summary(alt)}.",
                _strategy_flag(report),
                "no_buffer",
            )
        )
    elif report.verdict == "fails" and report.error:
        if "out of memory" in report.error:
            best = _largest_roomy_fraction(spec, recompute, current)
            if best is not None:
                w.append(
                    FitWarning(
                        "lower_mem_fraction_static",
                        f"The slack P*(1-mfs) cannot hold what SGLang allocates after the pools. Lower "
                        f"--mem-fraction-static to {best / 1000:.3f} or less ({LOWER_WHY}).",
                        "--mem-fraction-static",
                        best / 1000,
                    )
                )
        else:
            need = _first_true(current + 1, 990, holds_context_at) or _first_true(
                current + 1, 990, pools_fit_at
            )
            if need is not None:
                alt = recompute(_mfs(spec, need))
                tail = (
                    " It would leave little slack: expect trouble at CUDA graph capture."
                    if (alt.verdict == "tight")
                    else ""
                )
                w.append(
                    FitWarning(
                        "raise_mem_fraction_static",
                        f"Raise --mem-fraction-static to at least {need / 1000:.3f} ({RAISE_WHY}): "
                        f"{_summary(alt)}.{tail}",
                        "--mem-fraction-static",
                        need / 1000,
                    )
                )
            else:
                w.append(
                    FitWarning(
                        "does_not_fit",
                        "No --mem-fraction-static up to 0.99 gets past the pool sizing: see the other "
                        "suggestions, or use more GPUs (a larger --tp-size) or a smaller (quantized) "
                        "checkpoint.",
                    )
                )
    _spec_decoding_advice(report, recompute, spec, model)
    _mamba_advice(report, recompute, spec, model)
    if report.verdict != "fails" and report.max_total_num_tokens < report.context_length:
        t = _first_true(
            current + 1,
            990,
            lambda t: (
                (r := recompute(_mfs(spec, t))).verdict != "fails"
                and r.max_total_num_tokens >= report.context_length
            ),
        )
        extra = (
            f", or raise --mem-fraction-static to at least {t / 1000:.3f} ({RAISE_WHY})"
            if t is not None
            else ""
        )
        w.append(
            FitWarning(
                "pool_smaller_than_context",
                f"The KV pool holds {report.max_total_num_tokens:,} tokens, fewer than the context length "
                f"{report.context_length:,}: one request of full length cannot be served. Lower "
                f"--context-length to {report.max_total_num_tokens}{extra}.",
                "--context-length",
                report.max_total_num_tokens,
            )
        )
    if report.verdict == "tight":
        best = _largest_roomy_fraction(spec, recompute, current)
        lower = (
            f"Lower --mem-fraction-static to {best / 1000:.3f} ({LOWER_WHY}) or lower --cuda-graph-max-bs."
            if best is not None
            else "Lower --cuda-graph-max-bs or --chunked-prefill-size."
        )
        w.append(
            FitWarning(
                "tight_slack",
                f"Only {report.slack_gib:.2f} GiB stays free for CUDA graphs and activations; SGLang's own "
                f"estimate for this GPU tier is {report.activation_estimate_gib:.2f} GiB, so a failed "
                f"CUDA graph capture or a CUDA OOM under load is likely. {lower}",
                "--mem-fraction-static",
                best / 1000 if best is not None else None,
            )
        )
    if report.baseline_estimated:
        w.append(
            FitWarning(
                "baseline_estimated",
                f"Free memory before loading (P = {report.baseline_free_gib:.2f} GiB) is an estimate: "
                "the GPU total less the baseline table's figure for this card and TP (see the notes). "
                'Pass --free-gib with the value of "Load weight begin. avail mem=" from a log for an '
                "exact answer.",
                "--free-gib",
            )
        )
    if report.weights_estimated:
        w.append(
            FitWarning(
                "weights_estimated",
                f"Weights per GPU ({report.weights_gib:.2f} GiB) are estimated from the config's shapes, not "
                'read from the checkpoint. Pass --weights-gib ("Load weight end ... mem usage=") or a model '
                "folder with its safetensors.",
                "--weights-gib",
            )
        )
    if report.draft_weights_estimated and report.draft_weights_gib > 0:
        w.append(
            FitWarning(
                "draft_weights_estimated",
                f"Draft/MTP weights per GPU ({report.draft_weights_gib:.2f} GiB) are estimated; "
                "--draft-weights-gib overrides.",
                "--draft-weights-gib",
            )
        )


def _weights_do_not_fit(report: FitReport, spec: LaunchSpec) -> None:
    """The checkpoint is larger than the free memory: no flag but more GPUs (or fewer bytes) helps."""
    total = report.weights_gib * spec.tp_size + (report.draft_weights_gib * spec.tp_size)
    room = report.baseline_free_gib * report.mem_fraction_static
    tp = next((n for n in (2, 4, 8, 16) if n > spec.tp_size and total / n < room), None)
    more = f"--tp-size {tp} ({tp} GPUs)" if tp else "more GPUs than one node has"
    report.warnings.append(
        FitWarning(
            "weights_exceed_gpu",
            f"The weights alone ({report.weights_gib:.1f} GiB per GPU) exceed the free memory "
            f"({report.baseline_free_gib:.1f} GiB): loading runs out of memory. Use {more}, or a quantized "
            "checkpoint.",
            "--tp-size" if tp else None,
            tp,
        )
    )


def _spec_decoding_advice(
    report: FitReport,
    recompute: Recompute,
    spec: LaunchSpec,
    model: ModelFacts,
    *,
    into: FitReport | None = None,
    prefix: str = "",
) -> None:
    """With speculative decoding on a hybrid model the state per running request dominates: find the
    largest --max-running-requests whose pool still holds one full context (else the largest that fits)."""
    if report.verdict != "fails" or report.error is None or not model.is_hybrid_linear:
        return
    if not spec.speculative_algorithm or "radix cache" in report.error or "context_length" in report.error:
        return
    start = spec.max_running_requests or 48

    def at(n: int) -> FitReport:
        return recompute(replace(spec, max_running_requests=n))

    def holds_context(n: int) -> bool:
        r = at(n)
        return r.verdict != "fails" and r.max_total_num_tokens >= r.context_length

    def serves_all(n: int) -> bool:
        """Fits, holds a full context, and the state cache does not cap the n requests lower."""
        return holds_context(n) and at(n).max_running_requests >= n

    best = (
        _last_true(1, start - 1, serves_all)
        or _last_true(1, start - 1, holds_context)
        or _last_true(1, start - 1, lambda n: at(n).verdict != "fails")
    )
    if best is None:
        return
    d = report.speculative_num_draft_tokens
    (into or report).warnings.append(
        FitWarning(
            "lower_max_running_requests",
            f"{prefix}{'lower' if prefix else 'Lower'} --max-running-requests to {best} or less "
            f"(each running request reserves {d} "
            f"speculative copies of the linear-attention state): {_summary(at(best))}.",
            "--max-running-requests",
            best,
        )
    )


def _mamba_advice(report: FitReport, recompute: Recompute, spec: LaunchSpec, model: ModelFacts) -> None:
    """What bf16 SSM state or dropping extra_buffer would give."""
    if not model.is_hybrid_linear or (report.error is not None and "radix cache" in report.error):
        return
    m = report.mamba
    config_ssm = model.linear.ssm_dtype if model.linear else model.mamba2.ssm_dtype if model.mamba2 else None
    ssm = (spec.mamba_ssm_dtype or config_ssm or "float32").lower()
    if ssm in ("float32", "fp32"):
        alt = recompute(replace(spec, mamba_ssm_dtype="bfloat16"))
        if report.verdict == "fails" and alt.verdict == "fails":
            return
        report.warnings.append(
            FitWarning(
                "mamba_ssm_dtype_bf16",
                "--mamba-ssm-dtype bfloat16 halves the SSM state per request: " + _summary(alt) + ".",
                "--mamba-ssm-dtype",
                "bfloat16",
            )
        )
    if m is not None and m.strategy.startswith("extra_buffer"):
        flag = _strategy_flag(report)
        no_buffer = replace(spec, mamba_strategy="no_buffer")
        alt, also = recompute(no_buffer), ""
        if alt.error is not None and "radix cache" in alt.error:
            # 0.5.11 refuses no_buffer with speculative decoding unless the radix cache is off
            alt, also = recompute(replace(no_buffer, disable_radix_cache=True)), " --disable-radix-cache"
        if report.verdict == "fails" and alt.verdict == "fails":
            return  # a failing launch keeps its Mamba figures now: only offer a change that helps
        report.warnings.append(
            FitWarning(
                "mamba_extra_buffer",
                f"The {m.strategy} strategy keeps {m.ratio} state slots per running request; "
                f"{flag} no_buffer{also}: {_summary(alt)}.",
                flag,
                "no_buffer",
            )
        )
