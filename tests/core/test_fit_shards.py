"""Weights per GPU as SGLang shards them, each rule a worked example from the release's own source.

DeepSeek-R1 (the shapes of tests/fixtures/models/deepseek_r1 plus R1's published FP8 quantization_config,
`weight_block_size` [128, 128]): h 7168, 61 layers (3 dense), q_lora 1536, kv_lora 512, rope 64, nope 128,
v 128, 128 heads, 256 routed experts, vocab 129280, untied. FP8 with a fp32 scale per 128x128 block:
1 + 4/16384 bytes per parameter.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from sgtui.core.fit import fit
from sgtui.core.fit.shards import _padded_rows, shard_weights
from sgtui.core.gpus import parse_gpu
from sgtui.core.model import (
    ModelFacts,
    load_model_facts,
    model_facts_from_config,
    mtp_weight_bytes,
    part_bytes,
)
from sgtui.core.model.weights import indexer_params
from sgtui.core.sglang.flags import LaunchSpec
from sgtui.core.sglang.windows import window_for
from tests.cases import LLAMA, MODELS

GIB = 2**30
H200 = parse_gpu("H200")
FP8_BLOCK = 1 + 4 / (128 * 128)


def _r1_fp8() -> ModelFacts:
    cfg: dict[str, Any] = json.loads((MODELS / "deepseek_r1" / "config.json").read_text())
    cfg["quantization_config"] = {
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "quant_method": "fp8",
        "weight_block_size": [128, 128],
    }
    return model_facts_from_config(cfg)


@pytest.fixture(scope="module")
def r1() -> ModelFacts:
    return _r1_fp8()


def test_deepseek_r1_fp8_at_tp16_holds_its_replicated_layers_and_mla_copies_whole(r1: ModelFacts) -> None:
    # 0.5.9 models/deepseek_v2.py: fused_qkv_a_proj_with_mqa = ReplicatedLinear(7168, 1536 + 512 + 64), FP8
    #   61 x 7168 x 2112 x (1 + 4/16384) B = 923,693,231 B, whole on each of the 16 GPUs;
    # MoEGate.weight = nn.Parameter((256, 7168)) in the default dtype (bf16), 58 MoE layers:
    #   58 x 256 x 7168 x 2 = 212,860,928 B, whole;
    # RMSNorms (2 per layer + the final one) in bf16: (61 x 2 + 1) x 7168 x 2 = 1,763,328 B, whole;
    # deepseek_weight_loader.post_load_weights on CUDA: a 128x128-block FP8 kv_b_proj is dequantized to
    #   bf16, then w_kc/w_vc are .contiguous() copies of this rank's slice: 512 x 128/16 x 256 x 2 x 61
    #   = 127,926,272 B on top.
    # So each GPU holds 15/16 of the whole parts more than checkpoint / 16, plus the copies: 1.113 GiB.
    replicated = 61 * 7168 * 2112 * FP8_BLOCK + 58 * 256 * 7168 * 2 + (61 * 2 + 1) * 7168 * 2
    expected_extra = replicated * 15 / 16 + 512 * 8 * 256 * 2 * 61
    r = fit(LaunchSpec(tp_size=16), r1, H200, n_gpus=16, version="0.5.9", advise=False)
    even = r1.weight_bytes / 16 / GIB
    assert r.weights_gib - even == pytest.approx(expected_extra / GIB, rel=1e-3)
    assert r.weights_gib - even == pytest.approx(1.113, abs=0.001)
    assert any("held whole on every GPU" in n and "w_kc/w_vc" in n for n in r.notes)


def test_before_0_4_6_post3_the_mla_copies_of_a_block_fp8_checkpoint_stay_fp8(r1: ModelFacts) -> None:
    # 0.4.6.post2 deepseek_v2.post_load_weights: block_quant_to_tensor_quant (fp8, 1 byte per element);
    # 0.4.6.post3: block_quant_dequant to bf16 on CUDA for 128x128 blocks. Difference: one byte per copy
    # element, 512 x 8 x 256 x 61 = 63,963,136 B at TP 16.
    rules_old, rules_new = window_for("0.4.6.post2").rules, window_for("0.4.6.post3").rules
    spec = LaunchSpec(tp_size=16)
    old = shard_weights(spec, r1, r1.weight_bytes, rules_old, rocm=False, dtype="bfloat16")
    new = shard_weights(spec, r1, r1.weight_bytes, rules_new, rocm=False, dtype="bfloat16")
    assert new.copy_bytes - old.copy_bytes == 512 * 8 * 256 * 61
    on_rocm = shard_weights(spec, r1, r1.weight_bytes, rules_new, rocm=True, dtype="bfloat16")
    assert on_rocm.copy_bytes == old.copy_bytes  # not CUDA: block_quant_to_tensor_quant, fp8


def test_dp_attention_keeps_the_attention_block_and_before_0_5_8_the_embedding_whole(r1: ModelFacts) -> None:
    # tp 8, dp 2, --enable-dp-attention: attn_tp = 4, so attention splits 4 ways, not 8
    # (DeepseekV2AttentionMLA uses get_attention_tp_size()). The embedding: 0.5.7
    # VocabParallelEmbedding(enable_tp=not is_dp_attention_enabled()) -> whole on every rank; 0.5.8
    # use_attn_tp_group=is_dp_attention_enabled() -> 129280 / 4 rows. Difference between the two:
    # 129280 x 7168 x 2 x (1 - 1/4) = 1,390,018,560 B.
    spec = LaunchSpec(tp_size=8, dp_size=2, enable_dp_attention=True)
    b057 = shard_weights(spec, r1, r1.weight_bytes, window_for("0.5.7").rules, rocm=False, dtype="bfloat16")
    b058 = shard_weights(spec, r1, r1.weight_bytes, window_for("0.5.8").rules, rocm=False, dtype="bfloat16")
    assert b057.per_gpu_bytes - b058.per_gpu_bytes == pytest.approx(129280 * 7168 * 2 * 0.75, rel=1e-6)
    plain = shard_weights(
        LaunchSpec(tp_size=8), r1, r1.weight_bytes, window_for("0.5.8").rules, rocm=False, dtype="bfloat16"
    )
    assert b058.per_gpu_bytes > plain.per_gpu_bytes  # the attention block splits 4 ways instead of 8


def test_redundant_experts_add_their_copies_to_each_gpu() -> None:
    # Qwen3-30B-A3B FP8: 48 layers x 128 experts x 3 x 2048 x 768 params. With --ep-size 8 and
    # --ep-num-redundant-experts 32 each rank holds (128 + 32) / 8 = 20 experts instead of 16: the expert
    # bytes per GPU grow by 32/128 (EPMoE / the expert location dispatch, redundant physical experts).
    m = load_model_facts(MODELS / "qwen3_30b_a3b_fp8")
    rules = window_for("0.5.9").rules
    spec = LaunchSpec(tp_size=8, values={"--ep-size": 8})
    base = shard_weights(spec, m, m.weight_bytes, rules, rocm=False, dtype="bfloat16")
    more = replace(spec, values={"--ep-size": 8, "--ep-num-redundant-experts": 32})
    grown = shard_weights(more, m, m.weight_bytes, rules, rocm=False, dtype="bfloat16")
    expert_bytes = 48 * 128 * 3 * 2048 * 768 * FP8_BLOCK
    scale = m.weight_bytes / sum(part_bytes(m, m.quant).values())  # the checkpoint's bytes over the estimate
    assert grown.per_gpu_bytes - base.per_gpu_bytes == pytest.approx(
        expert_bytes * scale * 32 / 128 / 8, rel=1e-6
    )


def test_kv_heads_stop_shrinking_once_tp_exceeds_them() -> None:
    # QKVParallelLinear (layers/linear.py): tp_size >= total_num_kv_heads -> num_kv_heads = 1 per rank,
    # replicated tp / kv_heads times. Llama-3.1-8B has 8 KV heads: at TP 16 each rank keeps 1 of 8
    # (not 1/16) of k_proj + v_proj: 32 layers x 4096 x 8 x 256 x 2 B x (1/8 - 1/16) = 33,554,432 B more
    # than an even split of those weights.
    m = load_model_facts(LLAMA)
    rules = window_for("0.5.9").rules
    at16 = shard_weights(LaunchSpec(tp_size=16), m, m.weight_bytes, rules, rocm=False, dtype="bfloat16")
    norms = (32 * 2 + 1) * 4096 * 2 * 15 / 16
    assert at16.per_gpu_bytes - at16.even_split_bytes == pytest.approx(33_554_432 + norms, rel=1e-3)


def test_vocab_parallel_rows_are_padded_to_64_then_64_x_tp() -> None:
    # vocab_parallel_embedding.py: pad_vocab_size(vocab, 64); if that does not divide by tp, padding_size
    # *= tp. 32001 at TP 2: 32064 / 2 = 16032. 129280 at TP 3: 129280 % 3 != 0, so pad to 192: 129408 / 3.
    assert _padded_rows(32001, 2) == 16032
    assert _padded_rows(129280, 3) == 43136
    assert _padded_rows(129280, 16) == 8080


def test_a_dense_model_split_evenly_is_the_checkpoint_over_tp_plus_its_norms() -> None:
    m = load_model_facts(LLAMA)
    rules = window_for("0.5.23").rules
    at2 = shard_weights(LaunchSpec(tp_size=2), m, m.weight_bytes, rules, rocm=False, dtype="bfloat16")
    assert at2.per_gpu_bytes - at2.even_split_bytes == pytest.approx((32 * 2 + 1) * 4096 * 2 / 2, rel=1e-2)


def test_a_nextn_draft_keeps_its_layer_but_shares_the_targets_embedding_and_head(r1: ModelFacts) -> None:
    # speculative/eagle_worker.py (0.5.9) EAGLEWorker.__init__: for a non-EAGLE3 draft,
    # draft_model_runner.model.set_embed_and_head(embed, head) -> deepseek_v2.set_embed_and_head deletes
    # the draft's own embed_tokens/lm_head weights and empties the cache. R1's NextN checkpoint layer
    # still carries both (2 x 129280 x 7168 params, bf16 in an estimate), but the draft keeps only its
    # decoder layer, eh_proj and norms.
    assert mtp_weight_bytes(r1) - mtp_weight_bytes(r1, with_embeddings=False) == 2 * 129280 * 7168 * 2
    spec = LaunchSpec(tp_size=8, speculative_algorithm="NEXTN")
    r = fit(spec, r1, H200, version="0.5.23", advise=False)
    assert r.draft_weights_gib < mtp_weight_bytes(r1, with_embeddings=False) / GIB


def test_the_draft_layer_shards_like_the_target_and_keeps_eh_proj_whole(r1: ModelFacts) -> None:
    # deepseek_nextn.py (0.5.9): eh_proj = nn.Linear(2h, h), not split: 2 x 7168 x 7168 x 2 B = 196 MiB on
    # every GPU; the layer's fused_qkv_a_proj_with_mqa (7168 x 2112) and MoEGate (256 x 7168) are whole
    # too, its experts split over TP; post_load_weights(is_nextn=True) makes its w_kc/w_vc copies.
    spec = LaunchSpec(tp_size=8, speculative_algorithm="NEXTN")
    r = fit(spec, r1, H200, version="0.5.23", advise=False)
    even = mtp_weight_bytes(r1, with_embeddings=False) / 8 / GIB
    eh_proj_extra = 2 * 7168 * 7168 * 2 * 7 / 8 / GIB
    assert r.draft_weights_gib > even + eh_proj_extra


def test_a_dsa_indexer_is_held_whole_on_every_gpu() -> None:
    # layers/attention/nsa/nsa_indexer.py Indexer (0.5.9): wq_b = ReplicatedLinear(q_lora_rank,
    # n_heads x head_dim), wk = ReplicatedLinear(hidden, head_dim), weights_proj = ReplicatedLinear(hidden,
    # n_heads). GLM-5 (q_lora 2048, hidden 6144, index 32 heads x 128, 78 layers):
    # 2048 x 4096 + 6144 x 128 + 6144 x 32 = 9,371,648 per layer, 730,988,544 in all, FP8 blocks.
    cfg = json.loads((MODELS / "glm_5_fp8" / "config.json").read_text())
    glm = model_facts_from_config(cfg)
    assert indexer_params(glm) == 9_371_648
    without = model_facts_from_config({k: v for k, v in cfg.items() if k != "index_topk"})
    rules, spec = window_for("0.5.9").rules, LaunchSpec(tp_size=8)
    with_ix = shard_weights(spec, glm, glm.weight_bytes, rules, rocm=True, dtype="bfloat16")
    no_ix = shard_weights(spec, without, without.weight_bytes, rules, rocm=True, dtype="bfloat16")
    assert with_ix.per_gpu_bytes - no_ix.per_gpu_bytes == pytest.approx(730_988_544 * FP8_BLOCK, rel=1e-6)


def test_nemotron_h_counts_experts_only_on_its_moe_layers() -> None:
    # models/nemotron_h.py: each layer is one block of hybrid_override_pattern (ALL_DECODER_LAYER_TYPES:
    # M mamba, * attention, - MLP, E MoE); NemotronHMLP is up_proj + down_proj (relu^2), so an expert
    # has 2 matrices. Nemotron-3-Nano: 23 E layers x 128 experts x 2 x 2688 x 1856 = 29,374,808,064.
    m = load_model_facts(MODELS / "nemotron_3_nano_30b_a3b")
    assert (m.moe_layer_count, m.mlp_layer_count, m.mlp_matrices) == (23, 0, 2)
    assert part_bytes(m)["experts"] == 29_374_808_064 * 2  # bf16


def test_deepep_keeps_deepseeks_shared_expert_whole_on_every_gpu(r1: ModelFacts) -> None:
    # deepseek_v2.DeepseekV2MoE (0.5.9): shared_experts = DeepseekV2MLP(..., tp_rank=0, tp_size=1) when
    # get_moe_a2a_backend().is_deepep(); R1's shared expert is 3 x 7168 x 2048 per MoE layer, 58 layers,
    # FP8 blocks: whole instead of 1/16 at TP 16.
    rules = window_for("0.5.9").rules
    plain = LaunchSpec(tp_size=16, values={"--ep-size": 16})
    deepep = LaunchSpec(tp_size=16, values={"--ep-size": 16, "--moe-a2a-backend": "deepep"})
    a = shard_weights(plain, r1, r1.weight_bytes, rules, rocm=False, dtype="bfloat16")
    b = shard_weights(deepep, r1, r1.weight_bytes, rules, rocm=False, dtype="bfloat16")
    shared = 58 * 3 * 7168 * 2048 * FP8_BLOCK
    assert b.per_gpu_bytes - a.per_gpu_bytes == pytest.approx(shared * 15 / 16, rel=1e-6)
