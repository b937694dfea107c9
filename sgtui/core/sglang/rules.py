"""The named rules of SGLang's startup-memory arithmetic that changed between releases.

One `Rules` value is what one release window has (sgtui/core/sglang/windows.py builds them); the
fit engine reads these fields by name and never compares versions.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    # --- how the server is started (sglang/launch_server.py, sglang/cli/main.py) ---
    serve_cli: bool = False  # the `sglang` console script with its `serve` subcommand exists
    # the form this release prefers: "module" (`python -m sglang.launch_server`) or "serve" (`sglang serve`,
    # once the module form warns "still supported, but 'sglang serve' is the recommended entrypoint")
    launch_form: str = "module"
    # --- ROCm ---
    aiter_long_context_shrink: bool = False  # aiter backend and context > 8192: x0.85, a set value too
