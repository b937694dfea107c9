"""SGLang's startup memory arithmetic, per release window, without a GPU.

`fit()` replays what SGLang does between "Load weight begin" and "Memory pool end": the static budget
`rest = A - P*(1-mfs)`, the Mamba/linear-attention state, the speculative-decoding state, the KV pool in
tokens, max_running_requests, and the slack left for CUDA graphs and activations. It says whether the
launch fails (with the exact error the chosen release raises), looks tight, or fits; advice.py adds
the values that would work. Which rules apply is the release window's (`sgtui.core.sglang.windows`):
the code here asks the window for a named rule and never compares versions.
"""

from __future__ import annotations

from collections.abc import Sequence

from sgtui.core.errors import UserError
from sgtui.core.fit import errors as fit_errors
from sgtui.core.fit.baseline import estimated_loss
from sgtui.core.fit.defaults import multimodal_enabled, resolve_defaults, runtime_multimodal_factor
from sgtui.core.fit.errors import PredictedError
from sgtui.core.fit.inputs import GIB, Inputs
from sgtui.core.fit.pools import (
    attention_dp,
    kv_dtype,
    kv_layout,
    loaded_scheme,
    model_dtype,
    model_name,
    state_shape,
    weight_bytes_on_gpu,
)
from sgtui.core.fit.report import FitReport, FitWarning
from sgtui.core.fit.shards import Sharded, shard_own_draft, shard_weights
from sgtui.core.fit.sizing import size_pools
from sgtui.core.fit.spec import (
    DEFAULT_MAX_RUNNING,
    EAGLE_LIKE,
    draft_kv_layers,
    estimate_draft_weight_bytes,
    speculative_params,
)
from sgtui.core.gpus import GpuSpec, is_rocm
from sgtui.core.model import ModelFacts
from sgtui.core.model.names import name_versus_config
from sgtui.core.sglang.flags import LaunchSpec
from sgtui.core.sglang.windows import Window, window_for, window_note

# "tight" when the slack left after the pools is under this share of SGLang's own activation+graph
# estimate, i.e. the reservation its automatic mfs makes: 512 MiB + 1.5 MiB per chunked-prefill token +
# 2 MiB per decode-graph batch size + the prefill-graph term (server_args._handle_gpu_memory_settings).
# That reservation is generous: in real logs graphs and activations used about half of it (001.log:
# 0.93 GiB of graphs, 2.09 GiB left after the pools, against a 3.7 GiB estimate), so half is the line.
TIGHT_SHARE = 0.5


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
    window = window_for(version)

    def compute(s: LaunchSpec) -> FitReport:
        return _compute(
            s, model, gpu, n_gpus, version, window, free_gib, weights_gib, draft_weights_gib, draft_model
        )

    report = compute(spec)
    if advise:
        from sgtui.core.fit.advice import advise as add_advice
        from sgtui.core.fit.fixes import rank_fixes

        add_advice(report, compute, spec, model)
        if report.verdict != "fits":
            report.fixes = rank_fixes(report, compute, spec, measured=weights_gib is not None)
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


def _aiter_shrinks(spec: LaunchSpec, model: ModelFacts, gpu: GpuSpec, window: Window, ctx: int) -> bool:
    """0.4.7 on (model_runner.__init__; 0.5.x server_args; 0.5.23 arg_groups/attention_hook): the aiter
    attention backend with a context over 8192 multiplies mem-fraction-static by 0.85, a set value too.
    aiter is named with --attention-backend, or is ROCm's default when the backend is left unset
    (`rocm_default_is_aiter`)."""
    if not window.rules.aiter_long_context_shrink or ctx <= 8192:
        return False
    backend = (spec.attention_backend or "").lower()
    if backend:
        return backend == "aiter"
    return is_rocm(gpu.name) and rocm_default_is_aiter(spec, model, window)


