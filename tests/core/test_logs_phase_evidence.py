"""The phase comes from what the log shows: request traffic and serving frames mean running, a traceback
through the CUDA graph runner's capture means capturing graphs, an import chain means no phase, and a log that
shows its process ended is not "starting"."""

from __future__ import annotations

from pathlib import Path

from sgtui.core.logs import classify_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "issues"


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def test_a_tail_of_decode_batches_is_a_server_serving_requests() -> None:
    """SGLang logs a decode batch every 40 steps, which the warm-up never reaches: requests are served."""
    analysis = classify_text(
        _log(
            "[2025-06-26 07:25:01 DP4 TP4] Decode batch. #running-req: 50, #token: 80000, token usage: 0.86, "
            "gen throughput (token/s): 1500.2, #queue-req: 18",
            "[2025-06-26 07:25:02 DP4 TP4] Decode batch. #running-req: 50, #token: 80100, token usage: 0.86, "
            "gen throughput (token/s): 1510.0, #queue-req: 18",
        )
    )
    assert analysis.outcome == "ready" and analysis.state.phase == "ready"


def test_a_traceback_through_graph_capture_is_capturing_graphs() -> None:
    """https://github.com/sgl-project/sglang/issues/6342: the capture's bar, then the scheduler's traceback on
    the same line, through cuda_graph_runner's capture (the chain's final `Capture cuda graph failed` as
    SGLang raises it in cuda_graph_runner.py __init__)."""
    analysis = classify_text((FIXTURES / "sglang-6342-capture-traceback.log").read_text())
    error = analysis.error
    assert error is not None
    assert (error.error_class, error.phase, error.rank) == ("cuda_graph_failed", "capturing_graphs", "TP1")
    assert error.text.startswith("Exception: Capture cuda graph failed")
    assert error.values["context"][0].startswith("RuntimeError: CUDA error: an illegal memory access")


def test_a_faulthandler_dump_most_recent_call_first_names_the_capture() -> None:
    """faulthandler prints the innermost frame first (https://github.com/sgl-project/sglang/issues/4205)."""
    site = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
    analysis = classify_text(
        _log(
            "[2025-03-07 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes.",
            "Fatal Python error: Segmentation fault",
            "",
            "Current thread 0x00007f95ca716740 (most recent call first):",
            f'  File "{site}/distributed/device_communicators/pynccl_wrapper.py", line 373 in ncclAllReduce',
            f'  File "{site}/layers/linear.py", line 1264 in forward',
            f'  File "{site}/models/deepseek_v2.py", line 646 in forward_absorb',
            f'  File "{site}/model_executor/cuda_graph_runner.py", line 233 in capture_one_batch_size',
            f'  File "{site}/model_executor/cuda_graph_runner.py", line 212 in capture',
            f'  File "{site}/model_executor/model_runner.py", line 881 in init_cuda_graphs',
            f'  File "{site}/model_executor/model_runner.py", line 207 in initialize',
            f'  File "{site}/managers/tp_worker.py", line 74 in __init__',
            f'  File "{site}/managers/scheduler.py", line 1748 in run_scheduler_process',
        )
    )
    error = analysis.error
    assert error is not None and error.phase == "capturing_graphs"
    assert error.error_class == "cuda_graph_failed"


def test_an_exception_after_decode_batches_happened_while_running() -> None:
    analysis = classify_text(
        _log(
            "[2025-06-26 07:25:01 TP0] Decode batch. #running-req: 50, #token: 80000, token usage: 0.86, "
            "gen throughput (token/s): 1500.2, #queue-req: 18",
            "[2025-06-26 07:25:31 TP0] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2311, in '
            "run_scheduler_process",
            "    scheduler.event_loop_overlap()",
            "IndexError: index 4096 is out of bounds for dimension 0 with size 4096",
            "[2025-06-26 07:25:32] Received sigquit from a child process. It usually means the child failed.",
        )
    )
    error = analysis.error
    assert error is not None and error.phase == "running" and error.rank == "TP0"
    assert [c.kind for c in error.consequences] == ["sigquit"]


def test_a_long_torch_compile_traceback_through_the_capture_is_capturing_graphs() -> None:
    """torch.compile's tracebacks run to hundreds of frames; their first frames still say where it was."""
    site = "/usr/local/lib/python3.10/dist-packages"
    lines = [
        "[2025-05-16 10:48:21 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{site}/sglang/srt/model_executor/cuda_graph_runner.py", line 379, in capture',
        "    ) = self.capture_one_batch_size(bs, forward)",
    ]
    for i in range(300):
        lines += [f'  File "{site}/torch/_dynamo/eval_frame.py", line {i}, in _fn', "    return fn(*a)"]
    lines.append("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: RuntimeError: boom")
    error = classify_text(_log(*lines)).error
    assert error is not None and (error.error_class, error.phase) == ("cuda_graph_failed", "capturing_graphs")


def test_openai_api_answers_are_requests_served() -> None:
    """The warm-up posts to /generate; a 200 on the OpenAI API is a client's request being served."""
    analysis = classify_text(
        _log(
            '[2025-06-26 07:25:01] INFO:     10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
            "[2025-06-26 07:25:01 TP0] Prefill batch. #new-seq: 1, #new-token: 80, #cached-token: 0, "
            "token usage: 0.01, #running-req: 3, #queue-req: 0",
        )
    )
    assert analysis.outcome == "ready"


def test_an_argument_check_is_told_by_sglangs_innermost_frame() -> None:
    """A value SGLang's argument code rejects through a library (enum) is an argument error; a failure under
    server_args.resolve_once but raised in other SGLang code (device detection, model config) is not."""
    site = "/venv/lib/python3.11/site-packages"
    head = [
        "Traceback (most recent call last):",
        f'  File "{site}/sglang/srt/server_args.py", line 277, in resolve_once',
        "    run_resolution_pipeline(self)",
    ]
    through_enum = _log(
        *head,
        f'  File "{site}/sglang/srt/arg_groups/serving_hook.py", line 40, in handle_backend',
        "    backend = AttentionBackend(server_args.attention_backend)",
        '  File "/usr/lib/python3.11/enum.py", line 712, in __call__',
        "    return cls.__new__(cls, value)",
        "ValueError: 'flashinfr' is not a valid AttentionBackend",
    )
    elsewhere = _log(
        *head,
        f'  File "{site}/sglang/srt/configs/model_config.py", line 328, in load_pointer_head',
        "    path = cached_file(",
        "ValueError: cannot read the model's config",
    )
    first, second = classify_text(through_enum).error, classify_text(elsewhere).error
    assert first is not None and first.error_class == "incompatible_flags"
    assert second is not None and second.error_class == "other"
