"""Wordings that differ between SGLang releases (checked against the 0.3.6..0.5.23 sources): a KV line
without "#tokens", 0.5.23's post-capture pool sizing, and every "Capture ... failed:" a capture raises."""

from __future__ import annotations

import pytest

from sgtui.core.logs import classify_text, diagnose


def test_a_kv_line_without_a_token_count_still_marks_the_kv_pool() -> None:
    analysis = classify_text(
        "[2025-02-20 10:00:05 TP0] KV Cache is allocated. K size: 1.42 GB, V size: 1.42 GB.\n"
        "[2025-02-20 10:00:05 TP0] Memory pool end. avail mem=2.09 GB\n"
    )
    assert [m.kind for m in analysis.milestones] == ["kv_cache_allocated", "memory_pool_end"]
    assert (analysis.facts["k_size_gib"], analysis.facts["v_size_gib"]) == (1.42, 1.42)
    assert "kv_tokens" not in analysis.facts


def test_post_capture_sizing_replaces_the_virtual_upper_bound_of_the_kv_pool() -> None:
    analysis = classify_text(
        "[2026-05-10 09:00:20 TP0] KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 900000, "
        "K size: 40.00 GB, V size: 40.00 GB\n"
        "[2026-05-10 09:00:50 TP0] Post-capture KV sizing: full_layer_tokens=612000, swa_layer_tokens=0\n"
        "[2026-05-10 09:00:50 TP0] Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, "
        "#tokens: 612000, KV size: 54.40 GB, avail mem=3.10 GB\n"
        "[2026-05-10 09:00:50 TP0] Post-capture KV sizing: draft KV cache allocated. dtype: torch.bfloat16, "
        "#tokens: 612000, KV size: 1.70 GB\n"
    )
    assert analysis.facts["kv_tokens"] == 612000
    assert analysis.facts["kv_size_gib"] == 54.40
    assert "k_size_gib" not in analysis.facts


@pytest.mark.parametrize(
    "line",
    [
        "Exception: Capture cuda graph failed: CUDA error: an illegal memory access was encountered",
        "RuntimeError: Capture prefill CUDA graph failed: shape mismatch in the attention metadata",
        "Exception: Capture single-CG draft extend failed: CUDA error: invalid argument",
        "Exception: Capture CPU graph failed: unsupported operator",
    ],
)
def test_every_capture_failure_wording_is_a_cuda_graph_failure(line: str) -> None:
    analysis = classify_text(line + "\n")
    assert analysis.error is not None
    assert analysis.error.error_class == "cuda_graph_failed"


def test_an_optional_graph_that_falls_back_is_no_failure() -> None:
    analysis = classify_text(
        "[2026-05-10 09:00:40 TP0] Metadata glue-graph capture failed for key 8; falling back to eager.\n"
        "[2026-05-10 09:00:41 TP0] The server is fired up and ready to roll!\n"
    )
    assert analysis.error is None
    assert analysis.outcome == "ready"


def test_the_0_5_23_server_args_dict_dump_gives_the_same_facts_as_the_older_serverargs_repr() -> None:
    fields = (
        "'model_path': '/models/qwen', 'tokenizer_path': '/models/qwen', 'tp_size': 2, "
        "'mem_fraction_static': 0.85, 'context_length': None, 'max_running_requests': 48, "
        "'cuda_graph_max_bs_decode': 32, 'speculative_algorithm': 'NEXTN', 'disable_radix_cache': False, "
        "'mamba_radix_cache_strategy': 'extra_buffer', 'port': 30000"
    )
    new = classify_text(f"[2026-05-10 09:00:00] server_args={{{fields}}}\n")
    old_style = fields.replace("'", "").replace(": ", "=").replace("=/models/qwen", "='/models/qwen'")
    old_style = old_style.replace("=NEXTN", "='NEXTN'").replace("=extra_buffer", "='extra_buffer'")
    old = classify_text(f"[2026-05-10 09:00:00] server_args=ServerArgs({old_style})\n")
    assert new.milestones[0].kind == "server_args"
    expected = {
        "model_path": "/models/qwen",
        "tp_size": 2,
        "mem_fraction_static": 0.85,
        "max_running_requests": 48,
        "cuda_graph_max_bs": 32,
        "speculative_algorithm": "NEXTN",
        "disable_radix_cache": False,
        "mamba_strategy": "extra_buffer",
        "port": 30000,
    }
    assert {k: new.facts.get(k) for k in expected} == expected
    assert {k: old.facts.get(k) for k in expected} == expected
    assert "context_length" not in new.facts


