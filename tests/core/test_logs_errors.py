"""Failure detection and root cause: every error class, and the rules that pick the cause behind a death."""

from __future__ import annotations

import pytest

from sgtui.core.logs import classify_text

SIGQUIT = "[2026-01-02 10:00:09] Received sigquit from a child process. It usually means the child failed."
SCHED = "[2026-01-02 10:00:08 TP0] Scheduler hit an exception: Traceback (most recent call last):"
STARTED = (
    "[2026-01-02 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.85, tp_size=2, "
    "port=30000)"
)


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def _error_class(*lines: str) -> str | None:
    error = classify_text(_log(*lines)).error
    return error.error_class if error else None


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: Not enought memory. Please try to increase --mem-fraction-static.",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: self.server_args.mem_fraction_static=0.85",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: mem_fraction_static=0.85",
        "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.88. "
        "Raise --mem-fraction-static above 0.912 (minimum viable = 1 - available/pre = 0.9113). "
        "If using speculative decoding, draft weights are now counted.",
        "ValueError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
        "Computed max_mamba_cache_size=0 (budget 0.10 GB)",
        "RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests.",
        "ValueError: SWA pool (4096 tokens) cannot hold even one request of the sliding window 4096.",
        "AssertionError: max_running_request is zero",
        "AssertionError: Memory pool size is too small",
    ],
)
def test_every_wording_of_not_enough_memory_is_recognised(line: str) -> None:
    assert _error_class(STARTED, SCHED, line, SIGQUIT) == "not_enough_memory"


def test_the_mem_fraction_static_quoted_by_the_error_becomes_a_fact_when_the_log_has_no_server_args() -> None:
    analysis = classify_text(
        _log(
            "ValueError: Loaded weights leave no GPU memory for the KV cache under "
            "--mem-fraction-static=0.88."
        )
    )
    assert analysis.facts["mem_fraction_static"] == 0.88


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            [
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 114.00 MiB. GPU 0 has a total "
                "capacity of 15.58 GiB of which 54.38 MiB is free."
            ],
            "cuda_oom",
        ),
        (["RuntimeError: CUDA error: out of memory"], "cuda_oom"),
        (
            ["Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB."],
            "cuda_graph_failed",
        ),
        (["RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"], "nccl"),
        (
            [
                "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:317, unhandled system "
                "error",
                "ncclSystemError: System call (e.g. socket, malloc) or external library call failed.",
            ],
            "nccl",
        ),
        (
            [
                "[rank1]:[E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out."
            ],
            "nccl",
        ),
        (
            [
                "ValueError: Model architectures ['LlavaNextForConditionalGeneration'] are not supported for "
                "now."
            ],
            "unsupported_model",
        ),
        (
            ["Model architectures ['Qwen3_5ForConditionalGeneration'] failed to be inspected."],
            "unsupported_model",
        ),
        (
            [
                "ValueError: The checkpoint you are trying to load has model type `qwen3_5` but Transformers "
                "does "
                "not recognize this architecture."
            ],
            "unsupported_model",
        ),
        (
            [
                "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): "
                "address already in use"
            ],
            "port_in_use",
        ),
        (["launch_server.py: error: unrecognized arguments: --speculative-algo-typo NEXTN"], "bad_arguments"),
        (
            [
                "launch_server.py: error: argument --kv-cache-dtype: invalid choice: 'fp9' "
                "(choose from 'auto', 'fp8_e5m2', 'fp8_e4m3')"
            ],
            "bad_arguments",
        ),
        (
            [
                "ValueError: User-specified context_length (300000) is greater than the derived "
                "context_length "
                "(262144). This may lead to incorrect model outputs or CUDA errors."
            ],
            "bad_arguments",
        ),
        (
            [
                "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with "
                "radix "
                "cache when using --mamba-scheduler-strategy no_buffer.To use radix cache, ..."
            ],
            "incompatible_flags",
        ),
        (
            [
                "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other "
                "processes. "
                "min_per_gpu_memory=10.2, local_gpu_memory=46.9, local_gpu_memory * 0.9=42.2"
            ],
            "memory_unbalanced",
        ),
        (
            [
                "RuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit code is "
                "-9 "
                "(SIGKILL), a common cause is the OS OOM killer."
            ],
            "oom_killed",
        ),
        (["ValueError: Unsupported architecture: FooForCausalLM"], "unsupported_model"),
        (
            [
                "AssertionError: Total number of attention heads (40) must be divisible by tensor parallel "
                "size (3)"
            ],
            "bad_arguments",
        ),
        (["AssertionError: Unknown cases: sf.dtype=torch.int32"], "other"),
        ([], "child_failed"),
    ],
)
def test_each_error_class_is_named_from_its_own_message(lines: list[str], expected: str) -> None:
    assert _error_class(STARTED, SCHED, *lines, SIGQUIT) == expected


