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
    "stalled",
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
    "running": "serving requests",
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

ANSWERED = "answered_after_uvicorn"  # a note: a POST got 200 after Uvicorn started (ready without the line)
# A note: "Decode batch" lines, which only requests being served print (ready without the line).
SERVED = "decode_batches_seen"
TRACE_CUT = "traceback_cut"  # a note: the log ends inside a traceback, before its exception line
NEW_STYLE = "sglang_0_5_23_style"  # a note: the log uses 0.5.23-era wordings (flag names differ there)

# A note: SGLang was told to stop (SIGTERM, Ctrl+C); what dies after that is the shutdown, not a failure.
STOPPED = "stopped_on_request"


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
    rank: str | None = None  # the rank tag of the line ("TP3", "DP0 TP1", "rank4"), if it had one


@dataclass(frozen=True)
class Consequence:
    """A later failure that follows from the root cause (NCCL errors after a rank died, a watchdog after a
    segfault, SGLang's sigquit), listed, not diagnosed."""

    line: int
    kind: str
    text: str
    rank: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "kind": self.kind, "text": self.text, "rank": self.rank}


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
    rank: str | None = None  # the rank (or node) that failed first, when the log says
    consequences: tuple[Consequence, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "class": self.error_class,
            "line": self.line,
            "text": self.text,
            "phase": self.phase,
            "time": self.time,
            "death_line": self.death_line,
            "death_text": self.death_text,
            "rank": self.rank,
            "context": list(self.values.get("context", ())),
            "consequences": [c.to_json() for c in self.consequences],
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
    phase_start: dict[str, float] = field(default_factory=dict)  # the first rank's entry into each phase
    # Several ranks (phases.py, ranks.py): the earliest phase a rank that printed a milestone is still in,
    # each such rank's phase (its index in PHASES), when the last rank got to each phase or past it, and
    # when the last rank in it moved on. With one rank or none, `slowest` is `reached`.
    slowest: str = "starting"
    rank_phase: dict[str, int] = field(default_factory=dict)
    phase_settled: dict[str, float] = field(default_factory=dict)
    phase_left: dict[str, float] = field(default_factory=dict)
    last_time: str | None = None
    exit_code: int | None = None
    exited: bool = False
    facts_per_rank: dict[str, dict[str, Any]] = field(default_factory=dict)
    stall: ErrorInfo | None = None  # no progress far past the phase's expected time (not a failure)
    gaps: list[dict[str, Any]] = field(default_factory=list)  # stamped lines far apart (gaps.py)
    phase_at_end: dict[str, Any] | None = None  # the phase the log ends in: how long it ran (gaps.py)
    _error_cache: tuple[tuple[int, bool, int], ErrorInfo | None] | None = field(default=None, repr=False)
    _generation: int = field(default=0, repr=False)

    @property
    def error(self) -> ErrorInfo | None:
        """The root cause, or None while nothing fatal has been seen (recomputed when new signals arrive)."""
        key = (len(self.signals), self.exited, self._generation)
        if self._error_cache is None or self._error_cache[0] != key:
            from sgtui.core.logs.rootcause import resolve_error

            self._error_cache = (key, resolve_error(self))
        return self._error_cache[1]

    def invalidate(self) -> None:
        """A signal was amended in place, or a stall began or ended: recompute the root cause."""
        self._generation += 1

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
        """Seconds spent in each phase reached, from its first milestone to the next phase's first one; with
        several ranks, from when the last rank got there to when the last rank in it moved on (phases.py), so
        a phase that waits on a slow rank is not charged to the phase the fast ones went on to."""
        durations = self._front_durations()
        if len(self.rank_phase) < 2:
            return durations
        slowest = PHASES.index(self.slowest)
        end_of_log = parse_seconds(self.last_time)
        out: dict[str, float] = {}
        for phase, seconds in durations.items():
            index = PHASES.index(phase)
            if index > slowest:
                continue  # the fast ranks are there, the slow ones are not yet: the slowest's phase runs on
            start = max(self.phase_start[phase], self.phase_settled.get(phase, self.phase_start[phase]))
            end = self.phase_left.get(phase) if index < slowest else end_of_log
            out[phase] = round(max(0.0, end - start), 3) if end is not None else seconds
        return out

    def _front_durations(self) -> dict[str, float]:
        """Each phase from its first milestone (any rank's) to the next phase's first one."""
        reached = [(p, self.phase_start[p]) for p in PHASES if p in self.phase_start]
        reached.sort(key=lambda item: item[1])
        out: dict[str, float] = {}
        for (phase, start), nxt in zip(reached, [*reached[1:], None], strict=False):
            end = nxt[1] if nxt else parse_seconds(self.last_time)
            if end is not None and phase != "ready":
                out[phase] = round(max(0.0, end - start), 3)
        return out
