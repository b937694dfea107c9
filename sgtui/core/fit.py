"""SGLang's startup memory arithmetic, per version family, without a GPU.

`fit()` replays what SGLang does between "Load weight begin" and "Memory pool end": the static budget
`rest = A - P*(1-mfs)`, the Mamba/linear-attention state, the speculative-decoding state, the KV pool
in tokens, max_running_requests, and the slack left for CUDA graphs and activations. It says whether
the launch fails (with the exact error the chosen version raises), looks tight, or fits, and how to fix
it (see fit_advice.py). Formulas and their SGLang sources: ../shared/sglang-memory.md and the
docstrings below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sgtui.core.errors import UserError
from sgtui.core.fit_defaults import EAGLE_LIKE, resolve_defaults, version_family
from sgtui.core.fit_pools import attention_dp, kv_dtype, kv_layout, state_shape
from sgtui.core.flags import LaunchSpec
from sgtui.core.gpus import GpuSpec
from sgtui.core.model import ModelFacts, attention_params, estimate_param_count, mlp_params

GIB = 1 << 30

# Free memory lost before SGLang's baseline (CUDA context, cuBLAS, NCCL), when --free-gib is not given.
# Real logs show 0.7-1.5 GiB (e.g. 47.0 of 47.99 GiB on an A6000 at TP 2; 21.63 of 22.49 on an L4 at TP 4).
CUDA_CONTEXT_GIB = 0.75
NCCL_GIB = 0.25

# "tight" when the slack left after the pools is under this share of SGLang's own activation+graph
# estimate (the reservation its automatic mfs makes: 512 MiB + 1.5 MiB per chunked-prefill token +
# 2 MiB per decode graph batch size + the prefill-graph term; server_args._handle_gpu_memory_settings).
# The reservation is deliberately generous: in real logs the graphs and activations used about half of
# it (001.log: 0.93 GiB of graphs within 2.09 GiB left of a 3.7 GiB estimate), so half is the line.
TIGHT_SHARE = 0.5


@dataclass(frozen=True)
class FitWarning:
    """One thing the user should know, with the flag to change and the value that would work."""

    code: str
    message: str
    flag: str | None = None
    suggested_value: Any = None


Warning = FitWarning  # the name the architecture contract uses


@dataclass(frozen=True)
class MambaPool:
    slot_bytes: int
    max_mamba_cache_size: int
    ratio: int
    strategy: str
    ssm_dtype: str
    state_gib: float  # allocated: (K+1) slots
    spec_state_gib: float  # the speculative intermediate state the budget reserved
    conv_state_gib: float
    ssm_state_gib: float
    intermediate_ssm_gib: float
    intermediate_conv_gib: float


@dataclass
class FitReport:
    """The predicted startup of one launch: inputs, budget lines, pools, verdict and advice."""

    sglang_version: str
    family: str
    gpu_name: str
    gpu_total_gib: float
    n_gpus: int
    tp_size: int
    baseline_free_gib: float
    baseline_estimated: bool
    mem_fraction_static: float
    mem_fraction_static_auto: float
    mem_fraction_static_is_auto: bool
    weights_gib: float
    weights_estimated: bool
    draft_weights_gib: float
    draft_weights_estimated: bool
    available_after_weights_gib: float
    rest_gib: float
    kv_pool_gib: float
    kv_cell_bytes: int
    kv_cache_dtype: str
    page_size: int
    max_total_num_tokens: int
    max_running_requests: int
    context_length: int
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    speculative_num_draft_tokens: int | None
    mamba: MambaPool | None
    swa: dict[str, int] | None
    req_to_token_gib: float
    draft_kv_gib: float
    slack_gib: float
    activation_estimate_gib: float
    verdict: str
    error: str | None
    warnings: list[FitWarning] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    predicted_log: dict[str, float | int | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The `sgtui fit --json` object (DESIGN.md contract keys first; sizes in GiB)."""
        mamba = None
        if self.mamba is not None:
            m = self.mamba
            mamba = {
                "slot_bytes": m.slot_bytes,
                "max_mamba_cache_size": m.max_mamba_cache_size,
                "state_gib": _r(m.state_gib),
                "spec_state_gib": _r(m.spec_state_gib),
                "slots_per_request": m.ratio,
                "strategy": m.strategy,
                "ssm_dtype": m.ssm_dtype,
            }
        return {
            "sglang_version": self.sglang_version,
            "gpu_total_gib": _r(self.gpu_total_gib),
            "baseline_free_gib": _r(self.baseline_free_gib),
            "mem_fraction_static": self.mem_fraction_static,
            "mem_fraction_static_auto": self.mem_fraction_static_auto,
            "weights_gib": _r(self.weights_gib),
            "draft_weights_gib": _r(self.draft_weights_gib),
            "rest_gib": _r(self.rest_gib),
            "kv_cell_bytes": self.kv_cell_bytes,
            "max_total_num_tokens": self.max_total_num_tokens,
            "max_running_requests": self.max_running_requests,
            "context_length": self.context_length,
            "mamba": mamba,
            "swa": self.swa,
            "slack_gib": _r(self.slack_gib),
            "verdict": self.verdict,
            "error": self.error,
            "warnings": [
                {"code": w.code, "message": w.message, "flag": w.flag, "suggested_value": w.suggested_value}
                for w in self.warnings
            ],
            "family": self.family,
            "gpu_name": self.gpu_name,
            "n_gpus": self.n_gpus,
            "tp_size": self.tp_size,
            "baseline_estimated": self.baseline_estimated,
            "mem_fraction_static_is_auto": self.mem_fraction_static_is_auto,
            "weights_estimated": self.weights_estimated,
            "draft_weights_estimated": self.draft_weights_estimated,
            "available_after_weights_gib": _r(self.available_after_weights_gib),
            "kv_pool_gib": _r(self.kv_pool_gib),
            "kv_cache_dtype": self.kv_cache_dtype,
            "page_size": self.page_size,
            "chunked_prefill_size": self.chunked_prefill_size,
            "cuda_graph_max_bs": self.cuda_graph_max_bs,
            "speculative_num_draft_tokens": self.speculative_num_draft_tokens,
            "req_to_token_gib": _r(self.req_to_token_gib),
            "draft_kv_gib": _r(self.draft_kv_gib),
            "activation_estimate_gib": _r(self.activation_estimate_gib),
            "predicted_log": self.predicted_log,
            "notes": self.notes,
        }


