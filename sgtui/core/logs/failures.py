"""Lines that say a launch went wrong, as (error class, strength, values), and the traceback frames that name
the step that failed. Each rule runs after a cheap substring test."""

from __future__ import annotations

import re
from typing import Any

from sgtui.core.logs.crashes import crash_values
from sgtui.core.logs.distributed import distributed_failure
from sgtui.core.logs.rules import CAPTURE_FAILED, SUMMARY_PAIR, num
from sgtui.core.logs.traceback import exception_line

_NUM = r"(-?\d+(?:\.\d+)?)"
_FRACTION = r"(-?\d+(?:\.\d+)?(?:[eE]-?\d+)?)"  # Python prints 0.00001 as 1e-05

# ---- failures --------------------------------------------------------------------------------------------

_NOT_ENOUGH = re.compile(
    r"Not enought? memory\. Please try to increase --mem-fraction-static"
    r"(?:\.? ?Current value: (?:(?:self\.server_args\.)?mem_fraction_static=)?" + _FRACTION + ")?"
)
_UNDER_MFS = re.compile(r"--mem-fraction-static=" + _NUM + r"\. Raise")
_LEAVE_NO = re.compile(r"leave no GPU memory for the KV cache under --mem-fraction-static=" + _NUM)
_UNBALANCED = re.compile(
    r"(min_per_gpu_memory|local_gpu_memory|pre_model_load_memory)=" + _NUM + r"(?=,|$|\s)"
)
_OTHER_DEVICE = re.compile(r"\b(?:NPU|HIP|XPU|MUSA) out of memory")  # Ascend, ROCm, Intel, Moore Threads
_OOM_ALLOC = re.compile(r"Tried to allocate " + _NUM + r" ?([GMK]iB)")
_OOM_TOTAL = re.compile(r"total capacity of " + _NUM + r" ?GiB of which " + _NUM + r" ?([GMK]iB) is free")
_ARCH = re.compile(
    r"Model architectures? \[?([^\]]*?)\]? (?:are|is) not supported|"
    r"Model architectures \[(.*?)\] failed to be inspected"
)
_UNSUPPORTED_ARCH = re.compile(r"nsupported architectures?: ?\[?'?(\w+)")
_HF_ARCH = re.compile(r"model type `([^`]+)` but Transformers does not recognize")
_PORT_TUPLE = re.compile(r"address \(?'?([^',)]*)'?,\s*(\d+)")
_PORT_WORD = re.compile(r"[Pp]ort[ =:]+(\d{2,5})")
_PORT_ADDR = re.compile(r"(?:tcp://[\w.\-]+|\[[0-9a-fA-F:.]*\]|\b\d{1,3}(?:\.\d{1,3}){3}):(\d{2,5})\b")
_WATCHDOG = re.compile(r"watchdog_timeout=" + _NUM)
_DIED = re.compile(r"Rank (\d+) scheduler (?:is dead|died during initialization \(exit code: (-?\d+)\))")
_EXIT_CODE = re.compile(r"exit ?code[: =]+(-?\d+)", re.IGNORECASE)
_ARG_ERROR = re.compile(
    r": error: (unrecognized arguments: .*|argument .*|ambiguous option: .*|"
    r"the following arguments are required: .*|invalid choice: .*)"
)
_INCOMPATIBLE = re.compile(r"Speculative decoding for (\w+) is not compatible with radix cache")
_DIVISIBLE = re.compile(
    r"Total number of ([\w ]+?) \((\d+)\) must be divisible by tensor parallel size \((\d+)\)"
)
_CONTEXT_TOO_LONG = re.compile(
    r"User-specified context_length \((\d+)\) is greater than the derived "
    r"context_length \((\d+)\)"
)


