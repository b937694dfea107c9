"""The root cause among a log's failure signals: the line that explains the failure, not those that follow."""

from __future__ import annotations

from dataclasses import replace

from sgtui.core.logs.state import STOPPED, Consequence, ErrorInfo, Signal, StartupState, parse_seconds

# When two causes are in one log, the one earlier here is the root: an OOM explains a later NCCL timeout,
# a bind error explains the warm-up's connection refused.
CAUSE_PRIORITY = (
    "not_enough_memory",
    "memory_unbalanced",
    "cuda_graph_failed",
    "cuda_oom",
    "unsupported_model",
    "bad_arguments",
    "incompatible_flags",
    "port_in_use",
    "oom_killed",
    "nccl",
    "stalled",
    "other",
    "child_failed",
)

# Exit codes of a process a fatal signal ended (negative from Popen, 128 + N from a shell).
SIGNAL_EXITS = {
    -11: "SIGSEGV",
    139: "SIGSEGV",
    -6: "SIGABRT",
    134: "SIGABRT",
    -7: "SIGBUS",
    135: "SIGBUS",
    -4: "SIGILL",
    132: "SIGILL",
}


def _first(signals: list[Signal]) -> Signal:
    return min(signals, key=lambda s: s.order)


# Classes that follow from a failure elsewhere: a collective or communicator fails once a peer rank died or
# hung, and SGLang's watchdog fires once a batch stops (a segfault on one rank stops them all).
_FOLLOWERS = ("nccl", "stalled")
_COMMS_WORDS = (
    "NCCL",
    "nccl",
    "gloo",
    "ProcessGroup",
    "by peer",
    "Connection reset",
    "collective",
    "Watchdog",
)
_MAX_CONSEQUENCES = 8


def is_consequence(signal: Signal) -> bool:
    """A signal that an earlier failure explains: a distributed error, SGLang's watchdog, a sigquit or a dead
    scheduler (not a fatal signal, which is a failure of its own), an exception about the communicators."""
    if signal.error_class in _FOLLOWERS or signal.values.get("warmup"):
        return True  # (a warm-up request that timed out: the server behind it died or hung)
    if signal.strength == "death":
        return not signal.values.get("crash")
    if signal.strength == "generic":
        return any(word in signal.text for word in _COMMS_WORDS)
    return False


_SLACK_S = 300.0  # besides the timeout itself: the failure, then the wait that ends in the timeout


def _earlier_root(signals: list[Signal], chosen: Signal) -> Signal | None:
    """The earliest failure before `chosen` (a consequence class) that is not itself a consequence: a fatal
    signal or CUDA fault, an exception, a fatal or causal line of another class, no earlier than the wait
    that ended in `chosen` began (its timeout: NCCL's, SGLang's watchdog's; 600 s when it names none): an
    error the server survived long before is not what its peers timed out on."""
    end = parse_seconds(chosen.time)
    values = chosen.values
    timeout = values.get("timeout_s") or values.get("watchdog_timeout") or values.get("stuck_s") or 600.0
    for s in sorted(signals, key=lambda s: s.order):
        if s.order >= chosen.order:
            return None
        if is_consequence(s) or s.strength == "weak":
            continue
        start = parse_seconds(s.time)
        if end is not None and start is not None and end - start > float(timeout) + _SLACK_S:
            continue
        if s.strength in ("fatal", "cause", "generic") or s.values.get("crash"):
            return s
    return None


def consequences(signals: list[Signal], root_order: int, root_line: int) -> tuple[Consequence, ...]:
    """The failures logged after the root cause, one per kind and rank, oldest first."""
    out: list[Consequence] = []
    seen: set[tuple[str, str | None]] = set()
    for s in sorted(signals, key=lambda s: s.order):
        if s.order <= root_order or s.line == root_line or s.values.get("trailing"):
            continue
        kind = _kind(s)
        if (kind, s.rank) in seen:
            continue
        seen.add((kind, s.rank))
        out.append(Consequence(s.line, kind, s.text.strip()[:200], s.rank))
        if len(out) >= _MAX_CONSEQUENCES:
            break
    return tuple(out)


def _kind(s: Signal) -> str:
    if s.values.get("sigquit"):
        return "sigquit"
    if s.values.get("crash"):
        return "crash"
    if s.error_class is not None:
        return s.error_class
    return "death" if s.strength == "death" else "exception"


def resolve_error(state: StartupState) -> ErrorInfo | None:
    """The root cause among the failure signals, with the rank it happened on and the failures that followed
    from it; None when the launch has not (visibly) failed."""
    error = _resolve(state)
    if error is None:
        return None
    pasted_tail = error.phase == "starting" and state.reached == "starting"
    if pasted_tail and error.error_class not in _BEFORE_ANY_STEP:
        error = replace(error, phase=_phase_after(state.signals, error.line))
    root = next((s for s in state.signals if s.line == error.line), None)
    if root is None:
        return error
    return replace(
        error,
        rank=error.rank or root.rank,
        consequences=consequences(state.signals, root.order, root.line),
    )


