"""Rules that must not fire on ordinary lines: each case is a log that reads right only if a rule stays quiet
(a retry the store survived, a script's failed poll, the stop someone asked for, asyncio's event loop, a
switch that turns a package off) or picks the right words (a kernel's own SM need, an allocator OOM inside an
NCCL error, the traceback line that follows a kernel's assertions)."""

from __future__ import annotations

from sgtui.core.logs import classify_text, diagnose


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def test_a_store_client_retrying_its_connect_is_no_failure() -> None:
    """The worker node's TCPStore client retries while the master is not up yet (\"- retrying\")."""
    analysis = classify_text(
        _log(
            "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=16, nnodes=2, n"
            "ode_rank=1, dist_init_addr='10.0.0.1:5000')",
            "[W601 10:00:01.123456789 TCPStore.cpp:330] [c10d] TCP client failed to connect/validate to h"
            "ost 10.0.0.1:5000 - retrying (try=0, timeout=600000ms, delay=1123ms): Connection reset by pe"
            "er",
            "[2025-06-01 10:00:05 TP8] Init torch distributed begin.",
            "[2025-06-01 10:00:15 TP8] Load weight begin. avail mem=78.00 GB",
            "[2025-06-01 10:00:25 TP8] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avai"
            "l mem=60.00 GB, mem usage=18.00 GB.",
            "[2025-06-01 10:00:26 TP8] KV Cache is allocated. #tokens: 100000, K size: 5.00 GB, V size: 5"
            ".00 GB",
            "[2025-06-01 10:00:30 TP8] Capture cuda graph end. Time elapsed: 3.00 s",
            "[2025-06-01 10:00:32 TP0] max_total_num_tokens=100000, chunked_prefill_size=8192, max_prefil"
            "l_tokens=16384, max_running_requests=2048, context_len=8192",
            "[2025-06-01 10:00:33] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
            "[2025-06-01 10:00:35] The server is fired up and ready to roll!",
        )
    )
    assert analysis.outcome == "ready"


def test_a_scripts_failed_poll_before_ready_is_no_warm_up_failure() -> None:
    "Only 0.1.x's bare print of the warm-up's `Read timed out` (or a /generate URL) is the warm-up failin"
    "g."
    analysis = classify_text(
        _log(
            "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=1)",
            "[2025-06-01 10:00:05 TP0] Load weight begin. avail mem=78.00 GB",
            "[2025-06-01 10:00:09 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avai"
            "l mem=60.00 GB, mem usage=18.00 GB.",
            "[2025-06-01 10:00:10 TP0] KV Cache is allocated. #tokens: 100000, K size: 5.00 GB, V size: 5"
            ".00 GB",
            "[2025-06-01 10:00:20 TP0] max_total_num_tokens=100000, chunked_prefill_size=8192, max_prefil"
            "l_tokens=16384, max_running_requests=2048, context_len=8192",
            "[2025-06-01 10:00:21] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
            "HTTPConnectionPool(host='localhost', port=30000): Max retries exceeded with url: /get_model_"
            "info (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Fail"
            "ed to establish a new connection: [Errno 111] Connection refused'))",
            "[2025-06-01 10:00:22 TP0] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token"
            " usage: 0.00, #running-req: 0, #queue-req: 0",
            '[2025-06-01 10:00:23] INFO:     127.0.0.1:40000 - "POST /generate HTTP/1.1" 200 OK',
            "[2025-06-01 10:00:23] The server is fired up and ready to roll!",
        )
    )
    assert analysis.outcome == "ready"


def test_a_store_lost_after_the_stop_someone_asked_for_is_shutdown() -> None:
    """SIGTERM, then the TCPStore's peer goes away with the rest of the process group."""
    analysis = classify_text(
        _log(
            "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=2)",
            "[2025-06-01 10:00:05 TP0] Load weight begin. avail mem=78.00 GB",
            "[2025-06-01 10:00:05 TP1] Load weight begin. avail mem=78.00 GB",
            "[2025-06-01 10:00:30] SIGTERM received. signum=15 frame=None. Draining requests and shutting"
            " down...",
            "[W601 10:00:31.123456789 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=50, addr"
            "=[localhost]:45678, remote=[localhost]:29500): Connection reset by peer",
        )
    )
    assert analysis.outcome != "failed"


