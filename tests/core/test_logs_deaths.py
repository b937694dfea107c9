"""Every way a Python process dies is a failure with a class: fatal signals, CUDA faults, any exception name
that ends a traceback, a log that ends inside or right after a traceback (also when fed live)."""

from __future__ import annotations

import pytest

from sgtui.core.logs import LogClassifier, classify_text, diagnose

STARTED = "[2026-01-02 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)"
GRAPHS = "[2026-01-02 10:01:00 TP0] Capture cuda graph begin. This can take up to several minutes."
READY = "[2026-01-02 10:02:00] The server is fired up and ready to roll!"


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("line", "signal"),
    [
        ("Fatal Python error: Segmentation fault", "SIGSEGV"),
        (
            "[host:4242:0:4242] Caught signal 11 (Segmentation fault: address not mapped to object at 0x10)",
            "SIGSEGV",
        ),
        ("[host:4242:0:4242] Caught signal 7 (Bus error: nonexistent physical address)", "SIGBUS"),
        ("Segmentation fault (core dumped)", "SIGSEGV"),
        (
            "bash: line 1:  4242 Aborted                 (core dumped) python3 -m sglang.launch_server",
            "SIGABRT",
        ),
        ("Bus error (core dumped)", "SIGBUS"),
        ("Fatal Python error: Aborted", "SIGABRT"),
        ("Illegal instruction (core dumped)", "SIGILL"),
    ],
)
def test_a_fatal_signal_is_a_failure_with_its_signal_named(line: str, signal: str) -> None:
    analysis = classify_text(_log(STARTED, line))
    assert analysis.outcome == "failed"
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line) == ("other", 2)
    assert analysis.error.values["signal"] == signal
    assert diagnose(analysis)[0].title == f"The process crashed ({signal})"


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("RuntimeError: CUDA error: an illegal memory access was encountered", "accessed illegal memory"),
        ("torch.AcceleratorError: CUDA error: an illegal instruction was encountered", "illegal instruction"),
    ],
)
def test_a_cuda_fault_is_a_failure_with_kernel_advice(line: str, title: str) -> None:
    analysis = classify_text(_log(STARTED, READY, line))
    assert analysis.outcome == "failed"
    assert analysis.error is not None and analysis.error.phase == "running"
    first = diagnose(analysis)[0]
    assert title in first.title
    assert "--attention-backend" in [s.flag for s in first.suggestions]


def test_a_segfault_during_capture_is_a_graph_failure() -> None:
    analysis = classify_text(_log(STARTED, GRAPHS, "Segmentation fault (core dumped)"))
    assert analysis.error is not None
    assert analysis.error.error_class == "cuda_graph_failed"
    assert "--disable-cuda-graph" in [s.flag for s in diagnose(analysis)[0].suggestions]


def test_a_python_exception_before_the_signal_is_the_cause_and_the_signal_the_death() -> None:
    analysis = classify_text(
        _log(STARTED, "ValueError: bad shape for layer 3", "Fatal Python error: Aborted", "Killed")
    )
    assert analysis.error is not None
    assert analysis.error.text == "ValueError: bad shape for layer 3"


def test_a_process_that_exits_by_a_signal_without_a_word_is_a_crash() -> None:
    classifier = LogClassifier()
    classifier.feed(_log(STARTED, GRAPHS))
    classifier.process_exited(-11)
    classifier.finish()
    error = classifier.analysis().error
    assert error is not None
    assert (error.error_class, error.values["signal"]) == ("other", "SIGSEGV")


def test_a_segfault_in_a_shutdown_someone_asked_for_is_no_failure() -> None:
    text = _log(
        STARTED,
        READY,
        "[2026-01-02 11:00:00] SIGTERM received. signum=15 frame=None. Draining requests and shutting "
        "down...",
        "Fatal Python error: Segmentation fault",
    )
    assert classify_text(text).error is None


@pytest.mark.parametrize(
    "last",
    [
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, Hardware "
        "limit: 65536",
        "OutOfResources: out of resource: shared memory, Required: 98304, Hardware limit: 65536",
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: boom",
        "KeyError: 'model.layers.0.mlp.gate_up_proj.weight'",
        "StopIteration",
    ],
)
def test_any_exception_name_that_ends_a_traceback_is_the_error_line(last: str) -> None:
    text = _log(
        STARTED,
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/site-packages/sglang/srt/model_executor/model_runner.py", line 9, in f',
        "    g()",
        last,
        "[2026-01-02 10:00:05] Received sigquit from a child process. It usually means the child failed.",
    )
    analysis = classify_text(text)
    assert analysis.error is not None
    assert (analysis.error.line, analysis.error.text) == (5, last)


def test_a_word_after_a_traceback_is_not_mistaken_for_an_exception() -> None:
    text = _log(
        STARTED,
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/managers/scheduler.py", line 9, in f',
        "    g()",
        "Killed",
    )
    analysis = classify_text(text)
    assert analysis.error is not None and analysis.error.error_class == "oom_killed"


TRAILING = _log(
    STARTED,
    "Traceback (most recent call last):",
    '  File "/home/u/run.py", line 3, in <module>',
    "    main()",
    "RuntimeError: boom",
)


def test_a_log_that_ends_right_after_a_traceback_failed_with_that_error() -> None:
    analysis = classify_text(TRAILING)
    assert analysis.outcome == "failed"
    assert analysis.error is not None and analysis.error.text == "RuntimeError: boom"
    assert "not in this log" not in diagnose(analysis)[0].detail


def test_the_same_trailing_traceback_under_watch_gives_the_same_error() -> None:
    classifier = LogClassifier(clock=lambda: 0.0)
    classifier.feed(TRAILING[:-1])  # the last line arrives without its newline
    classifier.process_exited(1)
    classifier.finish()
    error = classifier.analysis().error
    assert error is not None and (error.error_class, error.text) == ("other", "RuntimeError: boom")
    assert "not in this log" not in diagnose(classifier.analysis())[0].detail


def test_exception_ignored_at_exit_is_no_failure() -> None:
    text = _log(
        STARTED,
        READY.replace("fired up and ready to roll!", "Cache flushed successfully!"),
        "Exception ignored in: <function _ConnectionBase.__del__ at 0x7f>",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/multiprocessing/connection.py", line 132, in __del__',
        "OSError: [Errno 9] Bad file descriptor",
    )
    assert classify_text(text).error is None


def test_another_ranks_milestone_inside_a_traceback_does_not_change_its_phase() -> None:
    text = _log(
        STARTED,
        READY,
        "[2026-01-02 10:05:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 608, in event_loop_overlap',
        "    self.process_batch_result(tmp_batch, tmp_result)",
        "[2026-01-02 10:05:00 TP1] Load weight end. type=LlamaForCausalLM, avail mem=20.00 GB, mem "
        "usage=40.00 GB.",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.",
    )
    error = classify_text(text).error
    assert error is not None and (error.error_class, error.phase) == ("cuda_oom", "running")


def test_sglangs_own_abort_wording_is_no_crash() -> None:
    text = _log(
        STARTED, READY, "Aborted by AbortReq.", "[2026-01-02 10:03:00] Aborted request 7 (client left)"
    )
    assert classify_text(text).error is None
