"""The smaller readings: the oldest `server_args:` line, a dump hard-wrapped over lines, free memory as the
minimum over ranks (each rank's value kept), a negative profiled KV size behind an OOM, control characters."""

from __future__ import annotations

from sgtui.core.logs import classify_text, diagnose
from sgtui.core.logs.prefix import strip_controls
from sgtui.ui.logtext import clean_line


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def test_the_oldest_server_args_line_is_read() -> None:
    # SGLang 0.1.18 (managers/controller/tp_worker.py) prints this once the pools exist, on rank 0 only
    text = _log(
        "[gpu_id=0] max_total_num_tokens=162913, max_prefill_tokens=16384, context_len=4096",
        "[gpu_id=0] server_args: disable_flashinfer=False, attention_reduce_in_fp32=False, "
        "disable_radix_cache=True, disable_regex_jump_forward=False, disable_disk_cache=False, ",
    )
    analysis = classify_text(text)
    assert "server_args" in analysis.state.milestones
    assert analysis.facts["disable_radix_cache"] is True
    assert analysis.facts["disable_flashinfer"] is False
    assert analysis.facts["max_total_num_tokens"] == 162913


DUMP = (
    "server_args=ServerArgs(model_path='/models/Qwen2.5-72B-Instruct', tokenizer_path='/models/Qwen2.5-72B-"
    "Instruct', tokenizer_mode='auto', skip_tokenizer_init=False, load_format='auto', "
    "trust_remote_code=False, "
    "dtype='auto', kv_cache_dtype='auto', quantization=None, context_length=32768, device='cuda', "
    "served_model_name='qwen', chat_template=None, is_embedding=False, host='0.0.0.0', port=30000, "
    "mem_fraction_static=0.87, max_running_requests=128, max_total_tokens=None, chunked_prefill_size=8192, "
    "tp_size=4, stream_interval=1, random_seed=42, cuda_graph_max_bs=80, speculative_algorithm=None)"
)


def test_a_server_args_dump_hard_wrapped_over_lines_keeps_its_fields() -> None:
    whole = classify_text(_log(f"[2025-01-01 10:00:00] {DUMP}"))
    wrapped_lines = [DUMP[i : i + 80] for i in range(0, len(DUMP), 80)]
    text = _log(
        f"[2025-01-01 10:00:00] {wrapped_lines[0]}",
        *wrapped_lines[1:],
        "[2025-01-01 10:00:09 TP0] Load weight begin. avail mem=78.50 GB",
    )
    analysis = classify_text(text)
    for fact in (
        "mem_fraction_static",
        "tp_size",
        "context_length",
        "max_running_requests",
        "cuda_graph_max_bs",
    ):
        assert analysis.facts[fact] == whole.facts[fact], fact
    assert analysis.facts["tp_size"] == 4 and analysis.facts["mem_fraction_static"] == 0.87
    assert "load_weight_begin" in analysis.state.milestones  # the record after the dump is read as usual


def test_a_wrapped_dump_that_never_closes_ends_at_the_next_record() -> None:
    text = _log(
        "[2025-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=2, mem_fr",
        "action_static=0.8, context_length=4096",
        "[2025-01-01 10:00:09 TP0] Load weight begin. avail mem=78.50 GB",
    )
    analysis = classify_text(text)
    assert analysis.facts["tp_size"] == 2
    assert analysis.facts["mem_fraction_static"] == 0.8
    assert analysis.facts["load_weight_begin_avail_gib"] == 78.5


def test_free_memory_facts_are_the_minimum_over_ranks_with_each_rank_kept() -> None:
    text = _log(
        "[2026-01-02 10:00:00 TP0] Load weight begin. avail mem=78.50 GB",
        "[2026-01-02 10:00:00 TP1] Load weight begin. avail mem=71.25 GB",
        "[2026-01-02 10:00:00 TP2] Load weight begin. avail mem=78.40 GB",
        "[2026-01-02 10:00:30 TP1] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
        "avail mem=36.00 GB, mem usage=35.25 GB.",
        "[2026-01-02 10:00:31 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
        "avail mem=43.25 GB, mem usage=35.25 GB.",
    )
    report = classify_text(text).to_json()
    assert report["facts"]["load_weight_begin_avail_gib"] == 71.25  # what SGLang sizes the pools from
    assert report["facts"]["avail_mem_after_weights_gib"] == 36.0
    assert report["facts_per_rank"]["load_weight_begin_avail_gib"] == {"TP0": 78.5, "TP1": 71.25, "TP2": 78.4}
    assert report["facts_per_rank"]["avail_mem_after_weights_gib"] == {"TP0": 43.25, "TP1": 36.0}
    assert report["facts"]["weight_mem_gib"] == 35.25


def test_one_rank_has_no_per_rank_breakdown() -> None:
    report = classify_text(_log("[2026-01-02 10:00:00 TP0] Load weight begin. avail mem=78.50 GB")).to_json()
    assert report["facts"]["load_weight_begin_avail_gib"] == 78.5
    assert report["facts_per_rank"] == {}


def test_a_negative_profiled_kv_size_is_the_root_of_the_oom_that_follows() -> None:
    text = _log(
        "[2025-07-02 07:41:58 TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
        "avail mem=2.50 GB, mem usage=76.10 GB.",
        "[2025-07-02 07:41:59 TP0] max_total_tokens=131072 is larger than the profiled value -561981. "
        "Use the profiled value instead.",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    )
    analysis = classify_text(text)
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line) == ("not_enough_memory", 2)
    assert diagnose(analysis)[0].error_class == "not_enough_memory"


def test_controls_are_removed_except_tab_including_every_c1_control() -> None:
    raw = "a\x1b[31mred\x1b[0m\tb\x9b31mX\x9d0;title\x9cY\x07\x00\x85\x9f\x90Z\x7f\x08"
    assert strip_controls(raw) == "ared\tbXY"
    assert clean_line(raw) == "ared\tbXY"
    for code in range(0x80, 0xA0):
        assert strip_controls(f"x{chr(code)}y") in ("xy", "x")  # C1 gone (a string introducer takes the rest)
    for code in [*range(0x00, 0x09), *range(0x0A, 0x20)]:
        assert strip_controls(f"x{chr(code)}y") == "xy"
    assert strip_controls("tab\there é ü 日本") == "tab\there é ü 日本"
