"""How far a startup got: the milestones the log reached, the phase each one opens, the progress bars inside
a phase and the warnings it printed, each milestone and moving bar told to the stall watch.

The line handlers (milestones.py, info.py, traffic.py) call `PhaseLog` through the classifier's `phases`;
signals.py's `FailureLog` is its counterpart for what went wrong. Only lines that mark something come here,
never the per-line path.
"""

from __future__ import annotations

from typing import Any

from sgtui.core.logs.stall import StallWatch
from sgtui.core.logs.state import MILESTONE_PHASE, PHASES, LogEvent, Milestone, StartupState, parse_seconds
from sgtui.core.logs.traceback import TraceTracker

_MAX_WARNINGS = 50


class PhaseLog:
    """Records milestones, phase changes, progress and warnings into the state (which it shares with the
    classifier that owns it)."""

    def __init__(self, state: StartupState, stall: StallWatch, trace: TraceTracker) -> None:
        self.state = state
        self.stall = stall
        self.trace = trace
        self.last_milestone_line = 0  # the end-of-log rules: did anything start after a traceback?
        self.last_progress: tuple[Any, ...] | None = None  # the last bar (an unchanged one is no news)

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
            self.advance(MILESTONE_PHASE[kind], n, time, seconds, events)
        if rank and rank not in milestone.ranks:
            milestone.ranks.add(rank)
            self.stall.progressed(self.state)  # another rank got this far

    def advance(
        self, phase: str, n: int, time: str | None, seconds: float | None, events: list[LogEvent]
    ) -> None:
        """Move forward to `phase` (never back); a failed or exited run keeps that as its phase."""
        state = self.state
        index, current = PHASES.index(phase), PHASES.index(state.reached)
        if index >= current and seconds is not None and phase not in state.phase_start:
            state.phase_start[phase] = seconds
        if index <= current:
            return
        state.reached = phase
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
