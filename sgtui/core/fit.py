"""SGLang's startup memory arithmetic, per version family, without a GPU.

`fit()` replays what SGLang does between "Load weight begin" and "Memory pool end": the static budget
`rest = A - P*(1-mfs)`, the Mamba/linear-attention state, the speculative-decoding state, the KV pool in
tokens, max_running_requests, and the slack left for CUDA graphs and activations. It says whether the
launch fails (with the exact error the chosen version raises), looks tight, or fits; fit_advice.py adds
the values that would work. Each rule's docstring names the SGLang source (0.5.9, 0.5.11, 0.5.23) it
was read from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sgtui.core import fit_errors
from sgtui.core.errors import UserError
from sgtui.core.fit_defaults import (
    Defaults,
    defaults_family,
    multimodal_enabled,
    resolve_defaults,
    rule_version,
    runtime_multimodal_factor,
    version_family,
)
from sgtui.core.fit_errors import PredictedError
from sgtui.core.fit_mamba import MambaBudget, resolve_strategy, take_state
from sgtui.core.fit_pools import (
    KvLayout,
    StateShape,
    attention_dp,
    kv_dtype,
    kv_layout,
    model_dtype,
    state_shape,
    weight_bytes_on_gpu,
)
from sgtui.core.fit_report import BudgetLine, FitReport, FitWarning, MambaPool, Warning
from sgtui.core.fit_spec import (
    DEFAULT_MAX_RUNNING,
    SpecDecoding,
    draft_kv_layers,
    estimate_draft_weight_bytes,
    speculative_params,
)
from sgtui.core.gpus import GpuSpec
from sgtui.core.model import ModelFacts
from sgtui.core.sglang.flags import LaunchSpec

__all__ = ["BudgetLine", "FitReport", "FitWarning", "Warning", "fit"]

GIB = 1 << 30

# Free memory lost before SGLang's baseline (CUDA context, cuBLAS, NCCL) when --free-gib is not given.
# Real logs show 0.7-1.5 GiB (a real L4 at TP 4: 21.63 of 22.49 GiB free; an RTX 4090: 22.46 of 23.99).
CUDA_CONTEXT_GIB = 0.75
NCCL_GIB = 0.25

# "tight" when the slack left after the pools is under this share of SGLang's own activation+graph
# estimate, i.e. the reservation its automatic mfs makes: 512 MiB + 1.5 MiB per chunked-prefill token +
# 2 MiB per decode-graph batch size + the prefill-graph term (server_args._handle_gpu_memory_settings).
# That reservation is generous: in real logs graphs and activations used about half of it (001.log:
# 0.93 GiB of graphs, 2.09 GiB left after the pools, against a 3.7 GiB estimate), so half is the line.
TIGHT_SHARE = 0.5


@dataclass(frozen=True)
class _Inputs:
    """Everything resolved before the pools: the version family, SGLang's defaults, P, W, the draft."""

    spec: LaunchSpec
    model: ModelFacts
    family: str
    parts: tuple[int, int, int]  # the exact version, for rules that changed inside a family
    defaults: Defaults
    mfs: float
    p: float
    w: float
    free_per_gpu: tuple[float, ...]
    weights_estimated: bool
    draft_w: float
    sd: SpecDecoding | None
    max_running: int | None  # the user's value, or 48 under speculative decoding
    dp: int
    ctx: int
    page: int
    layout: KvLayout
    shape: StateShape | None
    draft_layers: int

    @property
    def available(self) -> float:
        """A: free memory after the weights (0.5.23 also loads the draft before profiling)."""
        return self.p - self.w - (self.draft_w if self.family == "0.5.23" else 0.0)

    @property
    def slack_budget(self) -> float:
        return self.p * (1 - self.mfs)


