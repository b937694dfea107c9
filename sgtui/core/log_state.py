"""The startup state a log reveals: phase, milestones per rank, facts, and the failure signals seen.

Kept apart from the line rules so the UI and `diagnose` can read the state without knowing any regex.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

MILESTONE_KINDS = (
    "server_args",
    "init_torch_distributed",
    "load_weight_begin",
    "load_weight_end",
    "kv_cache_allocated",
    "mamba_cache_allocated",
    "swa_pool",
    "memory_pool_end",
    "cuda_graph_begin",
    "cuda_graph_end",
    "max_total_num_tokens",
    "uvicorn_running",
    "ready",
)

ERROR_CLASSES = (
    "not_enough_memory",
    "cuda_oom",
    "cuda_graph_failed",
    "nccl",
    "unsupported_model",
    "port_in_use",
    "bad_arguments",
    "incompatible_flags",
    "memory_unbalanced",
    "oom_killed",
    "child_failed",
    "other",
)

# Startup phases in the order a healthy launch walks through them; "failed" and "exited" end a run.
PHASES = (
    "starting",
    "distributed_init",
    "loading_weights",
    "allocating_pools",
    "capturing_graphs",
    "serving",
    "ready",
)
PHASE_LABELS = {
    "starting": "starting",
    "distributed_init": "distributed init",
    "loading_weights": "loading weights",
    "allocating_pools": "allocating pools",
    "capturing_graphs": "capturing CUDA graphs",
    "serving": "starting the HTTP server",
    "ready": "ready",
    "failed": "failed",
    "exited": "exited",
}

MILESTONE_PHASE = {
    "server_args": "starting",
    "init_torch_distributed": "distributed_init",
    "load_weight_begin": "loading_weights",
    "load_weight_end": "allocating_pools",
    "mamba_cache_allocated": "allocating_pools",
    "swa_pool": "allocating_pools",
    "kv_cache_allocated": "allocating_pools",
    "memory_pool_end": "allocating_pools",
    "cuda_graph_begin": "capturing_graphs",
    "cuda_graph_end": "capturing_graphs",
    "max_total_num_tokens": "serving",
    "uvicorn_running": "serving",
    "ready": "ready",
}

# A note: SGLang was told to stop (SIGTERM, Ctrl+C); what dies after that is the shutdown, not a failure.
STOPPED = "stopped_on_request"

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
    "other",
    "child_failed",
)


@dataclass(frozen=True)
class LogEvent:
    """Something a line said: a milestone, progress, a failure signal, or a phase change."""

    line: int
    time: str | None
    ranks: tuple[str, ...]
    kind: str
    values: dict[str, Any] = field(default_factory=dict)
    text: str = ""

    @property
    def rank(self) -> str | None:
        return " ".join(self.ranks) or None


@dataclass
class Milestone:
    """A milestone's first appearance, plus every rank that has reached it since."""

    kind: str
    line: int
    time: str | None
    seconds: float | None
    rank: str | None
    values: dict[str, Any]
    ranks: set[str] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "line": self.line,
            "time": self.time,
            "rank": self.rank,
            "values": self.values,
        }


@dataclass(frozen=True)
class Signal:
    """A line that says something went wrong; `strength` is "fatal", "cause", "weak", "generic" or "death"."""

    error_class: str | None
    strength: str
    line: int
    order: int
    text: str
    phase: str
    time: str | None = None
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ErrorInfo:
    """The root cause of a failed launch: its class, the line that shows it, and the phase it died in."""

    error_class: str
    line: int
    text: str
    phase: str
    time: str | None = None
    values: dict[str, Any] = field(default_factory=dict)
    death_line: int | None = None
    death_text: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "class": self.error_class,
            "line": self.line,
            "text": self.text,
            "phase": self.phase,
            "time": self.time,
            "death_line": self.death_line,
            "death_text": self.death_text,
        }