def test_a_watchdog_firing_while_weights_load_is_no_serving_failure() -> None:
    """Newer SGLang's watchdog is also armed while initialising: the log's own step stands."""
    analysis = classify_text(
        _log(
            "[2026-05-01 10:00:00] server_args=ServerArgs(model_path='/models/Big', tp_size=2, watchdog_t"
            "imeout=300)",
            "[2026-05-01 10:00:10 TP0] Init torch distributed begin.",
            "[2026-05-01 10:00:10 TP1] Init torch distributed begin.",
            "[2026-05-01 10:00:12 TP0] Load weight begin. avail mem=78.00 GB",
            "[2026-05-01 10:00:12 TP1] Load weight begin. avail mem=78.00 GB",
            "[2026-05-01 10:05:12 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=F"
            "alse)",
            "[2026-05-01 10:05:13] Received sigquit from a child process. It usually means the child failed.",
        )
    )
    assert analysis.error is not None and analysis.error.phase == "loading_weights"


def test_asyncios_event_loop_is_not_the_schedulers() -> None:
    """`asyncio.get_event_loop()` in a source line is no call of the serving loop."""
    analysis = classify_text(
        _log(
            "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=1)",
            "[2025-06-01 10:00:05 TP0] Load weight begin. avail mem=78.00 GB",
            "[2025-06-01 10:00:09 TP0] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 2400'
            ", in run_scheduler_process",
            "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_"
            "rank)",
            '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 300,'
            " in __init__",
            "    self.tp_worker = TpWorkerClass(",
            '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/tp_worker.py", line 80, '
            "in __init__",
            "    self.model_runner = ModelRunner(",
            '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/model_executor/model_runner.py", '
            "line 230, in __init__",
            "    self.load_model()",
            '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/model_executor/model_runner.py", '
            "line 600, in load_model",
            "    self.model = get_model(",
            '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/model_loader/loader.py", line 400'
            ", in load_model",
            "    loop = asyncio.get_event_loop()",
            '  File "/usr/lib/python3.10/asyncio/events.py", line 656, in get_event_loop',
            "    raise RuntimeError('There is no current event loop in thread %r.'",
            "RuntimeError: There is no current event loop in thread 'Thread-1'.",
            "[2025-06-01 10:00:10] Received sigquit from a child process. It usually means the child failed.",
        )
    )
    assert analysis.error is not None and analysis.error.phase == "loading_weights"


def test_a_switch_that_turns_a_package_off_did_not_select_it() -> None:
    "`disable_flashinfer=True` and \"No module named 'flashinfer'\": the flag is no reason for the import"
    "."
    analysis = classify_text(
        _log(
            "[2024-08-01 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=1, disable_flas"
            "hinfer=True)",
            "Traceback (most recent call last):",
            '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
            "    return _run_code(code, main_globals, None,",
            '  File "/opt/sglang/python/sglang/srt/layers/radix_attention.py", line 7, in <module>',
            "    from flashinfer.cascade import merge_state",
            "ModuleNotFoundError: No module named 'flashinfer'",
        )
    )
    assert "--disable-flashinfer" not in diagnose(analysis)[0].detail


def test_a_one_node_launch_gets_one_host_advice_whatever_its_dist_init_addr() -> None:
    """nnodes=1 with dist_init_addr 127.0.0.1: Gloo's peer is a process on this host."""
    analysis = classify_text(
        _log(
            "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=2, nnodes=1, no"
            "de_rank=0, dist_init_addr='127.0.0.1:5000')",
            "[2025-06-01 10:00:05 TP0] Init torch distributed begin.",
            "[2025-06-01 10:00:05 TP1] Init torch distributed begin.",
            "[2025-06-01 10:00:15 TP0] Load weight begin. avail mem=78.00 GB",
            "[2025-06-01 10:00:15 TP1] Load weight begin. avail mem=78.00 GB",
            "[2025-06-01 10:01:15 TP1] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2400, in run_scheduler_process',
            "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_"
            "rank)",
            '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 600, in load_model',
            "    dist.barrier(group=get_tp_group().cpu_group)",
            "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer"
            " [127.0.0.1]:45492",
        )
    )
    flags = {s.flag for s in diagnose(analysis)[0].suggestions}
    assert "NCCL_SOCKET_IFNAME" not in flags


