"""Distributed failures in the words PyTorch's process groups, NCCL, Gloo and torch.distributed's store have
used since SGLang's first releases, with the rank, the collective and the timeout read out.

Sources (PyTorch's c10d, `torch/csrc/distributed/c10d/`):
- ProcessGroupNCCL.cpp `checkTimeout`: "[Rank N] Watchdog caught collective operation timeout:
  WorkNCCL(SeqNum=S, OpType=ALLREDUCE, NumelIn=.., NumelOut=.., Timeout(ms)=600000) ran for 600013
  milliseconds before timing out." (1.x prints `WorkNCCL(OpType=..., TensorShape=[..], Timeout(ms)=..)`);
- ProcessGroupNCCL.cpp watchdog: "[PG 3 Rank 4] Timeout at NCCL work: 9141, last enqueued NCCL work: ..",
  "Exception (either an error or timeout) detected by watchdog at work: ..", "Process group watchdog thread
  terminated with exception: ..", "Some NCCL operations have failed or timed out ... taking the entire
  process down";
- the heartbeat monitor (2.3+): "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress
  in monitoring enqueued collectives";
- NCCLUtils: "NCCL error in: ..., unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version
  2.x" with the result names ncclUnhandledCudaError, ncclSystemError, ncclInternalError, ncclRemoteError, ...;
- Gloo's tcp pair (`gloo/transport/tcp/pair.cc`): "Connection closed by peer [10.0.0.2]:1234", "Connection
  reset by peer", "Timed out waiting ...ms for recv operation to complete";
- the store and rendezvous: "DistStoreError: Timed out after 601 seconds waiting for clients. 1/2 clients
  joined.", "Socket Timeout", "RendezvousTimeoutError", "Timed out initializing process group in store based
  barrier", "DistNetworkError";
- the TCPStore client (`TCPStore.cpp`, `socket.cpp`): "[c10d] recvValue failed on SocketImpl(...): Connection
  reset by peer", "nonce == returnedNonce INTERNAL ASSERT FAILED ... Ping failed, invalid nonce returned" (the
  store's server went away: its node died); "The client socket has failed to connect to [host]:port (errno:
  111 - Connection refused)" and "TCP client failed to connect/validate ... - retrying" are printed on every
  retry while the master's store is not up yet, and the heartbeat monitor's "Failed to check the \"should
  dump\" flag on TCPStore" at any exit: all weak.
"""

from __future__ import annotations

import re
from typing import Any

from sgtui.core.logs.prefilter import NCCL_INIT_FAILED

_RANK = re.compile(r"\[(?:PG [^\]]*?)?Rank (\d+)\]")
_OP = re.compile(r"OpType=(\w+)")
_TIMEOUT_MS = re.compile(r"Timeout\(ms\)=(\d+)")
_RAN_MS = re.compile(r"ran for (\d+) milliseconds")
_SEQ = re.compile(r"SeqNum=(\d+)|Timeout at NCCL work: (\d+)")
_STUCK_S = re.compile(r"watchdog got stuck for (\d+) seconds")
_STORE_S = re.compile(r"Timed out after (\d+) seconds")
_JOINED = re.compile(r"(\d+)/(\d+) clients joined")
_PEER = re.compile(r"(?:closed|reset) by peer \[?([\w.:-]+?)\]?(?::(\d+))?(?:\s|$)")

# NCCL's result codes as PyTorch names them ("ncclUnhandledCudaError: Call to CUDA function failed.")
_NCCL_RESULTS = (
    "ncclUnhandledCudaError",
    "ncclSystemError",
    "ncclInternalError",
    "ncclInvalidUsage",
    "ncclInvalidArgument",
    "ncclRemoteError",
    "ncclInProgress",
)
_NCCL_CAUSES = ("NCCL error", "DistBackendError", "NCCL communicator was aborted", *_NCCL_RESULTS)
# the watchdog ending the process: fatal whatever happened before (TORCH_NCCL_ASYNC_ERROR_HANDLING tears down)
_WATCHDOG_FATAL = (
    "Watchdog caught collective operation timeout",
    "Timeout at NCCL work",
    "watchdog got stuck",
    "taking the entire process down",
    "detected by watchdog",
)
_STORE = (
    "DistStoreError",
    "RendezvousTimeoutError",
    "Timed out initializing process group in store based barrier",
    "DistNetworkError",
    "clients joined",
)


