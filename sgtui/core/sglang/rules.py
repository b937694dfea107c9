"""The named rules of SGLang's startup-memory arithmetic that changed between releases.

One `Rules` value is what one release window has (sgtui/core/sglang/windows.py builds them); the
fit engine reads these fields by name and never compares versions. `ServingRules` and its own windows
(`serving_rules(version)`, re-exported by windows.py) are what a ready server answers and prints.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sgtui.core.sglang.versions import ReleaseVersion, parse_version


@dataclass(frozen=True, eq=False)
class Rules:
    """Every rule of the startup arithmetic that changed between releases, as one release has it.

    The defaults are the oldest era's (0.1.x); each window overrides what its release changed."""

    # --- the automatic --mem-fraction-static (server_args.py) ---
    # "tp-table": a fraction per TP size; "tp-table-80g": that table up to 80 GiB, else all but 13 GiB;
    # "tp-table-bump": above 96 GiB a 48 GiB-scaled bump capped at all but 18 GiB; "tp-table-bump-spec":
    # the same, 0.79 above 180,000 MiB, spec decoding keeps 20 GiB (or x0.95); "class-reserve": MiB per
    # GPU class; "formula": 512 + activations + graphs + parallel, floored at 10 GiB above 60 GiB.
    auto_mfs: str = "tp-table"
    tp_fractions: tuple[float, float, float, float, float] = (0.90, 0.85, 0.82, 0.80, 0.80)  # TP 1/2/4/8/16
    class_reserve_standalone_mib: int = 2048  # "class-reserve": STANDALONE's reserve (EAGLE: 2048)
    # the chunked-prefill / decode-graph tiers: "0.4" (2048 and bs 8, or 80 at tp >= 4, under 25,000 MiB;
    # else 8192 and 160), "class" (under 35 GiB 2048 and 8 | 80; under 160 GiB 8192; else 16384; bs 160),
    # "formula" (5 tiers, the < 35 GiB one below)
    tier_table: str = "0.4"
    # the < 35 GiB tier of "formula": (chunked prefill, decode graph max bs at tp < 4, at tp >= 4)
    small_tier: tuple[int, int, int] = (2048, 24, 80)
    spec_reserve_mib: int = 0  # EAGLE/EAGLE3/NEXTN/MTP, added after the 10 GiB floor
    standalone_reserve_mib: int = 0
    deepep_reserve_mib: int = 0  # --moe-a2a-backend deepep, after the floor
    decode_graph_reserve_needs_graph: bool = False  # no 2 MiB per batch size under --disable-cuda-graph
    decode_bs_clipped_to_max_running: bool = False  # a default max bs is clipped to --max-running-requests
    dp_reserve_uses_attn_dp: bool = False  # the DP-attention reserve multiplies by attn_dp_size
    vlm_mfs_adjust: bool = False  # adjust_mem_fraction_for_vlm on the automatic value
    multimodal_shrink: float = 1.0  # ModelRunner shrinks every multimodal fraction, a set one too
    # --- the prefill CUDA graph the automatic fraction reserves for ---
    prefill_graph: str = "none"  # "none" | "opt-in" (piecewise) | "piecewise" (default on) | "breakable"
    # how the automatic fraction reserves for it: "none"; "after-floor" (max tokens // divisor, added
    # after the 10 GiB floor; max tokens 4096 by default, or the chunk when that default is 0);
    # "per-size" (8 MiB per captured size, before the floor; MLA 1.5 GiB from 0.5.10)
    piecewise_reserve: str = "none"
    piecewise_reserve_divisor: int = 4
    piecewise_max_tokens_default: int = 4096
    # what turns the default breakable graph off: mla, mla-non-dsa, dp-attention, pp, nemotron-h,
    # multimodal (every VLM) or multimodal-unlisted (VLMs outside the allowlist)
    breakable_off: frozenset[str] = frozenset()
    disable_cuda_graph_stops_prefill_graph: bool = False  # --disable-cuda-graph turns both phases off
    prefill_graph_tokens_capped_by_context: bool = False  # --context-length clamps the graph's max tokens
    mla_prefill_graph_tokens: str = "2048"  # "2048" | "min(8192, chunk)"
    # --- the budget (model_runner / kv_cache_configurator: _profile_available_bytes) ---
    draft_weights_in_budget: bool = False  # the draft loads before the KV profile
    mm_runtime_reserve_mib: int = 0  # subtracted from rest for multimodal models
    loaded_weights_error: bool = False  # rest <= 0 raises "Loaded weights leave no GPU memory ..."
    not_enough_memory_text: str = "plain"  # "plain" | "self.server_args" | "mfs" (the Current value: part)
    # --- tokens and requests ---
    # a set value: "user" as is (// dp); "min-estimate" min(user // dp, estimate);
    # "min-half" min(user // dp, tokens // 2)
    max_running_rule: str = "user"
    max_running_reduced_warning: bool = False
    spec_default_max_running: bool = False  # an unset value becomes 48 under speculative decoding
    spec_pool_headroom: str = "none"  # EAGLE pool growth: "none" | "draft-steps" | "steps-topk-draft"
    draft_kv_in_cell: bool = False  # a resolved EAGLE/NextN draft's KV is folded into the cell
    kv_quant_algo_honoured: bool = False  # kv_cache_quant_algo=FP8 in the checkpoint makes auto fp8
    kv_scheme_honoured: bool = False  # compressed-tensors kv_cache_scheme does too
    # --- sliding-window pools ---
    swa_archs: str = "0.5.9"  # which is_hybrid_swa_model list (model.HYBRID_SWA_ARCHS)
    swa_split: str = (
        "none"  # "none" (gpt-oss/Llama4 unsplit) | "gpt-oss-trtllm-spec" | "gpt-oss-trtllm" | "always"
    )
    swa_priced_by_own_layers: bool = False  # SWA layers priced at their own size, not the full layers'
    swa_too_small_error: bool = False  # "SWA pool (N tokens) cannot hold even one request"
    swa_request_cap: bool = False  # SWARequestCapPoolConfigurator
    dsa_fp8_row_priced: bool = False  # a DSA FP8 KV row is priced as stored (656 B), not raw (576 B)
    # --- Mamba / linear-attention state ---
    mamba_state: str = (
        "always-off"  # "always-off" | "split-copies" | "spec-first-512" | "split" | "joint" | "joint-padded"
    )
    mamba_ssm_dtype_from_config: bool = False
    mamba_auto_strategy: str = "no_buffer"  # what auto resolves to: "no_buffer" | "extra_buffer" (qualifying)
    # speculative decoding + radix cache + no_buffer: "leave" | "disable" (radix off) | "raise" | "allow"
    mamba_radix_spec: str = "leave"
    extra_buffer_radix_error: str = ""  # the ValueError text for extra_buffer + --disable-radix-cache
    extra_buffer_spec_ratio: int = 4  # extra_buffer's slots per request under spec decoding (0: as without)
    no_buffer_disables_overlap: bool = True  # no_buffer + radix (no spec) turns the overlap scheduler off
    mamba_errors: bool = False  # "Not enough GPU memory for hybrid ... state cache" / "too small to serve"
    mamba_requests_floor_one: bool = False  # max(1, mrr // dp) where K comes from max_running_requests
    conv_window_dedup: bool = False  # intermediate conv window (D + kernel - 2) at topk <= 1
    strategy_flag: str = "--mamba-scheduler-strategy"
    # --- weights per GPU (models/deepseek_v2.py, layers/vocab_parallel_embedding.py) ---
    # the embedding under DP attention: "replicated" (enable_tp=not enable_dp_attention) or "attn-tp"
    # (use_attn_tp_group=is_dp_attention_enabled(): sharded over the attention-TP group)
    dp_attention_embedding: str = "replicated"
    # the w_kc/w_vc copies MLA makes of kv_b_proj after loading, for a 128x128-block FP8 checkpoint on
    # CUDA: "fp8" (block_quant_to_tensor_quant, 1 byte) or "bf16" (block_quant_dequant, 2 bytes)
    mla_copy_block_fp8: str = "fp8"
    # --- ROCm ---
    aiter_long_context_shrink: bool = False  # aiter backend and context > 8192: x0.85, a set value too
    # when ROCm's default attention backend for an MLA model is aiter (else triton): "never";
    # "heads-16-128-no-spec" (get_num_kv_heads(tp) is 16 or 128 and no speculative decoding);
    # "heads-16-128" (the head test only). MHA models get aiter on ROCm whenever the shrink exists.
    aiter_mla_default: str = "never"


