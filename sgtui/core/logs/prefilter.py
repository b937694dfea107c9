"""The prefilter: one test that says whether any line rule could read a line, so that the lines no rule looks
for (NCCL's INFO chatter, library warnings, model-specific notes: most of a startup or failure log) skip them.

Every substring a rule in milestones.py, info.py, failures.py, distributed.py or the classifier's own command
and traceback checks needs is covered by one ANCHOR below (a needle or a shorter piece of it); a rule added
there needs its anchor here (tests/core/test_logs_prefilter.py checks the rules' needles against it). An
exception's own line outside a traceback is found by its shape (`pkg.mod.Name: message`).

The test is one pass of an Aho-Corasick automaton over the line (pyahocorasick, C): it stops at the first
anchor found, so its cost is the line's length, not length x anchors. Measured on the startup corpus of
bench/bench_explain_shapes.py: 1.4 us a line against 4.0 us for the chain of `in` checks it replaced (Python's
`re` alternation was 25-28 us: it tries every alternative at every position). The chain stays as
`any_anchor_chain`: the fallback where pyahocorasick is not installed, and the tests compare with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

ANCHORS: tuple[str, ...] = (
    # milestones.py
    "erver_args",
    "ServerArgs",
    "Init torch",
    "Init nccl",
    "Memory baseline",
    "oad weight",
    "KV Cache",
    "SWAKVPool",
    "Post-capture",
    "Mamba Cache",
    "sliding window",
    "Memory pool",
    "Capture",
    "otal_num_token",
    "Uvicorn",
    "fired up",
    "ummy health check server",
    # progress bars
    "shards",
    "Capturing",
    "%|",
    # info.py
    "minimum viable",
    "--",
    "/dev/shm",
    "shared memory",
    "KV cache dtype",
    "Max running requests",
    "is capped to",
    "Disabling radix",
    "profiled value",
    "falling back to Transformers",
    # failures.py
    "Traceback",
    "memory",
    "too small",
    "max_running_request",
    "SWA",
    "Error",
    "Exception",
    "Exit",
    "not supported",
    "failed to be inspected",
    "does not recognize",
    "nsupported architecture",
    "divisible by",
    "in use",
    "Errno 98",
    ": error: ",
    "radix cache",
    "context_length",
    "illegal",
    "Illegal",
    "Assertion `",
    "device-side assert",
    "cudaErrorAssert",
    "Cuda failure",
    "atchdog",
    "sigquit",
    "SIGQUIT",
    "scheduler",
    "hit an exception",
    "Initialization failed",
    "Health check failed",
    " error (",
    "HTTPConnectionPool",
    "monitoredBarrier",
    "other ranks",
    "OOM",
    "oom-kill",
    "status=9",
    "Killed",
    "xit code",
    "Fatal Python",
    "Caught signal",
    "core dumped",
    "Segmentation fault",
    "Segfault",
    "Bus error",
    "Aborted",
    "resource_tracker",
    # distributed.py
    "ccl",
    "NCCL",
    "by peer",
    "gloo",
    "pair.cc",
    "Connection reset",
    "Timed out",
    "clients joined",
    "Socket Timeout",
    "TCPStore",
    "[c10d]",
    "Ping failed",
    "recvValue",
    "returnedNonce",
    "Rendezvous",
)


NCCL_INIT_FAILED = re.compile(r"\b(?:init|bootstrap)\.cc:\d+ -> [1-9]")


def _chain(anchors: tuple[str, ...]) -> Callable[[str], bool]:
    """`lambda body: "a" in body or "b" in body or ...`: the cheapest test CPython has for many needles."""
    source = "lambda body: " + " or ".join(f"{anchor!r} in body" for anchor in anchors)
    return eval(source)


any_anchor_chain = _chain(ANCHORS)


def _automaton(anchors: tuple[str, ...]) -> Callable[[str], bool] | None:
    """`body -> any anchor in body` as one Aho-Corasick pass, or None without pyahocorasick."""
    try:
        import ahocorasick
    except ImportError:  # pragma: no cover - a dependency; the chain gives the same answers, slower
        return None
    automaton = ahocorasick.Automaton()
    for anchor in anchors:
        automaton.add_word(anchor, anchor)
    automaton.make_automaton()
    scan = automaton.iter

    def any_anchor(body: str) -> bool:
        for _ in scan(body):
            return True
        return False

    return any_anchor


_ANY_ANCHOR = _automaton(ANCHORS) or any_anchor_chain


def may_matter(body: str, first: str) -> bool:
    """False when no line rule could read `body` (whose first character is `first`)."""
    if " NCCL INFO " in body:
        # NCCL_DEBUG=INFO's chatter (thousands of lines a launch); its problems are WARN lines, and the error
        # chain of a communicator that could not be created ("NCCL INFO init.cc:1799 -> 2")
        return ".cc:" in body and " -> " in body and NCCL_INIT_FAILED.search(body) is not None
    if _ANY_ANCHOR(body):
        return True
    if not first.isalpha():
        return False
    # `pkg.mod.Name: message`: an exception's own line outside a traceback (failures.exception_line's shape;
    # a name ending in Error/Exception/Exit is an anchor already)
    colon = body.find(":", 0, 200)
    return colon > 0 and "." in body[:colon] and " " not in body[:colon]
