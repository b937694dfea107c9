"""Coarse help groups for SGLang flags, from the dest name: the form sorts by them, nothing else depends on
them. The extractor stores each flag's group; a flag only a target's own table has gets its group here."""

from __future__ import annotations

import re

GROUPS: tuple[str, ...] = (
    "model",
    "memory",
    "parallelism",
    "speculative decoding",
    "hybrid/Mamba",
    "scheduling",
    "server",
    "other",
)

# Groups in the order the form shows them; the first matching rule wins.
GROUP_RULES: list[tuple[str, tuple[str, ...]]] = [
    ("hybrid/Mamba", ("mamba", "linear_attn", "swa", "hybrid")),
    ("speculative decoding", ("speculative", "spec_", "eagle", "ngram", "draft")),
    (
        "parallelism",
        (
            "tp_size",
            "dp_size",
            "pp_size",
            "ep_size",
            "dp_attention",
            "nnodes",
            "node_rank",
            "^dist_",
            "_parallel",
            "moe_a2a",
            "moe_dense_tp",
            "attn_cp",
            "load_balance_method",
            "nccl",
            "base_gpu_id",
            "gpu_id_step",
            "enable_dp_lm_head",
            "cp_size",
            "moe_runner",
            r"(^|_)ep_",
            "deepep",
            "eplb",
        ),
    ),
    (
        "memory",
        (
            "mem_fraction",
            "max_total_tokens",
            "kv_cache",
            "page_size",
            "cuda_graph",
            "piecewise",
            "torch_compile",
            "hierarchical_cache",
            "hicache",
            "radix",
            "cpu_offload",
            "memory",
            "offload",
            "max_prefill_tokens",
            "chunked_prefill",
            "allow_auto_truncate",
            "prefill_graph",
            "breakable",
        ),
    ),
    (
        "model",
        (
            "model_path",
            "tokenizer",
            "revision",
            "load_format",
            "trust_remote_code",
            "dtype",
            "quantization",
            "context_length",
            "served_model_name",
            "chat_template",
            "completion_template",
            "is_embedding",
            "skip_tokenizer_init",
            "reasoning_parser",
            "tool_call_parser",
            "model_loader",
            "modelopt",
            "language_only",
            "json_model_override_args",
            "preferred_sampling_params",
            "attention_backend",
            "sampling_backend",
            "grammar_backend",
            "model_impl",
            "weight",
            "^hf_",
            "download_dir",
            "(^|_)mm_",
            "multimodal",
        ),
    ),
    (
        "scheduling",
        (
            "schedule",
            "max_running_requests",
            "max_queued_requests",
            "overlap",
            "priority",
            "stream_interval",
            "prefill",
            "decode",
            "batch",
            "num_continuous_decode_steps",
            "enable_mixed_chunk",
        ),
    ),
    (
        "server",
        (
            "host",
            "port",
            "api_key",
            "log_",
            "enable_metrics",
            "ssl",
            "cors",
            "admin",
            "uvicorn",
            "health",
            "watchdog",
            "timeout",
            "tokenizer_worker_num",
            "crash_dump",
            "enable_trace",
            "otlp",
            "prometheus",
            "collect_tokens_histogram",
            "file_storage_path",
            "decrypted",
            "warmup",
        ),
    ),
]


def classify(dest: str) -> str:
    """A coarse help group from the dest name; the UI uses it to sort the form, nothing depends on it.

    Needles are regular expressions searched in the dest (`(^|_)ep_` so that `sleep_on_idle` is not EP).
    """
    for group, needles in GROUP_RULES:
        if any(re.search(needle, dest) for needle in needles):
            return group
    return "other"