def fit(
    spec: LaunchSpec,
    model: ModelFacts,
    gpu: GpuSpec,
    *,
    n_gpus: int | None = None,
    version: str = "0.5.11",
    free_gib: float | Sequence[float] | None = None,
    weights_gib: float | None = None,
    draft_weights_gib: float | None = None,
    draft_model: ModelFacts | None = None,
    advise: bool = True,
) -> FitReport:
    """Predict SGLang's startup memory for `spec` on `gpu` (the smallest GPU of the host).

    `free_gib` is P, the free memory per GPU at "Load weight begin" (else estimated from the GPU total);
    given one value per GPU, SGLang's MIN over ranks and its unbalanced-memory check are applied too;
    `weights_gib` the per-GPU weight memory at "Load weight end" (else the checkpoint bytes / TP / PP);
    `draft_weights_gib` the draft/MTP weights per GPU (else estimated); `draft_model` the draft's facts
    when --speculative-draft-model-path is a local folder. With `advise`, warnings carry the values that
    would work, found by re-running this arithmetic. Raises UserError for inputs that make no sense."""

    def compute(s: LaunchSpec) -> FitReport:
        return _compute(s, model, gpu, n_gpus, version, free_gib, weights_gib, draft_weights_gib, draft_model)

    report = compute(spec)
    if advise:
        from sgtui.core.fit_advice import advise as add_advice

        add_advice(report, compute, spec, model)
    return report


def _per_gpu(free_gib: float | Sequence[float] | None) -> tuple[float, ...]:
    if free_gib is None:
        return ()
    if isinstance(free_gib, int | float):
        return (float(free_gib),)
    values = tuple(float(f) for f in free_gib)
    if not values:
        raise UserError("--free-gib: give at least one value")
    return values


def _check_parallelism(spec: LaunchSpec, n_gpus: int | None) -> int:
    for name, value in (
        ("--tp-size", spec.tp_size),
        ("--pp-size", spec.pp_size),
        ("--dp-size", spec.dp_size),
    ):
        if value < 1:
            raise UserError(f"{name} {value}: must be at least 1")
    replicas = 1 if attention_dp(spec) > 1 else spec.dp_size
    needed = spec.tp_size * spec.pp_size * replicas
    if n_gpus is None:
        return needed
    if n_gpus < needed:
        dp = f" x dp {spec.dp_size}" if replicas > 1 else ""
        raise UserError(
            f"--gpus {n_gpus}: this launch needs {needed} GPUs (tp {spec.tp_size} x pp {spec.pp_size}{dp})"
        )
    return n_gpus


def _default_page_size(spec: LaunchSpec) -> int:
    """trtllm_mha and flashmla page by 64; trtllm_mla/cutedsl_mla by 32 or 64 (64 assumed)."""
    backend = (spec.attention_backend or "").lower()
    return 64 if backend in ("trtllm_mha", "flashmla", "trtllm_mla", "cutedsl_mla") else 1


def _resolve(
    spec: LaunchSpec,
    model: ModelFacts,
    gpu: GpuSpec,
    family: str,
    version: str,
    free_gib: float | Sequence[float] | None,
    weights_gib: float | None,
    draft_weights_gib: float | None,
    draft_model: ModelFacts | None,
    notes: list[str],
) -> _Inputs:
    defaults = resolve_defaults(spec, model, gpu.mib, family, version)
    mfs = (
        spec.mem_fraction_static
        if spec.mem_fraction_static is not None
        else defaults.mem_fraction_static_auto
    )
    if not 0 < mfs < 1:
        raise UserError(f"--mem-fraction-static {mfs}: must be between 0 and 1 (e.g. 0.85)")
    shrink = runtime_multimodal_factor(spec, model, rule_version(version))
    if shrink != 1.0:
        mfs *= shrink
        notes.append(f"SGLang {version} reduces --mem-fraction-static to {mfs:.3f}: a multimodal model.")
    per_gpu = _per_gpu(free_gib)
    for label, given in (
        *(("--free-gib", f) for f in per_gpu),
        ("--weights-gib", weights_gib),
        ("--draft-weights-gib", draft_weights_gib),
    ):
        if given is not None and given < 0:
            raise UserError(f"{label} {given}: must be a non-negative number of GiB")
    shards = spec.tp_size * spec.pp_size
    p = min(per_gpu) if per_gpu else gpu.gib - CUDA_CONTEXT_GIB - (NCCL_GIB if shards > 1 else 0.0)
    model_bytes, bytes_estimated = weight_bytes_on_gpu(spec, model)
    w = weights_gib if weights_gib is not None else model_bytes / shards / GIB
    sd = speculative_params(spec, model)
    max_running = spec.max_running_requests
    draft_w = 0.0
    parts = rule_version(version)
    if sd is not None:
        if max_running is None and parts >= (0, 4, 6):  # the 48-request default arrived in 0.4.6
            max_running = DEFAULT_MAX_RUNNING
            notes.append("Max running requests is reset to 48 for speculative decoding (SGLang's default).")
        if draft_weights_gib is not None:
            draft_w = draft_weights_gib
        else:
            total = estimate_draft_weight_bytes(model, sd, draft_model)
            if total is None:
                notes.append(
                    "The draft model's weights are unknown (its folder is not local): "
                    "pass --draft-weights-gib."
                )
            draft_w = (total or 0) / shards / GIB
    _, elem = kv_dtype(spec, model, parts)
    return _Inputs(
        spec=spec,
        model=model,
        family=family,
        parts=parts,
        defaults=defaults,
        mfs=mfs,
        p=p,
        w=w,
        free_per_gpu=per_gpu,
        weights_estimated=weights_gib is None and bytes_estimated,
        draft_w=draft_w,
        sd=sd,
        max_running=max_running,
        dp=attention_dp(spec),
        ctx=spec.context_length or model.context_length,
        page=spec.page_size or _default_page_size(spec),
        layout=kv_layout(spec, model, family, elem, parts, gpu.name),
        shape=state_shape(spec, model, parts),
        draft_layers=draft_kv_layers(model, sd, draft_model),
    )


