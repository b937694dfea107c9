"""Sizing the pools in SGLang's order: config checks, the Mamba state, the budget check, the KV pool,
max_running_requests; then the predicted log values. Every release difference is a window rule."""

from __future__ import annotations

from sgtui.core.fit import errors as fit_errors
from sgtui.core.fit.errors import PredictedError
from sgtui.core.fit.inputs import GIB, Inputs
from sgtui.core.fit.mamba import MambaBudget, resolve_strategy, take_state
from sgtui.core.fit.report import BudgetLine, FitReport, FitWarning, MambaPool
from sgtui.core.sglang.rules import Rules


def _max_running(rules: Rules, tokens: int, ctx: int, user: int | None, dp: int) -> int:
    """max_running_requests per DP worker before the Mamba cap (0.5.9 init_memory_pool, 0.5.10-0.5.13
    _resolve_max_num_reqs: min(user // dp, estimate), 0.5.14 on: min(user // dp, tokens // 2))."""
    est = max(min(int(tokens / ctx * 512), 4096), 2048)
    if user is None:
        return min(est, tokens // 2)
    if rules.max_running_rule == "user":
        return user // dp
    if rules.max_running_rule == "min-estimate":
        return min(user // dp, est)
    return min(max(1, user // dp), tokens // 2)


def _page_floor(tokens: int, page: int) -> int:
    return tokens // page * page


def size_pools(report: FitReport, x: Inputs) -> str | None:
    """The part of startup that can raise, in SGLang's order: config checks, the Mamba state, the
    budget check, the KV pool, max_running_requests. Each step is written into `report` as soon as
    it is computed, so a failure leaves the steps that led to it.

    Returns the error of an argument-time refusal that does not depend on memory (a --context-length
    above the config's), after sizing the pools anyway: the figures stay useful, and a config whose
    context length SGLang derives differently (or an env override) does not hide them."""
    spec, model, rules = x.spec, x.model, x.rules
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
            rules,
            speculative=x.sd is not None,
            arch=model.architecture,
            # _support_mamba_cache_extra_buffer: the listed hybrids, with the triton linear-attn backend
            extra_buffer_ok=model.is_gdn_hybrid
            and str(spec.values.get("--linear-attn-backend") or "triton") == "triton",
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
                rules,
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
        rules.draft_kv_in_cell
        and x.sd is not None
        and x.sd.algorithm != "NGRAM"
        and (bool(spec.speculative_draft_model_path) or model.num_nextn_predict_layers > 0)
    )
    if folds_draft and x.layout.kv_layers:
        cell += int(
            cell * x.draft_layers / x.layout.kv_layers
        )  # DefaultPoolConfigurator.__init__ (0.5.14 on)
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
    weights_error = rules.loaded_weights_error and b.rest <= 0
    if weights_error or tokens <= 0:
        report.budget.append(_kv_line(report, x, folds_draft))
        if weights_error:
            raise PredictedError(fit_errors.loaded_weights(x.mfs, x.available, x.p))
        raise PredictedError(fit_errors.not_enough_memory(rules.not_enough_memory_text, x.mfs))
    extra = _speculative_headroom(tokens, x)
    draft_pool_tokens = tokens + extra  # 0.4.1.post4 on: the draft's pool always gets the headroom
    if x.rules.spec_pool_headroom == "steps-topk-draft":
        tokens = _page_floor(tokens + extra, page)  # 0.4.3.post3-0.5.6: the target's pool too
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
        if rules.swa_too_small_error and swa_cap is None and window and window + page >= swa_tokens:
            raise PredictedError(fit_errors.swa_pool_too_small(swa_tokens, window, page))

    mrr = _max_running(rules, tokens, x.ctx, x.max_running, x.dp)
    if (
        rules.max_running_reduced_warning
        and x.max_running is not None
        and mrr < max(1, x.max_running // x.dp)
    ):
        report.notes.append(f"max_running_requests was reduced from the requested {x.max_running} to {mrr}.")
    if x.shape is not None:
        cap = b.k // b.ratio
        if 0 < cap < mrr:
            # newer releases log this; older ones cap silently
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
            if rules.mamba_errors:
                raise PredictedError(fit_errors.mamba_no_requests(b.k, b.ratio, mrr))
            raise PredictedError(fit_errors.max_running_zero())
    report.max_running_requests = mrr
    d = x.sd.draft_tokens if x.sd is not None else 0
    report.req_to_token_gib = (mrr + 1) * (x.ctx + 4 + d) * 4 / GIB
    if x.draft_layers and not folds_draft:
        per_layer = x.layout.k_bytes_per_token_layer + x.layout.v_bytes_per_token_layer
        draft_tokens = draft_pool_tokens if x.rules.spec_pool_headroom == "draft-steps" else tokens
        report.draft_kv_gib = draft_tokens * per_layer * x.draft_layers / GIB
    if x.shape is not None:
        report.mamba = _mamba_pool(x, b, mrr)
        if b.radix_disabled and not spec.disable_radix_cache:
            report.notes.append(
                "SGLang turns the radix cache off here "
                "(speculative decoding on a hybrid linear-attention model)."
            )
    _predict_log(report, x, b)
    return refused


def _record_state(report: FitReport, x: Inputs, b: MambaBudget) -> None:
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
    if x.rules.mamba_errors and b.k <= 0:  # SGLang stops here, before taking any slot
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


def _kv_line(report: FitReport, x: Inputs, folds_draft: bool) -> BudgetLine:
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


def _swa_request_cap(x: Inputs, page: int) -> int | None:
    """From 0.5.22 SGLang sizes the sliding-window pool from the requests, not --swa-full-tokens-ratio, when
    the radix cache is off, max_running_requests is known and prefill is chunked
    (SWARequestCapPoolConfigurator, compute_swa_request_cap): per request the window, the eviction
    interval x draft tokens, a page and one decode step's allocation; plus the prefill chunks in
    flight. None when that sizing does not apply."""
    spec, layout, window = x.spec, x.layout, x.model.sliding_window
    chunk = x.defaults.chunked_prefill_size
    if not (
        x.rules.swa_request_cap
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


def _speculative_headroom(tokens: int, x: Inputs) -> int:
    """The EAGLE headroom model_runner.init_memory_pool adds past the profiled size, since draft and
    verify tokens of the same requests share the pool: requests x steps + 100 for the draft's pool
    only (0.4.1.post4 to 0.4.3.post2), then requests x (steps x topk + draft tokens) + 100 for both
    pools (0.4.3.post3 to 0.5.6). The requests are --max-running-requests (48 under EAGLE from
    0.4.6), else SGLang's estimate. 0 where the window adds none."""
    sd, headroom = x.sd, x.rules.spec_pool_headroom
    if sd is None or sd.algorithm == "NGRAM" or headroom == "none":
        return 0
    user = x.spec.max_running_requests
    if user is None and x.rules.spec_default_max_running:
        user = x.max_running
    requests = user if user is not None else max(min(int(tokens / x.ctx * 512), 4096), 2048)
    if headroom == "draft-steps":
        return requests * sd.steps + 100
    return requests * (sd.steps * sd.topk + sd.draft_tokens) + 100


def _mamba_pool(x: Inputs, b: MambaBudget, mrr: int) -> MambaPool:
    """The state pool as allocated: K+1 slots (none when K came out negative), and the intermediate
    caches sized by max_running."""
    shape = x.shape
    assert shape is not None
    slots = max(b.k + 1, 0)
    inter_ssm = inter_conv = 0.0
    if x.sd is not None:
        d, rows = x.sd.draft_tokens, mrr + 1
        inter_ssm = shape.linear_layers * rows * d * shape.ssm_bytes_per_layer / GIB
        if x.rules.conv_window_dedup and x.sd.topk <= 1:
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


def _predict_log(report: FitReport, x: Inputs, b: MambaBudget) -> None:
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
