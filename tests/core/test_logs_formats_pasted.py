"""Logs as people paste them into issues: cut mid-traceback, ending on a bare exception, one rank's view of
a multi-node failure, a quoted source line inside a traceback, every rank repeating the same warning."""

from __future__ import annotations

from sgtui.core.logs import LogClassifier, classify_text, diagnose


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


CUT_IN_CAPTURE = _log(
    "[2025-01-10 06:31:49 TP0] Memory pool end. avail mem=8.40 GB",
    "[2025-01-10 06:31:49 TP0] Capture cuda graph begin. This can take up to several minutes.",
    "[2025-01-10 06:31:50 TP0] Traceback (most recent call last):",
    '  File "/opt/sglang/srt/model_executor/cuda_graph_runner.py", line 170, in __init__',
    "    self.capture()",
    '  File "/opt/sglang/srt/layers/attention/triton_backend.py", line 95, in init_capture',
    "    self.update_indices(",
)


def test_a_log_that_ends_inside_a_capture_traceback_failed_in_graph_capture() -> None:
    analysis = classify_text(CUT_IN_CAPTURE)
    assert analysis.outcome == "failed"
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line) == ("cuda_graph_failed", 3)
    detail = diagnose(analysis)[0].detail
    assert "ends inside its traceback" in detail and "triton_backend.py" in detail
    assert "not about memory" not in detail  # the exception is cut: nobody knows what it was


def test_the_live_classifier_waits_for_the_process_rather_than_guessing_from_an_open_traceback() -> None:
    classifier = LogClassifier()
    classifier.feed(CUT_IN_CAPTURE)
    assert classifier.state.error is None
    classifier.process_exited(1)
    assert classifier.state.phase == "failed"


def test_a_traceback_the_launch_outlived_is_not_a_failure() -> None:
    analysis = classify_text(
        _log(
            "[2025-01-10 06:31:40 TP0] Load weight begin. avail mem=40.00 GB",
            "Traceback (most recent call last):",
            '  File "/opt/flashinfer/jit/core.py", line 88, in load',
            "    import flashinfer_kernels",
            "[2025-01-10 06:31:49 TP0] Load weight end. type=LlamaForCausalLM, avail mem=24.8 GB, "
            "mem usage=15.2 GB.",
        )
    )
    assert analysis.error is None
    assert analysis.outcome == "unknown"


def test_a_log_that_ends_on_a_bare_exception_after_the_last_milestone_failed() -> None:
    analysis = classify_text(
        _log(
            "[2025-01-10 06:40:00 TP0] Decode batch, #running-req: 40, #token: 9000, token usage: 0.99, ",
            "RuntimeError: Decode out of memory. Try to lower your batch size.",
            "Try to allocate 150 tokens.",
        )
    )
    assert analysis.outcome == "failed"
    assert analysis.error is not None
    # a decode batch is requests being served (issue 20: the phase from evidence)
    assert (analysis.error.error_class, analysis.error.line, analysis.error.phase) == ("other", 2, "running")
    diagnosis = diagnose(analysis)[0]
    assert diagnosis.title == "The KV cache ran out while serving"
    assert "--max-running-requests" in [s.flag for s in diagnosis.suggestions]


def test_the_quoted_source_line_of_a_frame_is_not_the_error_its_exception_line_is() -> None:
    analysis = classify_text(
        _log(
            "[2025-01-10 06:30:00 TP0] Init torch distributed begin.",
            '  File "/opt/sglang/srt/distributed/device_communicators/pynccl_wrapper.py", line 329, in CHECK',
            '    raise RuntimeError(f"NCCL error: {error_str}")',
            "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
            "[2025-01-10 06:30:02] Received sigquit from a child process. It usually means the child failed.",
        )
    )
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line) == ("nccl", 4)
    assert "distributed init" in diagnose(analysis)[0].detail


def test_a_scheduler_traceback_cut_before_its_exception_says_so() -> None:
    analysis = classify_text(
        _log(
            "[2025-01-10 06:40:00 TP0] Prefill batch, #new-seq: 1, #new-token: 12, #cached-token: 0, ",
            "[2025-01-10 06:40:01 TP3] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/opt/sglang/srt/managers/scheduler.py", line 2677, in run_scheduler_process',
            "    scheduler.event_loop_overlap()",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^",
        )
    )
    assert analysis.error is not None
    # the frame's source line calls the event loop: the exception came out of it, so it was serving
    assert (analysis.error.error_class, analysis.error.phase) == ("child_failed", "running")
    assert "ends inside it (the last frame shown is in scheduler.py)" in diagnose(analysis)[0].detail


def test_a_rank_waiting_for_a_peer_that_never_finished_loading_points_at_the_other_ranks() -> None:
    analysis = classify_text(
        _log(
            "[2025-01-10 07:15:55 TP9] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/opt/sglang/srt/model_executor/model_runner.py", line 417, in load_model',
            "    raise ValueError(",
            "ValueError: TP rank 9 could finish the model loading, but there are other ranks that didn't "
            "finish loading. It is likely due to unexpected failures (e.g., OOM) or a slow node.",
        )
    )
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line) == ("child_failed", 4)
    diagnosis = diagnose(analysis)[0]
    assert diagnosis.title == "Another rank failed"
    assert "other node's log" in diagnosis.detail


