"""Worked examples, one or more per release window, each computed by hand from that release's code.

Every test names the function whose source gave the numbers (read in the release's own wheel,
`pip download --no-deps sglang==X`); the arithmetic is written out in the comment so a reader can
check it without running anything. Example A is sglang-memory.md's Qwen3.5-27B + NEXTN on 2x A6000
at TP 2 (P 47.0, W 25.5, draft 0.4 GiB); cell 32,768 B, state slot 76,972,032 B.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from sgtui.core.fit import fit
from sgtui.core.fit.defaults import resolve_defaults
from sgtui.core.gpus import parse_gpu
from sgtui.core.model import ModelFacts, load_model_facts, model_facts_from_config
from sgtui.core.sglang.flags import LaunchSpec
from sgtui.core.sglang.windows import WINDOWS, window_for
from tests.cases import A6000, DEEPSEEK_V3, EXAMPLE_A, H100, LLAMA, MEASURED_A, MODELS, QWEN35

DEEPSEEK_R1 = MODELS / "deepseek_r1"

RTX_4090 = parse_gpu("NVIDIA GeForce RTX 4090")
MI300X = parse_gpu("AMD Instinct MI300X")
SLOT = 76_972_032


@pytest.fixture(scope="module")
def qwen35() -> ModelFacts:
    return load_model_facts(QWEN35)


@pytest.fixture(scope="module")
def llama8b() -> ModelFacts:
    return load_model_facts(LLAMA)


def test_every_window_names_the_release_that_opened_it_and_the_source_read() -> None:
    assert len({w.opened_in for w in WINDOWS}) == len(WINDOWS)
    assert all(w.sources for w in WINDOWS)
    for release in ("0.5.10", "0.5.13", "0.5.14", "0.5.15", "0.5.16", "0.5.17", "0.5.18", "0.5.20", "0.5.22"):
        assert window_for(release).opened_in == release


# --- the fixed fractions of 0.1.x to 0.4.5 (server_args.__post_init__) --------------------------


@pytest.mark.parametrize(
    ("version", "fractions"),
    [
        ("0.1.17", (0.90, 0.85, 0.82, 0.80)),  # 0.1.17 server_args.py lines 62-70
        ("0.2.0", (0.89, 0.88, 0.86, 0.84)),  # 0.2.0 server_args.py lines 71-81
        ("0.2.15", (0.88, 0.87, 0.85, 0.83)),  # 0.2.15 server_args.py lines 109-119
        ("0.3.6", (0.88, 0.87, 0.85, 0.82)),
        ("0.4.0", (0.88, 0.87, 0.85, 0.81)),
    ],
)
def test_early_releases_fix_the_fraction_by_tp_size(
    llama8b: ModelFacts, version: str, fractions: tuple[float, ...]
) -> None:
    got = tuple(
        fit(LaunchSpec(tp_size=tp), llama8b, H100, version=version).mem_fraction_static for tp in (1, 2, 4, 8)
    )
    assert got == fractions


# --- 0.4.7: aiter on ROCm ---------------------------------------------------------------------


def test_0_4_7_on_rocm_shrinks_even_a_set_fraction_for_long_contexts(llama8b: ModelFacts) -> None:
    # model_runner.__init__ (0.4.7 and 0.4.7.post1 line 423, 0.4.8.post1 line 436): attention_backend ==
    # "aiter" and context_len > 8192 -> mem_fraction_static *= 0.85; aiter is ROCm's default for MHA
    # models (model_initialize); 0.4.6.post5 picks aiter too but has no shrink.
    spec = LaunchSpec(mem_fraction_static=0.8)
    assert fit(spec, llama8b, MI300X, version="0.4.6.post5").mem_fraction_static == 0.8
    assert fit(spec, llama8b, MI300X, version="0.4.7").mem_fraction_static == pytest.approx(0.68)
    assert fit(spec, llama8b, MI300X, version="0.4.8").mem_fraction_static == pytest.approx(0.68)
    short = replace(spec, context_length=8192)  # not above 8192: no shrink
    assert fit(short, llama8b, MI300X, version="0.4.8").mem_fraction_static == 0.8
    on_cuda = fit(spec, llama8b, H100, version="0.4.8")  # CUDA's default backend is not aiter
    assert on_cuda.mem_fraction_static == 0.8


@pytest.fixture(scope="module")
def deepseek_r1() -> ModelFacts:
    return load_model_facts(DEEPSEEK_R1)


@pytest.mark.parametrize("version", ["0.4.8.post1", "0.5.10", "0.5.23"])
def test_rocm_picks_aiter_for_mla_at_16_kv_heads_per_gpu_and_shrinks_the_fraction(
    deepseek_r1: ModelFacts, version: str
) -> None:
    # DeepSeek-R1: num_key_value_heads 128, context 163840. get_num_kv_heads(8) = 16 -> aiter
    # (0.4.8.post1 model_runner.model_specific_adjustment "head_num == 128 or head_num == 16";
    # 0.5.10 server_args._get_default_attn_backend; 0.5.23 arg_groups/model_override_base.
    # get_default_attn_backend), then context 163840 > 8192: 0.95 x 0.85 = 0.8075.
    spec = LaunchSpec(tp_size=8, mem_fraction_static=0.95)
    report = fit(spec, deepseek_r1, MI300X, version=version)
    assert report.mem_fraction_static == pytest.approx(0.8075)
    assert any("0.85 (aiter backend" in n for n in report.notes)


@pytest.mark.parametrize("version", ["0.4.8.post1", "0.5.10", "0.5.23"])
def test_deepseek_r1_at_tp8_on_mi300x_with_0_95_fails_once_aiter_cuts_the_fraction(
    deepseek_r1: ModelFacts, version: str
) -> None:
    # The fixture's config has no quantization_config: 1.25 TB of bf16 weights, 156 GiB per GPU at TP 8.
    # At 0.95 the budget is A - P x 0.05 (room left: "tight" before the MLA aiter rule); at 0.8075 the
    # slack P x 0.1925 is more than A, so SGLang stops at the pool sizing.
    spec = LaunchSpec(tp_size=8, mem_fraction_static=0.95)
    report = fit(spec, deepseek_r1, MI300X, n_gpus=8, version=version)
    assert report.verdict == "fails"
    assert report.available_after_weights_gib < report.baseline_free_gib * (1 - 0.8075)


def test_rocm_keeps_triton_for_mla_at_other_head_counts(deepseek_r1: ModelFacts) -> None:
    # TP 16: 128 // 16 = 8 KV heads per GPU, neither 16 nor 128 -> triton, no shrink
    spec = LaunchSpec(tp_size=16, mem_fraction_static=0.95)
    assert fit(spec, deepseek_r1, MI300X, version="0.5.10").mem_fraction_static == 0.95


def test_before_0_5_3_speculative_decoding_keeps_mla_off_aiter(deepseek_r1: ModelFacts) -> None:
    # 0.5.2 model_runner: "(head_num == 128 or head_num == 16) and self.spec_algorithm.is_none()";
    # 0.5.3 dropped the speculative condition
    spec = LaunchSpec(tp_size=8, mem_fraction_static=0.95, speculative_algorithm="NEXTN")
    assert fit(spec, deepseek_r1, MI300X, version="0.5.2").mem_fraction_static == 0.95
    assert fit(spec, deepseek_r1, MI300X, version="0.5.3").mem_fraction_static == pytest.approx(0.8075)


# --- the "Not enough memory" text per window ----------------------------------------------------


@pytest.mark.parametrize(
    ("version", "tail"),
    [
        ("0.5.2", "--mem-fraction-static."),  # model_runner.init_memory_pool: no value
        ("0.5.3", "Current value: self.server_args.mem_fraction_static=0.5"),  # f"{...=}"
        ("0.5.9", "Current value: self.server_args.mem_fraction_static=0.5"),
        ("0.5.10", "Current value: mem_fraction_static=0.5"),  # pool_configurator.MemoryPoolConfig
    ],
)
def test_not_enough_memory_is_worded_as_the_release_words_it(
    llama8b: ModelFacts, version: str, tail: str
) -> None:
    # Llama-3.1-8B (15 GiB) at 0.5 of an L4's 22.49 GiB: nothing left for the pool
    r = fit(LaunchSpec(mem_fraction_static=0.5), llama8b, parse_gpu("L4"), version=version)
    assert r.error is not None and r.error.endswith(tail)


# --- 0.5.10: 0.5.11's defaults, pools and errors --------------------------------------------------


def test_0_5_10_qwen3_5_nextn_fails_with_the_radix_value_error_like_0_5_11(qwen35: ModelFacts) -> None:
    # server_args._handle_mamba_radix_cache (0.5.10): no_buffer + speculative + radix -> ValueError
    for version in ("0.5.10", "0.5.11", "0.5.13"):
        r = fit(EXAMPLE_A, qwen35, A6000, version=version, **MEASURED_A)
        assert r.error is not None and r.error.startswith(
            "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with "
            "radix cache"
        )


def test_0_5_10_eagle_reserves_4_gib_after_the_floor_and_loads_the_draft_from_the_slack(
    llama8b: ModelFacts,
) -> None:
    # _handle_gpu_memory_settings (0.5.10): 512 + 1.5 x 8192 + 2 x 256 + 128 + 8 x 58 = 13904 > 10240,
    # + 4096 for EAGLE = 18000 -> round((81559 - 18000) / 81559, 3) = 0.779 (0.5.9: +2048, no graph: 0.810)
    spec = LaunchSpec(speculative_algorithm="EAGLE", speculative_draft_model_path="/d")
    args = {"free_gib": 78.5, "weights_gib": 15.0, "draft_weights_gib": 0.5}
    assert fit(spec, llama8b, H100, version="0.5.9", **args).mem_fraction_static == 0.81
    r = fit(spec, llama8b, H100, version="0.5.10", **args)
    assert r.mem_fraction_static == 0.779 and r.kv_cell_bytes == 131072  # the draft KV is not in the cell


def test_0_5_10_to_0_5_13_reject_extra_buffer_without_the_radix_cache_in_their_own_words(
    qwen35: ModelFacts,
) -> None:
    # _handle_mamba_radix_cache: 0.5.10-0.5.12 "--disable-radix-cache Overlap", 0.5.13 adds the period
    spec = replace(EXAMPLE_A, mamba_strategy="extra_buffer", disable_radix_cache=True)
    texts = {
        v: fit(spec, qwen35, A6000, version=v, **MEASURED_A).error or ""
        for v in ("0.5.9", "0.5.10", "0.5.13")
    }
    assert "extra_buffer is not compatible" not in texts["0.5.9"]
    assert "--disable-radix-cache Overlap scheduling" in texts["0.5.10"]
    assert "--disable-radix-cache. Overlap scheduling" in texts["0.5.13"]


def test_0_5_14_has_no_extra_buffer_radix_check_the_state_just_eats_the_budget(qwen35: ModelFacts) -> None:
    # 0.5.14 _handle_mamba_radix_cache returns at once under --disable-radix-cache; K = mrr = 48,
    # intermediate 48 x 4 x slot = 13.76 GiB > rest 14.05 - 3.44 -> _profile_available_bytes' error
    spec = replace(EXAMPLE_A, mamba_strategy="extra_buffer", disable_radix_cache=True)
    r = fit(spec, qwen35, A6000, version="0.5.14", **MEASURED_A)
    assert r.error is not None and r.error.startswith("ValueError: Loaded weights leave no GPU memory")


# --- 0.5.13: the joint Mamba + speculative solve, no padding --------------------------------------


def test_0_5_13_solves_the_state_and_the_speculative_state_together(qwen35: ModelFacts) -> None:
    # model_runner_kv_cache_mixin.handle_max_mamba_cache (0.5.13 lines 82-184), extra_buffer, ratio 5:
    # rest = 47 - 25.5 - 47 x 0.15 = 14.45 GiB (the draft loads later); budget = rest x 0.9/1.9 = 6.8447
    # K = floor(6.8447 GiB / (slot x 1.8)) = 53; capped = min(48, 53 // 5) = 10;
    # rest -= slot x 10 x 4 (2.868 GiB) + slot x 53 (3.799 GiB) = 7.783 GiB -> 255,040 tokens
    r = fit(replace(EXAMPLE_A, mamba_strategy="extra_buffer"), qwen35, A6000, version="0.5.13", **MEASURED_A)
    assert r.mamba is not None and r.mamba.max_mamba_cache_size == 53
    assert (r.max_total_num_tokens, r.max_running_requests) == (255_040, 10)


# --- 0.5.14: the budget rework: Qwen3.5-27B + NEXTN starts --------------------------------------


@pytest.mark.parametrize(
    ("version", "k", "tokens", "running"),
    [
        # 0.5.14-0.5.16: scheduler.init_model_worker loads the draft before the pools, so
        # rest = 47 - 25.5 - 0.4 - 7.05 = 14.05 GiB; auto -> extra_buffer (overlap on, triton GDN), ratio 5;
        # K = floor((14.05 x 0.9/1.9) GiB / (slot x 1.8)) = 51; capped = min(48, 51 // 5) = 10;
        # rest -= slot x 10 x 4 + slot x 51 = 7.527 GiB -> 246,631 tokens (handle_max_mamba_cache, 0.5.14)
        ("0.5.14", 51, 246_631, 10),
        ("0.5.15", 51, 246_631, 10),
        ("0.5.16", 51, 246_631, 10),
        # 0.5.17 kv_cache_configurator._handle_max_mamba_cache pads both buffers:
        # K = floor((6.6553 GiB - 5 x slot) / (1.8 x slot)) = 48; capped 9; rest -= slot x 10 x 4 + slot x 49
        # = 7.670 GiB -> 251,329 tokens
        ("0.5.17", 48, 251_329, 9),
        # 0.5.18 adds the 100 MB multimodal reserve (Qwen3.5 is a VLM): rest 13.952 -> 248,129, the
        # 0.5.23 worked example of sglang-memory.md
        ("0.5.18", 48, 248_129, 9),
        ("0.5.23", 48, 248_129, 9),
    ],
)
def test_qwen3_5_nextn_on_two_48_gb_cards_starts_from_0_5_14(
    qwen35: ModelFacts, version: str, k: int, tokens: int, running: int
) -> None:
    r = fit(EXAMPLE_A, qwen35, A6000, version=version, **MEASURED_A)
    assert r.error is None and r.verdict in ("fits", "tight")
    assert r.mamba is not None and r.mamba.max_mamba_cache_size == k and r.mamba.strategy == "extra_buffer"
    assert (r.max_total_num_tokens, r.max_running_requests) == (tokens, running)


def test_0_5_14_drops_the_eagle_reserve_and_folds_the_draft_kv_into_the_cell(llama8b: ModelFacts) -> None:
    # _handle_gpu_memory_settings (0.5.14): no speculative term -> 13904 -> 0.830; pool_configurator:
    # cell += cell x 1 draft layer / 32 = 131072 + 4096; the 0.5 GiB draft counts in the budget
    spec = LaunchSpec(speculative_algorithm="EAGLE", speculative_draft_model_path="/d")
    r = fit(spec, llama8b, H100, version="0.5.14", free_gib=78.5, weights_gib=15.0, draft_weights_gib=0.5)
    assert (r.mem_fraction_static, r.kv_cell_bytes) == (0.83, 135_168)
    assert r.available_after_weights_gib == pytest.approx(78.5 - 15.0 - 0.5)


def test_0_5_14_caps_a_set_max_running_requests_by_half_the_tokens(llama8b: ModelFacts) -> None:
    # _resolve_max_num_reqs: 0.5.10-0.5.13 min(user // dp, estimate), the estimate being
    # clamp(int(~410k tokens / 131072 x 512), 2048, 4096) = 2048; 0.5.14 min(user, tokens // 2) = 5000
    spec = LaunchSpec(max_running_requests=5000, mem_fraction_static=0.85)
    args = {"free_gib": 78.5, "weights_gib": 15.0}
    assert fit(spec, llama8b, H100, version="0.5.13", **args).max_running_requests == 2048
    assert fit(spec, llama8b, H100, version="0.5.14", **args).max_running_requests == 5000


# --- 0.5.15 / 0.5.16 / 0.5.17: the breakable prefill graph ----------------------------------------


def test_0_5_15_skips_the_decode_graph_reserve_under_disable_cuda_graph(llama8b: ModelFacts) -> None:
    # 48 GB card, no floor. 0.5.14: 512 + 1.5 x 4096 + 2 x 32 + 128 = 6848 -> 0.861 (the legacy flag
    # turns the prefill graph off too: _parse_cuda_graph_config); 0.5.15: no 2 x 32 -> 6784 -> 0.862
    spec = LaunchSpec(disable_cuda_graph=True)
    assert resolve_defaults(spec, llama8b, 49140, "0.5.14").mem_fraction_static_auto == 0.861
    assert resolve_defaults(spec, llama8b, 49140, "0.5.15").mem_fraction_static_auto == 0.862


def test_the_breakable_graph_leaves_mla_until_0_5_18() -> None:
    # _disable_breakable_cudagraph_if_incompatible: "MLA attention" (0.5.15-0.5.16), "MLA attention
    # (non-DSA)" (0.5.17); gone in 0.5.18. 0.5.14's tc_piecewise keeps MLA (1536 MiB flat reserve).
    ds = model_facts_from_config(DEEPSEEK_V3)
    graph = {
        v: resolve_defaults(LaunchSpec(tp_size=8), ds, 183359, v).prefill_graph
        for v in ("0.5.14", "0.5.15", "0.5.17", "0.5.18")
    }
    assert graph == {"0.5.14": True, "0.5.15": False, "0.5.17": False, "0.5.18": True}


def test_0_5_16_keeps_the_breakable_graph_for_qwen3_5_vlms(qwen35: ModelFacts) -> None:
    # configs/model_config.py multimodal_breakable_cuda_graph_supported (0.5.16): 50 sizes up to 4096
    # -> 8 x 50 = 400 MiB more reserved than 0.5.15, which turned it off for every VLM
    old = resolve_defaults(LaunchSpec(), qwen35, 49140, "0.5.15")
    new = resolve_defaults(LaunchSpec(), qwen35, 49140, "0.5.16")
    assert (old.prefill_graph, new.prefill_graph) == (False, True)
    assert new.reserved_mib - old.reserved_mib == 400


def test_0_5_13_to_0_5_16_clamp_the_prefill_graph_to_an_explicit_context(llama8b: ModelFacts) -> None:
    # _handle_gpu_memory_settings "Clamp to context_length" (#21112), 0.5.13-0.5.16: 42 sizes up to
    # 2048 -> 512 + 6144 + 64 + 128 + 336 = 7184 -> 0.854; 0.5.17 drops it: 50 sizes, 7248 -> 0.853
    spec = LaunchSpec(context_length=2048)
    assert resolve_defaults(spec, llama8b, 49140, "0.5.12").prefill_graph_sizes == 50
    assert resolve_defaults(spec, llama8b, 49140, "0.5.16").mem_fraction_static_auto == 0.854
    assert resolve_defaults(spec, llama8b, 49140, "0.5.17").mem_fraction_static_auto == 0.853


def test_0_5_19_turns_the_breakable_graph_off_under_pipeline_parallelism(llama8b: ModelFacts) -> None:
    # arg_groups/cuda_graph_hook: "Disabling breakable prefill CUDA graph by default for pipeline parallelism"
    assert resolve_defaults(LaunchSpec(pp_size=2), llama8b, 49140, "0.5.18").prefill_graph
    assert not resolve_defaults(LaunchSpec(pp_size=2), llama8b, 49140, "0.5.19").prefill_graph


# --- 0.5.20: the < 35 GiB tier --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "mfs", "tokens", "chunk", "max_bs"),
    [
        # memory_hook.handle_gpu_memory_settings (0.5.19): chunk 2048, bs 24:
        # 512 + 3072 + 48 + 128 + 8 x 42 = 4096 -> round((24564 - 4096) / 24564, 3) = 0.833
        # P = 23.49 (23.99 - 0.5 of context), W = 14.96: 23.49 x 0.833 - 14.96 = 4.607 GiB -> ~37.7k tokens
        ("0.5.18", 0.833, 37_740, 2048, 24),
        ("0.5.19", 0.833, 37_740, 2048, 24),
        # 0.5.20: chunk 4096, bs 48: 512 + 6144 + 96 + 128 + 400 = 7280 -> 0.704 -> 1.577 GiB -> ~12.9k
        ("0.5.20", 0.704, 12_921, 4096, 48),
    ],
)
def test_llama_8b_on_an_rtx_4090_keeps_the_old_small_card_tier_until_0_5_20(
    llama8b: ModelFacts, version: str, mfs: float, tokens: int, chunk: int, max_bs: int
) -> None:
    r = fit(LaunchSpec(), llama8b, RTX_4090, version=version, free_gib=23.49, weights_gib=14.96)
    assert (r.mem_fraction_static, r.chunked_prefill_size, r.cuda_graph_max_bs) == (mfs, chunk, max_bs)
    assert r.max_total_num_tokens == pytest.approx(tokens, abs=5)


# --- 0.5.22 / 0.5.23 --------------------------------------------------------------------------------


def test_0_5_22_clips_a_default_decode_graph_to_max_running_requests(llama8b: ModelFacts) -> None:
    # memory_hook (0.5.22): decode_max_bs_is_default and max_bs > max_running_requests -> 16;
    # reserve 2 x (32 - 16) = 32 MiB less
    old = resolve_defaults(LaunchSpec(max_running_requests=16), llama8b, 49140, "0.5.21")
    new = resolve_defaults(LaunchSpec(max_running_requests=16), llama8b, 49140, "0.5.22")
    assert (old.cuda_graph_max_bs, new.cuda_graph_max_bs) == (32, 16)
    assert old.reserved_mib - new.reserved_mib == 32


def test_0_5_23_captures_mla_prefill_graphs_up_to_8192_tokens() -> None:
    # memory_hook (0.5.23): MLA prefill max_bs = min(8192, chunk) (was 2048): 58 sizes instead of 42;
    # the MLA reserve stays a flat 1536 MiB, so the automatic fraction does not move
    ds = model_facts_from_config(DEEPSEEK_V3)
    old = resolve_defaults(LaunchSpec(tp_size=8), ds, 183359, "0.5.22")
    new = resolve_defaults(LaunchSpec(tp_size=8), ds, 183359, "0.5.23")
    assert (old.prefill_graph_sizes, new.prefill_graph_sizes) == (42, 58)
    assert old.mem_fraction_static_auto == new.mem_fraction_static_auto


# --- the opt-in piecewise graph's reserve, 0.5.4 to 0.5.9 ---------------------------------------


@pytest.mark.parametrize(
    ("version", "reserved"),
    [
        # 48 GB card (no floor): 512 + 1.5 x 4096 + 2 x 32 + 128 = 6848 before the piecewise term
        ("0.5.4", 6848),  # --enable-piecewise-cuda-graph exists, nothing reserved for it
        ("0.5.5", 6848 + 4096 // 4),  # piecewise_cuda_graph_max_tokens defaults to 4096, // 4 after the floor
        ("0.5.6", 6848 + 4096 // 4),
        ("0.5.7", 6848 + 4096 // 8),  # max tokens = the chunk (4096), // 8
        ("0.5.8", 6848 + 8 * 50),  # 8 MiB per captured size (50 up to 4096), before the floor
        ("0.5.9", 6848 + 8 * 50),
    ],
)
def test_the_opt_in_piecewise_graph_reserve_per_release(
    llama8b: ModelFacts, version: str, reserved: int
) -> None:
    # server_args._handle_gpu_memory_settings of 0.5.5.post3 (line 835), 0.5.7 (line 944), 0.5.8
    spec = LaunchSpec(enable_piecewise_cuda_graph=True)
    assert resolve_defaults(spec, llama8b, 49140, version).reserved_mib == reserved


def test_the_aiter_shrink_also_knows_a_rocm_card_by_its_printed_name(llama8b: ModelFacts) -> None:
    from sgtui.core.gpus import GpuSpec

    printed = GpuSpec("AMD Instinct MI300X", MI300X.mib)  # what the GPU sampler reports on a ROCm host
    assert fit(
        LaunchSpec(mem_fraction_static=0.8), llama8b, printed, version="0.5.9"
    ).mem_fraction_static == (pytest.approx(0.68))


@pytest.mark.parametrize(
    ("version", "gpu_mib", "tp", "chunk", "max_bs"),
    [
        # server_args.__post_init__ 0.4.0-0.4.7: under 25,000 MiB 2048, bs 8 (80 at tp >= 4); else 8192 / 160
        ("0.4.6", 24564, 1, 2048, 8),
        ("0.4.6", 24564, 4, 2048, 80),
        ("0.4.6", 49140, 1, 8192, 160),
        # 0.4.7.post1-0.5.2: by GPU class: under 35 GiB 2048, under 160 GiB 8192, else 16384
        ("0.5.2", 32607, 1, 2048, 8),
        ("0.5.2", 49140, 1, 8192, 160),
        ("0.5.2", 183359, 8, 16384, 160),
        # 0.5.3 on: the five-tier table of _handle_gpu_memory_settings
        ("0.5.3", 49140, 1, 4096, 32),
    ],
)
def test_the_prefill_and_graph_tiers_of_each_era(
    llama8b: ModelFacts, version: str, gpu_mib: int, tp: int, chunk: int, max_bs: int
) -> None:
    d = resolve_defaults(LaunchSpec(tp_size=tp), llama8b, gpu_mib, version)
    assert (d.chunked_prefill_size, d.cuda_graph_max_bs) == (chunk, max_bs)