def _compute(
    spec: LaunchSpec,
    model: ModelFacts,
    gpu: GpuSpec,
    n_gpus: int | None,
    version: str,
    free_gib: float | Sequence[float] | None,
    weights_gib: float | None,
    draft_weights_gib: float | None,
    draft_model: ModelFacts | None,
) -> FitReport:
    family, family_note = version_family(version)
    notes = [family_note]
    n_gpus = _check_parallelism(spec, n_gpus)
    x = _resolve(
        spec, model, gpu, family, version, free_gib, weights_gib, draft_weights_gib, draft_model, notes
    )
    mm_reserve = 100 / 1024 if family == "0.5.23" and multimodal_enabled(spec, model) else 0.0
    report = FitReport(
        sglang_version=version,
        family=family,
        gpu_name=gpu.name,
        gpu_total_gib=gpu.gib,
        n_gpus=n_gpus,
        tp_size=spec.tp_size,
        baseline_free_gib=x.p,
        baseline_estimated=free_gib is None,
        mem_fraction_static=x.mfs,
        mem_fraction_static_auto=x.defaults.mem_fraction_static_auto,
        mem_fraction_static_is_auto=spec.mem_fraction_static is None,
        weights_gib=x.w,
        weights_estimated=x.weights_estimated,
        draft_weights_gib=x.draft_w,
        draft_weights_estimated=x.sd is not None and draft_weights_gib is None and x.draft_w > 0,
        available_after_weights_gib=x.available,
        rest_gib=x.available - x.slack_budget - mm_reserve,
        kv_pool_gib=0.0,
        kv_cell_bytes=round(x.layout.cell_bytes),
        kv_cache_dtype=kv_dtype(spec, model, rule_version(version))[0],
        page_size=x.page,
        max_total_num_tokens=0,
        max_running_requests=0,
        context_length=x.ctx,
        chunked_prefill_size=x.defaults.chunked_prefill_size,
        cuda_graph_max_bs=x.defaults.cuda_graph_max_bs,
        speculative_num_draft_tokens=x.sd.draft_tokens if x.sd else None,
        mamba=None,
        swa=None,
        req_to_token_gib=0.0,
        draft_kv_gib=0.0,
        slack_gib=x.slack_budget,
        activation_estimate_gib=x.defaults.activation_mib / 1024,
        verdict="fails",
        error=None,
        notes=notes,
        dtype=model_dtype(spec, model),
    )
    try:
        refused = _size_pools(report, x)
    except PredictedError as failure:
        report.error = failure.text
        return report
    slack = x.slack_budget - report.req_to_token_gib - report.draft_kv_gib
    if family != "0.5.23":
        slack -= x.draft_w  # old releases load the draft after the pools, out of the slack
    report.slack_gib = slack
    report.predicted_log["memory_pool_end_avail_gib"] = round(x.slack_budget - report.req_to_token_gib, 2)
    if refused is not None:
        report.error = refused
        report.notes.append(
            "SGLang refuses these arguments before loading anything; the pool figures are what it would "
            "allocate once the refusal is lifted."
        )
    elif slack < 0:
        report.error = fit_errors.CUDA_OOM
    elif slack < TIGHT_SHARE * report.activation_estimate_gib:
        report.verdict = "tight"
    else:
        report.verdict = "fits"
    return report


