"""The earliest fatal event is the root cause; the failures that follow from it are listed as consequences,
and PyTorch's, NCCL's, Gloo's and the store's distributed failures are read in every wording with their rank,
collective and timeout. Excerpts of real logs from public issues (the source of each is in its comment)."""

from __future__ import annotations

from sgtui.commands.explain import render
from sgtui.core.logs import classify_text, diagnose


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


READY = (
    "[2024-10-16 03:10:02] server_args=ServerArgs(model_path='Qwen/Qwen2-72B-Instruct', tp_size=8)",
    "[2024-10-16 03:12:40] The server is fired up and ready to roll!",
    "[2024-10-16 03:20:00 TP0] Decode batch. #running-req: 3, #token: 900, token usage: 0.01, "
    "gen throughput (token/s): 80.1, #queue-req: 0",
)

# https://github.com/sgl-project/sglang/issues/1693 (the torch watchdog's own lines, as posted)
TORCH_WATCHDOG = _log(
    *READY,
    "[rank1]:[E1016 03:31:38.928019586 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective "
    "operation "
    "timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, "
    "Timeout(ms)=600000) ran for 600071 milliseconds before timing out.",
    "[rank4]:[E1016 03:31:38.928463388 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught collective "
    "operation "
    "timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, "
    "Timeout(ms)=600000) ran for 600071 milliseconds before timing out.",
    "[rank4]:[E1016 03:31:38.929234295 ProcessGroupNCCL.cpp:1709] [PG 3 Rank 4] Timeout at NCCL work: 9141, "
    "last enqueued NCCL work: 9141, last completed NCCL work: 9140.",
    "[rank4]:[E1016 03:31:38.929246900 ProcessGroupNCCL.cpp:627] [Rank 4] To avoid data inconsistency, we "
    "are "
    "taking the entire process down.",
)


def test_pytorchs_watchdog_timeout_is_an_nccl_failure_with_rank_collective_and_timeout() -> None:
    """The watchdog takes the process down: fatal even after ready, with what it says read out."""
    analysis = classify_text(TORCH_WATCHDOG)
    assert analysis.outcome == "failed"
    error = analysis.error
    assert error is not None and error.error_class == "nccl" and error.phase == "running"
    assert error.line == 4 and error.rank == "rank1"
    values = error.values
    assert (values["collective"], values["timeout_s"], values["seq"]) == ("ALLGATHER_BASE", 600.0, 9141)
    assert [c.rank for c in error.consequences] == ["rank4"]


def test_timeout_at_nccl_work_alone_is_a_failure() -> None:
    """Some torch releases print only the "[PG N Rank R] Timeout at NCCL work" line before the teardown."""
    log = _log(*READY, TORCH_WATCHDOG.splitlines()[5])
    error = classify_text(log).error
    assert error is not None and error.error_class == "nccl" and error.values["seq"] == 9141


# https://github.com/hiyouga/LlamaFactory/issues/8549 (torch 2.5+'s heartbeat monitor wording)
def test_a_stuck_watchdog_is_an_nccl_failure() -> None:
    log = _log(
        *READY,
        "[rank2]:[E704 13:48:58.260494728 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank 2] "
        "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring "
        "enqueued "
        "collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the "
        "watchdog.",
    )
    error = classify_text(log).error
    assert error is not None and error.error_class == "nccl"
    assert (error.rank, error.values["stuck_s"]) == ("rank2", 480)


def test_nccl_result_codes_gloo_and_the_store_are_distributed_failures() -> None:
    lines = {
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error "
        "(run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5 ncclUnhandledCudaError: Call to CUDA "
        "function failed.": ("nccl_result", "ncclUnhandledCudaError"),
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system "
        "error "
        "(run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5 ncclSystemError: System call (e.g. "
        "socket, malloc) or external library call failed or device error.": (
            "nccl_result",
            "ncclSystemError",
        ),
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
        "[10.0.0.12]:61453": ("backend", "gloo"),
        "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:525] Read error "
        "[10.0.0.12]:2917: Connection reset by peer": ("backend", "gloo"),
        "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/2 clients "
        "joined.": ("timeout_s", 601),
    }
    for line, (key, value) in lines.items():
        log = _log("[2025-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=2, nnodes=2)", line)
        error = classify_text(log).error
        assert error is not None and error.error_class == "nccl", line
        assert error.values[key] == value, line