def failure(body: str) -> tuple[str | None, str, dict[str, Any]] | None:
    """(error class, strength, values) when a line signals a failure, else None.

    Strengths: "fatal" (the message itself ends the launch), "cause" (fatal before the server is ready),
    "weak" (only counts when something died), "generic" (an exception of no known class), "death" (a
    process died; the cause is elsewhere).
    """
    if " failed: " in body and "Capture " in body and CAPTURE_FAILED.search(body):
        # the graph runner wraps whatever failed while capturing (cuda_graph_runner.py: `raise
        # Exception(f"Capture cuda graph failed: {e}...")`): a peer that went away is a distributed failure
        wrapped = distributed_failure(body)
        gone = wrapped is not None and any(
            wrapped[2].get(k) for k in ("peer", "store", "watchdog", "backend")
        )
        if wrapped is not None and wrapped[1] != "weak" and gone:
            return "nccl", "fatal", {**wrapped[2], "during": "capturing_graphs"}
        oom = "out of memory" in body
        return "cuda_graph_failed", "fatal", {"oom": oom, **(oom_values(body) if oom else {})}
    if "memory" in body:
        if (
            "out of memory. Try to lower your batch size" in body
            or "out of memory. This should never" in body
        ):
            # the KV pool had no free slots for a batch (schedule_batch.alloc_token_slots, 0.4-0.5.x, and the
            # 2026 alloc_for_extend / alloc_for_decode): logged, then raised: the scheduler dies serving
            m = _KV_TRY.search(body)
            values = {"kv_runtime": True, "during_batch": True}
            return "other", "fatal", {**values, "tokens": int(m.group(1))} if m else values
        if "memory allocation failed with OOM" in body:
            # PyTorch's CUDACachingAllocator warning before the OutOfMemoryError: "memory allocation failed
            # with OOM on device 0 while trying to allocate 4340000000 bytes (free: 3779..., total: 287...)"
            # (the allocator then frees its cache and retries: only a death after it makes it the cause)
            return "cuda_oom", "weak", allocator_oom_values(body)
        if "Not enough memory" in body or "Not enought memory" in body:
            m = _NOT_ENOUGH.search(body)
            values = {"mem_fraction_static": num(m.group(1))} if m and m.group(1) else {}
            return "not_enough_memory", "fatal", values
        if "leave no GPU memory for the KV cache" in body:
            m = _LEAVE_NO.search(body)
            return "not_enough_memory", "fatal", {"mem_fraction_static": num(m.group(1))} if m else {}
        if "Not enough GPU memory for hybrid" in body:
            return "not_enough_memory", "fatal", {"pool": "mamba"}
        if "memory capacity is unbalanced" in body:
            # Raised (ValueError) up to 0.5.x; only a warning by default since (the launch goes on), so
            # the logged form counts only when the launch dies.
            values = {k: num(v) for k, v in _UNBALANCED.findall(body)}
            raised = "Error: The memory capacity" in body
            return "memory_unbalanced", "fatal" if raised else "weak", values
        if "out of memory" in body and ("CUDA" in body or "cuda" in body or _OTHER_DEVICE.search(body)):
            return "cuda_oom", "cause", oom_values(body)
    if "Raise --mem-fraction-static above" in body:
        # the second line of a wrapped "... leave no GPU memory for the KV cache under\n
        # --mem-fraction-static=0.94. Raise ..." still names the value in use
        m = _UNDER_MFS.match(body)
        return "not_enough_memory", "fatal", {"mem_fraction_static": num(m.group(1))} if m else {}
    if "too small to serve any requests" in body or "Memory pool size is too small" in body:
        if "mamba" in body:  # 0.5.23: "Hybrid (mamba/linear-attention) state cache is too small to serve ..."
            values: dict[str, Any] = {"pool": "mamba"}
            for key, raw in SUMMARY_PAIR.findall(body):
                if key in ("max_num_reqs", "mamba_ratio", "max_mamba_cache_size"):
                    values[key] = num(raw)
            return "not_enough_memory", "fatal", values
        return "not_enough_memory", "fatal", {}
    if "max_running_request is zero" in body:
        return "not_enough_memory", "fatal", {}
    if "SWA pool" in body and ("cannot hold even one request" in body or "leaves no room" in body):
        return "not_enough_memory", "fatal", {"pool": "swa"}
    if "OutOfMemoryError" in body:
        return "cuda_oom", "cause", oom_values(body)
    if "not supported for now" in body or "failed to be inspected" in body:
        m = _ARCH.search(body)
        if m:
            names = (m.group(1) or m.group(2) or "").replace("'", "").replace('"', "").strip()
            return "unsupported_model", "fatal", {"architectures": names}
    if "Transformers does not recognize" in body:
        m = _HF_ARCH.search(body)
        return "unsupported_model", "fatal", {"model_type": m.group(1)} if m else {}
    if "nsupported architecture" in body and body[:1].isalpha():
        m = _UNSUPPORTED_ARCH.search(body)  # 0.2/0.3: "Unsupported architectures: X. Supported list: [...]"
        return "unsupported_model", "fatal", {"architectures": m.group(1)} if m else {}
    if "must be divisible by tensor parallel size" in body:
        m = _DIVISIBLE.search(body)
        values = {"what": m.group(1), "count": int(m.group(2)), "tp_size": int(m.group(3))} if m else {}
        return "bad_arguments", "fatal", {"flag": "--tp-size", **values}
    if "in use" in body and ("already in use" in body or "Address in use" in body):
        lowered = body.lower()
        if "trying" in lowered or "try next" in lowered or "retry" in lowered:
            return None
        return "port_in_use", "fatal", port_values(body)
    if "[Errno 98]" in body:
        return "port_in_use", "fatal", port_values(body)
    if ": error: " in body:
        m = _ARG_ERROR.search(body)
        if m:
            return "bad_arguments", "fatal", {"argparse": m.group(1)}
    if "not compatible with radix cache" in body:
        m = _INCOMPATIBLE.search(body)
        return "incompatible_flags", "fatal", {"conflict": "radix_cache", "arch": m.group(1) if m else None}
    if "User-specified context_length" in body and (
        "To allow overriding" in body or "Error:" in body[:60] or "Warning: User-specified" not in body
    ):
        # model_config.py raises it when SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is off (0.5.x's default;
        # the message then says "To allow overriding this maximum, set the env var ..."); with it on (0.4's
        # default) it logs "Warning: User-specified ..." and goes on (every EAGLE draft model printed it)
        m = _CONTEXT_TOO_LONG.search(body)
        values = {"requested": int(m.group(1)), "derived": int(m.group(2))} if m else {}
        return "bad_arguments", "fatal", {"flag": "--context-length", **values}
    if (
        "illegal" in body
        or "cudaErrorIllegalAddress" in body
        or "Cuda failure 700" in body
        or "Assertion `" in body
        or "device-side assert triggered" in body
    ):
        # a CUDA fault is the fault, also where NCCL or the process group's watchdog is what reports it
        # ("NCCL WARN Cuda failure 700 'an illegal memory access was encountered'")
        fault = crash_values(body)
        if fault is not None:
            return None, "death", fault
    found = distributed_failure(body)
    if found is not None:
        return found
    if "atchdog timeout" in body and "watchdog_timeout" in body:
        # SGLang's scheduler watchdog: one forward batch made no progress for --watchdog-timeout seconds, so
        # it SIGQUITs the server (scheduler_runtime_checker_mixin.py, 0.5.x; 0.5.23's utils/watchdog.py
        # words it "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)"): a stall SGLang
        # made fatal. The soft watchdog (soft=True) only logs. It only counts while a batch runs (`if
        # self.cur_batch is not None`, scheduler.py since 0.4): the event loop had started, the server served.
        m = _WATCHDOG.search(body)
        strength = "weak" if "soft=True" in body else "fatal"
        values = {"watchdog_timeout": num(m.group(1)) if m else None, "during_batch": True}
        return "stalled", strength, values
    if ("sigquit" in body and "Received sigquit" in body) or "SIGQUIT received" in body:
        # "Received sigquit from a child process" (to 0.5.x); 0.5.23's tokenizer_manager.py: "SIGQUIT
        # received. signum=None, frame=None. It usually means one child failed."
        return None, "death", {"sigquit": True}
    if "scheduler" in body and ("scheduler is dead" in body or "scheduler died" in body):
        m = _DIED.search(body)
        code = int(m.group(2)) if m and m.group(2) else None
        if code == -9:
            return "oom_killed", "cause", {"exit_code": code, "rank": int(m.group(1)) if m else None}
        return None, "death", {"exit_code": code}
    if "resource_tracker" in body and "leaked" in body and "at shutdown" in body:
        # multiprocessing's resource tracker, as the interpreter exits: "resource_tracker: There appear to be
        # 1 leaked semaphore objects to clean up at shutdown". The process ended here, whatever it had shown.
        return None, "death", {"ended": True}
    if " hit an exception" in body:
        return None, "death", {"exception": True}
    if "Initialization failed" in body:
        if "warmup error" in body:
            # http_server._wait_and_warmup (0.3.x on): "Initialization failed. warmup error: ..." then it
            # kills the server: the warm-up request failed (the cause, when any, is above or in its text)
            return None, "death", {"warmup": True}
        return None, "death", {}
    if "Health check failed" in body:
        # http_server.health_generate: no token from the detokenizer for HEALTH_CHECK_TIMEOUT (20 s) after a
        # health request; the server is marked unhealthy and answers 503 (signals.py decides at the end of
        # the log whether it recovered)
        return "stalled", "weak", {"health_check": True}
    if " error (" in body and _NATIVE_CHECK.match(body):
        # a kernel library's CHECK macro: `fprintf(stderr, "CUDA error (%s:%d): %s\n", ...); exit(1)`
        # (FlashMLA's csrc/utils.h, CUTLASS's): the process exits with no Python traceback, only this line
        return "other", "fatal", {"native_check": True, "message": body.split("): ", 1)[-1][:300]}
    if body.startswith("HTTPConnectionPool(") and "Read timed out" in body:
        # 0.1.x-0.2.x server.py `_wait_and_warmup`: the warm-up request failed, printed bare (`print(e)`)
        return "other", "cause", {"warmup": True}
    if "reached monitoredBarrier" in body and "received errors" in body:
        # Gloo's monitored barrier (ProcessGroupGloo.cpp): "Rank 3 successfully reached monitoredBarrier, but
        # received errors while waiting for send/recv from rank 0": model_runner.load_model's barrier after
        # the weights (0.4.x), so a peer never finished loading
        return None, "death", {"peer_failed": True, "after_weights": True}
    if "other ranks th" in body and "finish the model loading" in body:
        # "TP rank 1 could finish the model loading, but there are other ranks that didn't": a peer (often on
        # another node) died while loading; its own log holds the cause.
        return None, "death", {"peer_failed": True, "after_weights": True}
    # systemd: "sglang.service: A process of this unit has been killed by the OOM killer." / "Failed with
    # result 'oom-kill'."; the kernel: "oom-kill:constraint=..." (not SGLang's own hint to check dmesg).
    if ("OOM killer" in body or "oom-kill" in body) and (
        "killed by the OOM killer" in body or "'oom-kill'" in body or "oom-kill:" in body
    ):
        return "oom_killed", "cause", {}
    if "status=9/KILL" in body:  # systemd: "Main process exited, code=killed, status=9/KILL"
        return None, "death", {"killed": True}
    if "Killed" in body:
        if "Killed process" in body and ("Out of memory" in body or "oom" in body.lower()):
            return "oom_killed", "cause", {}
        stripped = body.strip()
        if stripped == "Killed" or re.search(r"(?:^|:\s*\d+\s+|\s)Killed(?:\s+\S*python|\s*$)", stripped):
            return None, "death", {"killed": True}
    if "xit code" in body:
        m = _EXIT_CODE.search(body)
        if m and int(m.group(1)) in (-9, 137):
            return "oom_killed", "cause", {"exit_code": int(m.group(1))}
    crash = crash_values(body)
    if crash is not None:
        return None, "death", crash
    if body[:1].isalpha():
        named = exception_line(body, in_traceback=False)
        if named is not None and named[0] == "SystemExit" and named[1].strip() in ("", "0"):
            return None  # a clean exit (`docker stop`: the drain, then sys.exit(0) out of the event loop)
        if named is not None:
            values = {"exception": named[0], "message": named[1]}
            if named[0] == "OutOfResources" or "out of resource" in named[1]:
                values.update(kernel_resource_values(named[1]))
            return None, "generic", values
    return None