UNBALANCED = (
    "The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
    "min_per_gpu_memory=61.5, local_gpu_memory=78.9, local_gpu_memory * 0.9=71.01"
)


def test_unbalanced_memory_raised_by_older_releases_ends_the_launch_with_its_numbers() -> None:
    analysis = classify_text(f"ValueError: {UNBALANCED}\n")
    assert analysis.error is not None and analysis.error.error_class == "memory_unbalanced"
    assert "The poorest GPU had 61.50 GiB free, this rank's GPU 78.90 GiB" in diagnose(analysis)[0].detail


def test_unbalanced_memory_only_warned_about_by_newer_releases_does_not_fail_a_launch_that_comes_up() -> None:
    ready = classify_text(
        f"[2026-01-05 10:00:00 TP1] {UNBALANCED}\n"
        "[2026-01-05 10:01:00] The server is fired up and ready to roll!\n"
    )
    assert (ready.outcome, ready.error) == ("ready", None)
    died = classify_text(
        f"[2026-01-05 10:00:00 TP1] {UNBALANCED}\n"
        "[2026-01-05 10:00:30] Received sigquit from a child process. It usually means the child failed.\n"
    )
    assert died.error is not None and died.error.error_class == "memory_unbalanced"


def test_an_exit_code_minus_9_after_the_schedulers_own_exception_is_the_teardown_not_the_oom_killer() -> None:
    analysis = classify_text(
        "[2026-01-05 10:00:00 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/opt/sglang/srt/managers/scheduler.py", line 2600, in run_scheduler_process\n'
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
        "ValueError: the tokenizer has no chat template\n"
        "[2026-01-05 10:00:01] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
        "[2026-01-05 10:00:02] Exit code: -9\n"
    )
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line) == ("other", 4)


def test_a_lone_exit_code_minus_9_of_0_5_9_is_the_oom_killer() -> None:
    analysis = classify_text(
        "[2026-01-05 10:00:01] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
        "[2026-01-05 10:00:02] Exit code: -9\n"
    )
    assert analysis.error is not None and analysis.error.error_class == "oom_killed"


def test_an_swa_pool_summary_gives_both_pool_sizes_and_leaves_the_first_kv_lines_count() -> None:
    analysis = classify_text(
        "[2026-02-01 10:00:00 TP0] KV Cache is allocated. #tokens: 798276, K size: 30.0 GB, V size: 30.0 GB\n"
        "[2026-02-01 10:00:00 TP0] KV Cache is allocated. #tokens: 997846, K size: 9.97 GB, V size: 9.97 GB\n"
        "[2026-02-01 10:00:00 TP0] SWAKVPool mem usage: 79.94 GB, swa size: 798276, full size: 997846\n"
    )
    facts = analysis.facts
    assert (facts["swa_kv_tokens"], facts["full_kv_tokens"], facts["kv_pool_gib"]) == (798276, 997846, 79.94)
    assert facts["kv_tokens"] == 798276  # what the first KV line said, as for every other pool


@pytest.mark.parametrize(
    "tail",
    [
        "Current value: self.server_args.mem_fraction_static=0.82",
        "Current value: mem_fraction_static=0.82",
        "Current value: 0.82",
    ],
)
def test_every_spelling_of_the_current_mem_fraction_static_is_read(tail: str) -> None:
    analysis = classify_text(
        f"RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. {tail}\n"
    )
    assert analysis.facts["mem_fraction_static"] == 0.82


def test_the_capitalised_wordings_of_0_1_x_mark_their_milestones() -> None:
    analysis = classify_text(
        "Rank 0: Load weight begins.\n"
        "Rank 1: Load weight begins.\n"
        "Rank 0: Load weight ends.\n"
        "Rank 1: Load weight ends.\n"
        "Rank 1: Max_total_num_token=115621, max_prefill_num_token=16384, context_len=4096\n"
    )
    assert [m.kind for m in analysis.milestones] == [
        "load_weight_begin",
        "load_weight_end",
        "max_total_num_tokens",
    ]
    assert (analysis.facts["max_total_num_tokens"], analysis.facts["context_length"]) == (115621, 4096)