# The fault itself, then the collectives other ranks were waiting in: https://github.com/sgl-project/sglang/
# issues/8336 (the fault in flash-attention and the watchdog thread reporting it, as posted), with the other
# ranks' watchdog timeouts that follow such a fault (sglang#1693's wording).
FAULT_THEN_NCCL = _log(
    *READY,
    "CUDA error (/sgl-kernel/build/_deps/repo-flash-attention-src/hopper/flash_fwd_launch_template.h:188): "
    "an "
    "illegal memory access was encountered",
    "[rank0]:[E728 11:07:49.454848243 ProcessGroupNCCL.cpp:1896] [PG ID 2 PG GUID 3 Rank 0] Process group "
    "watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered",
    "[rank3]:[E728 11:17:49.101 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=5653, OpType=ALLREDUCE, NumelIn=58720256, NumelOut=58720256, "
    "Timeout(ms)=600000) ran for 600011 milliseconds before timing out.",
    "[2024-10-16 03:42:00] Received sigquit from a child process. It usually means the child failed.",
)


def test_a_cuda_fault_before_nccl_errors_is_the_root_cause() -> None:
    analysis = classify_text(FAULT_THEN_NCCL)
    error = analysis.error
    assert error is not None and error.error_class == "other"
    assert (error.line, error.values["cuda_fault"]) == (4, "illegal_address")
    kinds = [c.kind for c in error.consequences]
    assert "nccl" in kinds and kinds[-1] == "sigquit"
    assert "illegal memory access" in diagnose(analysis)[0].detail
    text = render("x.log", analysis, diagnose(analysis))
    assert "then, as a consequence (line 6 rank3, nccl)" in text


def test_nccl_warn_of_cuda_failure_700_is_the_fault() -> None:
    """NCCL reporting the CUDA fault it met ("Cuda failure 700") is the fault, not an NCCL problem."""
    log = _log(
        *READY,
        "n122-164-108:7400:7642 [1] include/alloc.h:125 NCCL WARN Cuda failure 700 'an illegal memory access "
        "was encountered'",
        "[2024-10-16 03:42:00] Received sigquit from a child process. It usually means the child failed.",
    )
    error = classify_text(log).error
    assert error is not None and error.error_class == "other" and error.values["cuda_fault"]


# A segfault on one rank (faulthandler's dump, as in https://github.com/sgl-project/sglang/issues/22987), then
# SGLang's watchdog on the batch that can no longer finish (https://github.com/sgl-project/sglang/issues/3752).
SEGFAULT_THEN_WATCHDOG = _log(
    *READY,
    "Fatal Python error: Segmentation fault",
    "",
    "Thread 0x000077f3effff6c0 (most recent call first):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/utils/watchdog.py", line 147 in _watchdog_once',
    "",
    "Current thread 0x00007f2a1c7fe640 (most recent call first):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 1720 in '
    "forward_decode",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1395 in run_batch',
    "[2024-10-16 03:30:00 TP4] Watchdog timeout (self.watchdog_timeout=300)",
    "[2024-10-16 03:30:05] Received sigquit from a child proces. It usually means the child failed.",
    "Killed",
)


def test_a_watchdog_after_a_segfault_is_its_consequence() -> None:
    analysis = classify_text(SEGFAULT_THEN_WATCHDOG)
    error = analysis.error
    assert error is not None and error.error_class == "other"
    assert error.values["signal"] == "SIGSEGV" and error.line == 4 and error.phase == "running"
    assert [c.kind for c in error.consequences][:2] == ["stalled", "sigquit"]


def test_an_exception_on_one_rank_before_the_others_time_out_is_the_root() -> None:
    """A rank that died of an exception leaves its peers waiting in a collective: it is the cause."""
    log = _log(
        *READY,
        "[2024-10-16 03:25:00 TP3] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 608, in '
        "event_loop_normal",
        "    result = self.run_batch(batch)",
        "ValueError: token id 151936 out of range",
        TORCH_WATCHDOG.splitlines()[3],
    )
    error = classify_text(log).error
    assert error is not None and error.text.startswith("ValueError")
    assert error.rank == "TP3" and [c.kind for c in error.consequences] == ["nccl"]


def test_an_error_survived_long_before_the_timeout_is_not_its_cause() -> None:
    """An exception hours before a 600 s collective timeout did not start that wait."""
    log = _log(
        *READY,
        "[2024-10-16 01:00:00 TP3] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 608, in '
        "event_loop_normal",
        "    result = self.run_batch(batch)",
        "ValueError: token id 151936 out of range",
        "[2024-10-16 01:00:01 TP0] Decode batch. #running-req: 3, #token: 900, token usage: 0.01, "
        "gen throughput (token/s): 80.1, #queue-req: 0",
        "[2024-10-16 03:31:38 TP1] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=9141, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600071 "
        "milliseconds before timing out.",
    )
    error = classify_text(log).error
    assert error is not None and error.error_class == "nccl" and error.rank == "TP1"