def test_a_capture_failure_wrapping_an_nccl_cuda_oom_stays_a_capture_failure() -> None:
    """Only a peer, store, Gloo or watchdog failure inside the capture wrapper is another process gone."""
    analysis = classify_text(
        _log(
            "[2025-04-26 20:55:20] server_args=ServerArgs(model_path='/models/m', tp_size=4)",
            "[2025-04-26 20:55:30 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avai"
            "l mem=89.06 GB, mem usage=0.94 GB.",
            "[2025-04-26 20:55:31 TP0] KV Cache is allocated. #tokens: 100000, K size: 5.00 GB, V size: 5"
            ".00 GB",
            "[2025-04-26 20:55:32 TP0] Capture cuda graph begin. This can take up to several minutes.",
            "[2025-04-26 20:55:40 TP0] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 260, in __init__',
            "    self.capture()",
            '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 330, in capture',
            "    ) = self.capture_one_batch_size(bs, forward)",
            "Exception: Capture cuda graph failed: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NC"
            "CLUtils.hpp:317, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2"
            ".21.5",
            "ncclUnhandledCudaError: Call to CUDA function failed.",
            "Last error:",
            "Cuda failure 'out of memory'",
            "Possible solutions:",
            "1. disable cuda graph by --disable-cuda-graph",
            "2. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
        )
    )
    assert analysis.error is not None and analysis.error.error_class == "cuda_graph_failed"


def test_a_kernels_sm_need_is_not_the_releases_floor() -> None:
    '"This kernel only supports sm100" is a backend\'s need, not "SGLang only supports sm75 and above".'
    analysis = classify_text(
        _log(
            "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=1, attention_ba"
            "ckend='trtllm_mla')",
            "[2025-06-01 10:00:05 TP0] Load weight begin. avail mem=78.00 GB",
            "[2025-06-01 10:00:09 TP0] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2400, in run_scheduler_process',
            "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_"
            "rank)",
            '  File "/sgl/python/sglang/srt/layers/attention/trtllm_mla_backend.py", line 60, in __init__',
            '    raise RuntimeError("This kernel only supports sm100")',
            "RuntimeError: This kernel only supports sm100",
        )
    )
    assert "compute capability" not in diagnose(analysis)[0].detail


def test_the_traceback_after_kernel_assertions_is_not_cut() -> None:
    """The traceback ends with CUDA's own \"device-side assert triggered\" line: it is complete."""
    analysis = classify_text(
        _log(
            "[2025-03-01 20:34:40 TP0] Load weight begin. avail mem=70.00 GB",
            "[2025-03-01 20:34:41 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avai"
            "l mem=60.00 GB, mem usage=10.00 GB.",
            "[2025-03-01 20:34:45] The server is fired up and ready to roll!",
            "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1478: indexSelectSmallIndex: block: [49,0,0],"
            " thread: [126,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
            "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1478: indexSelectSmallIndex: block: [49,0,0],"
            " thread: [127,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
            "Exception in thread Thread-2 (forward_thread_func):",
            "Traceback (most recent call last):",
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker_overlap_thread.py", line '
            "196, in forward_thread_func",
            "    self.scheduler_stream.synchronize()",
            '  File "/usr/local/lib/python3.10/dist-packages/torch/cuda/streams.py", line 100, in synchro'
            "nize",
            "    super().synchronize()",
            "RuntimeError: CUDA error: device-side assert triggered",
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrac"
            "e below might be incorrect.",
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        )
    )
    assert "last_traceback_frame" not in analysis.facts
