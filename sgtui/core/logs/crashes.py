"""A process that cannot go on: a fatal signal (faulthandler, UCX, a shell's report, glibc's `assert()`) or a
CUDA fault (illegal address or instruction, a kernel's failed assertion). `crash_values(line)` is what
failures.py records for such a line ({"crash": True, "signal": ..., "cuda_fault": ...}), else None.
"""

from __future__ import annotations

import re
from typing import Any

# CUDA_KERNEL_ASSERT's printf: "X.cu:112: f: block: [0,0,0], thread: [0,0,0] Assertion `cond` failed." (the
# head is enough: a message with back-quotes of its own, or a cut line, still is one)
_KERNEL_ASSERT = re.compile(
    r"\.cuh?:\d+: .{0,200}?"
    r"(?:block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion `|Assertion `.{0,300}` failed)"
)
# glibc's assert(): "python: /project/lib/Analysis/Allocation.cpp:40: f: Assertion `cond' failed.", then
# SIGABRT (Triton's compiler, a C++ extension)
_C_ASSERT = re.compile(r"\.(?:c|cc|cpp|cxx|h|hpp|hh):\d+: .{0,300}?Assertion `.{0,400}' failed")
_SIGNAL_NAMES = {4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 11: "SIGSEGV"}
_CAUGHT = re.compile(r"Caught signal (\d+) \(([^:)]*)")
_FATAL = re.compile(r"Fatal Python error: (\w[\w ]*)")
# what a shell, libc or faulthandler prints for the signal -> its name
_CRASH_WORDS = (
    ("Segmentation fault", "SIGSEGV"),
    ("Segfault encountered", "SIGSEGV"),
    ("Bus error", "SIGBUS"),
    ("Illegal instruction", "SIGILL"),
    ("Floating point exception", "SIGFPE"),
    ("Aborted", "SIGABRT"),
)


def crash_values(body: str) -> dict[str, Any] | None:
    """A fatal signal or a CUDA fault the process cannot survive: `Fatal Python error: Segmentation fault`,
    UCX's `Caught signal 11 (Segmentation fault: ...)`, a shell's `Aborted (core dumped)`, `an illegal memory
    access was encountered`; None for anything else."""
    if "illegal" in body and ("illegal memory access" in body or "illegal instruction was" in body):
        kind = "illegal_address" if "memory access" in body else "illegal_instruction"
        return {"crash": True, "signal": None, "cuda_fault": kind}
    if "cudaErrorIllegalAddress" in body or "Cuda failure 700" in body:
        return {"crash": True, "signal": None, "cuda_fault": "illegal_address"}
    # a kernel's own check failed: ATen prints one line per failing thread ("Indexing.cu:1478:
    # indexSelectSmallIndex: block: [49,0,0], thread: [127,0,0] Assertion `srcIndex < srcSelectDimSize`
    # failed."), then CUDA reports "device-side assert triggered" (cudaErrorAssert, 710) at the next call
    if ("device-side assert triggered" in body or "cudaErrorAssert" in body) or (
        "Assertion `" in body and _KERNEL_ASSERT.search(body)
    ):
        return {"crash": True, "signal": None, "cuda_fault": "device_assert"}
    if "Assertion `" in body and _C_ASSERT.search(body):
        return {"crash": True, "signal": "SIGABRT", "what": body.strip()[:160]}
    if "Fatal Python error" in body:
        m = _FATAL.search(body)
        what = m.group(1).strip() if m else ""
        return {"crash": True, "signal": _signal_for(what), "what": what}
    if "Caught signal" in body:
        m = _CAUGHT.search(body)
        if m:
            return {
                "crash": True,
                "signal": _SIGNAL_NAMES.get(int(m.group(1)), f"signal {m.group(1)}"),
                "what": m.group(2).strip(),
            }
    if "core dumped" in body or "Segmentation fault" in body or "Segfault encountered" in body:
        return {"crash": True, "signal": _signal_for(body), "what": body.strip()[:120]}
    if ("Bus error" in body or "Aborted" in body or "Illegal instruction" in body) and _SHELL_CRASH.search(
        body
    ):
        return {"crash": True, "signal": _signal_for(body), "what": body.strip()[:120]}
    return None


# a shell's report of a child killed by a signal: "bash: line 1: 4242 Aborted   python3 -m ...", "Aborted"
# (bash pads the signal name with spaces before the command; "Aborted by AbortReq." is SGLang's own words)
_SHELL_CRASH = re.compile(
    r"(?:^|\d+\s+)(?:Bus error|Aborted|Illegal instruction)(?:\s*\(core dumped\)|\s{2,}|\s*$)"
)


def _signal_for(text: str) -> str | None:
    for word, name in _CRASH_WORDS:
        if word in text:
            return name
    return None
