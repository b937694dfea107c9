"""SGLang's startup-memory rules by release window: the one place that knows which release changed what.

A window opens at the release whose source changed the arithmetic and holds until the next one opens.
Each window carries the full set of named rules (`Rules`) in force there, so the fit engine asks
`window_for(version).rules.<rule>` and never compares versions itself. The table is written as the
list of changes (`_CHANGES`): every entry names the release that opened it, the functions whose
source shows the change (read from that release's own wheel, `pip download --no-deps sglang==X`),
and only the rules it changed; the windows are those changes applied in order.

Releases between two windows' openings follow the older window: their source showed no change to
these rules. Dev and local builds ("0.5.24.dev3+gabc") follow the window of their release number;
the untagged "0.0.0.dev0" of a tagless checkout follows the newest window, as sgtui cannot tell.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache

from sgtui.core.sglang.rules import (  # the serving windows, kept beside ServingRules (re-exported here)
    SERVING_WINDOWS as SERVING_WINDOWS,
)
from sgtui.core.sglang.rules import Rules
from sgtui.core.sglang.rules import ServingRules as ServingRules
from sgtui.core.sglang.rules import all_batch_headings as all_batch_headings
from sgtui.core.sglang.rules import serving_rules as serving_rules
from sgtui.core.sglang.versions import ReleaseVersion, parse_version


@dataclass(frozen=True, eq=False)
class Window:
    """A run of releases with the same rules: `name`, the release that opened it, and its rules."""

    name: str
    opened_in: str
    rules: Rules
    sources: str = ""  # the functions whose source shows what this window changed
    changes: tuple[str, ...] = field(default=())  # the rule names this window changed

    @property
    def opened(self) -> ReleaseVersion:
        return parse_version(self.opened_in)

    def describe(self) -> str:
        return f"'{self.name}' window, opened in {self.opened_in}"


# (opened_in, name, where it was read, changes). The named functions were read in that release's wheel
# and in the release before it; where a boundary could not be pinned exactly the entry says so.
_CHANGES: tuple[tuple[str, str, str, dict[str, object]], ...] = (
    (
        "0.1.0",
        "0.1 fixed fractions",
        "0.1.17 server_args.__post_init__: TP 1 0.90, 2 0.85, 4 0.82, 8 0.80",
        {},
    ),
    (
        "0.2.0",
        "0.2.0 fractions",
        "0.2.0 server_args.__post_init__",
        {"tp_fractions": (0.89, 0.88, 0.86, 0.84, 0.80)},
    ),
    (
        "0.2.15",
        "0.2.15 fractions",
        "0.2.15 and 0.3.0 server_args.__post_init__ (0.2.1-0.2.14 not read: they keep 0.2.0's table here)",
        {"tp_fractions": (0.88, 0.87, 0.85, 0.83, 0.79)},
    ),
    (
        "0.3.6",
        "0.3.6 TP 8 0.82",
        "server_args.__post_init__",
        {"tp_fractions": (0.88, 0.87, 0.85, 0.82, 0.79)},
    ),
    (
        "0.4.0",
        "0.4.0 multimodal shrink",
        "server_args.__post_init__ (TP 8 0.81); model_runner: multimodal x0.95",
        {"tp_fractions": (0.88, 0.87, 0.85, 0.81, 0.79), "multimodal_shrink": 0.95},
    ),
    (
        "0.4.1.post4",
        "0.4.1.post4 EAGLE draft headroom",
        "model_runner.init_memory_pool (draft_runner_cache_size = tokens + requests x steps + 100, the "
        "draft's pool only; 0.4.1 to 0.4.1.post3 have none)",
        {"spec_pool_headroom": "draft-steps"},
    ),
    (
        "0.4.3.post3",
        "0.4.3.post3 EAGLE target headroom",
        "model_runner.init_memory_pool: requests x (steps x topk + draft) + 100, and the target's pool "
        "set to the draft's (0.4.3.post2 grows the draft's only)",
        {"spec_pool_headroom": "steps-topk-draft"},
    ),
    (
        "0.4.6",
        "0.4.6 large cards",
        "server_args.__post_init__ (> 80 GiB: all but 13 GiB); 48 running requests under spec; x0.90",
        {"auto_mfs": "tp-table-80g", "spec_default_max_running": True, "multimodal_shrink": 0.90},
    ),
    ("0.4.6.post2", "0.4.6.post2 bump", "server_args.__post_init__", {"auto_mfs": "tp-table-bump"}),
    (
        "0.4.6.post3",
        "0.4.6.post3 bf16 MLA copies",
        "models/deepseek_v2.DeepseekV2ForCausalLM.post_load_weights: a 128x128-block FP8 kv_b_proj on CUDA "
        "is dequantized to bf16 (block_quant_dequant) before the w_kc/w_vc copies; 0.4.6.post2 requantized "
        "it per tensor (block_quant_to_tensor_quant, fp8)",
        {"mla_copy_block_fp8": "bf16"},
    ),
    (
        "0.4.7",
        "0.4.7 spec bump, aiter shrink",
        "server_args.__post_init__; model_runner.__init__ (0.4.7 line 423: attention_backend == 'aiter' and "
        "context_len > 8192 -> mem_fraction_static *= 0.85; model_initialize picks aiter on ROCm for MHA, "
        "and for MLA when get_num_kv_heads(tp) is 16 or 128 and spec_algorithm.is_none(); 0.4.6.post5 "
        "has neither)",
        {
            "auto_mfs": "tp-table-bump-spec",
            "aiter_long_context_shrink": True,
            "aiter_mla_default": "heads-16-128-no-spec",
        },
    ),
    (
        "0.4.7.post1",
        "0.4.7.post1 class reserve",
        "server_args.__post_init__ (fraction and chunked-prefill / graph tiers by GPU class)",
        {"auto_mfs": "class-reserve", "tier_table": "class"},
    ),
    ("0.4.9", "0.4.9 no multimodal shrink", "model_runner.__init__", {"multimodal_shrink": 1.0}),
    ("0.4.10", "0.4.10 VLM adjustment", "server_args.adjust_mem_fraction_for_vlm", {"vlm_mfs_adjust": True}),
    (
        "0.5.2",
        "0.5.2 STANDALONE reserve",
        "server_args.__post_init__ (+6 GiB STANDALONE); model_runner.handle_max_mamba_cache (Qwen3-Next "
        "without the radix cache)",
        {"class_reserve_standalone_mib": 6144},
    ),
    (
        "0.5.3",
        "0.5.3 reservation formula",
        "server_args._handle_gpu_memory_settings; model_runner.init_memory_pool (kv_cache_quant_algo, "
        "'Current value: {self.server_args.mem_fraction_static=}'); model_runner.model_specific_adjustment "
        "(an MLA model on ROCm gets aiter at 16 or 128 KV heads per GPU, speculative decoding or not; "
        "0.5.2 still required spec_algorithm.is_none())",
        {
            "aiter_mla_default": "heads-16-128",
            "auto_mfs": "formula",
            "tier_table": "formula",
            "spec_reserve_mib": 2048,
            "standalone_reserve_mib": 6144,
            "kv_quant_algo_honoured": True,
            "not_enough_memory_text": "self.server_args",
        },
    ),
    (
        "0.5.4",
        "0.5.4 state split",
        "model_runner.handle_max_mamba_cache; server_args (--enable-piecewise-cuda-graph, no reserve for it)",
        {"mamba_state": "split-copies", "prefill_graph": "opt-in"},
    ),
    (
        "0.5.5",
        "0.5.5 piecewise reserve",
        "server_args._handle_gpu_memory_settings (0.5.5.post3, 0.5.6): + piecewise_cuda_graph_max_tokens "
        "(4096) // 4 after the floor",
        {"piecewise_reserve": "after-floor"},
    ),
    (
        "0.5.7",
        "0.5.7 spec state first",
        "model_runner.handle_max_mamba_cache; model_runner.init_memory_pool (no EAGLE headroom); "
        "server_args._handle_gpu_memory_settings (piecewise max tokens = the chunk, reserve // 8)",
        {
            "mamba_state": "spec-first-512",
            "spec_pool_headroom": "none",
            "piecewise_reserve_divisor": 8,
            "piecewise_max_tokens_default": 0,
        },
    ),
    (
        "0.5.8",
        "0.5.8 SWA split",
        "server_args._handle_model_specific_adjustments; _handle_gpu_memory_settings (8 MiB per "
        "piecewise size, before the floor); models/deepseek_v2.DeepseekV2Model (embed_tokens "
        "use_attn_tp_group=is_dp_attention_enabled(): sharded over attention TP under DP attention; 0.5.7 "
        "kept it whole, enable_tp=not is_dp_attention_enabled())",
        {
            "swa_split": "gpt-oss-trtllm-spec",
            "piecewise_reserve": "per-size",
            "dp_attention_embedding": "attn-tp",
        },
    ),
    (
        "0.5.9",
        "0.5.9",
        "model_runner_kv_cache_mixin.handle_max_mamba_cache / profile_max_num_token; server_args."
        "_handle_mamba_radix_cache (radix auto-disabled under spec); set_num_tokens_hybrid_swa",
        {
            "mamba_state": "split",
            "mamba_radix_spec": "disable",
            "extra_buffer_spec_ratio": 4,
            "mamba_ssm_dtype_from_config": True,
            "swa_split": "gpt-oss-trtllm",
            "swa_priced_by_own_layers": True,
        },
    ),
    (
        "0.5.10",
        "0.5.10",
        "server_args._handle_gpu_memory_settings (0.5.11's: piecewise on, +4 GiB EAGLE), "
        "_handle_mamba_radix_cache (radix ValueError, extra_buffer + --disable-radix-cache ValueError); "
        "model_runner_kv_cache_mixin._resolve_max_num_reqs; pool_configurator.MemoryPoolConfig",
        {
            "prefill_graph": "piecewise",
            "spec_reserve_mib": 4096,
            "max_running_rule": "min-estimate",
            "mamba_radix_spec": "raise",
            "extra_buffer_radix_error": (
                "ValueError: mamba extra_buffer is not compatible with --disable-radix-cache Overlap "
                "scheduling is already supported with no_buffer + disable_radix_cache. Please use "
                "--mamba-scheduler-strategy no_buffer instead."
            ),
            "extra_buffer_spec_ratio": 0,
            "not_enough_memory_text": "mfs",
        },
    ),
    (
        "0.5.11",
        "0.5.11",
        "configs/model_config.is_hybrid_swa_model (Gemma4, MiMoV2)",
        {"swa_archs": "0.5.11", "swa_split": "always"},
    ),
    (
        "0.5.13",
        "0.5.13 Mamba joint solve",
        "model_runner_kv_cache_mixin.handle_max_mamba_cache (K = budget // (slot x (1 + D/ratio))), "
        "_resolve_max_num_reqs (too small to serve); server_args._handle_gpu_memory_settings (the "
        "piecewise graph's max tokens clamped to --context-length); _handle_mamba_radix_cache (text)",
        {
            "mamba_state": "joint",
            "mamba_errors": True,
            "prefill_graph_tokens_capped_by_context": True,
            "extra_buffer_radix_error": (
                "ValueError: mamba extra_buffer is not compatible with --disable-radix-cache. Overlap "
                "scheduling is already supported with no_buffer + disable_radix_cache. Please use "
                "--mamba-scheduler-strategy no_buffer instead."
            ),
        },
    ),
    (
        "0.5.14",
        "0.5.14 budget rework",
        "managers/scheduler.init_model_worker (draft before the pools); model_runner_kv_cache_mixin."
        "_profile_available_bytes (Loaded weights error), _resolve_max_num_reqs (min(user//dp, "
        "tokens//2), was reduced); server_args._handle_gpu_memory_settings (no EAGLE reserve), "
        "_handle_mamba_radix_cache (auto -> extra_buffer, no radix checks); pool_configurator "
        "(draft KV in the cell); memory_pool (deduplicated conv window); _parse_cuda_graph_config "
        "(--disable-cuda-graph disables the prefill graph too)",
        {
            "draft_weights_in_budget": True,
            "loaded_weights_error": True,
            "disable_cuda_graph_stops_prefill_graph": True,
            "spec_reserve_mib": 0,
            "standalone_reserve_mib": 0,
            "max_running_rule": "min-half",
            "max_running_reduced_warning": True,
            "draft_kv_in_cell": True,
            "mamba_auto_strategy": "extra_buffer",
            "mamba_radix_spec": "allow",
            "extra_buffer_radix_error": "",
            "no_buffer_disables_overlap": False,
            "conv_window_dedup": True,
            "swa_archs": "0.5.23",
            "strategy_flag": "--mamba-radix-cache-strategy",
        },
    ),
    (
        "0.5.15",
        "0.5.15 breakable prefill graph",
        "model_executor/cuda_graph_config.default_prefill_backend (breakable on CUDA); server_args."
        "_disable_breakable_cudagraph_if_incompatible (MLA, DP attention, multimodal), "
        "_handle_gpu_memory_settings (decode graph reserve only with the graph; DeepEP +2048)",
        {
            "prefill_graph": "breakable",
            "breakable_off": frozenset({"mla", "dp-attention", "multimodal"}),
            "decode_graph_reserve_needs_graph": True,
            "deepep_reserve_mib": 2048,
        },
    ),
    (
        "0.5.16",
        "0.5.16 configurator",
        "mem_cache/kv_cache_configurator.py; server_args.reserve_for_graph_mb; the breakable allowlist "
        "for multimodal (Qwen3.5 VLMs); HybridSWAPoolConfigurator (SWA pool too small)",
        {
            "breakable_off": frozenset({"mla", "dp-attention", "multimodal-unlisted"}),
            "swa_too_small_error": True,
        },
    ),
    (
        "0.5.17",
        "0.5.17 Mamba padding",
        "kv_cache_configurator._handle_max_mamba_cache (K+1 padding in the solve and the pool); "
        "server_args._handle_gpu_memory_settings (no context clamp); breakable rules (MLA non-DSA, "
        "NemotronH)",
        {
            "mamba_state": "joint-padded",
            "prefill_graph_tokens_capped_by_context": False,
            "breakable_off": frozenset({"mla-non-dsa", "nemotron-h", "dp-attention", "multimodal-unlisted"}),
        },
    ),
    (
        "0.5.18",
        "0.5.18 multimodal reserve",
        "kv_cache_configurator._profile_available_bytes (mm_runtime_reservation 100 MB); breakable rules "
        "(MLA allowed); compressed-tensors kv_cache_scheme",
        {
            "mm_runtime_reserve_mib": 100,
            "breakable_off": frozenset({"dp-attention", "multimodal-unlisted"}),
            "kv_scheme_honoured": True,
            "dsa_fp8_row_priced": True,
        },
    ),
    (
        "0.5.19",
        "0.5.19 resolve_once",
        "arg_groups/cuda_graph_hook (breakable off by default under PP)",
        {"breakable_off": frozenset({"dp-attention", "pp", "multimodal-unlisted"})},
    ),
    (
        "0.5.20",
        "0.5.20 small-card tier",
        "arg_groups/memory_hook.handle_gpu_memory_settings (< 35 GiB: 4096 / 48 | 160; the 0.88 -> 0.95 "
        "fallback for an unreadable GPU size never applies to a fit, which always has one)",
        {"small_tier": (4096, 48, 160)},
    ),
    (
        "0.5.22",
        "0.5.22 attention DP",
        "arg_groups/memory_hook (default max bs clipped to --max-running-requests; reserve x attn_dp_size); "
        "cuda_graph_hook (DP attention keeps the breakable graph); SWARequestCapPoolConfigurator",
        {
            "decode_bs_clipped_to_max_running": True,
            "dp_reserve_uses_attn_dp": True,
            "breakable_off": frozenset({"pp", "multimodal-unlisted"}),
            "swa_request_cap": True,
        },
    ),
    (
        "0.5.23",
        "0.5.23",
        "arg_groups/memory_hook (MLA prefill graph min(8192, chunk)); kv_cache_configurator."
        "_handle_max_mamba_cache (max(1, mrr // dp))",
        {"mla_prefill_graph_tokens": "min(8192, chunk)", "mamba_requests_floor_one": True},
    ),
)


def _build() -> tuple[Window, ...]:
    windows: list[Window] = []
    rules = Rules()
    for opened_in, name, sources, changes in _CHANGES:
        rules = replace(rules, **changes)  # type: ignore[arg-type]
        windows.append(Window(name, opened_in, rules, sources, tuple(changes)))
    return tuple(windows)


WINDOWS: tuple[Window, ...] = _build()
NEWEST = WINDOWS[-1]


@cache
def window_for(version: str | ReleaseVersion) -> Window:
    """The window whose rules `version` follows (UserError for a string that is not a version)."""
    v = version if isinstance(version, ReleaseVersion) else parse_version(version)
    if v.is_untagged:
        return NEWEST
    found = WINDOWS[0]
    plain = parse_version(v.base) if v.is_prerelease or v.dev is not None else v
    for window in WINDOWS:
        if window.opened <= plain:
            found = window
    return found


def window_note(version: str) -> str:
    """One line for the report: which window's rules apply to `version`."""
    v = parse_version(version)
    w = window_for(v)
    if v.is_untagged:
        return f"SGLang {version} is an untagged build: using the newest rules (the {w.describe()})"
    return f"SGLang {version}: the rules of the {w.describe()}"
