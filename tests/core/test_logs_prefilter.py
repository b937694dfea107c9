"""The prefilter lets through every line some rule reads: each needle a rule tests a line for contains one of
its anchors, unless the rule only tests it together with an anchored needle (listed here with the reason)."""

from __future__ import annotations

import ast
from pathlib import Path

from sgtui.core.logs import classify_text
from sgtui.core.logs.prefilter import ANCHORS, may_matter

LOGS = Path(__file__).resolve().parents[2] / "sgtui" / "core" / "logs"
RULE_FILES = ("milestones.py", "info.py", "failures.py", "crashes.py", "distributed.py", "classifier.py")
LINE_NAMES = ("body", "lowered", "raw", "stripped", "segment", "line", "text")

# needles tested only next to an anchored one (`"graph begin" in body and "Capture" in body`), or before the
# prefilter runs (the batch/access fast path, the stop and comment checks)
SECONDARY = {
    "graph begin": "with Capture",
    "graph end": "with Capture",
    "draft": "comment(): `#` lines, before the prefilter",
    "mem usage=": "comment(): `#` lines, before the prefilter",
    "mamba": "with is capped to / too small",
    " failed: ": "with Capture",
    "CUDA": "with memory",
    "cuda": "with memory",
    "cannot hold even one request": "with SWA",
    "leaves no room": "with SWA",
    "try next": "with in use",
    "trying": "with in use",
    "retry": "with in use",
    "soft=True": "with atchdog",
    "should dump": "with TCPStore",
    "url: /generate": "with HTTPConnectionPool",
    "retrying": "with TCPStore / [c10d]",
    "Read timed out": "with HTTPConnectionPool",
    "received errors": "with monitoredBarrier",
    "Connection refused": "with TCPStore / [c10d]",
    "leaked": "with resource_tracker",
    "at shutdown": "with resource_tracker",
    "finish the model loading": "with other ranks",
    "crashed": "termed_child(): before the prefilter",
    "Decode batch": "the batch fast path",
    "#retracted_reqs": "the batch fast path (retractions while decoding)",
    "Prefill batch": "the batch fast path",
    "HTTP/1.": "the access-log fast path",
    '" 200': "the access-log fast path",
    "POST ": "the access-log fast path",
    "POST /v1/": "the access-log fast path",
    "\r": "line hygiene",
    "\x1b": "line hygiene",
    "it/s][": "line hygiene",
    "it/s]": "line hygiene",
    "|": "line hygiene (a tqdm bar's)",
    "s/it]": "line hygiene",
    "][": "line hygiene",
    "s/it][": "line hygiene",
    "SIGTERM received": "the stop check, before the prefilter",
    "Gracefully exiting": "the stop check, before the prefilter",
    "To allow overriding": "with User-specified context_length",
    "warmup error": "with Initialization failed",
    "started": "with ummy health check server",
    "Starting": "with ummy health check server",
    "scheduled": "with ummy health check server",
}


def _needles() -> set[str]:
    found: set[str] = set()
    for name in RULE_FILES:
        for node in ast.walk(ast.parse((LOGS / name).read_text())):
            if (
                isinstance(node, ast.Compare)
                and len(node.ops) == 1
                and isinstance(node.ops[0], ast.In)
                and isinstance(node.left, ast.Constant)
                and isinstance(node.left.value, str)
                and ast.unparse(node.comparators[0]) in LINE_NAMES
            ):
                found.add(node.left.value)
    return found


def test_every_rule_needle_is_anchored() -> None:
    needles = _needles()
    assert len(needles) > 100  # the walk found the rules
    loose = sorted(n for n in needles if not any(a in n for a in ANCHORS) and n not in SECONDARY)
    assert loose == []


def test_an_exception_line_of_any_name_passes_and_prose_does_not() -> None:
    assert may_matter("torch._dynamo.exc.Unsupported: call_method", "t")
    assert may_matter("urllib3.exceptions.ReadTimeoutError: read timed out", "u")
    assert not may_matter("INFO:     Waiting for application startup.", "I")
    assert not may_matter("Some info message about nothing in particular, value=3.", "S")
    assert not may_matter("node-1:2345:2400 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", "n")
    assert may_matter("node-1:2345:2400 [0] NCCL WARN Cuda failure 700 'an illegal memory access'", "n")


def test_lines_no_rule_reads_change_nothing() -> None:
    """A log with thousands of lines of chatter reads exactly as the same log without them."""
    core = [
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
        "[2026-01-01 10:00:05 TP0] Load weight begin. avail mem=70.00 GB",
        "[2026-01-01 10:00:06 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1, in load_model',
        "    raise ValueError(x)",
        "ValueError: bad checkpoint",
    ]
    chatter = [f"[2026-01-01 10:00:0{i % 6} TP0] note {i}: something harmless" for i in range(2000)]
    noisy = core[:2] + chatter + core[2:]
    quiet, loud = classify_text("\n".join(core) + "\n"), classify_text("\n".join(noisy) + "\n")
    assert quiet.error is not None and loud.error is not None
    assert (quiet.error.text, quiet.error.phase) == (loud.error.text, loud.error.phase)
    assert quiet.outcome == loud.outcome == "failed"