def _resolve(state: StartupState) -> ErrorInfo | None:
    signals = state.signals
    deaths = [s for s in signals if s.strength == "death"]
    fatal = [s for s in signals if s.strength == "fatal"]
    ready = state.milestones.get("ready")
    # A CUDA OOM or NCCL error the server survived (it still became ready) is not the failure.
    causes = [s for s in signals if s.strength == "cause" and (deaths or ready is None)]
    crashed_exit = state.exited and state.exit_code not in (None, 0) and STOPPED not in state.notes
    dead = bool(deaths or fatal or crashed_exit)
    if not dead and not causes:
        return None
    # weak signals (a negative profiled KV size, an NCCL warning) explain a death or a stronger cause
    specific = fatal + causes + ([s for s in signals if s.strength == "weak"] if dead or causes else [])
    # A SIGKILL after an exception line or a sigquit is SGLang tearing its own tree down, not the OOM killer.
    marks = [s.order for s in signals if s.strength == "generic" or s.values.get("sigquit")]
    if marks:
        teardown_from = min(marks)
        specific = [s for s in specific if s.error_class != "oom_killed" or s.order < teardown_from]
    chosen: Signal | None = None
    if specific:
        rank = {name: i for i, name in enumerate(CAUSE_PRIORITY)}
        best = min(rank.get(s.error_class or "other", 99) for s in specific)
        chosen = _first([s for s in specific if rank.get(s.error_class or "other", 99) == best])
        follows = chosen.error_class in _FOLLOWERS or chosen.values.get("warmup")
        earlier = _earlier_root(signals, chosen) if follows else None
        if earlier is not None and earlier.values.get("crash"):
            return _crash_error(earlier)
        if earlier is not None:
            chosen = earlier
    else:
        generic = [s for s in signals if s.strength == "generic"]
        crashes = [s for s in deaths if s.values.get("crash")]
        first_generic = _first(generic) if generic else None
        if crashes and (first_generic is None or _first(crashes).order < first_generic.order):
            # a fatal signal (segfault, abort, illegal address) before any Python exception is the cause
            return _crash_error(_first(crashes))
        chosen = first_generic
    # A peer's "other ranks did not finish loading" says more than a generic "scheduler hit an exception".
    telling = [s for s in deaths if s.values.get("peer_failed")]
    death = _first(telling or deaths) if deaths else None
    if chosen is None:
        killed = [s for s in deaths if s.values.get("killed") or s.values.get("exit_code") == -9]
        sigquit = any(s.values.get("sigquit") for s in deaths)
        # SGLang's sigquit handler SIGKILLs its own tree, so -9 after a sigquit is not the OOM killer.
        if (killed or state.exit_code in (-9, 137)) and not sigquit:
            source = killed[0] if killed else death
            if source is None:
                return ErrorInfo(
                    "oom_killed", 0, f"process exited with code {state.exit_code}", _phase(state)
                )
            return ErrorInfo("oom_killed", source.line, source.text, source.phase, source.time, source.values)
        signal = SIGNAL_EXITS.get(state.exit_code) if state.exited else None
        if signal is not None and (death is None or not death.values.get("peer_failed")):
            text = f"process killed by {signal} (exit code {state.exit_code})"
            line, time = (death.line, death.time) if death else (0, None)
            phase = death.phase if death else _phase(state)
            return ErrorInfo("other", line, text, phase, time, {"crash": True, "signal": signal})
        if death is None:
            return ErrorInfo("child_failed", 0, f"process exited with code {state.exit_code}", _phase(state))
        # a failed warm-up is the HTTP server's own process killing its tree (http_server._wait_and_warmup:
        # kill_process_tree(os.getpid())): no child died first, its cause is the warm-up request's error
        error_class = "other" if death.values.get("warmup") else "child_failed"
        return ErrorInfo(error_class, death.line, death.text, death.phase, death.time, death.values)
    return ErrorInfo(
        chosen.error_class or "other",
        chosen.line,
        chosen.text,
        chosen.phase,
        chosen.time,
        chosen.values,
        death.line if death and not death.values.get("trailing") else None,
        death.text if death and not death.values.get("trailing") else None,
    )


# Classes SGLang raises before any startup step (argument checks, the model's config, the ports): "starting"
# is their phase, whatever the tracebacks of the processes they took down show.
_BEFORE_ANY_STEP = ("bad_arguments", "incompatible_flags", "unsupported_model", "port_in_use")


def _phase_after(signals: list[Signal], line: int) -> str:
    """A pasted tail: the failure's own line came with no frame and no milestone ("starting" by default),
    while a traceback logged after it (the scheduler it took down, NCCL's own exception) shows the step."""
    later = [s for s in signals if s.line > line and s.phase != "starting"]
    return min(later, key=lambda s: s.line).phase if later else "starting"


def _crash_error(crash: Signal) -> ErrorInfo:
    error_class = "cuda_graph_failed" if crash.phase == "capturing_graphs" else "other"
    return ErrorInfo(error_class, crash.line, crash.text, crash.phase, crash.time, crash.values)


def _phase(state: StartupState) -> str:
    return "running" if state.reached == "ready" else state.reached