def _max_running(family: str, tokens: int, ctx: int, user: int | None, dp: int) -> int:
    """max_running_requests per DP worker before the Mamba cap (0.5.9 init_memory_pool, 0.5.11
    _resolve_max_num_reqs, 0.5.23 KVCacheConfigurator.resolve_max_num_reqs)."""
    est = max(min(int(tokens / ctx * 512), 4096), 2048)
    if user is None:
        return min(est, tokens // 2)
    if family == "0.5.9":
        return user // dp
    if family == "0.5.11":
        return min(user // dp, est)
    return min(max(1, user // dp), tokens // 2)


def _page_floor(tokens: int, page: int) -> int:
    return tokens // page * page


def _size_pools(report: FitReport, x: _Inputs) -> str | None:
    """The part of startup that can raise, in SGLang's order: config checks, the Mamba state, the
    budget check, the KV pool, max_running_requests. Each step is written into `report` as soon as
    it is computed, so a failure leaves the steps that led to it.

    Returns the error of an argument-time refusal that does not depend on memory (a --context-length
    above the config's), after sizing the pools anyway: the figures stay useful, and a config whose
    context length SGLang derives differently (or an env override) does not hide them."""
    spec, model, family = x.spec, x.model, x.family
    log = report.predicted_log
    log["mem_fraction_static"] = x.mfs
    # argument-time checks (ServerArgs / ModelConfig), before any GPU work
    refused = None
    if x.ctx > model.context_length:
        refused = fit_errors.context_too_long(x.ctx, model.context_length)
    b = MambaBudget(rest=report.rest_gib, radix_disabled=spec.disable_radix_cache)
    if x.shape is not None:
        resolve_strategy(
            b,
            spec,
            family,
            speculative=x.sd is not None,
            arch=model.architecture,
            extra_buffer_ok=model.is_gdn_hybrid,
            parts=x.parts,
        )
        if b.strategy == "no_buffer" and not b.radix_disabled:
            report.page_size = 1  # no_buffer with the radix cache forces page 1
    # after distributed init: the balance check, then the weights
    if spec.tp_size > 1 and len(x.free_per_gpu) > 1 and x.p < 0.9 * max(x.free_per_gpu):
        raise PredictedError(fit_errors.unbalanced(x.p, max(x.free_per_gpu)))
    log["load_weight_begin_avail_gib"] = round(x.p, 2)
    if x.available < 0:
        raise PredictedError(fit_errors.CUDA_OOM)  # the weights alone do not fit: OOM while loading
    log["weight_mem_gib"] = round(x.w, 2)
    log["avail_mem_after_weights_gib"] = round(x.p - x.w, 2)
    report.budget.append(
        BudgetLine("static_budget", "static budget", report.rest_gib, detail="A - P*(1-mfs)")
    )
    if x.max_running is not None:
        report.max_running_requests = max(1, x.max_running // x.dp)
    if x.shape is not None:
        draft_tokens = x.sd.draft_tokens if x.sd else None
        try:
            take_state(
                b,
                spec,
                family,
                parts=x.parts,
                slot=x.shape.slot_bytes,
                draft_tokens=draft_tokens,
                max_running=x.max_running,
                dp=x.dp,
            )
        finally:
            _record_state(report, x, b)
    report.kv_pool_gib = b.rest
    page = report.page_size
    cell = x.layout.cell_bytes
    folds_draft = (
        family == "0.5.23"
        and x.sd is not None
        and x.sd.algorithm != "NGRAM"
        and (bool(spec.speculative_draft_model_path) or model.num_nextn_predict_layers > 0)
    )
    if folds_draft and x.layout.kv_layers:
        cell += int(cell * x.draft_layers / x.layout.kv_layers)  # DefaultPoolConfigurator.__init__ (0.5.23)
    report.kv_cell_bytes = round(cell)
    rest_bytes = int(b.rest * GIB)
    swa_cap = _swa_request_cap(x, page)
    if swa_cap is not None:
        # the sliding-window pool is sized first, from the requests; the full pool gets the rest
        layout = x.layout
        swa_bytes = swa_cap * (layout.swa_k_bytes_per_token_layer + layout.swa_v_bytes_per_token_layer)
        swa_bytes *= layout.swa_layers
        full_cell = (layout.k_bytes_per_token_layer + layout.v_bytes_per_token_layer) * layout.kv_layers
        tokens = _page_floor(int((rest_bytes - swa_bytes) // full_cell), page)
        report.kv_cell_bytes = round(full_cell)
        report.max_total_num_tokens = tokens
        if tokens <= 0:
            report.budget.append(_kv_line(report, x, folds_draft))
            raise PredictedError(fit_errors.swa_cap_no_room(swa_cap, swa_bytes / GIB, b.rest))
    else:
        # floor division, as SGLang does it: a negative remainder gives a negative count
        tokens = _page_floor(int(rest_bytes // cell), page)
    report.max_total_num_tokens = tokens
    if (family == "0.5.23" and b.rest <= 0) or tokens <= 0:
        report.budget.append(_kv_line(report, x, folds_draft))
        if family == "0.5.23" and b.rest <= 0:
            raise PredictedError(fit_errors.loaded_weights(x.mfs, x.available, x.p))
        raise PredictedError(fit_errors.not_enough_memory(defaults_family(family, x.parts), x.mfs))
    tokens = _page_floor(_with_speculative_headroom(tokens, x), page)
    if spec.max_total_tokens is not None:
        if spec.max_total_tokens > tokens:
            report.notes.append(
                f"max_total_tokens={spec.max_total_tokens} is larger than the profiled value {tokens}; "
                "SGLang uses the profiled value."
            )
        else:
            tokens = _page_floor(spec.max_total_tokens, page)
    report.max_total_num_tokens = tokens
    if x.layout.swa:
        if swa_cap is not None:
            swa_tokens = min(swa_cap, spec.max_total_tokens or swa_cap)
        elif x.layout.all_swa:
            swa_tokens = tokens
        else:
            swa_tokens = _page_floor(int(tokens * spec.swa_full_tokens_ratio), page)
        report.swa = {"full_tokens": 0 if x.layout.all_swa else tokens, "swa_tokens": swa_tokens}
    report.budget.append(_kv_line(report, x, folds_draft))
    if report.swa is not None:
        window = model.sliding_window
        swa_tokens = report.swa["swa_tokens"]
        if family == "0.5.23" and swa_cap is None and window and window + page >= swa_tokens:
            raise PredictedError(fit_errors.swa_pool_too_small(swa_tokens, window, page))

    mrr = _max_running(family, tokens, x.ctx, x.max_running, x.dp)
    if family == "0.5.23" and x.max_running is not None and mrr < max(1, x.max_running // x.dp):
        report.notes.append(f"max_running_requests was reduced from the requested {x.max_running} to {mrr}.")
    if x.shape is not None:
        cap = b.k // b.ratio
        if 0 < cap < mrr:
            # 0.5.23 logs this; older releases cap silently
            report.warnings.append(
                FitWarning(
                    "mrr_capped_by_mamba",
                    f"max_running_requests is capped to {cap} by the Mamba state cache "
                    f"(max_mamba_cache_size={b.k}, {b.ratio} state slots per request).",
                    "--max-running-requests",
                    cap,
                )
            )
        mrr = min(mrr, cap)
        if mrr <= 0:
            report.max_running_requests = mrr
            if family == "0.5.23":
                raise PredictedError(fit_errors.mamba_no_requests(b.k, b.ratio, mrr))
            raise PredictedError(fit_errors.max_running_zero())
    report.max_running_requests = mrr
    d = x.sd.draft_tokens if x.sd is not None else 0
    report.req_to_token_gib = (mrr + 1) * (x.ctx + 4 + d) * 4 / GIB
    if x.draft_layers and not folds_draft:
        per_layer = x.layout.k_bytes_per_token_layer + x.layout.v_bytes_per_token_layer
        report.draft_kv_gib = tokens * per_layer * x.draft_layers / GIB
    if x.shape is not None:
        report.mamba = _mamba_pool(x, b, mrr)
        if b.radix_disabled and not spec.disable_radix_cache:
            report.notes.append(
                "SGLang turns the radix cache off here "
                "(speculative decoding on a hybrid linear-attention model)."
            )
    _predict_log(report, x, b)
    return refused


def _record_state(report: FitReport, x: _Inputs, b: MambaBudget) -> None:
    """The Mamba step as far as it got: the pool (sized for the requests known so far), what the
    speculative and the main state took from the budget, and why they are that large."""
    shape = x.shape
    assert shape is not None
    if b.spec_requests:
        report.max_running_requests = b.spec_requests
    report.mamba = _mamba_pool(x, b, b.spec_requests)
    slot_mib = f"{shape.slot_bytes / 2**20:.1f} MiB"
    if b.radix_disabled:
        per_request = "radix cache off: 1 slot per request"
    else:
        per_request = f"{b.strategy}: {b.ratio} slots per request"
    if b.spec_state_gib:
        report.budget.append(
            BudgetLine(
                "speculative_state",
                "speculative state",
                -b.spec_state_gib,
                b.spec_detail,
                f"{slot_mib} of state per request and draft token",
            )
        )
    if x.family == "0.5.23" and b.k <= 0:  # SGLang stops here, before taking any slot
        room = "what the speculative state left" if b.spec_state_gib else "the Mamba share of the budget"
        report.budget.append(
            BudgetLine(
                "mamba_state",
                "Mamba state",
                0.0,
                f"max_mamba_cache_size {b.k}",
                f"{slot_mib} per slot; not one fits in {room}",
            )
        )
    elif b.k_rule:
        slots = f"{b.state_slots} slots"
        if b.state_slots == b.k + 1:
            slots += f" = K {b.k} + 1 padding"
        why = "K < 0: SGLang split a budget that was already negative" if b.k < 0 else f"K = {b.k_rule}"
        report.budget.append(
            BudgetLine(
                "mamba_state", "Mamba state", -b.state_gib, slots, f"{slot_mib} each; {why}; {per_request}"
            )
        )


def _kv_line(report: FitReport, x: _Inputs, folds_draft: bool) -> BudgetLine:
    tokens = report.max_total_num_tokens
    if report.swa is not None and not x.layout.all_swa:
        count = f"full {tokens:,} + sliding-window {report.swa['swa_tokens']:,} tokens"
    else:
        count = f"{tokens:,} tokens"
    detail = f"{report.kv_cell_bytes:,} B per token, {report.kv_cache_dtype}, page {report.page_size}"
    if folds_draft:
        detail += ", the draft model's KV included"
    return BudgetLine("kv_pool", "KV pool", report.kv_pool_gib, count, detail)


# SGLANG_SWA_EVICTION_INTERVAL's default: sliding-window slots a request keeps past its window.
SWA_EVICTION_INTERVAL = 128


def _swa_request_cap(x: _Inputs, page: int) -> int | None:
    """0.5.23 sizes the sliding-window pool from the requests instead of --swa-full-tokens-ratio when
    the radix cache is off, max_running_requests is known and prefill is chunked
    (SWARequestCapPoolConfigurator, compute_swa_request_cap): per request the window, the eviction
    interval x draft tokens, a page and one decode step's allocation; plus the prefill chunks in
    flight. None when that sizing does not apply."""
    spec, layout, window = x.spec, x.layout, x.model.sliding_window
    chunk = x.defaults.chunked_prefill_size
    if not (
        x.family == "0.5.23"
        and layout.swa
        and not layout.all_swa
        and spec.disable_radix_cache
        and x.max_running is not None
        and chunk > 0
        and window
    ):
        return None
    sd = x.sd
    draft = sd.draft_tokens if sd is not None else 1
    if sd is None:
        decode_alloc = page
    else:
        step = -(-max(sd.steps * sd.topk, sd.draft_tokens) // page) * page
        decode_alloc = step if spec.disable_overlap_schedule else 2 * step
    per_request = window + SWA_EVICTION_INTERVAL * draft + page + decode_alloc
    chunks_in_flight = 1 if spec.disable_overlap_schedule else 2
    cap = per_request * max(1, x.max_running // x.dp) + chunks_in_flight * chunk + page
    return -(-cap // page) * page


def _with_speculative_headroom(tokens: int, x: _Inputs) -> int:
    """0.4.1 to 0.5.6 grow an EAGLE target's pool past the profiled size (model_runner.init_memory_pool),
    since draft and verify tokens of the same requests share it: by requests x steps + 100 up to
    0.4.3, then by requests x (steps x topk + draft tokens) + 100. The requests are
    --max-running-requests (48 under EAGLE from 0.4.6), else SGLang's estimate."""
    sd = x.sd
    if sd is None or sd.algorithm == "NGRAM" or not (0, 4, 1) <= x.parts < (0, 5, 7):
        return tokens
    user = x.spec.max_running_requests
    if user is None and x.parts >= (0, 4, 6):
        user = x.max_running
    requests = user if user is not None else max(min(int(tokens / x.ctx * 512), 4096), 2048)
    if x.parts < (0, 4, 4):
        return tokens + requests * sd.steps + 100
    return tokens + requests * (sd.steps * sd.topk + sd.draft_tokens) + 100


def _mamba_pool(x: _Inputs, b: MambaBudget, mrr: int) -> MambaPool:
    """The state pool as allocated: K+1 slots (none when K came out negative), and the intermediate
    caches sized by max_running."""
    shape = x.shape
    assert shape is not None
    slots = max(b.k + 1, 0)
    inter_ssm = inter_conv = 0.0
    if x.sd is not None:
        d, rows = x.sd.draft_tokens, mrr + 1
        inter_ssm = shape.linear_layers * rows * d * shape.ssm_bytes_per_layer / GIB
        if x.family == "0.5.23" and x.sd.topk <= 1:
            window = shape.conv_dim_per_gpu * (d + shape.conv_kernel - 2)  # deduplicated conv window
        else:
            window = d * shape.conv_dim_per_gpu * (shape.conv_kernel - 1)
        inter_conv = shape.linear_layers * rows * window * 2 / GIB
    strategy = b.strategy if not b.radix_disabled else f"{b.strategy}, radix cache off"
    return MambaPool(
        slot_bytes=shape.slot_bytes,
        max_mamba_cache_size=b.k,
        ratio=b.ratio,
        strategy=strategy,
        ssm_dtype=shape.ssm_dtype,
        state_gib=slots * shape.slot_bytes / GIB,
        spec_state_gib=b.spec_state_gib,
        conv_state_gib=slots * shape.conv_bytes_per_layer * shape.linear_layers / GIB,
        ssm_state_gib=slots * shape.ssm_bytes_per_layer * shape.linear_layers / GIB,
        intermediate_ssm_gib=inter_ssm,
        intermediate_conv_gib=inter_conv,
    )


def _predict_log(report: FitReport, x: _Inputs, b: MambaBudget) -> None:
    """The numbers SGLang would print, rounded as it prints them (keys as in `sgtui explain` facts)."""
    layout, tokens, page = x.layout, report.max_total_num_tokens, report.page_size
    log = report.predicted_log
    log["max_total_num_tokens"] = tokens
    log["kv_tokens"] = tokens
    log["max_running_requests"] = report.max_running_requests
    log["context_length"] = x.ctx
    rows = tokens + page  # the pools keep page_size padding rows
    if layout.all_swa:
        k, v, n = layout.swa_k_bytes_per_token_layer, layout.swa_v_bytes_per_token_layer, layout.swa_layers
    else:
        k, v, n = layout.k_bytes_per_token_layer, layout.v_bytes_per_token_layer, layout.kv_layers
    log["k_size_gib"] = round(rows * k * n / GIB, 2)
    log["v_size_gib"] = round(rows * v * n / GIB, 2)
    if report.swa is not None and not layout.all_swa:
        swa_rows = report.swa["swa_tokens"] + page
        log["swa_full_layer_tokens"] = tokens
        log["swa_layer_tokens"] = report.swa["swa_tokens"]
        log["swa_k_size_gib"] = round(
            swa_rows * layout.swa_k_bytes_per_token_layer * layout.swa_layers / GIB, 2
        )
        log["swa_v_size_gib"] = round(
            swa_rows * layout.swa_v_bytes_per_token_layer * layout.swa_layers / GIB, 2
        )
    if report.mamba is not None:
        m = report.mamba
        log["mamba_cache_size"] = b.k
        log["mamba_conv_state_gib"] = round(m.conv_state_gib, 2)
        log["mamba_ssm_state_gib"] = round(m.ssm_state_gib, 2)
        if x.sd is not None:
            log["intermediate_ssm_state_gib"] = round(m.intermediate_ssm_gib, 2)
            log["intermediate_conv_window_gib"] = round(m.intermediate_conv_gib, 2)
