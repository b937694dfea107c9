"""Stalls inside a log, on the log's own clock (what `sgtui explain` sees; the live watch uses a real clock in
stall.py): a gap between two consecutive stamped lines that is past the phase's limit, and, where the log
ends mid-phase, how long that phase had run and gone without progress at its last line. The limits are the
watch's own (`StallWatch.limit`), so both say the same about the same wait.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sgtui.core.logs.ranks import lagging_ranks
from sgtui.core.logs.state import ANSWERED, SERVED, STOPPED, ErrorInfo, parse_seconds

if TYPE_CHECKING:
    from sgtui.core.logs.stall import StallWatch
    from sgtui.core.logs.state import StartupState

MAX_GAPS = 8
_SHORTEST_LIMIT_S = 60.0  # no phase's limit is below this: shorter gaps are not parsed at all


class GapWatch:
    """Fed every stamped line whose time differs from the previous one; cheap until the minute changes."""

    def __init__(self, stall: StallWatch) -> None:
        self.stall = stall
        self.gaps: list[dict[str, Any]] = []
        self.minute = "\0"  # the current stamps' text up to their minutes ("2026-01-01 10:04:")
        self.previous_line = 0  # the last stamped line (the classifier keeps it)

    def stamp(self, state: StartupState, time: str, n: int, body: str) -> None:
        """A stamped line at `n` whose minute differs from the previous stamp's (`state.last_time`): a gap
        past any limit (a minute or more) always changes the minute, so other lines never come here."""
        previous, previous_line = state.last_time, self.previous_line
        self.minute = time.rpartition(":")[0] + ":"
        if previous is None or not _watching(state):
            return
        start, end = parse_seconds(previous), parse_seconds(time)
        if start is None or end is None or end - start <= _SHORTEST_LIMIT_S:
            return
        phase = state.slowest  # judged in the slowest rank's phase: the others wait on it (phases.py)
        limit, expected, basis = self.stall.limit(phase, state)
        gap = end - start
        if gap <= limit or len(self.gaps) >= MAX_GAPS:
            return
        from sgtui.core.logs.stall import phase_words

        gap_report: dict[str, Any] = {"phase": phase}
        lagging = lagging_ranks(state)
        if lagging:
            gap_report.update(lagging_ranks=lagging, reached=state.reached)
        self.gaps.append(
            {
                **gap_report,
                "idle_s": round(gap, 1),
                "limit_s": round(limit, 1),
                "expected_s": round(expected, 1),
                "basis": basis,
                "from_line": previous_line,
                "to_line": n,
                "then": body.strip()[:200],
                "text": f"no progress for {_duration(gap)} while {phase_words(state, phase)} "
                f"(lines {previous_line}-{n}; expected about {_duration(expected)}: {basis}), then: "
                f"{body.strip()[:120]}",
            }
        )
        state.gaps = self.gaps

    def at_end(self, state: StartupState, line: int) -> None:
        """The log ends mid-phase: how long the phase had run at its last line, and a stall when it had gone
        without progress past its limit (a cut or hung launch; not a failure, as in the live watch)."""
        if not _watching(state) or state.exited or not state.milestones:
            return  # a launch must be visible (a pasted tail of a running server has no startup to time)
        phase = state.slowest
        now = state.last_seconds
        if now is None:
            return
        started = state.phase_start.get(phase)
        progressed = parse_seconds(self.stall.log_progress) if self.stall.log_progress else None
        since = progressed if progressed is not None else started
        limit, expected, basis = self.stall.limit(phase, state)
        report: dict[str, Any] = {"phase": phase, "limit_s": round(limit, 1), "basis": basis}
        lagging = lagging_ranks(state)
        if lagging:
            report.update(lagging_ranks=lagging, reached=state.reached)
        if started is not None:
            report["ran_s"] = round(max(0.0, now - started), 1)
        if since is not None:
            report["idle_s"] = round(max(0.0, now - since), 1)
        state.phase_at_end = report
        idle = report.get("idle_s")
        if idle is None or idle <= limit or state.stall is not None:
            return
        from sgtui.core.logs.stall import phase_words, stall_values

        values = stall_values(state, phase, idle, expected, limit, basis)
        values["ran_s"] = report.get("ran_s")
        values["at_end"] = True
        text = (
            f"no progress for {_duration(idle)} while {phase_words(state, phase)} when the log ends "
            f"(expected about {_duration(expected)}: {basis})"
        )
        state.stall = ErrorInfo("stalled", line, text, phase, state.last_time, values)
        state.invalidate()


def _watching(state: StartupState) -> bool:
    """A launch still on its way up: nothing failed, not ready, not stopped."""
    notes = state.notes
    return (
        state.reached != "ready"
        and ANSWERED not in notes
        and SERVED not in notes
        and STOPPED not in notes
        and state.error is None
    )


def _duration(seconds: float) -> str:
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