def rocm_default_is_aiter(spec: LaunchSpec, model: ModelFacts, window: Window) -> bool:
    """Whether SGLang picks aiter on ROCm when --attention-backend is unset: always for MHA models; for
    MLA models when ModelConfig.get_num_kv_heads(tp_size) = max(1, kv_heads // tp) is 16 or 128
    ("current aiter only support head number 16 or 128"; model_runner.model_specific_adjustment
    0.4.7-0.5.5, server_args._handle_attention_backend_compatibility 0.5.6, server_args.
    _get_default_attn_backend 0.5.10, arg_groups/model_override_base.get_default_attn_backend 0.5.23),
    and before 0.5.3 only without speculative decoding. DeepSeek-R1 (128 KV heads) gets aiter at TP 1
    and TP 8, triton at TP 16."""
    if not model.is_mla:
        return True
    rule = window.rules.aiter_mla_default
    if rule == "never":
        return False
    if rule == "heads-16-128-no-spec" and spec.speculative_algorithm:
        return False
    return max(1, model.num_kv_heads // spec.tp_size) in (16, 128)


def _shard_note(sharded: Sharded, shards: int) -> str:
    """Why the weights per GPU are not the checkpoint over tp x pp."""
    parts = []
    if sharded.whole_bytes:
        parts.append(
            f"{sharded.whole_bytes / GIB:.2f} GiB held whole on every GPU (replicated layers, router, norms)"
        )
    if sharded.copy_bytes:
        parts.append(f"{sharded.copy_bytes / GIB:.2f} GiB of MLA's w_kc/w_vc copies made after loading")
    why = "; ".join(parts) or "K/V heads, vocabulary padding or the parallel layout"
    return (
        f"Weights per GPU {sharded.per_gpu_bytes / GIB:.2f} GiB, not the checkpoint / {shards} = "
        f"{sharded.even_split_bytes / GIB:.2f} GiB: {why}."
    )


def _resolve(
    spec: LaunchSpec,
    model: ModelFacts,
    gpu: GpuSpec,
    window: Window,
    version: str,
    free_gib: float | Sequence[float] | None,
    weights_gib: float | None,
    draft_weights_gib: float | None,
    draft_model: ModelFacts | None,
    notes: list[str],
) -> Inputs:
    rules = window.rules
    defaults = resolve_defaults(spec, model, gpu.mib, window)
    mfs = (
        spec.mem_fraction_static
        if spec.mem_fraction_static is not None
        else defaults.mem_fraction_static_auto
    )
    if not 0 < mfs < 1 and spec.mem_fraction_static is None:  # SGLang's own default, from the GPU's size
        raise UserError(
            f"--gpu {gpu.name} ({gpu.gib:.2f} GiB): too small for this launch; SGLang's automatic "
            f"--mem-fraction-static comes to {mfs:.3g} on it (it reserves more than the GPU holds)"
        )
    if not 0 < mfs < 1:
        raise UserError(f"--mem-fraction-static {mfs}: must be between 0 and 1 (e.g. 0.85)")
    shrink = runtime_multimodal_factor(spec, model, window)
    if shrink != 1.0:
        mfs *= shrink
        notes.append(f"SGLang {version} reduces --mem-fraction-static to {mfs:.3f}: a multimodal model.")
    ctx = spec.context_length or model.context_length
    if _aiter_shrinks(spec, model, gpu, window, ctx):
        mfs *= 0.85
        notes.append(
            f"SGLang {version} multiplies --mem-fraction-static by 0.85 (aiter backend, context {ctx} > "
            f"8192): {mfs:.3f}."
        )
    per_gpu = _per_gpu(free_gib)
    for label, given in (
        *(("--free-gib", f) for f in per_gpu),
        ("--weights-gib", weights_gib),
        ("--draft-weights-gib", draft_weights_gib),
    ):
        if given is not None and given < 0:
            raise UserError(f"{label} {given}: must be a non-negative number of GiB")
    shards = spec.tp_size * spec.pp_size
    if per_gpu:
        p = min(per_gpu)
    else:
        lost = estimated_loss(gpu, spec.tp_size)
        p = gpu.gib - lost.loss_gib
        notes.append(
            f"Free memory before the weights P = {p:.2f} GiB is estimated from the baseline table: the GPU "
            f"total less {lost.loss_gib:.2f} GiB (+/- {lost.error_gib:.2f}) for CUDA context, NCCL and "
            f"workspaces ({lost.basis}). --free-gib replaces it."
        )
    model_bytes, bytes_estimated = weight_bytes_on_gpu(spec, model)
    w = weights_gib
    if w is None:
        sharded = shard_weights(
            spec,
            model,
            model_bytes,
            rules,
            rocm=is_rocm(gpu.name),
            dtype=model_dtype(spec, model),
            scheme=loaded_scheme(spec, model),
        )
        w = sharded.per_gpu_bytes / GIB
        if abs(sharded.per_gpu_bytes - sharded.even_split_bytes) > 0.01 * sharded.even_split_bytes:
            notes.append(_shard_note(sharded, shards))
    sd = speculative_params(spec, model)
    max_running = spec.max_running_requests
    draft_w = 0.0
    if sd is not None:
        if max_running is None and rules.spec_default_max_running:
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
            if draft_model is None and sd.algorithm in EAGLE_LIKE and model.mtp_layers and total:
                rocm, dtype = is_rocm(gpu.name), model_dtype(spec, model)
                draft_w = shard_own_draft(spec, model, total, rules, rocm=rocm, dtype=dtype) / GIB
            else:
                draft_w = (total or 0) / shards / GIB
    _, elem = kv_dtype(spec, model, rules)
    return Inputs(
        spec=spec,
        model=model,
        window=window,
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
        ctx=ctx,
        page=spec.page_size or _default_page_size(spec),
        layout=kv_layout(spec, model, rules, elem, gpu.name),
        shape=state_shape(spec, model, rules),
        draft_layers=draft_kv_layers(model, sd, draft_model),
    )


def _compute(
    spec: LaunchSpec,
    model: ModelFacts,
    gpu: GpuSpec,
    n_gpus: int | None,
    version: str,
    window: Window,
    free_gib: float | Sequence[float] | None,
    weights_gib: float | None,
    draft_weights_gib: float | None,
    draft_model: ModelFacts | None,
) -> FitReport:
    notes = [window_note(version)]
    n_gpus = _check_parallelism(spec, n_gpus)
    x = _resolve(
        spec, model, gpu, window, version, free_gib, weights_gib, draft_weights_gib, draft_model, notes
    )
    rules = window.rules
    mm_reserve = rules.mm_runtime_reserve_mib / 1024 if multimodal_enabled(spec, model) else 0.0
    report = FitReport(
        sglang_version=version,
        family=window.name,
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
        kv_cache_dtype=kv_dtype(spec, model, rules)[0],
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
    if free_gib is None:
        report.baseline_error_gib = estimated_loss(gpu, spec.tp_size).error_gib
    mismatch = name_versus_config(
        model_name(spec, model),
        model.quant,
        model.quant_method,
        model.weights_estimated and weights_gib is None,
    )
    if mismatch is not None and not spec.quantization:
        report.warnings.append(FitWarning("quantization_name_mismatch", mismatch))
    try:
        refused = size_pools(report, x)
    except PredictedError as failure:
        report.error = failure.text
        return report
    slack = x.slack_budget - report.req_to_token_gib - report.draft_kv_gib
    if not rules.draft_weights_in_budget:
        slack -= x.draft_w  # before 0.5.14 the draft loads after the pools, out of the slack
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
