"""Whole logs in the wordings of SGLang 0.1.x to 2026 (fixtures written from the formats)."""

from __future__ import annotations

from sgtui.core.logs import MILESTONE_KINDS, classify_text
from tests.cases import LOGS


def _read(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def test_a_0_5_23_hybrid_mtp_launch_reaches_ready_with_every_pool_measured() -> None:
    analysis = classify_text(_read("v0523_ready_hybrid_mtp.log"))
    assert analysis.outcome == "ready"
    assert [m.kind for m in analysis.milestones] == [
        "server_args",
        "init_torch_distributed",
        "load_weight_begin",
        "load_weight_end",
        "mamba_cache_allocated",
        "kv_cache_allocated",
        "memory_pool_end",
        "cuda_graph_begin",
        "cuda_graph_end",
        "max_total_num_tokens",
        "uvicorn_running",
        "ready",
    ]
    facts = analysis.facts
    assert facts["weight_mem_gib"] == 51.70  # the target, not the MTP draft loaded after it
    assert facts["draft_weight_mem_gib"] == 0.80
    assert facts["load_weight_begin_avail_gib"] == 93.80
    assert facts["mamba_cache_size"] == 48
    assert facts["mamba_ssm_state_gib"] == 3.45
    assert facts["mamba_intermediate_ssm_gib"] == 2.81
    assert facts["kv_tokens"] == 248129
    assert facts["kv_cache_dtype"] == "torch.bfloat16"
    assert facts["cuda_graph_mem_gib"] == 0.62  # the target decode graph; the draft's is separate
    assert facts["max_running_requests"] == 9
    assert facts["max_running_requests_capped_by_mamba"] == 9
    assert facts["available_gpu_mem_gib"] == 12.40
    assert facts["context_length"] == 262144
    assert facts["mamba_strategy"] == "extra_buffer"
    assert analysis.state.milestones["uvicorn_running"].values == {
        "scheme": "http",
        "host": "0.0.0.0",
        "port": 30000,
    }
    assert "sglang_0_5_23_style" in analysis.state.notes


def test_a_0_5_9_tp2_launch_that_ran_out_of_memory_keeps_the_numbers_that_show_why() -> None:
    analysis = classify_text(_read("v059_tp2_nextn_not_enough_memory.log"))
    assert analysis.outcome == "failed"
    error = analysis.error
    assert error is not None
    assert (error.error_class, error.line, error.phase) == ("not_enough_memory", 24, "allocating_pools")
    facts = analysis.facts
    assert facts["tp_size"] == 2
    assert facts["mem_fraction_static"] == 0.85
    assert facts["speculative_algorithm"] == "EAGLE"
    assert (
        facts["max_running_requests"] == 48
    )  # "Max running requests is reset to 48 for speculative decoding"
    assert facts["weight_mem_gib"] == 25.52
    assert facts["kv_cache_dtype"] == "torch.bfloat16"  # what the runtime chose, over the server_args 'auto'
    assert facts["dtype_arg"] == "auto"
    assert analysis.state.milestones["load_weight_end"].ranks == {"TP0", "TP1"}
    assert "radix_disabled_for_speculative" in analysis.state.notes


def test_a_0_3_log_with_time_only_prefixes_reads_the_same_milestones() -> None:
    analysis = classify_text(_read("v03_time_only_tp2.log"))
    assert analysis.outcome == "ready"
    assert analysis.state.milestones["load_weight_end"].time == "10:11:15"
    assert analysis.facts["max_total_num_tokens"] == 397000
    assert analysis.facts["context_length"] == 8192


def test_a_0_2_log_with_gpu_id_prefixes_and_no_timestamps() -> None:
    analysis = classify_text(_read("v02_gpu_id_prefix_not_enough_memory.log"))
    assert analysis.error is not None and analysis.error.error_class == "not_enough_memory"
    assert analysis.state.milestones["init_torch_distributed"].ranks == {"gpu_id=0", "gpu_id=1"}
    assert analysis.facts["weight_mem_gib"] == 43.52
    assert analysis.facts["mem_fraction_static"] == 0.5


def test_0_5_23_pool_lines_labelled_full_and_swa_keep_the_full_pool_as_the_kv_tokens() -> None:
    text = (
        "[2026-05-01 10:00:00 TP0] Use sliding window memory pool. full_layer_tokens=375360, "
        "swa_layer_tokens=300288\n"
        "[2026-05-01 10:00:00 TP0] SWA KV Cache is allocated. dtype: torch.bfloat16, #tokens: 300288, "
        "K size: 2.10 GB, V size: 1.40 GB\n"
        "[2026-05-01 10:00:00 TP0] Full KV Cache is allocated. dtype: torch.bfloat16, #tokens: 375360, "
        "K size: 6.28 GB, V size: 4.19 GB\n"
    )
    facts = classify_text(text).facts
    assert facts["kv_tokens"] == 375360
    assert facts["swa_kv_tokens"] == 300288
    assert (facts["swa_full_layer_tokens"], facts["swa_layer_tokens"]) == (375360, 300288)


def test_an_mla_pool_reports_one_kv_size() -> None:
    text = "[2026-05-01 10:00:00 TP0] KV Cache is allocated. #tokens: 912000, KV size: 59.66 GB\n"
    facts = classify_text(text).facts
    assert (facts["kv_tokens"], facts["kv_size_gib"]) == (912000, 59.66)


def test_the_0_5_23_graph_lines_and_baseline_line_are_milestones() -> None:
    text = (
        "[2026-05-01 10:00:00] Memory baseline taken. mem usage=0.74 GB\n"
        "[2026-05-01 10:00:40] Capture target decode CUDA graph begin. backend=full, avail mem=13.80 GB\n"
        "[2026-05-01 10:00:43] Capture target decode CUDA graph end. bs=[1, 2, 4], elapsed=3.21 s, "
        "mem usage=0.62 GB, avail mem=13.18 GB.\n"
    )
    analysis = classify_text(text)
    end = analysis.state.milestones["cuda_graph_end"]
    assert end.values == {
        "label": "target decode",
        "elapsed_s": 3.21,
        "avail_gib": 13.18,
        "mem_usage_gib": 0.62,
    }
    assert analysis.facts["distributed_init_mem_gib"] == 0.74


def test_a_pasted_launch_command_fills_facts_the_log_itself_lacks() -> None:
    text = (
        "# command: python3 -m sglang.launch_server --model-path org/Model --tp-size 4 --mem-fraction-static "
        "0.7 "
        "--page-size 64 --context-length 8192 --dtype=float16\n"
        "# note: no --tp given here\n"
        "[2026-01-31 13:50:39 TP0] KV Cache is allocated. #tokens: 300288, K size: 8.38 GB, V size: 5.59 GB\n"
    )
    facts = classify_text(text).facts
    assert (facts["model_path"], facts["tp_size"], facts["page_size"]) == ("org/Model", 4, 64)
    assert (facts["dtype"], facts["dtype_arg"]) == ("float16", "float16")
    assert facts["mem_fraction_static"] == 0.7


def test_server_args_win_over_a_pasted_command_and_the_scheduler_summary_wins_over_both() -> None:
    text = (
        "python -m sglang.launch_server --model-path a/b --tp 2 --context-length 4096\n"
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='c/d', tp_size=4, context_length=8192, "
        "served_model_name='x', speculative_draft_model_path='e/f')\n"
        "[2026-01-01 10:00:30 TP0] max_total_num_tokens=9000, max_prefill_tokens=16384, "
        "max_running_requests=8, "
        "context_len=8191, available_gpu_mem=3.10 GB\n"
    )
    facts = classify_text(text).facts
    assert (facts["model_path"], facts["tp_size"], facts["context_length"]) == ("c/d", 4, 8191)
    assert facts["speculative_draft_model_path"] == "e/f"


def test_a_server_args_dump_cut_mid_value_keeps_the_fields_before_the_cut() -> None:
    text = (
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.81, tp_size=8, "
        "num_conti…\n"
    )
    facts = classify_text(text).facts
    assert (facts["model_path"], facts["mem_fraction_static"], facts["tp_size"]) == ("m", 0.81, 8)


def test_an_unknown_log_without_a_launch_start_has_an_unknown_outcome() -> None:
    analysis = classify_text(
        "[2026-01-31 13:50:39 TP1] KV Cache is allocated. #tokens: 3, K size: 1.00 GB, V size: 1.00 GB\n"
    )
    assert analysis.outcome == "unknown"
    assert classify_text("").outcome == "unknown"


def test_milestone_kinds_are_the_contract_list() -> None:
    assert MILESTONE_KINDS[0] == "server_args" and MILESTONE_KINDS[-1] == "ready"
    assert len(MILESTONE_KINDS) == 13


def test_a_0_1_log_with_rank_colon_prefixes_and_its_singular_summary() -> None:
    text = (
        "Rank 0: load weight begin.\n"
        "Rank 0: load weight end.\n"
        "Rank 0: max_total_num_token=9876, max_prefill_num_token=4096, context_len=4096, \n"
        "RuntimeError: Not enought memory. Please try to increase --mem-fraction-static.\n"
    )
    analysis = classify_text(text)
    assert [m.kind for m in analysis.milestones] == [
        "load_weight_begin",
        "load_weight_end",
        "max_total_num_tokens",
    ]
    assert analysis.state.milestones["load_weight_end"].ranks == {"TP0"}
    assert (analysis.facts["max_total_num_tokens"], analysis.facts["context_length"]) == (9876, 4096)


def test_a_kv_leak_warning_that_quotes_max_total_num_tokens_is_no_summary() -> None:
    text = "[2024-10-01 10:00:00 TP0] available_size=10, max_total_num_tokens=9000\nKV cache pool leak!\n"
    assert "max_total_num_tokens" not in classify_text(text).state.milestones
