"""Real logs from public issue threads (short excerpts; the source of each is in its comment): serving-time
OOMs, ROCm kernel resource errors, segfaults during graph capture, aborts while serving, NCCL errors behind a
`raise` line, and a traceback pasted with its indentation lost."""

from __future__ import annotations

from sgtui.core.logs import LogClassifier, classify_text, diagnose


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def _flags(text: str) -> list[str | None]:
    return [s.flag for s in diagnose(classify_text(text))[0].suggestions]


# https://github.com/sgl-project/sglang/issues/5212 (Llama-4 OOM on a 400k-token request; frames as posted,
# the exception line in torch's wording, the ready banner and batch line from the same server's log shape)
LLAMA4_SERVING_OOM = _log(
    "[2025-04-09 17:10:02] server_args=ServerArgs(model_path='meta-llama/Llama-4-Scout-17B-16E-Instruct', "
    "tp_size=8, mem_fraction_static=0.88, context_length=1000000, chunked_prefill_size=8192, "
    "max_running_requests=None, cuda_graph_max_bs=160)",
    "[2025-04-09 17:14:40] The server is fired up and ready to roll!",
    "[2025-04-09 17:19:55 TP0] Prefill batch. #new-seq: 1, #new-token: 8192, #cached-token: 0, "
    "token usage: 0.02, #running-req: 0, #queue-req: 0",
    "[2025-04-09 17:19:56] Received sigquit from a child process. It usually means the child failed.",
    "[2025-04-09 17:19:56 TP5] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2045, in '
    "run_scheduler_process",
    "    scheduler.event_loop_normal()",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 608, in event_loop_normal',
    "    result = self.run_batch(batch)",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1395, in run_batch',
    "    logits_output, next_token_ids = self.tp_worker.forward_batch_generation(",
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 962, in '
    "forward_extend",
    "    return self.model.forward(",
    '  File "/sgl-workspace/sglang/python/sglang/srt/models/mllama4.py", line 83, in forward',
    "    hs = general_mm_embed_routine(",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 24.41 GiB. GPU 5 has a total capacity of "
    "79.44 GiB of which 9.57 GiB is free.",
)


def test_a_serving_time_oom_is_running_phase_with_serving_levers_not_a_weight_resize() -> None:
    analysis = classify_text(LLAMA4_SERVING_OOM)
    assert analysis.outcome == "failed"
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.phase) == ("cuda_oom", "running")
    assert analysis.to_json()["error"]["phase"] == "running"
    first = diagnose(analysis)[0]
    assert first.title == "CUDA out of memory while serving requests"
    assert "loading the weights" not in first.detail
    assert "new tokens 8,192" in first.detail  # the batch that was running
    flags = [s.flag for s in first.suggestions]
    assert flags[:2] == ["--mem-fraction-static", "--chunked-prefill-size"]
    assert {"--max-running-requests", "--context-length", "--cuda-graph-max-bs"} <= set(flags)
    assert "--tp-size" not in flags and "--quantization" not in flags
    mfs = first.suggestions[0]
    assert mfs.value == "0.83" and mfs.why.startswith("Lower --mem-fraction-static from 0.88 to 0.83")
    assert "opposite of the startup case" in mfs.why
    assert next(s for s in first.suggestions if s.flag == "--chunked-prefill-size").value == "4096"


# The overlap scheduler's forward thread (tp_worker_overlap_thread.py) as DeepSeek-V3 with DP attention runs
# it; the frame names are SGLang 0.4.x's, as in https://github.com/sgl-project/sglang/issues/3658's launch.
DP_ATTENTION_OOM = _log(
    "[2025-02-21 02:29:22 DP0 TP0] max_total_num_tokens=66295, chunked_prefill_size=4096, "
    "max_prefill_tokens=16384, "
    "max_running_requests=2049, context_len=163840",
    "[2025-02-21 02:29:40] The server is fired up and ready to roll!",
    "[2025-02-21 02:35:12 DP3 TP3] TpModelWorkerClient hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker_overlap_thread.py", line 109, in '
    "forward_thread_func",
    "    self.forward_thread_func_()",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker_overlap_thread.py", line 140, in '
    "forward_thread_func_",
    "    logits_output, next_token_ids = self.worker.forward_batch_generation(",
    '  File "/sgl-workspace/sglang/python/sglang/srt/layers/moe/ep_moe/layer.py", line 210, in forward',
    "    gateup_output = torch.empty(",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB.",
)


def test_an_oom_in_the_overlap_threads_forward_is_serving_not_pool_allocation() -> None:
    analysis = classify_text(DP_ATTENTION_OOM)
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.phase) == ("cuda_oom", "running")
    first = diagnose(analysis)[0]
    assert "allocating pools" not in first.detail
    assert first.suggestions[0].flag == "--mem-fraction-static"