def test_the_cause_is_named_even_when_the_rank_reports_it_after_the_sigquit() -> None:
    error = classify_text(
        _log(STARTED, SIGQUIT, SCHED, "RuntimeError: NCCL error: unhandled system error", "Killed")
    ).error
    assert error is not None
    assert (error.error_class, error.line) == ("nccl", 4)
    assert error.death_line == 2


def test_torch_rank_prefixed_tracebacks_and_other_managers_deaths_are_read() -> None:
    lines = [
        STARTED,
        "[2026-01-02 10:00:08] DataParallelController hit an exception: Traceback (most recent call last):",
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/x/sglang/srt/model_executor/model_runner.py", line 1, in init_torch_distributed',
        "[rank1]: torch.distributed.DistBackendError: NCCL error in: x, remote process exited",
    ]
    error = classify_text(_log(*lines)).error
    assert error is not None
    assert (error.error_class, error.phase, error.death_line) == ("nccl", "distributed_init", 2)


def test_child_failed_only_when_no_cause_is_in_the_log() -> None:
    assert _error_class(STARTED, SIGQUIT) == "child_failed"
    assert _error_class(STARTED, "AssertionError", SIGQUIT) == "other"


def test_killed_after_a_sigquit_is_sglang_stopping_itself_not_the_oom_killer() -> None:
    assert _error_class(STARTED, SCHED, "AssertionError", SIGQUIT, "Killed") == "other"
    assert (
        _error_class(STARTED, SIGQUIT, "./entrypoint.sh: line 48: 28 Killed python3 -m sglang")
        == "child_failed"
    )


def test_a_bare_killed_with_nothing_else_is_the_host_oom_killer() -> None:
    error = classify_text(
        _log(STARTED, "[2026-01-02 10:00:05 TP0] Load weight begin. avail mem=40 GB", "Killed")
    ).error
    assert error is not None
    assert (error.error_class, error.phase) == ("oom_killed", "loading_weights")


def test_a_specific_cause_outranks_the_generic_errors_it_set_off() -> None:
    lines = [
        STARTED,
        "[2026-01-02 10:00:05] ERROR:    [Errno 98] error while attempting to bind on address ('::', 31000, "
        "0, 0): "
        "address already in use",
        "[2026-01-02 10:00:07] Initialization failed. warmup error: Traceback (most recent call last):",
        "ConnectionRefusedError: [Errno 111] Connection refused",
        "requests.exceptions.ConnectionError: HTTPConnectionPool(host='0.0.0.0', port=31000): Max retries "
        "exceeded",
    ]
    error = classify_text(_log(*lines)).error
    assert error is not None
    assert (error.error_class, error.line, error.values["port"]) == ("port_in_use", 2, 31000)


def test_an_oom_that_kills_outranks_the_nccl_timeouts_it_causes_on_other_ranks() -> None:
    lines = [
        STARTED,
        "[2026-01-02 10:00:05 TP1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9) ran for "
        "600000 ms",
        SCHED,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.",
        SIGQUIT,
    ]
    assert _error_class(*lines) == "cuda_oom"


def test_a_port_retry_notice_is_not_a_failure() -> None:
    analysis = classify_text(
        _log(STARTED, "[2026-01-02 10:00:01] Port 30001 is already in use, trying port 30002")
    )
    assert analysis.error is None
    assert analysis.outcome == "starting"