_STORE_LOST = (
    "recvValue failed",
    "Ping failed",
    "returnedNonce",
    "recvBytes failed",
    "sendBytes failed",
    "Connection reset",
    "Broken pipe",
    "timed out after",  # socket.cpp waitForInput: "socket ... timed out after 1800000ms"
)


def distributed_failure(body: str) -> tuple[str, str, dict[str, Any]] | None:
    """("nccl", strength, values) for a line that says a collective, a communicator, Gloo's connection or the
    rendezvous store failed; None for anything else (NCCL's INFO chatter among it)."""
    if "ccl" in body or "NCCL" in body or "Watchdog caught" in body or "watchdog got stuck" in body:
        if "NCCL WARN" in body:
            return "nccl", "weak", _values(body)
        if "NCCL INFO" in body:
            # ncclCommInitRank's error unwinding (init.cc/bootstrap.cc returning a non-zero ncclResult_t):
            # the communicator was not created, whatever the WARN before it said
            if NCCL_INIT_FAILED.search(body):  # weak: fatal only if the launch went no further (signals.py)
                return "nccl", "weak", {**_values(body), "comm_init": True, "init_chain": True}
            return None
        if any(needle in body for needle in _WATCHDOG_FATAL):
            return "nccl", "fatal", _values(body)
        if any(needle in body for needle in _NCCL_CAUSES):
            return "nccl", "cause", _values(body)
    if "by peer" in body or "gloo" in body or "pair.cc" in body:
        gloo = "gloo" in body or "pair.cc" in body
        reset = "Connection reset" in body or "Timed out" in body
        if "Connection closed by peer" in body or (gloo and reset):
            return "nccl", "cause", {**_values(body), "backend": "gloo"}
    if "TCPStore" in body or "[c10d]" in body or "Ping failed" in body:
        if "should dump" in body or "Connection refused" in body or "retrying" in body:
            return "nccl", "weak", {**_values(body), "store": True}
        if any(needle in body for needle in _STORE_LOST):
            return "nccl", "cause", {**_values(body), "store": True}
    if any(needle in body for needle in _STORE) or ("Socket Timeout" in body and "store" in body.lower()):
        values = _values(body)
        values["store"] = True
        m = _STORE_S.search(body)
        if m:
            values["timeout_s"] = int(m.group(1))
        m = _JOINED.search(body)
        if m:
            values["joined"], values["world"] = int(m.group(1)), int(m.group(2))
        return "nccl", "cause", values
    return None


def _values(body: str) -> dict[str, Any]:
    values: dict[str, Any] = {"shm": "/dev/shm" in body or "shared memory" in body}
    m = _RANK.search(body)
    if m:
        values["failed_rank"] = int(m.group(1))
    m = _OP.search(body)
    if m:
        values["collective"] = m.group(1).strip("_")
    m = _TIMEOUT_MS.search(body)
    if m:
        values["timeout_s"] = int(m.group(1)) / 1000
    m = _RAN_MS.search(body)
    if m:
        values["ran_s"] = int(m.group(1)) / 1000
    m = _SEQ.search(body)
    if m:
        values["seq"] = int(m.group(1) or m.group(2))
    m = _STUCK_S.search(body)
    if m:
        values["stuck_s"] = int(m.group(1))
    for name in _NCCL_RESULTS:
        if name in body:
            values["nccl_result"] = name
            break
    m = _PEER.search(body)
    if m:
        values["peer"] = m.group(1) + (f":{m.group(2)}" if m.group(2) else "")
    if (
        "Watchdog caught" in body
        or "Timeout at NCCL work" in body
        or "watchdog got stuck" in body
        or "detected by watchdog" in body
    ):
        values["watchdog"] = True
    elif any(needle in body for needle in _COMM_INIT):
        values["comm_init"] = True
    return values


# NCCL creating its communicators (bootstrap.cc, socket.cc, init.cc: ncclCommInitRank): connecting to the
# peers' bootstrap sockets is what fails when a node is unreachable
_COMM_INIT = (
    "socketStartConnect",
    "ncclSocketConnect",
    "ncclOsSocketPollConnect",
    "bootstrap",
    "Bootstrap",
    "ncclCommInitRank",
    "commAlloc",
)