def test_a_negative_profiled_kv_size_is_reported_and_is_the_root_cause_when_the_launch_dies() -> None:
    head = _log(
        "[2025-07-02 07:41:58 DP0 TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
        "avail mem=20.50 GB, mem usage=160.10 GB.",
        "[2025-07-02 07:41:59 DP0 TP0] max_total_tokens=131072 is larger than the profiled value -480000. "
        "Use the profiled value instead.",
        "[2025-07-02 07:41:59 DP1 TP1] max_total_tokens=131072 is larger than the profiled value -480000. "
        "Use the profiled value instead.",
    )
    alive = classify_text(head)
    assert alive.error is None
    assert alive.facts["profiled_max_total_num_tokens"] == -480000
    assert len(alive.state.warnings) == 1  # every rank printed it; it is one warning
    advice = diagnose(alive)
    assert advice[0].title == "No memory left for the KV cache"
    assert "-480,000 tokens" in advice[0].detail and "160.10 GiB" in advice[0].detail
    sigquit = "Received sigquit from a child process. It usually means the child failed."
    dead = classify_text(head + f"[2025-07-02 07:42:30] {sigquit}\n")
    assert dead.error is not None
    assert (dead.error.error_class, dead.error.line) == ("not_enough_memory", 2)


def test_the_first_batch_line_means_the_server_is_serving() -> None:
    analysis = classify_text(
        _log("[2025-01-10 06:40:00 TP0] Prefill batch, #new-seq: 1, #new-token: 12, #cached-token: 0, ")
    )
    assert analysis.state.reached == "serving"


def test_a_bare_value_error_naming_two_conflicting_flags_is_incompatible_flags() -> None:
    analysis = classify_text(
        "ValueError: --disaggregation-decode-enable-radix-cache is incompatible with speculative decoding "
        "(--speculative-algorithm EAGLE)\n"
    )
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line) == ("incompatible_flags", 1)
    assert "--disaggregation-decode-enable-radix-cache" in diagnose(analysis)[0].detail


def test_a_bare_value_error_about_something_else_stays_unclassified() -> None:
    analysis = classify_text("ValueError: invalid literal for int() with base 10: 'abc'\n")
    assert analysis.error is not None and analysis.error.error_class == "other"


def test_a_librarys_traceback_at_exit_under_an_env_named_sglang_is_no_failure() -> None:
    analysis = classify_text(
        _log(
            "[22:30:53 TP0] Memory pool end. avail mem=22.83 GB",
            "max_total_num_tokens=1256440",
            "Total. latency:  0.553 s, throughput:  16665.96 token/s",
            "Traceback (most recent call last):",
            '  File "/home/u/miniforge3/envs/sglang/lib/python3.11/multiprocessing/resource_tracker.py", '
            "line 239, in main",
            "    cache[rtype].remove(name)",
            "KeyError: '/mp-dv7az532'",
        )
    )
    assert analysis.error is None
    assert analysis.outcome == "unknown"


def test_a_shutdown_someone_asked_for_is_not_a_failure() -> None:
    ready = _log(
        "[2026-01-10 06:40:00] The server is fired up and ready to roll!",
        "[2026-01-10 09:00:00] SIGTERM received. signum=15 frame=None. Draining requests and shutting "
        "down...",
        "[2026-01-10 09:00:01] Received sigquit from a child process. It usually means the child failed.",
        "Killed",
    )
    analysis = classify_text(ready)
    assert (analysis.outcome, analysis.error) == ("ready", None)
    classifier = LogClassifier()
    classifier.feed(ready)
    classifier.process_exited(-15)
    assert classifier.state.phase == "exited"
    assert classifier.analysis().outcome == "ready"


def test_an_error_before_the_stop_still_counts() -> None:
    analysis = classify_text(
        _log(
            "[2026-01-10 06:40:00 TP0] Load weight begin. avail mem=40.00 GB",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
            "KeyboardInterrupt",
        )
    )
    assert analysis.error is not None and analysis.error.error_class == "cuda_oom"


def test_logged_requests_are_the_clients_words_not_the_servers() -> None:
    analysis = classify_text(
        _log(
            "[2026-01-10 06:40:00] The server is fired up and ready to roll!",
            "[2026-01-10 06:41:00] Receive: obj=GenerateReqInput(text='why does my job say Received sigquit "
            "from a child process and CUDA out of memory?', sampling_params={})",
            "[2026-01-10 06:41:02] Finish: obj=GenerateReqInput(text='Killed'), out={'text': 'Rank 0 "
            "scheduler is dead'}",
        )
    )
    assert (analysis.outcome, analysis.error) == ("ready", None)
    assert analysis.state.signals == []


def test_a_traceback_sglang_went_on_logging_after_is_no_failure_even_without_a_milestone() -> None:
    analysis = classify_text(
        _log(
            "[2025-01-10 06:31:40 TP0] Load weight begin. avail mem=40.00 GB",
            "Traceback (most recent call last):",
            '  File "/opt/sglang/srt/layers/quantization/__init__.py", line 40, in <module>',
            "    from vllm.model_executor.layers import fused_moe",
            "ModuleNotFoundError: No module named 'vllm'",
            "[2025-01-10 06:31:41 TP0] Using model weights format ['*.safetensors']",
            "Loading safetensors checkpoint shards:  25% Completed | 1/4 [00:01<00:03,  1.2s/it]",
        )
    )
    assert analysis.error is None
