"""ModelFacts: what SGLang reads from a config.json, and the checkpoint's real size."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from sgtui.core.errors import UserError
from sgtui.core.model import (
    ModelError,
    checkpoint_weight_bytes,
    context_length_of,
    load_model_facts,
    model_facts_from_config,
    safetensors_header_bytes,
)
from tests.cases import DEEPSEEK_V3, LLAMA, QWEN35


def _write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> int:
    """A safetensors file with the given tensors (zeros); returns the data bytes."""
    sizes = {"BF16": 2, "F32": 4, "F8_E4M3": 1, "U8": 1}
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for dim in shape:
            n *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
    return offset


def test_qwen3_5_reads_the_nested_text_config_and_splits_full_from_linear_layers() -> None:
    m = load_model_facts(QWEN35)
    assert m.architecture == "Qwen3_5ForConditionalGeneration"
    assert m.model_type == "qwen3_5_text"
    assert (m.num_layers, m.num_kv_heads, m.head_dim) == (64, 4, 256)
    assert m.is_gdn_hybrid
    assert (m.full_attention_layers, m.linear_attention_layers) == (16, 48)
    assert m.linear is not None
    assert (m.linear.num_key_heads, m.linear.num_value_heads, m.linear.conv_kernel_dim) == (16, 48, 4)
    assert m.linear.ssm_dtype == "float32"
    assert m.mtp_layers == 1
    assert m.has_vision and m.is_multimodal
    assert m.context_length == 262144


def test_gdn_layer_split_follows_the_interval_and_ignores_layer_types() -> None:
    cfg = json.loads((QWEN35 / "config.json").read_text())
    cfg["text_config"]["layer_types"] = ["full_attention"] * 64
    m = model_facts_from_config(cfg)
    assert m.full_attention_layers == 16


def test_llama3_rope_scaling_factor_is_ignored_for_the_context_length() -> None:
    m = load_model_facts(LLAMA / "config.json")
    assert m.context_length == 131072
    assert m.head_dim == 128  # hidden / heads


def test_context_length_multiplies_a_plain_rope_scaling_factor() -> None:
    text = {"max_position_embeddings": 32768, "rope_scaling": {"type": "yarn", "factor": 4.0}}
    assert context_length_of(text) == 131072
    text["rope_scaling"]["original_max_position_embeddings"] = 32768
    assert context_length_of(text) == 32768


def test_context_length_takes_the_first_known_key_in_sglang_order() -> None:
    assert context_length_of({"seq_length": 8192, "max_position_embeddings": 4096}) == 8192
    assert context_length_of({}) == 2048


def test_mla_dims_are_read_for_deepseek_style_configs() -> None:
    m = model_facts_from_config(
        {
            **DEEPSEEK_V3,
            "num_key_value_heads": 128,
            "num_nextn_predict_layers": 1,
            "quantization_config": {"quant_method": "fp8"},
        }
    )
    assert m.is_mla and (m.kv_lora_rank, m.qk_rope_head_dim) == (512, 64)
    assert m.quant_method == "fp8"
    assert m.mtp_layers == 1


def test_quantization_config_with_fp8_kv_cache_is_recorded() -> None:
    m = model_facts_from_config(
        {
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "quantization_config": {"quant_method": "modelopt", "kv_cache_quant_algo": "FP8"},
        }
    )
    assert m.kv_cache_quant_algo == "FP8"


def test_weights_without_a_checkpoint_are_estimated_from_the_shapes() -> None:
    m = load_model_facts(LLAMA / "config.json")
    assert m.weights_estimated
    assert m.weight_gib == pytest.approx(14.96, abs=0.05)  # Llama-3.1-8B: 8.03 B params in bf16


def test_index_total_size_is_the_weight_size(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((LLAMA / "config.json").read_text())
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 123456789}})
    )
    m = load_model_facts(tmp_path)
    assert (m.weight_bytes, m.weights_estimated) == (123456789, False)


def test_safetensors_headers_are_summed_without_reading_tensors(tmp_path: Path) -> None:
    a = _write_safetensors(tmp_path / "model-00001.safetensors", {"w": ("BF16", [64, 32]), "s": ("F32", [7])})
    b = _write_safetensors(tmp_path / "model-00002.safetensors", {"q": ("F8_E4M3", [128, 16])})
    assert safetensors_header_bytes(tmp_path / "model-00001.safetensors") == 64 * 32 * 2 + 28
    assert checkpoint_weight_bytes(tmp_path) == a + b


def test_a_quantized_checkpoint_uses_its_real_bytes(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((LLAMA / "config.json").read_text())
    real = _write_safetensors(tmp_path / "model.safetensors", {"packed": ("U8", [1000, 1000])})
    m = load_model_facts(tmp_path / "config.json")
    assert (m.weight_bytes, m.weights_estimated) == (real, False)


def test_missing_config_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="file not found"):
        load_model_facts(tmp_path / "nope.json")
    with pytest.raises(ModelError, match=r"no config\.json in this folder"):
        load_model_facts(tmp_path)


def test_bad_json_reports_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{\n  "num_hidden_layers": 2,\n  "hidden_size": ,\n}')
    with pytest.raises(ModelError, match=r"config\.json: line 3, column 18"):
        load_model_facts(bad)


def test_missing_required_field_is_named_and_is_a_user_error() -> None:
    with pytest.raises(UserError, match="missing required field 'num_attention_heads'"):
        model_facts_from_config({"num_hidden_layers": 2, "hidden_size": 64}, source="x/config.json")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("vocab_size", float("inf"), "field 'vocab_size' must be a whole number, got inf"),  # JSON's 1e400
        ("head_dim", 2.5, "field 'head_dim' must be a whole number, got 2.5"),
        ("num_key_value_heads", 0, "num_key_value_heads 0: must be at least 1"),
        ("vocab_size", -5, "vocab_size -5: must be a positive integer"),
    ],
)
def test_a_count_that_cannot_be_is_named_not_read_as_absent(field: str, value: object, message: str) -> None:
    """Read as absent, these would size the weights or the KV cache from a default, with no word."""
    cfg = {**json.loads((LLAMA / "config.json").read_text()), field: value}
    with pytest.raises(ModelError, match=f"^x/config.json: {message}"):
        model_facts_from_config(cfg, source="x/config.json")


def test_a_whole_number_written_as_a_float_is_that_number() -> None:
    cfg = json.loads((LLAMA / "config.json").read_text())
    as_float = {**cfg, "vocab_size": float(cfg["vocab_size"])}
    assert model_facts_from_config(as_float).vocab_size == model_facts_from_config(cfg).vocab_size


def test_corrupt_safetensors_header_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", 5) + b"nope!")
    with pytest.raises(ModelError, match="safetensors header is not valid JSON"):
        checkpoint_weight_bytes(tmp_path)


def test_mixtral_style_experts_count_towards_the_weight_estimate() -> None:
    cfg = {
        "architectures": ["MixtralForCausalLM"],
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_local_experts": 8,
        "vocab_size": 32000,
        "torch_dtype": "bfloat16",
    }
    m = model_facts_from_config(cfg)
    assert m.num_experts == 8 and m.moe_intermediate_size == 14336
    assert m.weight_bytes / 1e9 == pytest.approx(93.4, rel=0.02)  # Mixtral-8x7B: 46.7 B params


def test_a_config_that_is_not_utf8_names_the_byte_and_its_line(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(b'{\n  "model_type": "caf\xe9"\n}')
    with pytest.raises(ModelError, match=r"not UTF-8 text: byte 0xe9 at line 2, column 21"):
        load_model_facts(tmp_path)
