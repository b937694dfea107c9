"""A model whose name says quantized but whose config does not is neither priced as bf16 in silence
nor trusted blindly: the fit warns, and prices what the name says when it has no checkpoint bytes.

GPTQ/AWQ 4-bit with group 128 stores bits/8 plus, per 128 weights, an fp16 scale and a packed 4-bit
zero point (SGLang's gptq/awq loaders: qweight, scales, qzeros): 0.5 + 2.5/128 bytes per weight;
the embeddings, lm_head and norms stay in the model dtype.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sgtui.core.fit import fit
from sgtui.core.gpus import parse_gpu
from sgtui.core.model import load_model_facts, model_facts_from_config
from sgtui.core.model.names import named_quantization
from sgtui.core.sglang.flags import LaunchSpec
from tests.cases import MODELS

H100 = parse_gpu("H100-80G")
QWQ = MODELS / "qwq_32b"


def _codes(report: object) -> list[str]:
    return [w.code for w in report.warnings]  # type: ignore[attr-defined]


def test_a_name_saying_awq_with_a_plain_config_is_priced_as_4_bit_and_warned() -> None:
    m = load_model_facts(QWQ)
    plain = fit(LaunchSpec(model_path="/models/QwQ-32B"), m, H100, version="0.5.9")
    awq = fit(LaunchSpec(model_path="/models/QwQ-32B-AWQ"), m, H100, version="0.5.9")
    assert "quantization_name_mismatch" not in _codes(plain)
    assert "quantization_name_mismatch" in _codes(awq)
    # the linear layers at 0.5195 of their 2 bytes, embeddings and lm_head (2 x 152064 x 5120) at 2 bytes
    embed = 2 * 152064 * 5120 * 2 / 2**30
    linear = plain.weights_gib - embed
    assert awq.weights_gib == pytest.approx(embed + linear * (0.5 + 2.5 / 128) / 2, rel=0.01)
    assert any("AWQ" in w.message and "no quantization_config" in w.message for w in awq.warnings)


def test_a_name_and_config_that_agree_or_a_command_line_quantization_say_nothing() -> None:
    cfg = json.loads((MODELS / "qwen3_30b_a3b_fp8" / "config.json").read_text())
    m = model_facts_from_config(cfg)
    assert "quantization_name_mismatch" not in _codes(
        fit(LaunchSpec(model_path="/m/Qwen3-30B-A3B-FP8"), m, H100, version="0.5.9")
    )
    plain = load_model_facts(QWQ)
    online = LaunchSpec(model_path="/models/QwQ-32B-FP8", quantization="fp8")
    assert "quantization_name_mismatch" not in _codes(fit(online, plain, H100, version="0.5.9"))


def test_a_name_that_disagrees_with_the_config_is_priced_from_the_config() -> None:
    cfg = json.loads((MODELS / "qwen3_30b_a3b_fp8" / "config.json").read_text())
    m = model_facts_from_config(cfg)
    named = fit(LaunchSpec(model_path="/m/Qwen3-30B-A3B-GPTQ-Int4"), m, H100, version="0.5.9")
    plain = fit(LaunchSpec(model_path="/m/Qwen3-30B-A3B"), m, H100, version="0.5.9")
    assert named.weights_gib == plain.weights_gib
    assert any("quantization_config says fp8 (8-bit" in w.message for w in named.warnings)


def test_real_checkpoint_bytes_win_over_the_name(tmp_path: Path) -> None:
    folder = tmp_path / "QwQ-32B-AWQ"
    folder.mkdir()
    (folder / "config.json").write_text((QWQ / "config.json").read_text())
    total = 65_000_000_000
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}}))
    m = load_model_facts(folder)
    r = fit(LaunchSpec(), m, H100, version="0.5.9")
    assert r.weights_gib == pytest.approx(total / 2**30, rel=0.001)
    assert any("own bytes are used" in w.message for w in r.warnings)


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("Qwen/Qwen3-32B-AWQ", "int4"),
        ("/models/DeepSeek-R1-FP8", "fp8"),
        ("Llama-3.1-70B-Instruct-GPTQ-INT4", "int4"),
        ("neuralmagic/Meta-Llama-3-8B-Instruct-quantized.w8a8", "int8"),
        ("nvidia/DeepSeek-R1-FP4", "fp4"),
        ("Qwen/Qwen3-32B", None),
        ("/models/fp8-free/Llama-3-8B", None),  # only the last path part counts
    ],
)
def test_the_name_is_read_from_its_last_path_part(name: str, family: str | None) -> None:
    found = named_quantization(name)
    assert (found[0] if found else None) == family
