"""Tailing one node of a followed run into its `RunSession`, with the session's lines posted in batches."""

from __future__ import annotations

import asyncio
import time

from sgtui.ui.backend import Backend, RunExit
from sgtui.ui.logtext import clean_line
from sgtui.ui.session.run import RunSession

FLUSH_S = 0.05  # a flood becomes at most 20 redraws a second per followed run
# A big chunk (a reattach reads a whole log at once) is cleaned and classified SLICE lines at a time, and the
# loop gets a turn (keys, frames) once TURN_S of work is done: a key waits one such turn per widget it passes.
SLICE = 256
TURN_S = 0.01
STALL_CHECK_S = 5.0
RETRY_S = (1.0, 2.0, 5.0, 10.0)


class Follower:
    """One per node of a followed run; `run()` returns when the node's process has ended and its log is
    read to the end."""

    def __init__(self, backend: Backend, session: RunSession, rank: int) -> None:
        self.backend = backend
        self.session = session
        self.rank = rank
        self.node = session.nodes[rank]
        self._last_flush = 0.0
        self._timer: asyncio.TimerHandle | None = None

    async def run(self) -> None:
        stall = asyncio.create_task(self._stall_checks())
        try:
            await self._follow()
        finally:
            stall.cancel()
            if self._timer is not None:
                self._timer.cancel()
        self.session.flush()
        self.session.ended(self.rank, *await self._final_state())

    async def _follow(self) -> None:
        delays = iter(RETRY_S)
        while True:
            try:
                async for end, raw in self.backend.tail(self.node.run, self.node.offset):
                    delays = iter(RETRY_S)
                    await self._feed(raw, end)
                return
            except asyncio.CancelledError:
                raise
            except Exception:  # the connection dropped: resume from the last complete line
                self.session.flush()
                await asyncio.sleep(next(delays, RETRY_S[-1]))

    async def _feed(self, raw: list[str], end: int) -> None:
        """One chunk, in slices with a loop turn after each TURN_S of work; the offset moves with the last
        slice. Cancelled between slices, the rest is still fed: a chunk goes in whole, so a later tail from
        the offset repeats no line."""
        start = 0
        turn = time.perf_counter()
        try:
            while len(raw) - start > SLICE:
                self.session.feed(
                    self.rank, [clean_line(line) for line in raw[start : start + SLICE]], self.node.offset
                )
                start += SLICE
                if time.perf_counter() - turn >= TURN_S:
                    self._flush_soon()
                    await asyncio.sleep(0)
                    turn = time.perf_counter()
        finally:
            self.session.feed(self.rank, [clean_line(line) for line in raw[start:]], end)
            self._flush_soon()

    def _flush_soon(self) -> None:
        """Flush now when due; otherwise make sure a quiet log still shows its last lines soon."""
        now = time.monotonic()
        if now - self._last_flush >= FLUSH_S:
            self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_S, self._flush)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._last_flush = time.monotonic()
        self.session.flush()

    async def _stall_checks(self) -> None:
        """The classifier's own stall rule (no progress for too long in a phase that should move)."""
        check = getattr(self.node.tracker.classifier, "check_stall", None)
        if check is None:
            return
        while True:
            await asyncio.sleep(STALL_CHECK_S)
            event = check()  # on the classifier's own clock
            if event is not None:
                self.session.stalled(self.rank, str(getattr(event, "text", "") or event))

    async def _final_state(self) -> RunExit:
        """The host's word, the exit code (what the classifier's `process_exited` needs) and its note."""
        try:
            return await self.backend.run_exit(self.node.run)
        except Exception:
            return RunExit("unknown")