# https://github.com/sgl-project/sglang/issues/2384 (DeepSeek-V2-Lite on AMD MI300, during graph capture)
MI300_OUT_OF_RESOURCES = _log(
    "[2024-12-07 02:54:20 TP5] Capture cuda graph begin. This can take up to several minutes.",
    '  File "/opt/conda/envs/py_3.9/lib/python3.9/site-packages/triton/compiler/compiler.py", line 385, in '
    "_init_handles",
    '    raise OutOfResources(self.metadata.shared, max_shared, "shared memory")',
    "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 131072, Hardware limit: "
    "65536. Reducing block sizes or `num_stages` may help.",
    "",
    "[2024-12-07 02:54:42 TP5] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1493, in '
    "run_scheduler_process",
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 631, in '
    "init_cuda_graphs",
    "    self.cuda_graph_runner = CudaGraphRunner(self)",
)


def test_a_triton_out_of_resources_without_an_error_suffix_is_the_failure_and_names_the_limit() -> None:
    analysis = classify_text(MI300_OUT_OF_RESOURCES)
    assert analysis.outcome == "failed"
    assert analysis.error is not None
    assert analysis.error.error_class == "cuda_graph_failed"
    assert analysis.error.text.startswith("triton.runtime.errors.OutOfResources: out of resource")
    first = diagnose(analysis)[0]
    assert first.title == "A GPU kernel needs more shared memory than this GPU has"
    assert "128 KiB of shared memory; this GPU has 64 KiB" in first.detail
    assert "its error is not in this log" not in first.detail
    assert "--attention-backend" in [s.flag for s in first.suggestions]


def test_the_out_of_resources_line_alone_repeated_by_every_rank_still_names_the_failure() -> None:
    line = (
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 131072, "
        "Hardware limit: 65536. Reducing block sizes or `num_stages` may help."
    )
    text = _log(
        "[2024-12-07 02:54:20 TP0] Capture cuda graph begin. This can take up to several minutes.",
        *[line] * 8,
        "[2024-12-07 02:54:42] Received sigquit from a child process. It usually means the child failed.",
    )
    analysis = classify_text(text)
    assert analysis.error is not None and analysis.error.line == 2
    assert analysis.error.values["limit"] == 65536


# https://github.com/sgl-project/sglang/issues/6496 (DeepSeek with NextN on 2x H100: a segfault printed
# onto the capture progress bar, then faulthandler's dump)
CAPTURE_SEGFAULT = _log(
    "[2025-05-22 17:18:02 TP0] Capture cuda graph begin. This can take up to several minutes. avail "
    "mem=14.10 GB",
    "Capturing batches (avail_mem=13.48 GB):  96%|█████████▊| 22/23 [00:39<00:01,  1.34s/it]"
    "[sgl-v3-deepseek-nextn-test-0:69418:0:69418] Caught signal 11 (Segmentation fault: address not mapped "
    "to "
    "object at address 0x10000)",
    "==== backtrace (tid:  69418) ====",
    " 0 0x0000000000042520 __sigaction()  ???:0",
    " 1 0x0000000000175c0f _PyEval_EvalFrameDefault()  ???:0",
    "=================================",
    "Fatal Python error: Segmentation fault",
    "",
    "Thread 0x00007feea3fff640 (most recent call first):",
    '  File "/usr/lib/python3.10/threading.py", line 324 in wait',
    '  File "/usr/local/lib/python3.10/dist-packages/tqdm/_monitor.py", line 60 in run',
)


def test_a_segfault_during_graph_capture_is_a_graph_failure_with_crash_advice() -> None:
    analysis = classify_text(CAPTURE_SEGFAULT)
    assert analysis.outcome == "failed"
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line) == ("cuda_graph_failed", 2)
    assert analysis.error.values["signal"] == "SIGSEGV"
    first = diagnose(analysis)[0]
    assert first.title == "The process crashed (SIGSEGV) during CUDA graph capture"
    flags = [s.flag for s in first.suggestions]
    assert flags[:2] == ["--disable-cuda-graph", "--disable-custom-all-reduce"]


# https://github.com/sgl-project/sglang/issues/11942 (DeepSeek-V3.2, DP attention, H200 TP 8 DP 8: an abort
# while serving an evaluation; the watchdog thread's frame from the same dump)
SERVING_ABORT = _log(
    "[2025-10-20 08:00:01] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V3.2-Exp', tp_size=8, "
    "dp_size=8, enable_dp_attention=True)",
    "[2025-10-20 08:09:40] The server is fired up and ready to roll!",
    "frame #4: <unknown function> + 0x94ac3 (0x7f9b33b36ac3 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
    "frame #5: clone + 0x44 (0x7f9b33bc7a74 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
    "",
    "Fatal Python error: Aborted",
    "",
    "Thread 0x00007f71b9fff640 (most recent call first):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2377 in watchdog_thread',
    '  File "/usr/lib/python3.12/threading.py", line 1012 in run',
)


def test_an_abort_after_ready_is_a_serving_failure_with_what_the_signal_means() -> None:
    analysis = classify_text(SERVING_ABORT)
    assert analysis.outcome == "failed"
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.phase) == ("other", "running")
    first = diagnose(analysis)[0]
    assert first.title == "The process crashed (SIGABRT)"
    assert "C++ exception or a CUDA error" in first.detail
    assert "--enable-dp-attention" in [s.flag for s in first.suggestions]