def test_an_nccl_warning_alone_is_not_a_failure_but_names_the_cause_when_a_rank_dies() -> None:
    warn = "[2026-01-02 10:00:02 TP1] host:1234:1234 [1] NCCL WARN Cuda failure 'out of memory'"
    assert classify_text(_log(STARTED, warn)).error is None
    assert _error_class(STARTED, warn, SIGQUIT) == "nccl"


def test_a_traceback_the_server_survives_during_startup_does_not_fail_it() -> None:
    lines = [STARTED, "Traceback (most recent call last):", "ImportError: cannot import name 'x' from 'y'"]
    analysis = classify_text(_log(*lines, "[2026-01-02 10:00:09] The server is fired up and ready to roll!"))
    assert analysis.error is None
    assert analysis.outcome == "ready"


def test_a_cuda_oom_after_ready_fails_the_run_only_when_a_process_dies() -> None:
    ready = "[2026-01-02 10:00:09] The server is fired up and ready to roll!"
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB."
    assert classify_text(_log(STARTED, ready, oom)).outcome == "ready"
    failed = classify_text(_log(STARTED, ready, SCHED, oom, SIGQUIT))
    assert failed.outcome == "failed"
    assert failed.error is not None and failed.error.phase == "running"


def test_the_phase_comes_from_the_traceback_when_the_paste_has_no_milestones() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 331, in init_memory_pool',
        "    raise RuntimeError(",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    ]
    error = classify_text(_log(*lines)).error
    assert error is not None and error.phase == "allocating_pools"


def test_an_unclassified_exception_during_graph_capture_is_a_graph_capture_failure() -> None:
    lines = [
        STARTED,
        "[2026-01-02 10:00:05 TP0] Capture cuda graph begin. This can take up to several minutes. avail "
        "mem=8.6 GB",
        SCHED,
        "AssertionError: Unknown cases: sf.dtype=torch.int32",
        SIGQUIT,
    ]
    error = classify_text(_log(*lines)).error
    assert error is not None
    assert (error.error_class, error.phase) == ("cuda_graph_failed", "capturing_graphs")


def test_an_exception_raised_by_the_argument_checks_is_a_flag_conflict() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/server_args.py", line 912, in __post_init__',
        "    self.check_server_args()",
        "AssertionError: --enable-dp-attention requires --tp-size to be divisible by --dp-size",
        SIGQUIT,
    ]
    assert _error_class(*lines) == "incompatible_flags"


def test_a_newest_first_cloud_export_is_read_oldest_first_with_the_file_line_numbers() -> None:
    oldest_first = [
        "INFO 2025-04-05T00:00:52.1Z [2025-04-05 00:00:52] server_args=ServerArgs(model_path='m', tp_size=8)",
        "ERROR 2025-04-05T00:01:02.1Z [2025-04-05 00:01:02 TP0] Init torch distributed begin.",
        "ERROR 2025-04-05T00:01:19.1Z [2025-04-05 00:01:19 TP0] Scheduler hit an exception: Traceback (most "
        "recent",
        'ERROR 2025-04-05T00:01:19.2Z File "/x/sglang/srt/model_executor/model_runner.py", line 1, in '
        "init_torch_distributed",
        "ERROR 2025-04-05T00:01:19.3Z torch.distributed.DistBackendError: NCCL error in: x, unhandled system "
        "error",
        "ERROR 2025-04-05T00:01:19.4Z Error while creating shared memory segment /dev/shm/nccl-lNPZ0f (size "
        "7340384)",
        "ERROR 2025-04-05T00:01:19.5Z [2025-04-05 00:01:19] Received sigquit from a child process.",
    ]
    analysis = classify_text(_log(*reversed(oldest_first)))
    assert analysis.reversed_order
    assert [m.kind for m in analysis.milestones] == ["init_torch_distributed", "server_args"]
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line) == ("nccl", 3)
    assert "nccl_shm" in analysis.state.notes
