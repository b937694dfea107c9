"""The memory-fit engine against the worked examples of the SGLang memory spec and its rules."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgtui.core.errors import UserError
from sgtui.core.fit import fit
from sgtui.core.fit.defaults import prefill_graph_enabled, prefill_graph_sizes
from sgtui.core.gpus import parse_gpu
from sgtui.core.model import ModelFacts, load_model_facts, model_facts_from_config, mtp_weight_bytes
from sgtui.core.sglang.flags import LaunchSpec
from sgtui.core.sglang.windows import window_for
from tests.cases import A6000, DEEPSEEK_V3, EXAMPLE_A, GPT_OSS_20B, H100, LLAMA, MEASURED_A, QWEN35

CONTRACT_KEYS = {
    "sglang_version",
    "gpu_total_gib",
    "baseline_free_gib",
    "mem_fraction_static",
    "mem_fraction_static_auto",
    "weights_gib",
    "draft_weights_gib",
    "rest_gib",
    "kv_cell_bytes",
    "max_total_num_tokens",
    "max_running_requests",
    "context_length",
    "mamba",
    "swa",
    "slack_gib",
    "verdict",
    "error",
    "warnings",
}


@pytest.fixture(scope="module")
def qwen35() -> ModelFacts:
    return load_model_facts(QWEN35)


@pytest.fixture(scope="module")
def llama8b() -> ModelFacts:
    return load_model_facts(LLAMA)


# --- worked example A: Qwen3.5-27B, 2x A6000, TP 2, NEXTN --------------------------------------------


def test_example_a_cell_and_state_slot_sizes(qwen35: ModelFacts) -> None:
    r = fit(EXAMPLE_A, qwen35, A6000, version="0.5.23", **MEASURED_A)
    assert r.kv_cell_bytes == 32768
    assert r.mamba is not None and r.mamba.slot_bytes == 76_972_032


def test_example_a_fails_on_0_5_9_with_its_exact_error(qwen35: ModelFacts) -> None:
    r = fit(EXAMPLE_A, qwen35, A6000, version="0.5.9", **MEASURED_A)
    assert r.verdict == "fails"
    assert r.error == (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: self.server_args.mem_fraction_static=0.85"
    )


def test_example_a_fits_on_0_5_9_with_eight_running_requests(qwen35: ModelFacts) -> None:
    r = fit(replace(EXAMPLE_A, max_running_requests=8), qwen35, A6000, version="0.5.9", **MEASURED_A)
    assert r.verdict == "fits"
    assert r.max_running_requests == 8
    assert r.max_total_num_tokens == pytest.approx(379_500, rel=0.001)


def test_example_a_on_0_5_9_suggests_fewer_running_requests_and_bf16_state(qwen35: ModelFacts) -> None:
    r = fit(EXAMPLE_A, qwen35, A6000, version="0.5.9", **MEASURED_A)
    by_code = {w.code: w for w in r.warnings}
    fewer = by_code["lower_max_running_requests"]
    assert fewer.flag == "--max-running-requests" and 8 <= fewer.suggested_value < 48
    check = fit(
        replace(EXAMPLE_A, max_running_requests=fewer.suggested_value),
        qwen35,
        A6000,
        version="0.5.9",
        **MEASURED_A,
    )
    assert check.verdict != "fails"
    assert by_code["mamba_ssm_dtype_bf16"].suggested_value == "bfloat16"
    raise_mfs = by_code["raise_mem_fraction_static"]
    assert raise_mfs.message.startswith("Raise --mem-fraction-static to at least")
    assert "less slack for CUDA graphs" in raise_mfs.message


def test_example_a_on_0_5_23_caps_running_requests_by_the_state_cache(qwen35: ModelFacts) -> None:
    r = fit(EXAMPLE_A, qwen35, A6000, version="0.5.23", **MEASURED_A)
    assert r.verdict == "fits"
    assert r.max_running_requests == 9
    assert r.max_total_num_tokens == pytest.approx(248_129, abs=50)
    assert r.mamba is not None and r.mamba.max_mamba_cache_size == 48 and r.mamba.ratio == 5
    assert any(w.code == "mrr_capped_by_mamba" and w.suggested_value == 9 for w in r.warnings)


def test_example_a_on_0_5_23_predicts_the_log_values(qwen35: ModelFacts) -> None:
    log = fit(EXAMPLE_A, qwen35, A6000, version="0.5.23", **MEASURED_A).predicted_log
    assert log["mamba_cache_size"] == 48
    assert (log["mamba_conv_state_gib"], log["mamba_ssm_state_gib"]) == (0.07, 3.45)
    assert (log["intermediate_ssm_state_gib"], log["intermediate_conv_window_gib"]) == (2.81, 0.03)
    assert (log["k_size_gib"], log["v_size_gib"]) == (3.79, 3.79)


def test_example_a_bf16_ssm_state_doubles_the_slots_on_0_5_23(qwen35: ModelFacts) -> None:
    r = fit(replace(EXAMPLE_A, mamba_ssm_dtype="bfloat16"), qwen35, A6000, version="0.5.23", **MEASURED_A)
    assert r.mamba is not None and r.mamba.max_mamba_cache_size == 97
    assert r.max_running_requests == 19
    assert r.max_total_num_tokens == pytest.approx(244_000, rel=0.005)


def test_example_a_on_0_5_11_raises_the_radix_value_error(qwen35: ModelFacts) -> None:
    r = fit(EXAMPLE_A, qwen35, A6000, version="0.5.11", **MEASURED_A)
    assert r.verdict == "fails"
    assert r.error is not None
    assert r.error.startswith(
        "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix "
        "cache when using --mamba-scheduler-strategy no_buffer."
    )
    assert r.warnings[0].code == "radix_cache_conflict" and r.warnings[0].flag == "--disable-radix-cache"


def test_example_a_on_0_5_11_without_radix_behaves_like_0_5_9(qwen35: ModelFacts) -> None:
    for mrr in (None, 8):
        spec = replace(EXAMPLE_A, disable_radix_cache=True, max_running_requests=mrr)
        old = fit(spec, qwen35, A6000, version="0.5.9", **MEASURED_A)
        new = fit(spec, qwen35, A6000, version="0.5.11", **MEASURED_A)
        assert (new.verdict, new.max_total_num_tokens) == (old.verdict, old.max_total_num_tokens)
    assert new.error is None and new.max_total_num_tokens == pytest.approx(379_500, rel=0.001)


def test_example_a_draft_weights_are_estimated_as_one_layer_plus_fc(qwen35: ModelFacts) -> None:
    r = fit(EXAMPLE_A, qwen35, A6000, version="0.5.23", free_gib=47.0, weights_gib=25.5)
    assert r.draft_weights_estimated
    # the MTP layer split over TP 2, plus its fc (nn.Linear(2h, h), models/qwen3_5_mtp.py) whole on
    # each GPU: 2 x 5120 x 5120 x 2 B = 100 MiB instead of 50 (sglang-memory.md's 0.4 assumed an even split)
    assert r.draft_weights_gib == pytest.approx(0.444, abs=0.005)


# --- worked example B: Llama-3.1-8B on one H100 --------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "mfs", "tokens"), [("0.5.9", 0.835, 414_085), ("0.5.11", 0.830, 410_869)]
)
def test_example_b_auto_mfs_and_tokens(llama8b: ModelFacts, version: str, mfs: float, tokens: int) -> None:
    r = fit(LaunchSpec(), llama8b, H100, version=version, free_gib=78.5, weights_gib=15.0)
    assert r.mem_fraction_static == mfs and r.mem_fraction_static_is_auto
    assert r.max_total_num_tokens == tokens
    assert r.max_running_requests == 2048
    assert (r.chunked_prefill_size, r.context_length) == (8192, 131072)
    assert r.verdict == "fits"
    assert r.predicted_log["k_size_gib"] == (25.08 if version == "0.5.11" else 25.27)


def test_example_b_0_5_23_has_the_same_auto_mfs_as_0_5_11(llama8b: ModelFacts) -> None:
    r = fit(LaunchSpec(), llama8b, H100, version="0.5.23", free_gib=78.5, weights_gib=15.0)
    assert (r.mem_fraction_static, r.max_total_num_tokens) == (0.830, 410_869)


def test_example_b_memory_pool_end_is_slack_minus_req_to_token(llama8b: ModelFacts) -> None:
    r = fit(LaunchSpec(), llama8b, H100, version="0.5.11", free_gib=78.5, weights_gib=15.0)
    assert r.req_to_token_gib == pytest.approx(1.0, abs=0.01)
    assert r.predicted_log["memory_pool_end_avail_gib"] == pytest.approx(12.3, abs=0.1)


# --- rules ------------------------------------------------------------------------------------------------


def _dense(**over: object) -> ModelFacts:
    cfg: dict[str, object] = {
        "architectures": ["Qwen2ForCausalLM"],
        "num_hidden_layers": 64,
        "hidden_size": 5120,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16",
        "vocab_size": 152064,
    }
    cfg.update(over)
    return model_facts_from_config(cfg)


def test_kv_heads_below_tp_keep_one_head_per_gpu() -> None:
    m = _dense(num_key_value_heads=2)
    assert fit(LaunchSpec(tp_size=4), m, H100, free_gib=78).kv_cell_bytes == 1 * 256 * 64 * 2
    assert fit(LaunchSpec(tp_size=8), m, H100, free_gib=78, n_gpus=8).kv_cell_bytes == 1 * 256 * 64 * 2


def test_fp8_kv_cache_halves_the_cell() -> None:
    m = _dense()
    bf16 = fit(LaunchSpec(tp_size=2), m, H100, free_gib=78).kv_cell_bytes
    assert (
        fit(LaunchSpec(tp_size=2, kv_cache_dtype="fp8_e4m3"), m, H100, free_gib=78).kv_cell_bytes == bf16 // 2
    )


def test_checkpoint_fp8_kv_quant_makes_auto_kv_dtype_fp8() -> None:
    m = _dense(quantization_config={"quant_method": "modelopt", "kv_cache_quant_algo": "FP8"})
    assert fit(LaunchSpec(), m, H100, free_gib=78).kv_cache_dtype == "fp8_e4m3"


def test_mla_cell_is_not_divided_by_tp() -> None:
    m = model_facts_from_config(DEEPSEEK_V3)
    r = fit(LaunchSpec(tp_size=8), m, parse_gpu("H200"), free_gib=139, weights_gib=85)
    assert r.kv_cell_bytes == 70_272


def test_gpt_oss_splits_full_and_sliding_window_pools() -> None:
    m = model_facts_from_config(GPT_OSS_20B)  # alternating: 12 sliding-window layers, 12 full
    r = fit(LaunchSpec(), m, H100, version="0.5.11", free_gib=78, weights_gib=13)
    per_layer = 8 * 128 * 2
    assert r.kv_cell_bytes == round(per_layer * 12 + 0.8 * per_layer * 12)
    assert r.swa is not None
    assert r.swa["full_tokens"] == r.max_total_num_tokens
    assert r.swa["swa_tokens"] == int(r.max_total_num_tokens * 0.8)
    off = fit(
        LaunchSpec(disable_hybrid_swa_memory=True), m, H100, version="0.5.11", free_gib=78, weights_gib=13
    )
    assert off.swa is None and off.kv_cell_bytes == per_layer * 24


def test_gemma3_is_never_a_hybrid_swa_pool() -> None:
    m = _dense(
        architectures=["Gemma3ForCausalLM"], sliding_window=1024, layer_types=["sliding_attention"] * 64
    )
    assert fit(LaunchSpec(), m, H100, free_gib=78).swa is None


def test_gemma4_is_hybrid_swa_only_from_0_5_11() -> None:
    types = ["sliding_attention"] * 5 + ["full_attention"]
    m = _dense(architectures=["Gemma4ForCausalLM"], num_hidden_layers=12, layer_types=types * 2)
    assert fit(LaunchSpec(), m, H100, version="0.5.9", free_gib=78).swa is None
    assert fit(LaunchSpec(), m, H100, version="0.5.11", free_gib=78).swa is not None


def test_llama4_makes_every_fourth_layer_full() -> None:
    m = _dense(architectures=["Llama4ForConditionalGeneration"], num_hidden_layers=48)
    assert m.swa_layer_split() == (12, 36)


def test_page_size_floors_the_token_count() -> None:
    r = fit(LaunchSpec(page_size=64), _dense(), H100, free_gib=78, weights_gib=61)
    assert r.max_total_num_tokens % 64 == 0
    r = fit(LaunchSpec(attention_backend="flashmla"), _dense(), H100, free_gib=78, weights_gib=61)
    assert r.page_size == 64


def test_max_total_tokens_only_lowers_the_pool() -> None:
    m = _dense()
    full = fit(LaunchSpec(), m, H100, free_gib=78, weights_gib=61).max_total_num_tokens
    assert (
        fit(LaunchSpec(max_total_tokens=1000), m, H100, free_gib=78, weights_gib=61).max_total_num_tokens
        == 1000
    )
    assert (
        fit(LaunchSpec(max_total_tokens=10**9), m, H100, free_gib=78, weights_gib=61).max_total_num_tokens
        == full
    )


@pytest.mark.parametrize(("version", "expected"), [("0.5.9", 5000), ("0.5.11", 2048), ("0.5.23", 5000)])
def test_an_explicit_max_running_requests_is_bounded_per_version(version: str, expected: int) -> None:
    r = fit(
        LaunchSpec(max_running_requests=5000), _dense(), H100, version=version, free_gib=78, weights_gib=61
    )
    assert r.max_running_requests == min(
        expected, r.max_total_num_tokens // 2 if version == "0.5.23" else expected
    )


def test_speculative_decoding_defaults_max_running_requests_to_48() -> None:
    m = _dense()
    r = fit(
        LaunchSpec(speculative_algorithm="EAGLE"), m, H100, free_gib=78, weights_gib=40, draft_weights_gib=1
    )
    assert r.max_running_requests == 48


def test_speculative_reserve_is_added_after_the_floor_in_old_versions(llama8b: ModelFacts) -> None:
    spec = LaunchSpec(speculative_algorithm="EAGLE", speculative_draft_model_path="some/remote-draft")
    old = fit(spec, llama8b, H100, version="0.5.9", free_gib=78.5, weights_gib=15)
    mid = fit(spec, llama8b, H100, version="0.5.11", free_gib=78.5, weights_gib=15)
    new = fit(spec, llama8b, H100, version="0.5.23", free_gib=78.5, weights_gib=15)
    assert old.mem_fraction_static == round((81559 - 13440 - 2048) / 81559, 3)
    assert mid.mem_fraction_static == round((81559 - 13904 - 4096) / 81559, 3)
    assert new.mem_fraction_static == 0.830  # 0.5.23 has no speculative term


def test_0_5_23_small_gpu_tier_differs() -> None:
    m = _dense(num_hidden_layers=4)
    gpu = parse_gpu("RTX-4090")
    old = fit(LaunchSpec(), m, gpu, version="0.5.11", free_gib=22)
    new = fit(LaunchSpec(), m, gpu, version="0.5.23", free_gib=22)
    assert (old.chunked_prefill_size, old.cuda_graph_max_bs) == (2048, 24)
    assert (new.chunked_prefill_size, new.cuda_graph_max_bs) == (4096, 48)


def test_prefill_graph_sizes_match_sglang_counts() -> None:
    assert (prefill_graph_sizes(4096), prefill_graph_sizes(8192)) == (50, 58)


def test_0_5_23_loaded_weights_error_gives_the_minimum_viable_fraction() -> None:
    r = fit(
        LaunchSpec(mem_fraction_static=0.88),
        _dense(),
        parse_gpu("H200"),
        version="0.5.23",
        free_gib=137.9,
        weights_gib=125.65,
    )
    assert r.verdict == "fails"
    assert r.error == (
        "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.88. "
        "Raise --mem-fraction-static above 0.912 (minimum viable = 1 - available/pre = 0.9112). If using "
        "speculative decoding, draft weights are now counted."
    )
    fix = next(w for w in r.warnings if w.code == "raise_mem_fraction_static")
    assert fix.suggested_value > 0.9112
    assert (
        fit(
            replace(LaunchSpec(), mem_fraction_static=fix.suggested_value),
            _dense(),
            parse_gpu("H200"),
            version="0.5.23",
            free_gib=137.9,
            weights_gib=125.65,
        ).verdict
        != "fails"
    )


def test_0_5_11_not_enough_memory_text_has_no_self_prefix() -> None:
    r = fit(
        LaunchSpec(mem_fraction_static=0.5), _dense(), H100, version="0.5.11", free_gib=78, weights_gib=61
    )
    assert r.error == (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: mem_fraction_static=0.5"
    )


def test_context_length_above_the_model_is_a_value_error() -> None:
    r = fit(LaunchSpec(context_length=200_000), _dense(), H100, free_gib=78, weights_gib=61)
    assert r.verdict == "fails" and r.error is not None
    assert "context_length (200000) is greater than the derived context_length (131072)" in r.error
    assert r.warnings[0].code == "context_too_long" and r.warnings[0].suggested_value == 131072


def test_pool_smaller_than_context_warns_with_the_token_count() -> None:
    r = fit(LaunchSpec(mem_fraction_static=0.85), _dense(), H100, free_gib=78, weights_gib=63)
    assert r.verdict != "fails" and r.max_total_num_tokens < r.context_length
    warning = next(w for w in r.warnings if w.code == "pool_smaller_than_context")
    assert warning.flag == "--context-length" and warning.suggested_value == r.max_total_num_tokens


def test_slack_too_small_for_graphs_is_tight_and_suggests_a_lower_fraction() -> None:
    r = fit(LaunchSpec(mem_fraction_static=0.97), _dense(), H100, free_gib=78, weights_gib=61)
    assert r.verdict == "tight"
    lower = next(w for w in r.warnings if w.code == "tight_slack")
    assert lower.suggested_value is not None and lower.suggested_value < 0.97
    assert "Lower --mem-fraction-static to" in lower.message
    assert (
        fit(
            LaunchSpec(mem_fraction_static=lower.suggested_value), _dense(), H100, free_gib=78, weights_gib=61
        ).verdict
        == "fits"
    )


def test_old_versions_run_out_of_slack_when_draft_weights_exceed_it() -> None:
    spec = LaunchSpec(mem_fraction_static=0.98, speculative_algorithm="EAGLE")
    r = fit(spec, _dense(), H100, version="0.5.9", free_gib=78, weights_gib=40, draft_weights_gib=3)
    assert r.verdict == "fails" and r.error is not None and "CUDA out of memory" in r.error
    assert any(w.code == "lower_mem_fraction_static" for w in r.warnings)


def test_estimated_inputs_are_flagged() -> None:
    r = fit(LaunchSpec(), _dense(), H100)
    assert r.baseline_estimated and r.weights_estimated
    codes = {w.code for w in r.warnings}
    assert {"baseline_estimated", "weights_estimated"} <= codes


def test_to_json_has_the_contract_keys_in_gib() -> None:
    data = fit(LaunchSpec(), _dense(), H100, free_gib=78, weights_gib=61).to_json()
    assert set(data) >= CONTRACT_KEYS
    assert data["gpu_total_gib"] == pytest.approx(81559 / 1024, abs=1e-3)
    assert data["mamba"] is None and data["swa"] is None
    assert all(set(w) >= {"code", "message"} for w in data["warnings"])


def test_mamba_json_has_slot_size_and_state(qwen35: ModelFacts) -> None:
    data = fit(EXAMPLE_A, qwen35, A6000, version="0.5.23", **MEASURED_A).to_json()
    assert set(data["mamba"]) >= {"slot_bytes", "max_mamba_cache_size", "state_gib", "spec_state_gib"}
    assert data["mamba"]["state_gib"] == pytest.approx(49 * 76_972_032 / 2**30, abs=1e-3)


@pytest.mark.parametrize(
    ("version", "opened_in"),
    [
        ("0.4.3.post4", "0.4.3.post3"),
        ("0.4.2", "0.4.1.post4"),
        ("0.5.9", "0.5.9"),
        ("0.5.10.post1", "0.5.10"),
        ("v0.5.11", "0.5.11"),
        ("0.5.15", "0.5.15"),
        ("0.5.19", "0.5.19"),
        ("0.5.21", "0.5.20"),
        ("0.5.23", "0.5.23"),
        ("0.6.0", "0.5.23"),
    ],
)
def test_every_version_follows_the_window_its_release_falls_in(version: str, opened_in: str) -> None:
    assert window_for(version).opened_in == opened_in


def test_a_non_version_is_a_user_error() -> None:
    with pytest.raises(UserError, match="not a version"):
        window_for("latest")


def test_too_few_gpus_for_the_parallelism_is_a_user_error() -> None:
    with pytest.raises(UserError, match="needs 4 GPUs"):
        fit(LaunchSpec(tp_size=4), _dense(), H100, n_gpus=2)


def test_mem_fraction_outside_zero_one_is_a_user_error() -> None:
    with pytest.raises(UserError, match=r"--mem-fraction-static 1\.5"):
        fit(LaunchSpec(mem_fraction_static=1.5), _dense(), H100)


# --- Mamba2 hybrids, drafts, parallelism ------------------------------------------------------------------


def _granite_h(**over: object) -> ModelFacts:
    """Granite-4.0-H-micro-like: 40 layers, 4 attention, 36 Mamba2 (64 heads x 64, state 128)."""
    types = ["mamba"] * 40
    for i in (9, 19, 29, 39):
        types[i] = "attention"
    cfg: dict[str, object] = {
        "architectures": ["GraniteMoeHybridForCausalLM"],
        "model_type": "granitemoehybrid",
        "num_hidden_layers": 40,
        "hidden_size": 2048,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "layer_types": types,
        "mamba_n_heads": 64,
        "mamba_d_head": 64,
        "mamba_d_state": 128,
        "mamba_n_groups": 1,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16",
    }
    cfg.update(over)
    return model_facts_from_config(cfg)


def test_mamba2_hybrid_keeps_kv_only_on_attention_layers() -> None:
    m = _granite_h()
    assert (m.full_attention_layers, m.linear_attention_layers) == (4, 36)
    r = fit(
        LaunchSpec(mem_fraction_static=0.769),
        m,
        parse_gpu("16GiB"),
        version="0.5.9",
        free_gib=15.24,
        weights_gib=5.98,
    )
    assert r.kv_cell_bytes == 8 * 128 * 4 * 2


def test_mamba2_state_matches_the_sizes_granite_logs_print() -> None:
    """002.log (granite-4.0-h-micro, TP 1): max_mamba_cache_size 38, conv 0.03 GB, ssm 2.74 GB."""
    r = fit(
        LaunchSpec(mem_fraction_static=0.769),
        _granite_h(),
        parse_gpu("16GiB"),
        version="0.5.9",
        free_gib=15.24,
        weights_gib=5.98,
    )
    assert r.mamba is not None
    assert r.mamba.slot_bytes == 36 * ((4096 + 2 * 128) * 3 * 2 + 64 * 64 * 128 * 4)
    assert r.mamba.max_mamba_cache_size == 38
    assert (r.predicted_log["mamba_conv_state_gib"], r.predicted_log["mamba_ssm_state_gib"]) == (0.03, 2.74)


def test_mamba2_groups_are_replicated_to_the_tp_size() -> None:
    r1 = fit(LaunchSpec(), _granite_h(), H100, free_gib=78)
    r2 = fit(LaunchSpec(tp_size=2), _granite_h(), H100, free_gib=78)
    assert r1.mamba is not None and r2.mamba is not None
    conv1 = (4096 + 2 * 1 * 128) * 3 * 2
    conv2 = (4096 + 2 * 2 * 128) // 2 * 3 * 2  # one group becomes two, then halves per GPU
    assert r1.mamba.slot_bytes - r2.mamba.slot_bytes == 36 * (conv1 - conv2 + 64 * 64 * 128 * 4 // 2)


def test_mamba2_models_never_pick_extra_buffer_on_0_5_23() -> None:
    r = fit(LaunchSpec(), _granite_h(), H100, version="0.5.23", free_gib=78)
    assert r.mamba is not None and r.mamba.strategy == "no_buffer" and r.mamba.ratio == 3


def test_nemotron_h_pattern_counts_attention_and_mamba_layers() -> None:
    m = model_facts_from_config(
        {
            "architectures": ["NemotronHForCausalLM"],
            "hidden_size": 4096,
            "num_hidden_layers": 8,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "hybrid_override_pattern": "M-M*-M-*",
            "mamba_num_heads": 128,
            "mamba_head_dim": 64,
            "ssm_state_size": 128,
            "n_groups": 8,
            "conv_kernel": 4,
            "max_position_embeddings": 8192,
        }
    )
    assert (m.full_attention_layers, m.linear_attention_layers) == (2, 3)


def test_deepseek_nextn_draft_kv_folds_into_the_cell_on_0_5_23() -> None:
    m = model_facts_from_config({**DEEPSEEK_V3, "num_nextn_predict_layers": 1})
    spec = LaunchSpec(tp_size=8, speculative_algorithm="EAGLE")
    kw = {"free_gib": 139.0, "weights_gib": 85.0, "draft_weights_gib": 1.0, "n_gpus": 8}
    new = fit(spec, m, parse_gpu("H200"), version="0.5.23", **kw)
    old = fit(spec, m, parse_gpu("H200"), version="0.5.11", **kw)
    assert new.kv_cell_bytes == 70_272 + 70_272 // 61
    assert (old.kv_cell_bytes, new.draft_kv_gib) == (70_272, 0.0)
    assert old.draft_kv_gib == pytest.approx(old.max_total_num_tokens * 576 * 2 / 2**30)


def test_a_local_draft_folder_gives_the_draft_weights(tmp_path: Path, llama8b: ModelFacts) -> None:
    draft_cfg = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "num_hidden_layers": 1,
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "torch_dtype": "bfloat16",
    }
    (tmp_path / "config.json").write_text(json.dumps(draft_cfg))
    (tmp_path / "model.safetensors.index.json").write_text('{"metadata": {"total_size": 2147483648}}')
    draft = load_model_facts(tmp_path)
    spec = LaunchSpec(tp_size=2, speculative_algorithm="EAGLE3", speculative_draft_model_path=str(tmp_path))
    r = fit(spec, llama8b, H100, free_gib=78, weights_gib=7.5, draft_model=draft)
    assert r.draft_weights_gib == pytest.approx(1.0)


def test_dp_attention_divides_the_kv_heads_by_the_attention_tp() -> None:
    m = _dense()
    plain = fit(LaunchSpec(tp_size=8), m, H100, free_gib=78, n_gpus=8).kv_cell_bytes
    dpa = fit(
        LaunchSpec(tp_size=8, dp_size=8, enable_dp_attention=True), m, H100, free_gib=78, n_gpus=8
    ).kv_cell_bytes
    assert (plain, dpa) == (1 * 256 * 64 * 2, 8 * 256 * 64 * 2)


def test_pipeline_parallel_splits_layers_and_weights() -> None:
    m = _dense()
    r = fit(LaunchSpec(pp_size=2), m, H100, free_gib=78, n_gpus=2)
    assert r.kv_cell_bytes == 8 * 256 * 32 * 2
    assert r.weights_gib == pytest.approx(m.weight_bytes / 2 / 2**30)


def test_extra_buffer_with_the_radix_cache_off_is_rejected_by_old_releases(qwen35: ModelFacts) -> None:
    spec = replace(EXAMPLE_A, mamba_strategy="extra_buffer", disable_radix_cache=True)
    r = fit(spec, qwen35, A6000, version="0.5.11", **MEASURED_A)
    assert r.error is not None and r.error.startswith("ValueError: mamba extra_buffer is not compatible")
    assert r.warnings[0].flag == "--mamba-scheduler-strategy" and r.warnings[0].suggested_value == "no_buffer"


def test_a_float32_checkpoint_is_loaded_in_16_bits() -> None:
    m = replace(_dense(torch_dtype="float32"), weight_bytes=40 * 2**30, weights_estimated=False)
    r = fit(LaunchSpec(), m, H100, free_gib=78)
    assert r.weights_gib == pytest.approx(20.0) and not r.weights_estimated


def test_online_fp8_quantization_roughly_halves_the_linear_weights() -> None:
    m = replace(_dense(), weight_bytes=60 * 2**30, weights_estimated=False)
    r = fit(LaunchSpec(quantization="fp8"), m, H100, free_gib=78)
    assert 30.0 < r.weights_gib < 33.0 and r.weights_estimated


def test_weights_larger_than_the_gpu_run_out_of_memory_while_loading() -> None:
    m = replace(_dense(), weight_bytes=160 * 2**30, weights_estimated=False)
    r = fit(LaunchSpec(tp_size=2), m, A6000, free_gib=47)
    assert r.verdict == "fails" and r.error == "torch.OutOfMemoryError: CUDA out of memory."
    advice = r.warnings[0]
    assert (advice.code, advice.flag, advice.suggested_value) == ("weights_exceed_gpu", "--tp-size", 8)


@settings(max_examples=60, deadline=None)
@given(
    tp=st.sampled_from([1, 2, 4, 8]),
    kv_heads=st.sampled_from([1, 2, 4, 8, 32]),
    low=st.integers(min_value=500, max_value=949),
    step=st.integers(min_value=1, max_value=49),
    version=st.sampled_from(["0.5.9", "0.5.11", "0.5.23"]),
)
def test_more_static_memory_never_means_fewer_tokens(
    tp: int, kv_heads: int, low: int, step: int, version: str
) -> None:
    m = _dense(num_key_value_heads=kv_heads, num_attention_heads=32)
    runs = [
        fit(
            LaunchSpec(tp_size=tp, mem_fraction_static=t / 1000),
            m,
            H100,
            version=version,
            free_gib=78,
            n_gpus=8,
            advise=False,
        )
        for t in (low, low + step)
    ]
    assert runs[0].max_total_num_tokens <= runs[1].max_total_num_tokens
    assert runs[0].slack_gib >= runs[1].slack_gib - 1e-9 or runs[0].verdict == "fails"


def test_free_memory_per_gpu_uses_the_poorest_rank() -> None:
    r = fit(LaunchSpec(tp_size=2), _dense(), H100, free_gib=[78.0, 75.0], weights_gib=30)
    assert r.baseline_free_gib == 75.0 and r.verdict != "fails"


def test_unbalanced_free_memory_fails_like_sglangs_tp_check() -> None:
    r = fit(LaunchSpec(tp_size=2), _dense(), H100, free_gib=[78.0, 60.0], weights_gib=30)
    assert r.error is not None
    assert r.error.startswith("RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied")
    assert r.warnings[0].code == "unbalanced_gpus"
    one = fit(LaunchSpec(tp_size=2), _dense(), H100, free_gib=60.0, weights_gib=30)
    assert one.error is None  # a single value cannot show an imbalance: not modelled


def test_deepseek_v3_2_adds_the_sparse_attention_indexer_to_the_cell() -> None:
    cfg = {
        "architectures": ["DeepseekV32ForCausalLM"],
        "num_hidden_layers": 61,
        "hidden_size": 7168,
        "num_attention_heads": 128,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "index_head_dim": 128,
        "index_topk": 2048,
        "max_position_embeddings": 163840,
        "torch_dtype": "bfloat16",
    }
    r = fit(
        LaunchSpec(tp_size=8), model_facts_from_config(cfg), parse_gpu("H200"), free_gib=139, weights_gib=85
    )
    assert r.kv_cell_bytes == 576 * 61 * 2 + (128 + 4) * 61


def test_the_target_does_not_load_the_checkpoints_mtp_layers(tmp_path: Path, qwen35: ModelFacts) -> None:
    (tmp_path / "config.json").write_text((QWEN35 / "config.json").read_text())
    total = 55_000_000_000
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}}))
    m = load_model_facts(tmp_path)
    r = fit(EXAMPLE_A, m, A6000, version="0.5.23", free_gib=47.0)
    mtp = mtp_weight_bytes(m) / 2**30  # the checkpoint's MTP layer, which the target skips
    # rel 1e-4: the norms every rank keeps whole (about 0.6 MB here) sit on top of the even split
    assert r.weights_gib == pytest.approx(total / 2 / 2**30 - mtp / 2, rel=1e-4)
    assert 0.3 < r.draft_weights_gib < 0.5


def test_0_5_23_rejects_a_sliding_window_pool_smaller_than_the_window() -> None:
    m = model_facts_from_config({**GPT_OSS_20B, "sliding_window": 4096})
    spec = LaunchSpec(max_total_tokens=4000, context_length=4000)
    r = fit(spec, m, H100, version="0.5.23", free_gib=78, weights_gib=13)
    assert r.error is not None and r.error.startswith(
        "ValueError: SWA pool (3200 tokens) cannot hold even one request"
    )
    assert fit(spec, m, H100, version="0.5.11", free_gib=78, weights_gib=13).error is None


@pytest.mark.parametrize(
    ("version", "spec", "expected"),
    [
        ("0.5.9", LaunchSpec(), False),
        ("0.5.9", LaunchSpec(enable_piecewise_cuda_graph=True), True),
        ("0.5.11", LaunchSpec(), True),
        ("0.5.11", LaunchSpec(enable_torch_compile=True), False),
        ("0.5.11", LaunchSpec(disable_piecewise_cuda_graph=True), False),
        ("0.5.23", LaunchSpec(enable_torch_compile=True), True),
        ("0.5.23", LaunchSpec(pp_size=2), False),
        ("0.5.23", LaunchSpec(disable_cuda_graph=True), False),
    ],
)
def test_prefill_graph_defaults_per_version(version: str, spec: LaunchSpec, expected: bool) -> None:
    assert prefill_graph_enabled(spec, _dense(), version) is expected


def test_vlms_lose_the_piecewise_graph_on_0_5_11_but_qwen3_5_keeps_the_breakable_one(
    qwen35: ModelFacts,
) -> None:
    assert prefill_graph_enabled(LaunchSpec(), qwen35, "0.5.11") is False
    assert prefill_graph_enabled(LaunchSpec(), qwen35, "0.5.23") is True


def test_qwen3_5_moe_state_and_kv_sizes_match_a_real_tp2_log() -> None:
    """A Qwen3.5-397B-A17B start at TP 2 (ktransformers issue 1870, an 0.5.9-era SGLang) printed
    max_mamba_cache_size 82, conv_state 0.13GB, ssm_state 7.29GB and #tokens 580364 with K size 4.15 GB."""
    cfg = {
        "architectures": ["Qwen3_5MoeForConditionalGeneration"],
        "text_config": {
            "model_type": "qwen3_5_moe_text",
            "num_hidden_layers": 60,
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_key_value_heads": 2,
            "head_dim": 256,
            "full_attention_interval": 4,
            "linear_num_key_heads": 16,
            "linear_num_value_heads": 64,
            "linear_key_head_dim": 128,
            "linear_value_head_dim": 128,
            "linear_conv_kernel_dim": 4,
            "num_experts": 512,
            "moe_intermediate_size": 1024,
            "vocab_size": 248320,
            "max_position_embeddings": 262144,
            "dtype": "bfloat16",
        },
    }
    spec = LaunchSpec(
        tp_size=2,
        mem_fraction_static=0.85,
        context_length=8192,
        max_running_requests=1,
        max_mamba_cache_size=82,
        max_total_tokens=580364,
    )
    gpu = parse_gpu("RTX-4090")
    facts = model_facts_from_config(cfg)
    log = fit(spec, facts, gpu, version="0.5.9", free_gib=22.84, weights_gib=3.76).predicted_log
    assert (log["mamba_cache_size"], log["mamba_conv_state_gib"], log["mamba_ssm_state_gib"]) == (
        82,
        0.13,
        7.29,
    )
    assert (log["max_total_num_tokens"], log["k_size_gib"], log["v_size_gib"]) == (580364, 4.15, 4.15)
    # The excerpt does not print P or mfs; with the slack that makes its pools add up (3.445 GiB), the
    # automatic 0.9/(1+0.9) split gives the logged K and token count.
    auto = replace(
        spec, max_mamba_cache_size=None, max_total_tokens=None, mem_fraction_static=1 - 3.445 / 22.84
    )
    r = fit(auto, facts, gpu, version="0.5.9", free_gib=22.84, weights_gib=3.76)
    assert r.mamba is not None and r.mamba.max_mamba_cache_size == 82
    assert r.max_total_num_tokens == pytest.approx(580364, rel=0.005)