# https://github.com/sgl-project/sglang/issues/4289 (NCCL init failing; the raise line comes first)
NCCL_RAISE = _log(
    "[2025-03-11 15:02:40 TP0] Init torch distributed begin.",
    '  File "/home/u/miniconda3/envs/sglang/lib/python3.10/site-packages/sglang/srt/distributed/parallel_s'
    'tate.py", '
    "line 1100, in initialize_model_parallel",
    "    _TP = init_model_parallel_group(",
    '  File "/home/u/miniconda3/envs/sglang/lib/python3.10/site-packages/sglang/srt/distributed/device_com'
    "municators/"
    'pynccl_wrapper.py", line 329, in NCCL_CHECK',
    '    raise RuntimeError(f"NCCL error: {error_str}")',
    "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    "",
    "[2025-03-11 15:02:53] Received sigquit from a child process. It usually means the child failed.",
)


def test_the_message_after_a_raise_line_is_quoted_not_the_raise_line() -> None:
    analysis = classify_text(NCCL_RAISE)
    assert analysis.error is not None
    assert analysis.error.error_class == "nccl"
    assert analysis.error.text.startswith("RuntimeError: NCCL error: unhandled system error")
    assert analysis.error.phase == "distributed_init"


# https://github.com/sgl-project/sglang/issues/3460 (the same failure pasted with every indentation lost)
NCCL_FLAT_PASTE = NCCL_RAISE.replace("\n  File", "\nFile").replace("\n    ", "\n")


def test_a_traceback_pasted_without_indentation_still_quotes_the_message() -> None:
    assert '\nraise RuntimeError(f"NCCL error' in NCCL_FLAT_PASTE
    analysis = classify_text(NCCL_FLAT_PASTE)
    assert analysis.error is not None
    assert analysis.error.text.startswith("RuntimeError: NCCL error: unhandled system error")


def test_the_live_classifier_reads_these_logs_the_same_as_explain() -> None:
    for text in (LLAMA4_SERVING_OOM, MI300_OUT_OF_RESOURCES, CAPTURE_SEGFAULT, SERVING_ABORT, NCCL_RAISE):
        live = LogClassifier(clock=lambda: 0.0)
        for i in range(0, len(text), 97):
            live.feed(text[i : i + 97])
        live.process_exited(1)
        live.finish()
        whole = classify_text(text)
        assert live.analysis().error is not None and whole.error is not None
        assert (live.analysis().error.error_class, live.analysis().error.line) == (
            whole.error.error_class,
            whole.error.line,
        )


# https://github.com/MiaAI-Lab/Qwen3.8-Flash-Next-Dual-DGX-Sparks/issues/3 (2 nodes, TP 2: "Both ranks reach
# `CustomAllreduce is disabled because this process group spans across nodes.` and then hang indefinitely")
TWO_NODE_HANG = _log(
    "[2026-08-27 09:00:00] server_args=ServerArgs(model_path='/models/Qwen3.8-Flash-Next', tp_size=2, "
    "nnodes=2, node_rank=0, dist_init_addr='10.0.0.1:20000')",
    "[2026-08-27 09:00:20 TP0] Init torch distributed begin.",
    "[2026-08-27 09:00:21 TP0] CustomAllreduce is disabled because this process group spans across nodes.",
)


def test_a_two_node_launch_frozen_at_nccl_init_is_a_distributed_init_stall() -> None:
    clock = [0.0]
    live = LogClassifier(clock=lambda: clock[0])
    live.feed(TWO_NODE_HANG)
    clock[0] = 300.0
    assert live.check_stall() is None
    clock[0] = 3600.0
    event = live.check_stall()
    assert event is not None
    assert (event.values["phase"], event.values["ranks_reached"]) == ("distributed_init", ["TP0"])
    assert event.values["nodes_reached"] == [0]
    first = diagnose(live.analysis())[0]
    assert first.suggestions[0].flag == "NCCL_SOCKET_IFNAME"


# SGLang's own watchdog line (scheduler_runtime_checker_mixin.py, 0.5.x), then its SIGQUIT of the server
WATCHDOG = _log(
    "[2025-11-02 10:00:00] The server is fired up and ready to roll!",
    "[2025-11-02 10:30:00 TP3] Watchdog timeout (self.watchdog_timeout=300)",
    "[2025-11-02 10:30:05] Received sigquit from a child process. It usually means the child failed.",
)


def test_sglangs_watchdog_killing_a_hung_batch_is_a_stall_it_made_fatal() -> None:
    analysis = classify_text(WATCHDOG)
    assert analysis.outcome == "failed"
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.phase, analysis.error.line) == (
        "stalled",
        "running",
        2,
    )
    first = diagnose(analysis)[0]
    assert first.title == "The server hung and its watchdog stopped it"
    assert "300 s" in first.detail
    assert [s.flag for s in first.suggestions][-1] == "--watchdog-timeout"