_RESOURCE = re.compile(r"out of resource: (\w[\w ]*?), Required: (\d+), Hardware limit: (\d+)")


def kernel_resource_values(message: str) -> dict[str, Any]:
    """Triton's `OutOfResources: out of resource: shared memory, Required: 131072, Hardware limit: 65536`: a
    kernel configuration this GPU cannot run."""
    m = _RESOURCE.search(message)
    if m is None:
        return {"kernel_resource": "unknown"}
    return {"kernel_resource": m.group(1), "required": int(m.group(2)), "limit": int(m.group(3))}


_CONFLICT_WORDS = (
    "incompatible with",
    "not compatible with",
    "cannot be used with",
    "cannot be used together",
    "not supported with",
    "cannot be enabled together",
    "mutually exclusive",
)


def names_a_flag_conflict(message: str) -> bool:
    """SGLang's argument checks raise plain ValueErrors ("--x is incompatible with speculative decoding
    (--speculative-algorithm EAGLE)"); a frameless paste of one still names a flag and a conflict."""
    return "--" in message and any(word in message for word in _CONFLICT_WORDS)


def oom_values(body: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    m = _OOM_ALLOC.search(body)
    if m:
        amount = float(m.group(1))
        values["tried_gib"] = round(amount / 1024 if m.group(2) == "MiB" else amount, 3)
    m = _OOM_TOTAL.search(body)
    if m:
        values["gpu_total_gib"] = float(m.group(1))
        free = float(m.group(2))
        values["gpu_free_gib"] = round(free / 1024 if m.group(3) == "MiB" else free, 3)
    return values


_NATIVE_CHECK = re.compile(r"(?:CUDA|CUTLASS|cuBLAS|CUBLAS|HIP|NCCL) error \([^()]{1,200}:\d+\): \S")
_GONE = ("peer", "store", "watchdog", "backend")  # a distributed failure that is another process gone
_KV_TRY = re.compile(r"Try to allocate (\d+) tokens")
_ALLOCATOR_OOM = re.compile(r"allocate (\d+) bytes \(free: (\d+), total: (\d+)\)")


def allocator_oom_values(body: str) -> dict[str, Any]:
    m = _ALLOCATOR_OOM.search(body)
    if m is None:
        return {}
    tried, free, total = (int(x) / 2**30 for x in m.groups())
    return {"tried_gib": round(tried, 3), "gpu_free_gib": round(free, 3), "gpu_total_gib": round(total, 2)}


def port_values(body: str) -> dict[str, Any]:
    """The port a bind error names: `address ('::', 31000)`, `port 30001`, `tcp://h:30001`, `[::]:29500`."""
    m = _PORT_TUPLE.search(body)
    if m:
        return {"host": m.group(1), "port": int(m.group(2))}
    m = _PORT_WORD.search(body) or _PORT_ADDR.search(body)
    return {"port": int(m.group(1))} if m else {}


def termed_child(body: str) -> bool:
    """SGLang's subprocess watchdog saw a child ended by SIGTERM ("Subprocess scheduler_0 (pid=N) crashed with
    exit code -15", sglang/srt/utils/watchdog.py): someone stopped the server's process group."""
    return "exit code -15" in body and "crashed" in body