def _r(x: float) -> float:
    return round(x, 4)


@dataclass(frozen=True)
class SpecDecoding:
    algorithm: str
    steps: int
    topk: int
    draft_tokens: int


def speculative_params(spec: LaunchSpec, model: ModelFacts) -> SpecDecoding | None:
    """Steps/topk/draft tokens as SGLang resolves them: (3, 1, 4) by default, (5, 4, 8) for Llama;
    with topk 1 the draft tokens are forced to steps + 1."""
    algo = (spec.speculative_algorithm or "").upper()
    if not algo:
        return None
    llama = model.architecture in ("LlamaForCausalLM",)
    steps = spec.speculative_num_steps or (5 if llama else 3)
    topk = spec.speculative_eagle_topk or (4 if llama else 1)
    draft = spec.speculative_num_draft_tokens or (8 if llama else 4)
    if topk == 1 and algo != "NGRAM":
        draft = steps + 1
    return SpecDecoding(algo, steps, topk, draft)


def estimate_draft_weight_bytes(model: ModelFacts, sd: SpecDecoding, draft: ModelFacts | None) -> int | None:
    """Total bytes of the draft: a given draft checkpoint, else the target's own MTP/NextN layers.

    A Qwen3.5/Next MTP draft shares embed_tokens and lm_head with the target (models/qwen3_5_mtp.py),
    leaving one decoder layer plus the 2h->h fc; a DeepSeek-style NextN layer carries its own."""
    if sd.algorithm == "NGRAM":
        return 0
    if draft is not None:
        return draft.weight_bytes
    if sd.algorithm not in EAGLE_LIKE or not model.mtp_layers:
        return None
    h = model.hidden_size
    params = model.mtp_layers * (attention_params(model) + mlp_params(model)) + 2 * h * h
    if not model.is_gdn_hybrid:
        params += 2 * model.vocab_size * h
    per_param = 2.0
    if not model.weights_estimated:
        per_param = model.weight_bytes / max(1, estimate_param_count(model))
    return int(params * per_param)