def parse_seconds(time_text: str | None) -> float | None:
    """Seconds on a common scale for a printed time (date optional), for durations between milestones."""
    if not time_text:
        return None
    text = time_text.replace("T", " ").rstrip("Z")
    if text[2:3] == "-" and text[5:6] == " ":
        text = "2000-" + text  # "[12-16 14:27:08]" has no year; any leap year orders one log's lines
    try:
        if len(text) > 10 and text[4] == "-":
            date, _, clock = text.partition(" ")
            head, _, frac = clock.partition(".")
            stamp = datetime.fromisoformat(f"{date} {head}")
            base = (stamp - datetime(1970, 1, 1)).total_seconds()
        else:
            head, _, frac = text.replace(",", ".").partition(".")
            hours, minutes, secs = head.split(":")
            base = int(hours) * 3600 + int(minutes) * 60 + int(secs)
        return base + (float("0." + frac[:6]) if frac.isdigit() else 0.0)
    except ValueError:
        return None


@dataclass
class StartupState:
    """What the log says about the launch so far. Mutated by `LogClassifier`; read by the UI and diagnosis."""

    phase: str = "starting"
    reached: str = "starting"
    milestones: dict[str, Milestone] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    progress: dict[str, dict[str, Any]] = field(default_factory=dict)
    signals: list[Signal] = field(default_factory=list)
    warnings: list[tuple[int, str]] = field(default_factory=list)
    notes: set[str] = field(default_factory=set)
    ranks_seen: set[str] = field(default_factory=set)
    phase_start: dict[str, float] = field(default_factory=dict)
    last_time: str | None = None
    exit_code: int | None = None
    exited: bool = False
    _error_cache: tuple[int, ErrorInfo | None] | None = field(default=None, repr=False)

    @property
    def error(self) -> ErrorInfo | None:
        """The root cause, or None while nothing fatal has been seen (recomputed when new signals arrive)."""
        key = len(self.signals) * 2 + (1 if self.exited else 0)
        if self._error_cache is None or self._error_cache[0] != key:
            self._error_cache = (key, resolve_error(self))
        return self._error_cache[1]

    @property
    def last_seconds(self) -> float | None:
        """The latest printed time, on the same scale as `Milestone.seconds` (for "elapsed so far")."""
        return parse_seconds(self.last_time)

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def current_progress(self) -> dict[str, Any] | None:
        """Progress of the phase the launch is in (weights shards or graph batches), if it prints any."""
        return self.progress.get(self.reached)

    def milestone_list(self) -> list[Milestone]:
        """Milestones in order of first appearance in the file."""
        return sorted(self.milestones.values(), key=lambda m: m.line)

    def durations(self) -> dict[str, float]:
        """Seconds spent in each phase reached, from its first milestone to the next phase's first one."""
        reached = [(p, self.phase_start[p]) for p in PHASES if p in self.phase_start]
        reached.sort(key=lambda item: item[1])
        out: dict[str, float] = {}
        for (phase, start), nxt in zip(reached, [*reached[1:], None], strict=False):
            end = nxt[1] if nxt else parse_seconds(self.last_time)
            if end is not None and phase != "ready":
                out[phase] = round(max(0.0, end - start), 3)
        return out


def _first(signals: list[Signal]) -> Signal:
    return min(signals, key=lambda s: s.order)


def resolve_error(state: StartupState) -> ErrorInfo | None:
    """Pick the root cause among the failure signals; None when the launch has not (visibly) failed."""
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
    specific = fatal + causes + ([s for s in signals if s.strength == "weak"] if dead else [])
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
    else:
        generic = [s for s in signals if s.strength == "generic"]
        if generic:
            chosen = _first(generic)
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
                    "oom_killed", 0, f"process exited with code {state.exit_code}", state.reached
                )
            return ErrorInfo("oom_killed", source.line, source.text, source.phase, source.time, source.values)
        if death is None:
            return ErrorInfo("child_failed", 0, f"process exited with code {state.exit_code}", state.reached)
        return ErrorInfo("child_failed", death.line, death.text, death.phase, death.time, death.values)
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
