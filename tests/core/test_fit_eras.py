"""Memory rules that changed between SGLang releases, each pinned to the release that changed it.

The fit engine keeps three rule families (0.5.9, 0.5.11, 0.5.23) chosen by the flag table's own
mapping; these tests cover the rules that moved inside a family or before 0.5.9, read from the
wheels' server_args.py and model_runner*.py of each release.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sgtui.core.fit import fit
from sgtui.core.fit.defaults import legacy_auto_mfs, resolve_defaults
from sgtui.core.fit.pools import hybrid_swa_enabled
from sgtui.core.flags import LaunchSpec
from sgtui.core.gpus import parse_gpu
from sgtui.core.model import ModelFacts, load_model_facts, model_facts_from_config
from sgtui.core.sglang.windows import NEWEST, WINDOWS, window_for
from tests.cases import H100, MODELS

H200 = parse_gpu("H200")
B200 = parse_gpu("B200")


@pytest.fixture(scope="module")
def llama8b() -> ModelFacts:
    return load_model_facts(MODELS / "llama3_1_8b")


@pytest.fixture(scope="module")
def gpt_oss() -> ModelFacts:
    return load_model_facts(MODELS / "gpt_oss_20b")


@pytest.fixture(scope="module")
def qwen35() -> ModelFacts:
    return load_model_facts(MODELS / "qwen3_5_27b")


# --- one window per release ----------------------------------------------------------------------


@given(
    st.integers(0, 1), st.integers(0, 9), st.integers(0, 40), st.sampled_from(["", ".post1", "rc2", ".dev3"])
)
def test_every_version_string_falls_in_the_last_window_opened_at_or_before_it(
    major: int, minor: int, patch: int, suffix: str
) -> None:
    version = f"{major}.{minor}.{patch}{suffix}"
    found = window_for(version)
    if (major, minor) == (0, 0):
        assert found is NEWEST  # an untagged build says nothing of its rules
        return
    release = window_for(f"{major}.{minor}.{patch}")
    opened = [w for w in WINDOWS if w.opened <= found.opened]
    assert found is opened[-1] and (suffix == ".post1" or found is release)


def test_windows_open_in_release_order_and_each_changes_something() -> None:
    assert [w.opened for w in WINDOWS] == sorted(w.opened for w in WINDOWS)
    assert all(w.changes for w in WINDOWS[1:])


@pytest.mark.parametrize(
    ("version", "opened_in"),
    [
        ("0.5.10", "0.5.10"),
        ("0.5.12", "0.5.11"),
        ("0.5.17", "0.5.17"),
        ("0.4.3.post4", "0.4.3.post3"),
        ("0.4.7.post1", "0.4.7.post1"),
    ],
)
def test_the_report_note_names_the_window_that_applies(version: str, opened_in: str) -> None:
    assert window_for(version).opened_in == opened_in
    note = fit(LaunchSpec(), load_model_facts(MODELS / "llama3_1_8b"), H100, version=version).notes[0]
    assert f"opened in {opened_in}" in note and version in note


# --- the automatic --mem-fraction-static before the reservation formula ------------------------


@pytest.mark.parametrize(
    ("version", "tp", "gpu_mib", "expected"),
    [
        ("0.3.2", 8, 81559, 0.83),
        ("0.3.6", 8, 81559, 0.82),
        ("0.4.3", 4, 23034, 0.85),  # a real QwQ-32B launch on 4x L4 logged 0.85
        ("0.4.1", 1, 81559, 0.88),
        ("0.4.5.post1", 16, 81559, 0.79),
        ("0.4.6", 1, 143771, (143771 - 13 * 1024) / 143771),
        ("0.4.6.post3", 1, 143771, (143771 - 18 * 1024) / 143771),
        ("0.4.7", 1, 183359, 0.79),
        ("0.4.7.post1", 1, 81559, 0.874),  # sgl-project/sglang#7495 logs 0.874 on an H100
        ("0.4.9", 1, 24564, 0.879),
        ("0.5.2", 8, 143771, round((143771 - 16 * 1024) / 143771, 3)),
    ],
)
def test_older_releases_pick_the_fraction_their_own_table_gives(
    version: str, tp: int, gpu_mib: int, expected: float
) -> None:
    mfs = legacy_auto_mfs(LaunchSpec(tp_size=tp), gpu_mib, window_for(version).rules)
    assert mfs == pytest.approx(expected, abs=5e-4)


def test_from_0_5_3_the_reservation_formula_decides(llama8b: ModelFacts) -> None:
    assert legacy_auto_mfs(LaunchSpec(), 81559, window_for("0.5.3").rules) is None
    assert resolve_defaults(LaunchSpec(), llama8b, 81559, "0.5.9").mem_fraction_static_auto == 0.835


def test_0_4_7_shrinks_the_fraction_for_eagle_on_small_cards() -> None:
    eagle = LaunchSpec(speculative_algorithm="EAGLE")
    assert legacy_auto_mfs(eagle, 81559, window_for("0.4.7").rules) == pytest.approx(0.88 * 0.95)


def test_post_releases_are_told_apart() -> None:
    assert window_for("0.4.7.post1").opened_in == "0.4.7.post1" and window_for("0.4.7").opened_in == "0.4.7"


def test_0_5_10_already_captures_the_prefill_graph_by_default(llama8b: ModelFacts) -> None:
    assert not resolve_defaults(LaunchSpec(), llama8b, 183359, "0.5.9").prefill_graph
    assert resolve_defaults(LaunchSpec(), llama8b, 183359, "0.5.10").prefill_graph


# --- the EAGLE headroom of 0.4.x to 0.5.6 ---------------------------------------------------------


def _eagle_tokens(model: ModelFacts, version: str, **spec: object) -> int:
    launch = LaunchSpec(
        mem_fraction_static=0.85,
        speculative_algorithm="EAGLE",
        speculative_num_steps=5,
        speculative_eagle_topk=4,
        speculative_num_draft_tokens=8,
        **spec,  # type: ignore[arg-type]
    )
    return fit(
        launch, model, H100, version=version, free_gib=78.5, weights_gib=15.0, draft_weights_gib=0.5
    ).max_total_num_tokens


def test_old_eagle_targets_grow_their_pool_by_the_draft_and_verify_headroom(llama8b: ModelFacts) -> None:
    profiled = _eagle_tokens(llama8b, "0.5.9")
    # 48 requests (the EAGLE default from 0.4.6) x (5 steps x topk 4 + 8 draft tokens) + 100
    assert _eagle_tokens(llama8b, "0.4.6") - profiled == 48 * (5 * 4 + 8) + 100
    assert _eagle_tokens(llama8b, "0.5.6", max_running_requests=16) - profiled == 16 * 28 + 100


def test_0_4_1_post4_to_0_4_3_post2_grow_only_the_draft_pool(llama8b: ModelFacts) -> None:
    # model_runner.init_memory_pool (0.4.2): draft_runner_cache_size = tokens + requests x steps + 100
    # sizes the draft worker's pool; the target keeps the profiled size. No 48-request default yet:
    # SGLang's estimate clamp(tokens/context*512, 2048, 4096) = 2048. 0.4.3.post3 grows both.
    args = {"free_gib": 78.5, "weights_gib": 15.0, "draft_weights_gib": 0.5}
    eagle = LaunchSpec(
        mem_fraction_static=0.85,
        speculative_algorithm="EAGLE",
        speculative_num_steps=5,
        speculative_eagle_topk=4,
        speculative_num_draft_tokens=8,
        speculative_draft_model_path="/d",
    )
    profiled = _eagle_tokens(llama8b, "0.5.9")
    old = fit(eagle, llama8b, H100, version="0.4.3.post2", **args)
    assert old.max_total_num_tokens == profiled
    draft_layer = 8 * 128 * 2 * 2  # the EAGLE draft's one layer, K and V
    assert old.draft_kv_gib * 2**30 == pytest.approx((profiled + 2048 * 5 + 100) * draft_layer)
    assert _eagle_tokens(llama8b, "0.4.1.post3") == profiled  # no headroom before 0.4.1.post4
    assert _eagle_tokens(llama8b, "0.4.3.post3") - profiled == 2048 * (5 * 4 + 8) + 100


# --- Mamba / linear-attention state before 0.5.9 --------------------------------------------------


def _state(model: ModelFacts, version: str, **spec: object) -> tuple[int, int]:
    r = fit(
        LaunchSpec(tp_size=2, mem_fraction_static=0.85, context_length=32768, **spec),  # type: ignore[arg-type]
        model,
        H200,
        version=version,
        free_gib=139.0,
        weights_gib=25.5,
    )
    assert r.mamba is not None, r.error
    return r.mamba.max_mamba_cache_size, r.max_total_num_tokens


def test_qwen3_next_era_runs_without_radix_cache_and_keeps_512_state_slots(qwen35: ModelFacts) -> None:
    slots, tokens = _state(qwen35, "0.5.3")
    with_cap = _state(qwen35, "0.5.3", max_running_requests=64)
    assert (slots, with_cap[0]) == (512, 64)
    assert with_cap[1] > tokens  # the 448 slots no longer reserved go to the KV pool


def test_0_5_4_to_0_5_8_fall_back_to_512_slots_without_the_radix_cache(qwen35: ModelFacts) -> None:
    assert _state(qwen35, "0.5.5", disable_radix_cache=True)[0] == 512
    assert _state(qwen35, "0.5.8", disable_radix_cache=True)[0] == 512
    # 0.5.9 sizes them from the memory share instead
    assert _state(qwen35, "0.5.9", disable_radix_cache=True)[0] != 512


def test_0_5_4_to_0_5_6_divide_the_state_share_by_the_draft_copies(qwen35: ModelFacts) -> None:
    plain = _state(qwen35, "0.5.5")[0]
    with_spec = _state(
        qwen35,
        "0.5.5",
        speculative_algorithm="EAGLE",
        speculative_num_steps=3,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=4,
        max_running_requests=8,
    )[0]
    assert with_spec in (plain // 5, plain // 5 - 1)  # (1 + 4 draft tokens) copies per slot


# --- which launches get a sliding-window pool ---------------------------------------------------


@pytest.mark.parametrize(
    ("version", "spec", "hybrid"),
    [
        ("0.5.6", LaunchSpec(), False),  # gpt-oss forced --disable-hybrid-swa-memory
        ("0.5.8", LaunchSpec(speculative_algorithm="EAGLE3"), False),
        ("0.5.8", LaunchSpec(), True),
        ("0.5.9", LaunchSpec(attention_backend="trtllm_mha"), False),
        ("0.5.9", LaunchSpec(attention_backend="fa3"), True),
        ("0.5.11", LaunchSpec(attention_backend="trtllm_mha"), True),
        ("0.5.23", LaunchSpec(disable_hybrid_swa_memory=True), False),
    ],
)
def test_gpt_oss_splits_its_kv_pool_only_where_that_release_allows(
    gpt_oss: ModelFacts, version: str, spec: LaunchSpec, hybrid: bool
) -> None:
    assert hybrid_swa_enabled(spec, gpt_oss, window_for(version).rules) is hybrid


def test_without_the_split_gpt_oss_keeps_every_layer_in_one_pool(gpt_oss: ModelFacts) -> None:
    args = {"free_gib": 78.0, "weights_gib": 13.0}
    whole = fit(LaunchSpec(mem_fraction_static=0.85), gpt_oss, H100, version="0.5.6", **args)
    split = fit(LaunchSpec(mem_fraction_static=0.85), gpt_oss, H100, version="0.5.11", **args)
    assert whole.kv_cell_bytes == 24 * 2 * 8 * 64 * 2 and whole.swa is None
    assert split.kv_cell_bytes == round(12 * 2048 + 0.8 * 12 * 2048) and split.swa is not None


def test_gemma_3_keeps_full_kv_on_every_layer_with_transformers_default_head_dim() -> None:
    gemma = load_model_facts(MODELS / "gemma_3_12b")
    assert (gemma.head_dim, gemma.num_kv_heads) == (256, 8)
    r = fit(LaunchSpec(mem_fraction_static=0.85), gemma, H100, version="0.5.23", free_gib=78, weights_gib=23)
    assert r.swa is None and r.kv_cell_bytes == 48 * 2 * 8 * 256 * 2


# --- config shapes SGLang reads under other names -------------------------------------------------


def test_gemma_3_text_config_without_head_counts_uses_transformers_defaults() -> None:
    cfg = {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "model_type": "gemma3",
        "text_config": {"hidden_size": 2560, "num_hidden_layers": 34, "model_type": "gemma3_text"},
    }
    m = model_facts_from_config(cfg)
    assert (m.num_attention_heads, m.num_kv_heads, m.head_dim) == (8, 4, 256)


def test_chatglm_style_names_give_layers_kv_groups_and_head_dim() -> None:
    cfg = {
        "architectures": ["ChatGLMModel"],
        "model_type": "chatglm",
        "num_layers": 40,
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "multi_query_attention": True,
        "multi_query_group_num": 2,
        "kv_channels": 128,
        "seq_length": 131072,
    }
    m = model_facts_from_config(cfg)
    assert (m.num_layers, m.num_kv_heads, m.head_dim, m.context_length) == (40, 2, 128, 131072)


# --- the KV dtype a checkpoint asks for ---------------------------------------------------------


def test_a_modelopt_sidecar_asks_for_an_fp8_kv_cache_from_0_5_3(tmp_path: Path, llama8b: ModelFacts) -> None:
    (tmp_path / "config.json").write_text((MODELS / "llama3_1_8b" / "config.json").read_text())
    (tmp_path / "hf_quant_config.json").write_text(
        json.dumps({"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}})
    )
    m = load_model_facts(tmp_path / "config.json")
    args = {"free_gib": 78.0, "weights_gib": 8.5}
    assert fit(LaunchSpec(), m, H100, version="0.5.11", **args).kv_cache_dtype == "fp8_e4m3"
    assert fit(LaunchSpec(), m, H100, version="0.4.9", **args).kv_cache_dtype == "bfloat16"


def test_a_compressed_tensors_kv_scheme_counts_only_in_the_0_5_23_family(llama8b: ModelFacts) -> None:
    cfg = json.loads((MODELS / "llama3_1_8b" / "config.json").read_text())
    cfg["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor"},
    }
    m = model_facts_from_config(cfg)
    args = {"free_gib": 78.0, "weights_gib": 8.5}
    assert fit(LaunchSpec(), m, H100, version="0.5.11", **args).kv_cache_dtype == "bfloat16"
    assert fit(LaunchSpec(), m, H100, version="0.5.23", **args).kv_cache_dtype == "fp8_e4m3"


# --- refusals that do not depend on memory ------------------------------------------------------


def test_a_context_above_the_config_still_reports_the_pool_sglang_would_build(llama8b: ModelFacts) -> None:
    longer = fit(LaunchSpec(context_length=200_000), llama8b, H100, free_gib=78.5, weights_gib=15.0)
    same = fit(LaunchSpec(), replace(llama8b, context_length=200_000), H100, free_gib=78.5, weights_gib=15.0)
    assert longer.verdict == "fails" and longer.error is not None and "context_length" in longer.error
    assert longer.max_total_num_tokens == same.max_total_num_tokens > 0


# --- multimodal wrappers -----------------------------------------------------------------------


def test_0_4_6_to_0_4_8_shrink_even_a_set_fraction_for_a_multimodal_model() -> None:
    vl = load_model_facts(MODELS / "qwen2_5_vl_7b")
    spec = LaunchSpec(mem_fraction_static=0.874)
    assert fit(spec, vl, H100, version="0.4.7", free_gib=78, weights_gib=15.8).mem_fraction_static == (
        pytest.approx(0.874 * 0.90)
    )
    assert fit(spec, vl, H100, version="0.4.3", free_gib=78, weights_gib=15.8).mem_fraction_static == (
        pytest.approx(0.874 * 0.95)
    )
    assert fit(spec, vl, H100, version="0.5.9", free_gib=78, weights_gib=15.8).mem_fraction_static == 0.874


def test_gemma_3_is_served_text_only_unless_multimodal_is_enabled() -> None:
    gemma = load_model_facts(MODELS / "gemma_3_12b")
    text_only = resolve_defaults(LaunchSpec(), gemma, 81559, "0.5.11")
    with_images = resolve_defaults(LaunchSpec(values={"--enable-multimodal": True}), gemma, 81559, "0.5.11")
    assert text_only.prefill_graph and not with_images.prefill_graph
    assert with_images.mem_fraction_static_auto < text_only.mem_fraction_static_auto


# --- DeepSeek sparse attention with an FP8 KV cache ---------------------------------------------


@pytest.mark.parametrize(
    ("version", "gpu", "flags_given", "row"),
    [
        ("0.5.11", "H200", {}, 576),  # 0.5.11 prices the raw row, whatever the pool then stores
        ("0.5.23", "H200", {}, 656),  # Hopper's default flashmla_kv row: 512 + 4 scales x 4 B + 64 x 2 B
        ("0.5.23", "B200", {}, 576),  # Blackwell's default trtllm backend keeps the raw row
        ("0.5.23", "H200", {"--dsa-decode-backend": "trtllm"}, 576),
    ],
)
def test_a_dsa_fp8_token_costs_what_that_release_and_backend_store(
    version: str, gpu: str, flags_given: dict[str, str], row: int
) -> None:
    glm5 = load_model_facts(MODELS / "glm_5_fp8")
    spec = LaunchSpec(tp_size=8, mem_fraction_static=0.9, kv_cache_dtype="fp8_e4m3", values=flags_given)
    r = fit(spec, glm5, parse_gpu(gpu), version=version, free_gib=139, weights_gib=89)
    assert r.kv_cell_bytes == (row + 132) * 78  # + the indexer key: 128 B and one fp32 scale per layer


def test_before_0_5_9_the_ssm_state_is_float32_whatever_the_config_says(qwen35: ModelFacts) -> None:
    assert qwen35.linear is not None
    bf16_config = replace(qwen35, linear=replace(qwen35.linear, ssm_dtype="bfloat16"))
    spec = LaunchSpec(tp_size=2, mem_fraction_static=0.85)
    old = fit(spec, bf16_config, H200, version="0.5.8", free_gib=139.0, weights_gib=25.5)
    new = fit(spec, bf16_config, H200, version="0.5.9", free_gib=139.0, weights_gib=25.5)
    assert old.mamba is not None and new.mamba is not None
    assert (old.mamba.ssm_dtype, new.mamba.ssm_dtype) == ("float32", "bfloat16")


def test_an_untagged_source_build_follows_the_newest_window_not_the_oldest_rules(llama8b: ModelFacts) -> None:
    # `pip show sglang` on a git checkout says 0.0.0.devN (a real Qwen3.5-9B log: 0.0.0.dev11582)
    assert window_for("0.0.0.dev11582+g4df60434d") is NEWEST
    dev = fit(LaunchSpec(), llama8b, H100, version="0.0.0.dev11582", free_gib=78.5, weights_gib=15.0)
    assert "untagged" in dev.notes[0]
    assert (
        dev.mem_fraction_static
        == fit(LaunchSpec(), llama8b, H100, version=NEWEST.opened_in).mem_fraction_static
    )


def test_before_0_5_9_sliding_window_layers_are_priced_like_full_ones(gpt_oss: ModelFacts) -> None:
    # a MiMo-V2-style model whose sliding-window layers keep half the KV heads (sgl-project/sglang#18039
    # fixed the over-pricing in 0.5.9)
    mimo = replace(gpt_oss, architecture="MiMoV2FlashForCausalLM", swa_num_kv_heads=4)
    spec = LaunchSpec(mem_fraction_static=0.85)
    full_layer = 2 * 8 * 64 * 2
    old = fit(spec, mimo, H100, version="0.5.8", free_gib=78, weights_gib=13)
    new = fit(spec, mimo, H100, version="0.5.11", free_gib=78, weights_gib=13)
    assert old.kv_cell_bytes == round(12 * full_layer + 0.8 * 12 * full_layer)
    assert new.kv_cell_bytes == round(12 * full_layer + 0.8 * 12 * full_layer / 2)


def test_0_5_23_sizes_the_window_pool_from_the_requests_when_the_radix_cache_is_off(
    gpt_oss: ModelFacts,
) -> None:
    spec = LaunchSpec(
        mem_fraction_static=0.85,
        disable_radix_cache=True,
        max_running_requests=16,
        chunked_prefill_size=8192,
    )
    r = fit(spec, gpt_oss, H100, version="0.5.23", free_gib=78, weights_gib=13)
    # per request: window 128 + eviction interval 128 + a page + one decode token; two prefill chunks
    cap = (128 + 128 + 1 + 1) * 16 + 2 * 8192 + 1
    assert r.swa is not None and r.swa["swa_tokens"] == cap
    per_layer = 2 * 8 * 64 * 2
    used = (r.max_total_num_tokens * 12 + cap * 12) * per_layer
    assert used <= r.kv_pool_gib * 2**30 < used + 12 * per_layer
    # with the radix cache on, the ratio rule splits the same budget
    ratio = fit(
        replace(spec, disable_radix_cache=False), gpt_oss, H100, version="0.5.23", free_gib=78, weights_gib=13
    )
    assert ratio.swa is not None and ratio.swa["swa_tokens"] == int(ratio.max_total_num_tokens * 0.8)