@dataclass(frozen=True)
class ServingRules:
    """What a ready server answers and prints, as one release has it (the serving windows in windows.py).

    The endpoint names come from `sglang/srt/entrypoints/http_server.py`; the batch headings from the
    scheduler's `log_prefill_stats` / `log_decode_stats` (`scheduler.py` up to 0.5.1,
    `scheduler_metrics_mixin.py` from 0.5.2, `scheduler_components/metrics_reporter.py` in 0.5.23)."""

    model_info_path: str = "/get_model_info"  # /model_info from 0.5.6; the old name then logs a warning
    server_info_path: str = "/get_server_info"  # /server_info from 0.5.6
    # "Decode batch. #running-req: ..." up to 0.5.3; "Decode batch [N], ..." in 0.5.4;
    # "Decode batch, ..." (" [N]" only under SGLANG_LOG_FORWARD_ITERS) from 0.5.5
    batch_heading: str = r"(?P<kind>Prefill|Decode) batch\. "


# What a ready server answers and prints, per release (`ServingRules`):
# (opened_in, name, where read, changes).
# Read in the 0.4.6, 0.5.2-0.5.10 and 0.5.23 wheels; the serving rules move on their own releases, so
# they have windows of their own (a serving window never splits a memory window).
_SERVING_CHANGES: tuple[tuple[str, str, str, dict[str, str]], ...] = (
    ("0.1.0", "old endpoints", "http_server.py (/get_model_info); scheduler.py log_decode_stats", {}),
    (
        "0.5.4",
        "0.5.4 batch iteration",
        'scheduler_metrics_mixin.log_decode_stats: f"Decode batch [{self.forward_ct}], "',
        {"batch_heading": r"(?P<kind>Prefill|Decode) batch \[\d+\], "},
    ),
    (
        "0.5.5",
        "0.5.5 optional iteration",
        "scheduler_metrics_mixin: iter_msg only under SGLANG_LOG_FORWARD_ITERS",
        {"batch_heading": r"(?P<kind>Prefill|Decode) batch(?: \[\d+\])?, "},
    ),
    (
        "0.5.6",
        "0.5.6 /model_info",
        "http_server.py: /model_info and /server_info; /get_model_info, /get_server_info deprecated",
        {"model_info_path": "/model_info", "server_info_path": "/server_info"},
    ),
)


def _build_serving() -> tuple[tuple[ReleaseVersion, str, ServingRules], ...]:
    rules = ServingRules()
    out = []
    for opened_in, name, _sources, changes in _SERVING_CHANGES:
        rules = replace(rules, **changes)
        out.append((parse_version(opened_in), name, rules))
    return tuple(out)


SERVING_WINDOWS = _build_serving()


def serving_rules(version: str | None) -> ServingRules:
    """The serving rules of `version`; None or an untagged build: the newest."""
    if version is None:
        return SERVING_WINDOWS[-1][2]
    v = parse_version(version)
    if v.is_untagged:
        return SERVING_WINDOWS[-1][2]
    plain = parse_version(v.base) if v.is_prerelease or v.dev is not None else v
    found = SERVING_WINDOWS[0][2]
    for opened, _name, rules in SERVING_WINDOWS:
        if opened <= plain:
            found = rules
    return found


def all_batch_headings() -> tuple[str, ...]:
    """Every release's batch heading, for a log whose release is not known."""
    return tuple(dict.fromkeys(rules.batch_heading for _, _, rules in SERVING_WINDOWS))
