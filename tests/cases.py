"""Test data shared across the suite: the worked launches, fixture paths, GPUs and model configs.

Kept in one place so that a test which checks a variant (an abbreviated flag, another window size) shows
that variant as a visible change to the shared case rather than as a second, drifting copy. Everything
here is shared by many tests: never change it in place; build a variant (`{**GPT_OSS_20B, ...}`,
`replace(EXAMPLE_A, ...)`, `replaced(argv, ...)`) instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sgtui.core.gpus import parse_gpu
from sgtui.core.sglang.flags import LaunchSpec

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MODELS = FIXTURES / "models"
LOGS = FIXTURES / "logs"
QWEN35 = MODELS / "qwen3_5_27b"
LLAMA = MODELS / "llama3_1_8b"

A6000 = parse_gpu("A6000")
H100 = parse_gpu("H100-80G")

# --- worked example A: Qwen3.5/3.6-27B on 2x A6000, TP 2, NEXTN (sglang-memory.md section 8) ---------

QWEN_MODEL_PATH = "/models/Qwen3.6-27B"
EXAMPLE_A_FLAGS = [
    "--tp-size",
    "2",
    "--mem-fraction-static",
    "0.85",
    "--context-length",
    "32768",
    "--speculative-algorithm",
    "NEXTN",
    "--speculative-num-steps",
    "3",
    "--speculative-eagle-topk",
    "1",
    "--speculative-num-draft-tokens",
    "4",
]
QWEN_ARGS = ["--model-path", QWEN_MODEL_PATH, *EXAMPLE_A_FLAGS]
QWEN_2XA6000 = [*QWEN_ARGS, "--reasoning-parser", "qwen3", "--tool-call-parser", "qwen3_coder"]

EXAMPLE_A = LaunchSpec(
    tp_size=2,
    mem_fraction_static=0.85,
    context_length=32768,
    speculative_algorithm="NEXTN",
    speculative_num_steps=3,
    speculative_eagle_topk=1,
    speculative_num_draft_tokens=4,
)
MEASURED_A = {"free_gib": 47.0, "weights_gib": 25.5, "draft_weights_gib": 0.4}
MEASURED_A_ARGS = ["--free-gib", "47.0", "--weights-gib", "25.5", "--draft-weights-gib", "0.4"]

# --- model configs written inline (no checkpoint folder needed) ---------------------------------------

DEEPSEEK_V3: dict[str, Any] = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "num_hidden_layers": 61,
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "max_position_embeddings": 163840,
    "torch_dtype": "bfloat16",
}
GPT_OSS_20B: dict[str, Any] = {
    "architectures": ["GptOssForCausalLM"],
    "num_hidden_layers": 24,
    "hidden_size": 2880,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
}


def replaced(argv: list[str], changes: dict[str, str]) -> list[str]:
    """`argv` with the elements named in `changes` swapped: one visible edit to a shared case."""
    missing = set(changes) - set(argv)
    if missing:
        raise ValueError(f"not in the argv: {sorted(missing)}")
    return [changes.get(arg, arg) for arg in argv]


def fit_json(argv: list[str]) -> dict[str, Any]:
    """`sgtui ARGV` (a `fit ... --json` command) run in-process: its report, after checking that the exit
    code says the verdict: 3 for "fails", 0 for "fits" or "tight" (DESIGN.md "Exit codes and preflight")."""
    import contextlib
    import io
    import json

    from sgtui.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(argv)
    report: dict[str, Any] = json.loads(out.getvalue())
    assert rc == (3 if report["verdict"] == "fails" else 0), (rc, report["verdict"], argv)
    return report
