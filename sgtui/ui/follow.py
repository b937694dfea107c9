"""Following one run's log: clean lines, classify them, and post them to the app in coalesced batches."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from sgtui.ui import messages as m
from sgtui.ui.backend import Backend
from sgtui.ui.logtext import clean_line
from sgtui.ui.startup import StartupTracker
from sgtui.ui.views import RunView

FLUSH_S = 0.05
RETRY_S = (1.0, 2.0, 5.0, 10.0)


@dataclass
class Coalescer:
    """Batches lines so a flood becomes a few messages; beyond `cap` pending lines the oldest are dropped."""

    cap: int
    pending: list[str] = field(default_factory=list)
    dropped: int = 0
    last_flush: float = 0.0

    def add(self, lines: list[str]) -> None:
        self.pending.extend(lines)
        if len(self.pending) > self.cap:
            extra = len(self.pending) - self.cap
            del self.pending[:extra]
            self.dropped += extra

    def due(self, now: float) -> bool:
        return bool(self.pending) and now - self.last_flush >= FLUSH_S

    def take(self, now: float) -> tuple[list[str], int]:
        lines, dropped = self.pending, self.dropped
        self.pending, self.dropped, self.last_flush = [], 0, now
        return lines, dropped


class Follower:
    """One per followed run; `run()` returns when the run has ended and its log is read."""

    def __init__(
        self,
        backend: Backend,
        run: RunView,
        predicted: dict[str, Any] | None,
        post: Callable[[Message], None],
        max_lines: int,
    ) -> None:
        self.backend = backend
        self.view = run
        self.post = post
        self.tracker = StartupTracker(predicted)
        self.batch = Coalescer(cap=max_lines)
        self.offset = 0
        self.reported = "starting"
        self._timer: asyncio.TimerHandle | None = None

    async def run(self) -> None:
        try:
            await self._follow()
        finally:
            if self._timer is not None:
                self._timer.cancel()
        self.flush(force=True)
        state, rc = await self._final_state()
        tracker = self.tracker
        if state in ("exited", "failed"):
            tracker.process_exited(rc)  # a run stopped by us, or still unknown, has no exit code to judge
        tracker.end_of_log()
        self.post(m.StartupChanged(self.view.run_id, tracker.timeline(), tracker.milestone_kinds()))
        outcome = tracker.outcome
        final = outcome if outcome != "starting" else state
        if final != self.reported or final == "failed":  # the whole log may say more than its first error
            self.reported = final
            self.post(m.RunOutcome(self.view.run_id, final, tracker.diagnoses() if final == "failed" else []))

    async def _follow(self) -> None:
        delays = iter(RETRY_S)
        while True:
            try:
                async for end, raw in self.backend.tail(self.view, self.offset):
                    self.offset = end
                    delays = iter(RETRY_S)
                    self.take([clean_line(line) for line in raw])
                return
            except asyncio.CancelledError:
                raise
            except Exception:  # the connection dropped: resume from the last complete line
                self.flush(force=True)
                await asyncio.sleep(next(delays, RETRY_S[-1]))

    def take(self, lines: list[str]) -> None:
        self.batch.add(lines)
        tracker = self.tracker
        if tracker.feed(lines):
            self.post(m.StartupChanged(self.view.run_id, tracker.timeline(), tracker.milestone_kinds()))
        outcome = tracker.outcome
        if outcome != self.reported and outcome in ("ready", "failed"):
            self.reported = outcome
            self.flush(force=True)
            self.post(m.RunOutcome(self.view.run_id, outcome, tracker.diagnoses()))
        self.flush()

    def flush(self, force: bool = False) -> None:
        """Post now when due; otherwise make sure a quiet log still shows its last lines soon."""
        now = time.monotonic()
        if self.batch.pending and (force or self.batch.due(now)):
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            lines, dropped = self.batch.take(now)
            self.post(m.LogLines(self.view.run_id, lines, self.offset, dropped))
        elif self.batch.pending and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_S, self._late_flush)

    def _late_flush(self) -> None:
        self._timer = None
        self.flush(force=True)

    async def _final_state(self) -> tuple[str, int | None]:
        try:
            return await self.backend.run_exit(self.view)
        except Exception:
            return "unknown", None
