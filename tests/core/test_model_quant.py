"""The weights estimate of quantized and low-bit checkpoints, from their quantization_config.

Each format's bytes per weight (scales included) are priced as its loader stores them; whatever the
scheme leaves out (embeddings, lm_head, norms, the vision tower, ignored modules) is priced in the model
dtype. A safetensors index, when present, wins over every estimate. Fixture sources: tests/fixtures/
models/SOURCES.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sgtui.core.model import load_model_facts, model_facts_from_config, parse_quant_scheme
from sgtui.core.model.weights import estimate_param_count
from tests.cases import MODELS

LLAMA_8B: dict[str, Any] = json.loads((MODELS / "llama3_1_8b" / "config.json").read_text())
H, V, L, INTER = 4096, 128256, 32, 14336
EMBED = V * H  # Llama-3.1-8B unties embed_tokens and lm_head
ATTN = L * (H * 4096 + H * 8 * 128 * 2 + 4096 * H)
MLP = L * 3 * H * INTER
NORMS = L * 2 * H + H


def _with(quant: dict[str, Any], base: dict[str, Any] = LLAMA_8B) -> int:
    return model_facts_from_config({**base, "quantization_config": quant}).weight_bytes


def test_an_unquantized_checkpoint_is_its_parameters_at_the_config_dtype() -> None:
    assert model_facts_from_config(LLAMA_8B).weight_bytes == 2 * (2 * EMBED + ATTN + MLP + NORMS)


def test_awq_int4_prices_fp16_scales_and_packed_zeros_per_group_and_keeps_embeddings_bf16() -> None:
    # the block format of TheBloke/zephyr-7B-alpha-AWQ's config.json (quoted in transformers' AWQ docs)
    awq = {"quant_method": "awq", "zero_point": True, "group_size": 128, "bits": 4, "version": "gemm"}
    per_weight = 0.5 + (2 + 0.5) / 128  # 4 bits + an fp16 scale and a 4-bit zero per 128
    assert _with(awq) == int(2 * 2 * EMBED + (ATTN + MLP) * per_weight + 2 * NORMS)


def test_gptq_per_channel_has_no_group_term() -> None:
    gptq = {"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": False, "sym": True}
    assert _with(gptq) == int(2 * 2 * EMBED + (ATTN + MLP) * 0.5 + 2 * NORMS)


def test_fp8_block_scales_add_one_fp32_per_128_by_128_block() -> None:
    fp8 = {
        "quant_method": "fp8",
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "weight_block_size": [128, 128],
    }
    assert _with(fp8) == int(2 * 2 * EMBED + (ATTN + MLP) * (1 + 4 / 16384) + 2 * NORMS)


def test_compressed_tensors_fp8_channel_with_lm_head_ignored() -> None:
    ct = {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True},
            }
        },
        "ignore": ["lm_head"],
    }
    assert _with(ct) == int(2 * 2 * EMBED + (ATTN + MLP) * 1.0 + 2 * NORMS)


def test_single_layers_left_out_count_only_their_share() -> None:
    # "layers.0." (as QuantTrio's Qwen3.6-35B-A3B-AWQ recipe keeps its first layer): 1 of 32 layers bf16
    awq = {"quant_method": "awq", "bits": 4, "group_size": 128, "modules_to_not_convert": ["layers.0."]}
    per_weight = 0.5 + 2.5 / 128
    mixed = (ATTN + MLP) * (1 / 32 * 2 + 31 / 32 * per_weight)
    assert _with(awq) == int(2 * 2 * EMBED + mixed + 2 * NORMS)


def test_bitsandbytes_nf4_with_double_quant_and_skipped_modules() -> None:
    bnb = {
        "quant_method": "bitsandbytes",
        "load_in_4bit": True,
        "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_use_double_quant": True,
        "bnb_4bit_compute_dtype": "bfloat16",
        "llm_int8_skip_modules": ["lm_head", "self_attn"],
    }
    per_weight = 0.5 + 1 / 64 + 4 / (64 * 256)  # nibbles, an 8-bit absmax per 64, an fp32 per 256 of those
    assert _with(bnb) == int(2 * 2 * EMBED + ATTN * 2 + MLP * per_weight + 2 * NORMS)


def test_gpt_oss_20b_keeps_all_but_the_experts_in_bf16_and_lands_on_its_published_size() -> None:
    # mxfp4 experts (e2m1 + an e8m0 scale per 32); attention, router, embeddings, lm_head in bf16.
    # openai/gpt-oss-20b's checkpoint is published as about 13.8 GB.
    m = load_model_facts(MODELS / "gpt_oss_20b" / "config.json")
    assert m.quant is not None and m.quant.experts_only
    assert m.weight_bytes == pytest.approx(13.76e9, rel=0.01)


def test_kimi_k2_5_int4_experts_and_bf16_everything_else() -> None:
    # compressed-tensors int4 group 32 (0.5 + 2/32 bytes) on the 60 MoE layers' 384 experts; attention,
    # shared experts, the dense layer-0 MLP (all in `ignore`), router, embeddings, lm_head and the
    # MoonViT tower in bf16. By hand: experts 60 x 384 x 3 x 7168 x 2048 x 0.5625 = 570.7 GB;
    # attention 61 x 101.1M x 2 = 12.34 GB; shared 5.28, dense 0.79, embeddings + head 4.70,
    # router 0.33, vision 0.86 GB: about 595 GB (the same-shaped int4 Kimi-K2-Thinking is published as
    # about 594 GB; Kimi-K2.5's own total was not checked here).
    m = load_model_facts(MODELS / "kimi_k2_5_int4" / "config.json")
    assert m.quant is not None and m.quant.linear_bytes == pytest.approx(0.5625)
    assert m.weight_bytes == pytest.approx(595.0e9, rel=0.005)


def test_a_per_expert_fp4_dtype_prices_the_experts_apart_from_the_fp8_rest() -> None:
    # DeepSeek-V4 puts expert_dtype "fp4" beside an FP8 block config (ue8m0 scales): the experts are
    # e2m1 + e8m0 per 32 (0.53125 B), the other linears 1 + 1/16384 B
    base = json.loads((MODELS / "kimi_k2_5_int4" / "config.json").read_text())["text_config"]
    fp8 = {"quant_method": "fp8", "fmt": "e4m3", "scale_fmt": "ue8m0", "weight_block_size": [128, 128]}
    plain = model_facts_from_config({**base, "quantization_config": fp8})
    fp4 = model_facts_from_config({**base, "quantization_config": fp8, "expert_dtype": "fp4"})
    assert fp4.quant is not None and fp4.quant.experts == pytest.approx(0.53125)
    experts = 60 * 384 * 3 * 7168 * 2048
    assert plain.weight_bytes - fp4.weight_bytes == pytest.approx(
        experts * (1 + 1 / 16384 - 0.53125), rel=1e-6
    )


def test_a_modelopt_nvfp4_sidecar_prices_four_bits_and_an_fp8_scale_per_16(tmp_path: Path) -> None:
    m = load_model_facts(MODELS / "qwen3_32b_nvfp4")
    assert m.quant is not None and m.quant.linear_bytes == pytest.approx(0.5 + 1 / 16)
    assert m.kv_cache_quant_algo == "FP8"
    params = estimate_param_count(m)
    embed = 151936 * 5120
    norms = 64 * 2 * 5120 + 5120
    assert m.weight_bytes == int(2 * (2 * embed + norms) + (params - 2 * embed - norms) * 0.5625)


def test_the_safetensors_index_wins_over_the_estimate(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    awq = {"quant_method": "awq", "bits": 4, "group_size": 128}
    (folder / "config.json").write_text(json.dumps({**LLAMA_8B, "quantization_config": awq}))
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 5_730_000_000}})
    )
    m = load_model_facts(folder)
    assert (m.weight_bytes, m.weights_estimated) == (5_730_000_000, False)


def test_an_unknown_method_is_not_priced_as_a_scheme() -> None:
    assert parse_quant_scheme({"quant_method": "some-new-format"}) is None
    assert parse_quant_scheme(None) is None