def draft_kv_layers(model: ModelFacts, sd: SpecDecoding | None, draft: ModelFacts | None) -> int:
    """Layers of the draft's KV pool: 1 for an EAGLE/MTP draft on a hybrid linear model
    (full_attention_layer_ids=[0]), the draft checkpoint's own layers, else the NextN/MTP layers."""
    if sd is None or sd.algorithm == "NGRAM":
        return 0
    if model.is_gdn_hybrid and draft is None:
        return 1
    if draft is not None:
        return draft.full_attention_layers
    return model.mtp_layers or 1


def _page_floor(tokens: int, page: int) -> int:
    return tokens // page * page


def _not_enough(family: str, mfs: float) -> str:
    if family == "0.5.9":
        value = f"self.server_args.mem_fraction_static={mfs!r}"
    else:
        value = f"mem_fraction_static={mfs!r}"
    return f"RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: {value}"


def _default_page_size(spec: LaunchSpec) -> int:
    backend = (spec.attention_backend or "").lower()
    if backend in ("trtllm_mha", "flashmla", "trtllm_mla", "cutedsl_mla"):
        return 64
    return 1


class _Fail(Exception):
    """A predicted SGLang error: stops the arithmetic where SGLang would stop."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


@dataclass
class _Budget:
    """Mutable scratch for one run of the arithmetic."""

    rest: float = 0.0
    k: int = 0
    ratio: int = 1
    spec_state: float = 0.0
    strategy: str = ""
    radix_disabled: bool = False
    overlap: bool = True


def _resolve_mamba_strategy(
    spec: LaunchSpec, family: str, b: _Budget, sd: SpecDecoding | None, arch: str
) -> None:
    """Radix-cache and strategy rules for hybrid linear models (server_args._handle_mamba_radix_cache,
    0.5.23 arg_groups/overrides.py _mamba_radix_cache_resolution)."""
    strategy = (spec.mamba_strategy or "auto").lower()
    b.overlap = not spec.disable_overlap_schedule
    if family == "0.5.23":
        if strategy == "auto":
            strategy = "extra_buffer" if (b.overlap or (spec.page_size or 1) > 1) else "no_buffer"
    elif strategy == "auto":
        strategy = "no_buffer"
    if strategy.startswith("extra_buffer") and b.radix_disabled and family != "0.5.23":
        raise _Fail(
            "ValueError: mamba extra_buffer is not compatible with --disable-radix-cache Overlap scheduling "
            "is already supported with no_buffer + disable_radix_cache. Please use "
            "--mamba-scheduler-strategy no_buffer instead."
        )
    if strategy == "no_buffer" and not b.radix_disabled and sd is not None:
        if family == "0.5.9":
            b.radix_disabled = True
        elif family == "0.5.11":
            raise _Fail(
                f"ValueError: Speculative decoding for {arch} is not compatible with radix cache when using "
                "--mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use "
                "--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1."
            )
    if strategy == "no_buffer" and not b.radix_disabled and sd is None and family != "0.5.23":
        b.overlap = False  # no_buffer with radix turns the overlap scheduler off
    b.strategy = strategy
    if b.radix_disabled:
        b.ratio = 1
    elif strategy == "no_buffer":
        b.ratio = 3
    elif strategy == "extra_buffer_lazy":
        b.ratio = 4
    elif family == "0.5.9":
        b.ratio = 4 if sd is not None else 5
    else:
        b.ratio = 5 if b.overlap else 4


def _mamba_budget(
    family: str, spec: LaunchSpec, b: _Budget, slot: int, sd: SpecDecoding | None, mrr: int | None, dp: int
) -> None:
    """K (max_mamba_cache_size) and what the Mamba state takes out of rest (handle_max_mamba_cache /
    KVCacheConfigurator._handle_max_mamba_cache)."""
    r = spec.mamba_full_memory_ratio
    d = sd.draft_tokens if sd is not None else 0
    if family != "0.5.23":
        if sd is not None and mrr is not None:
            b.spec_state = slot * (mrr // dp) * d / GIB
            b.rest -= b.spec_state
        if spec.max_mamba_cache_size is not None:
            b.k = spec.max_mamba_cache_size // dp
        elif b.radix_disabled and mrr is not None:
            b.k = mrr // dp
        else:
            budget = b.rest * r / (1 + r)
            b.k = int((budget * GIB) // slot)
        b.rest -= b.k * slot / GIB
        return
    if spec.max_mamba_cache_size is not None:
        b.k = spec.max_mamba_cache_size // dp
        if sd is not None and mrr is not None:
            capped = min(max(1, mrr // dp), b.k // b.ratio)
            b.spec_state = slot * (capped + 1) * d / GIB
            b.rest -= b.spec_state
    elif b.radix_disabled and mrr is not None:
        b.k = max(1, mrr // dp)
        if sd is not None:
            b.spec_state = slot * (b.k + 1) * d / GIB
            b.rest -= b.spec_state
    else:
        budget_bytes = b.rest * r / (1 + r) * GIB
        if sd is not None and mrr is not None:
            b.k = int((budget_bytes - slot * (1 + d)) // (slot * (1 + d / b.ratio)))
            capped = min(max(1, mrr // dp), b.k // b.ratio)
            b.spec_state = slot * (capped + 1) * d / GIB
            b.rest -= b.spec_state
        else:
            b.k = int((budget_bytes - slot) // slot)
    if b.k <= 0:
        raise _Fail(
            "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
            f"Computed max_mamba_cache_size={b.k} (total_rest_memory={b.rest:.2f} GB, "
            f"mamba_cache_per_req={slot / (1 << 20):.2f} MB). Try: (1) reduce --max-running-requests, "
            "(2) increase --mem-fraction-static, (3) reduce --speculative-num-draft-tokens, or "
            "(4) use GPUs with more memory."
        )
    b.rest -= (b.k + 1) * slot / GIB


def _max_running(family: str, tokens: int, ctx: int, user: int | None, dp: int) -> int:
    """max_running_requests per DP worker, before the Mamba cap (§2 table)."""
    est = max(min(int(tokens / ctx * 512), 4096), 2048)
    if user is None:
        return min(est, tokens // 2)
    if family == "0.5.9":
        return user // dp
    if family == "0.5.11":
        return min(user // dp, est)
    return min(max(1, user // dp), tokens // 2)


def fit(
    spec: LaunchSpec,
    model: ModelFacts,
    gpu: GpuSpec,
    *,
    n_gpus: int | None = None,
    version: str = "0.5.11",
    free_gib: float | None = None,
    weights_gib: float | None = None,
    draft_weights_gib: float | None = None,
    draft_model: ModelFacts | None = None,
    advise: bool = True,
) -> FitReport:
    """Predict SGLang's startup memory for `spec` on `gpu` (the smallest GPU of the host).

    `free_gib` is P, the free memory per GPU at "Load weight begin" (else estimated from the GPU total);
    `weights_gib` the per-GPU weight memory at "Load weight end" (else the checkpoint bytes / TP);
    `draft_weights_gib` the draft/MTP weights per GPU (else estimated). `draft_model` is the draft's
    facts when --speculative-draft-model-path is a local folder. With `advise`, warnings carry the values
    that would work (found by re-running this arithmetic)."""
    report = _compute(
        spec, model, gpu, n_gpus, version, free_gib, weights_gib, draft_weights_gib, draft_model
    )
    if advise:
        from sgtui.core.fit_advice import advise as add_advice

        add_advice(
            report,
            lambda s: _compute(
                s, model, gpu, n_gpus, version, free_gib, weights_gib, draft_weights_gib, draft_model
            ),
            spec,
            model,
        )
    return report


def _compute(
    spec: LaunchSpec,
    model: ModelFacts,
    gpu: GpuSpec,
    n_gpus: int | None,
    version: str,
    free_gib: float | None,
    weights_gib: float | None,
    draft_weights_gib: float | None,
    draft_model: ModelFacts | None,
) -> FitReport:
    family, family_note = version_family(version)
    notes = [family_note]
    for name, value in (
        ("--tp-size", spec.tp_size),
        ("--pp-size", spec.pp_size),
        ("--dp-size", spec.dp_size),
    ):
        if value < 1:
            raise UserError(f"{name} {value}: must be at least 1")
    dp = attention_dp(spec)
    replicas = 1 if dp > 1 else spec.dp_size
    needed = spec.tp_size * spec.pp_size * replicas
    if n_gpus is None:
        n_gpus = needed
    elif n_gpus < needed:
        raise UserError(
            f"--gpus {n_gpus}: this launch needs {needed} GPUs (tp {spec.tp_size} x pp {spec.pp_size}"
            + (f" x dp {spec.dp_size}" if replicas > 1 else "")
            + ")"
        )
    defaults = resolve_defaults(spec, model, gpu.mib, family)
    mfs_auto = defaults.mem_fraction_static_auto
    mfs = spec.mem_fraction_static if spec.mem_fraction_static is not None else mfs_auto
    if not 0 < mfs < 1:
        raise UserError(f"--mem-fraction-static {mfs}: must be between 0 and 1 (e.g. 0.85)")
    for label, given in (("--free-gib", free_gib), ("--weights-gib", weights_gib)):
        if given is not None and given < 0:
            raise UserError(f"{label} {given}: must be a non-negative number of GiB")

    shards = spec.tp_size * spec.pp_size
    if free_gib is not None:
        p = free_gib
    else:
        p = gpu.gib - CUDA_CONTEXT_GIB - (NCCL_GIB if shards > 1 else 0.0)
    w = weights_gib if weights_gib is not None else model.weight_bytes / shards / GIB
    weights_estimated = weights_gib is None and model.weights_estimated

    sd = speculative_params(spec, model)
    user_mrr = spec.max_running_requests
    if sd is not None and user_mrr is None:
        user_mrr = 48
        notes.append("Max running requests is reset to 48 for speculative decoding (SGLang's default).")
    draft_w, draft_estimated = 0.0, False
    if sd is not None:
        if draft_weights_gib is not None:
            draft_w = draft_weights_gib
        else:
            total = estimate_draft_weight_bytes(model, sd, draft_model)
            draft_estimated = True
            if total is None:
                notes.append(
                    "The draft model's weights are unknown (its folder is not local): pass --draft-weights-gib."
                )
                total = 0
            draft_w = total / shards / GIB

    derived_ctx = model.context_length
    ctx = spec.context_length or derived_ctx
    elem_name, elem = kv_dtype(spec, model)
    layout = kv_layout(spec, model, family, elem)
    shape = state_shape(spec, model)
    page = spec.page_size or _default_page_size(spec)
    b = _Budget(radix_disabled=spec.disable_radix_cache)
    a = p - w - (draft_w if family == "0.5.23" else 0.0)
    mm_reserve = 100 / 1024 if family == "0.5.23" and model.is_multimodal and not spec.language_only else 0.0
    b.rest = a - p * (1 - mfs) - mm_reserve
    rest_before_state = b.rest

    report = FitReport(
        sglang_version=version,
        family=family,
        gpu_name=gpu.name,
        gpu_total_gib=gpu.gib,
        n_gpus=n_gpus,
        tp_size=spec.tp_size,
        baseline_free_gib=p,
        baseline_estimated=free_gib is None,
        mem_fraction_static=mfs,
        mem_fraction_static_auto=mfs_auto,
        mem_fraction_static_is_auto=spec.mem_fraction_static is None,
        weights_gib=w,
        weights_estimated=weights_estimated,
        draft_weights_gib=draft_w,
        draft_weights_estimated=draft_estimated,
        available_after_weights_gib=a,
        rest_gib=rest_before_state,
        kv_pool_gib=0.0,
        kv_cell_bytes=round(layout.cell_bytes),
        kv_cache_dtype=elem_name,
        page_size=page,
        max_total_num_tokens=0,
        max_running_requests=0,
        context_length=ctx,
        chunked_prefill_size=defaults.chunked_prefill_size,
        cuda_graph_max_bs=defaults.cuda_graph_max_bs,
        speculative_num_draft_tokens=sd.draft_tokens if sd else None,
        mamba=None,
        swa=None,
        req_to_token_gib=0.0,
        draft_kv_gib=0.0,
        slack_gib=p * (1 - mfs),
        activation_estimate_gib=defaults.activation_mib / 1024,
        verdict="fails",
        error=None,
        notes=notes,
    )
    draft_layers = draft_kv_layers(model, sd, draft_model)
    try:
        _pools(
            report,
            spec,
            model,
            family,
            sd,
            user_mrr,
            dp,
            layout,
            shape,
            b,
            page,
            ctx,
            derived_ctx,
            p,
            mfs,
            a,
            draft_layers,
        )
    except _Fail as failure:
        report.verdict = "fails"
        report.error = failure.text
        return report
    slack = p * (1 - mfs) - report.req_to_token_gib - report.draft_kv_gib
    if family != "0.5.23":
        slack -= draft_w
    report.slack_gib = slack
    report.predicted_log["memory_pool_end_avail_gib"] = round(p * (1 - mfs) - report.req_to_token_gib, 2)
    if slack < 0:
        report.verdict = "fails"
        report.error = "torch.OutOfMemoryError: CUDA out of memory."
    elif slack < TIGHT_SHARE * report.activation_estimate_gib:
        report.verdict = "tight"
    else:
        report.verdict = "fits"
    return report


def _pools(
    report: FitReport,
    spec: LaunchSpec,
    model: ModelFacts,
    family: str,
    sd: SpecDecoding | None,
    user_mrr: int | None,
    dp: int,
    layout: Any,
    shape: Any,
    b: _Budget,
    page: int,
    ctx: int,
    derived_ctx: int,
    p: float,
    mfs: float,
    a: float,
    draft_layers: int,
) -> None:
    """The part of the arithmetic that can raise SGLang's errors (in SGLang's order)."""
    if ctx > derived_ctx:
        raise _Fail(
            f"ValueError: Warning: User-specified context_length ({ctx}) is greater than the derived "
            f"context_length ({derived_ctx}). This may lead to incorrect model outputs or CUDA errors. Note "
            "that the derived context_length may differ from max_position_embeddings in the model's config. "
            "To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
        )
    if shape is not None:
        _resolve_mamba_strategy(spec, family, b, sd, model.architecture)
        if b.strategy == "no_buffer" and not b.radix_disabled:
            page = report.page_size = 1
        _mamba_budget(family, spec, b, shape.slot_bytes, sd, user_mrr, dp)
    if family == "0.5.23" and b.rest <= 0:
        minimum = 1 - a / p
        suggested = -(-minimum * 1000 // 1) / 1000
        raise _Fail(
            "ValueError: Loaded weights leave no GPU memory for the KV cache under "
            f"--mem-fraction-static={mfs!r}. Raise --mem-fraction-static above {suggested:.3f} "
            f"(minimum viable = 1 - available/pre = {minimum:.4f}). If using speculative decoding, "
            "draft weights are now counted."
        )
    cell = layout.cell_bytes
    folds_draft = (
        family == "0.5.23"
        and sd is not None
        and sd.algorithm != "NGRAM"
        and (bool(spec.speculative_draft_model_path) or model.num_nextn_predict_layers > 0)
    )
    if folds_draft and layout.kv_layers:
        cell += int(cell * draft_layers / layout.kv_layers)
    report.kv_cell_bytes = round(cell)
    rest_bytes = int(b.rest * GIB)
    raw_tokens = int(rest_bytes // cell) if rest_bytes > 0 else rest_bytes // max(1, int(cell))
    tokens = _page_floor(raw_tokens, page) if raw_tokens > 0 else raw_tokens
    if tokens <= 0:
        raise _Fail(_not_enough(family, mfs))
    if spec.max_total_tokens is not None and spec.max_total_tokens < tokens:
        tokens = _page_floor(spec.max_total_tokens, page)
    report.max_total_num_tokens = tokens
    report.kv_pool_gib = b.rest
    swa_tokens = 0
    if layout.swa:
        swa_tokens = tokens if layout.all_swa else _page_floor(int(tokens * spec.swa_full_tokens_ratio), page)
        report.swa = {"full_tokens": 0 if layout.all_swa else tokens, "swa_tokens": swa_tokens}

    mrr = _max_running(family, tokens, ctx, user_mrr, dp)
    if shape is not None:
        cap = b.k // b.ratio
        if family == "0.5.23" and cap < mrr:
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
            if family == "0.5.23":
                raise _Fail(
                    "RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any "
                    f"requests. max_mamba_cache_size={b.k}, mamba_ratio={b.ratio}, resulting max_num_reqs={mrr}. "
                    "Try: (1) reduce --max-running-requests, (2) increase --mem-fraction-static, or "
                    "(3) use GPUs with more memory."
                )
            raise _Fail("AssertionError: max_running_request is zero")
    report.max_running_requests = mrr
    d = sd.draft_tokens if sd is not None else 0
    report.req_to_token_gib = (mrr + 1) * (ctx + 4 + d) * 4 / GIB

    draft_cell = 0.0
    if sd is not None and sd.algorithm != "NGRAM" and not folds_draft:
        per_layer = layout.k_bytes_per_token_layer + layout.v_bytes_per_token_layer
        draft_cell = per_layer * draft_layers
    report.draft_kv_gib = tokens * draft_cell / GIB

    log = report.predicted_log
    log["load_weight_begin_avail_gib"] = round(p, 2)
    log["weight_mem_gib"] = round(report.weights_gib, 2)
    log["avail_mem_after_weights_gib"] = round(p - report.weights_gib, 2)
    log["max_total_num_tokens"] = tokens
    log["kv_tokens"] = swa_tokens if layout.all_swa else tokens
    log["max_running_requests"] = mrr
    log["context_length"] = ctx
    log["mem_fraction_static"] = mfs
    rows = tokens + page
    if layout.all_swa:
        log["k_size_gib"] = round(rows * layout.swa_k_bytes_per_token_layer * layout.swa_layers / GIB, 2)
        log["v_size_gib"] = round(rows * layout.swa_v_bytes_per_token_layer * layout.swa_layers / GIB, 2)
    else:
        log["k_size_gib"] = round(rows * layout.k_bytes_per_token_layer * layout.kv_layers / GIB, 2)
        log["v_size_gib"] = round(rows * layout.v_bytes_per_token_layer * layout.kv_layers / GIB, 2)
    if layout.swa and not layout.all_swa:
        swa_rows = swa_tokens + page
        log["swa_full_layer_tokens"] = tokens
        log["swa_layer_tokens"] = swa_tokens
        log["swa_k_size_gib"] = round(
            swa_rows * layout.swa_k_bytes_per_token_layer * layout.swa_layers / GIB, 2
        )
        log["swa_v_size_gib"] = round(
            swa_rows * layout.swa_v_bytes_per_token_layer * layout.swa_layers / GIB, 2
        )
    if shape is not None:
        slots = b.k + 1
        conv = slots * shape.conv_bytes_per_layer * shape.linear_layers / GIB
        ssm = slots * shape.ssm_bytes_per_layer * shape.linear_layers / GIB
        inter_ssm = inter_conv = 0.0
        if sd is not None:
            rows_req = mrr + 1
            inter_ssm = shape.linear_layers * rows_req * d * shape.ssm_bytes_per_layer / GIB
            if family == "0.5.23" and sd.topk <= 1:
                window = shape.conv_dim_per_gpu * (d + shape.conv_kernel - 2)
            else:
                window = d * shape.conv_dim_per_gpu * (shape.conv_kernel - 1)
            inter_conv = shape.linear_layers * rows_req * window * 2 / GIB
        report.mamba = MambaPool(
            slot_bytes=shape.slot_bytes,
            max_mamba_cache_size=b.k,
            ratio=b.ratio,
            strategy=b.strategy if not b.radix_disabled else f"{b.strategy} (radix cache off)",
            ssm_dtype=shape.ssm_dtype,
            state_gib=slots * shape.slot_bytes / GIB,
            spec_state_gib=b.spec_state,
            conv_state_gib=conv,
            ssm_state_gib=ssm,
            intermediate_ssm_gib=inter_ssm,
            intermediate_conv_gib=inter_conv,
        )
        log["mamba_cache_size"] = b.k
        log["mamba_conv_state_gib"] = round(conv, 2)
        log["mamba_ssm_state_gib"] = round(ssm, 2)
        if sd is not None:
            log["intermediate_ssm_state_gib"] = round(inter_ssm, 2)
            log["intermediate_conv_window_gib"] = round(inter_conv, 2)
    if b.radix_disabled and not spec.disable_radix_cache:
        report.notes.append(
            "SGLang disables the radix cache here (speculative decoding on a hybrid linear-attention model)."
        )
