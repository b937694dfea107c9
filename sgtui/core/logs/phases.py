"""How far a startup got: the milestones the log reached, the phase each one opens, the progress bars inside
a phase and the warnings it printed, each milestone and moving bar told to the stall watch.

The line handlers (milestones.py, info.py, traffic.py) call `PhaseLog` through the classifier's `phases`;
signals.py's `FailureLog` is its counterpart for what went wrong. Only lines that mark something come here,
never the per-line path.

Several ranks: the phase (`reached`) moves on at the first rank's milestone, but a phase is not over until the
last rank in it has moved on. Each rank that printed a milestone keeps its own phase, and `state.slowest` is
the earliest one (the phase durations, gaps and stalls are judged in). SGLang's ModelRunner logs "Init torch
distributed", "Load weight begin/end", "KV Cache is allocated", "Memory pool end" and the graph capture on
every TP rank (sglang/srt/model_executor/model_runner.py, mem_cache/memory_pool.py); the scheduler logs
"max_total_num_tokens=" only `if self.tp_rank == 0` (managers/scheduler.py, Scheduler.__init__), and the
HTTP server's lines come from the main process: those, and any milestone without a rank tag, move every rank.
"""

from __future__ import annotations

from typing import Any

from sgtui.core.logs.stall import StallWatch
from sgtui.core.logs.state import MILESTONE_PHASE, PHASES, LogEvent, Milestone, StartupState, parse_seconds
from sgtui.core.logs.traceback import TraceTracker

_MAX_WARNINGS = 50
# Milestones only one process prints (rank 0's scheduler, the HTTP server): every rank is past what they end.
LEADER_KINDS = frozenset({"server_args", "max_total_num_tokens", "uvicorn_running", "ready"})


class PhaseLog:
    """Records milestones, phase changes, progress and warnings into the state (which it shares with the
    classifier that owns it)."""

    def __init__(self, state: StartupState, stall: StallWatch, trace: TraceTracker) -> None:
        self.state = state
        self.stall = stall
        self.trace = trace
        self.last_milestone_line = 0  # the end-of-log rules: did anything start after a traceback?
        self.last_progress: tuple[Any, ...] | None = None  # the last bar (an unchanged one is no news)
        self.floor = 0  # the phase (index) every rank is known to have reached (LEADER_KINDS, untagged lines)

    def milestone(
        self,
        kind: str,
        n: int,
        time: str | None,
        ranks: tuple[str, ...],
        values: dict[str, Any],
        body: str,
        events: list[LogEvent],
    ) -> None:
        """The first time any rank reaches `kind`: a milestone event and the phase it opens; another rank
        reaching it later is progress too."""
        rank = " ".join(ranks) or None
        self.trace.open = None
        self.last_milestone_line = n
        milestone = self.state.milestones.get(kind)
        if milestone is None:
            seconds = parse_seconds(time)
            milestone = Milestone(kind, n, time, seconds, rank, values)
            self.state.milestones[kind] = milestone
            events.append(LogEvent(n, time, ranks, kind, values, body[:300]))
            self.stall.progressed(self.state)
            everyone = not rank or kind in LEADER_KINDS
            self.advance(MILESTONE_PHASE[kind], n, time, seconds, events, everyone=everyone)
        if rank and rank not in milestone.ranks:
            milestone.ranks.add(rank)
            self.stall.progressed(self.state)  # another rank got this far
            if kind not in LEADER_KINDS:
                self.rank_reached(rank, PHASES.index(MILESTONE_PHASE[kind]), time)

    def rank_reached(self, rank: str, index: int, time: str | None) -> None:
        """`rank` printed a milestone of phase `index`: it is there (or further) from now on."""
        known = self.state.rank_phase
        if known.get(rank, -1) < index:
            known[rank] = index
            self.settle(parse_seconds(time))

    def settle(self, seconds: float | None) -> None:
        """Recompute the slowest rank's phase; when it moves on, note when the last rank left each phase it
        passed and got to each it reached."""
        state = self.state
        reached = PHASES.index(state.reached)
        known = state.rank_phase
        new = reached if len(known) < 2 else min(reached, max(self.floor, min(known.values())))
        old = PHASES.index(state.slowest)
        if new == old:
            return
        state.slowest = PHASES[new]
        if new > old and seconds is not None:
            for index in range(old, new):
                state.phase_left[PHASES[index]] = seconds
                state.phase_settled[PHASES[index + 1]] = seconds

    def advance(
        self,
        phase: str,
        n: int,
        time: str | None,
        seconds: float | None,
        events: list[LogEvent],
        everyone: bool = True,
    ) -> None:
        """Move forward to `phase` (never back); a failed or exited run keeps that as its phase. `everyone`:
        every rank is there too (not one rank's milestone)."""
        state = self.state
        index, current = PHASES.index(phase), PHASES.index(state.reached)
        if index >= current and seconds is not None and phase not in state.phase_start:
            state.phase_start[phase] = seconds
        if everyone and index > self.floor:
            self.floor = index
        if index <= current:
            if everyone:
                self.settle(seconds)
            return
        state.reached = phase
        self.settle(seconds)
        self.stall.entered(phase, state)
        if state.phase not in ("failed", "exited"):
            state.phase = phase
            events.append(LogEvent(n, time, (), "phase", {"phase": phase}))

    def progress(self, phase: str, values: dict[str, Any], event: LogEvent, events: list[LogEvent]) -> None:
        """A progress bar in `phase` moved to `values`."""
        self.state.progress[phase] = values
        self.stall.progressed(self.state, values)
        events.append(event)

    def warn(self, n: int, body: str) -> None:
        """Keep a warning once: every rank prints the same one."""
        text = body[:300]
        warnings = self.state.warnings
        if len(warnings) < _MAX_WARNINGS and all(text != known for _, known in warnings[-8:]):
            warnings.append((n, text))
