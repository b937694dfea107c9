"""`launch --watch`'s follower: one run's log through the one analysis path, its status on the side.

`Watch` feeds tail chunks to `core.logs.LogClassifier` (feed, `process_exited`, `finish`, `check_stall`),
prints each startup milestone, then the verdict and the diagnosis (led by the preflight fit's first fix);
`LinkWatch` (watch_link.py) says when its connection is lost, resumed or given up on; a failed server still
running is stopped by `launch_leftover.py`. `launch_multinode.MultiWatch` is the same for several nodes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sgtui.commands.events import Printer

if TYPE_CHECKING:
    from sgtui.core.logs import LogClassifier, LogEvent
    from sgtui.remote.runs import RunManager, RunRecord

STATUS_POLL_S = 0.5  # how often --watch asks whether the process group is still alive
STATUS_TIMEOUT_S = 10.0  # a status poll not answered in this long: the link is taken as lost
GIVE_UP_AFTER_S = 300.0  # --give-up-after's default: this long without a connection ends the watch
ERROR_SETTLE_S = 1.0  # after the first fatal line, read this much longer so the whole traceback is in


def phase_label(phase: str) -> str:
    from sgtui.core.logs import PHASE_LABELS

    return PHASE_LABELS.get(phase, phase)


class Watch:
    """Follow one run to ready or failure: log chunks into the classifier, status polls on the side."""

    def __init__(
        self,
        manager: RunManager,
        record: RunRecord,
        printer: Printer,
        timeout: float | None,
        stall_after: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        stop_command: str | None = None,
        fit: Any = None,
        give_up_after: float = GIVE_UP_AFTER_S,
    ) -> None:
        from sgtui.core.logs import LogClassifier

        self.fit = fit  # the preflight's FitReport: the diagnosis leads with the same first fix
        self.manager = manager
        self.record = record
        self.printer = printer
        self.timeout = timeout
        self.classifier: LogClassifier = LogClassifier(clock=clock, stall_after=stall_after)
        self.error_seen_at: float | None = None
        self.exit_code: int | None = None
        self.exited = False
        self.stopped = False  # it ended on a stop by sgtui (RunState.STOPPED)
        self.offset = 0  # bytes of the log already classified
        self.stop_command = stop_command  # the exact `sgtui stop` of this run (launch_leftover.stop_command)
        from sgtui.commands.watch_link import LinkWatch

        conn = getattr(manager, "conn", None)
        self.link = LinkWatch(conn, printer, give_up_after, lambda: self.offset)
        self.place = f"--host {self.link.host}"  # how `sgtui runs`/`status`/`stop` find the run

    async def run(self) -> int:
        import asyncio
        import contextlib

        from sgtui.commands.launch_leftover import end_watch

        self.link.start()
        tail = asyncio.ensure_future(self._follow())
        try:
            deadline = None if self.timeout is None else time.monotonic() + self.timeout
            while True:
                done = self._verdict()
                if done is not None:
                    return await end_watch(self, done)
                stall = self.classifier.check_stall()
                if stall is not None:
                    self._event(stall)
                    return await end_watch(self, "stalled")
                if deadline is not None and time.monotonic() > deadline:
                    self.printer.emit(
                        "timeout", f"gave up after {self.timeout:g} s: still {self.classifier.state.phase}"
                    )
                    return 1
                if self.link.fatal or self.link.gone_too_long() or tail.done():
                    if tail.done() and not tail.cancelled() and tail.exception() is not None:
                        self.link.fatal = self.link.fatal or str(tail.exception())
                    return self.link.give_up(self.record.id, self.place, self.stop_command)
                await asyncio.sleep(STATUS_POLL_S)
                await self._poll_status()
        finally:
            self.link.close()
            tail.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await tail

    async def _follow(self) -> None:
        async for chunk in self.manager.tail(self.record):
            if chunk.end <= self.offset:
                continue  # already read by _read_rest after the server exited
            self.offset = chunk.end
            for event in self.classifier.feed("\n".join(chunk.lines) + "\n"):
                self._event(event)

    async def _read_rest(self) -> None:
        """The tail delivers complete lines only: a server that died mid-line left its last words unread."""
        from sgtui.remote.connection import RemoteError

        try:
            rest = await self.manager.read_rest(self.record, self.offset)
        except RemoteError:
            return
        if rest.lines:
            self.offset = rest.end
            for event in self.classifier.feed("\n".join(rest.lines) + "\n"):
                self._event(event)

    async def _poll_status(self) -> None:
        from sgtui.remote.connection import RemoteError
        from sgtui.remote.runs import RunState

        if self.exited:
            return
        import asyncio

        try:
            status = await asyncio.wait_for(self.manager.status(self.record), STATUS_TIMEOUT_S)
        except TimeoutError:  # a link that answers nothing (a host gone without a goodbye)
            self.link.lost(f"no answer in {STATUS_TIMEOUT_S:g} s")
            return
        except RemoteError:
            return  # the connection is being re-established; the next poll asks again
        self.link.back()  # answered: whatever looked lost is back
        if status.state is not RunState.RUNNING:
            await asyncio.sleep(STATUS_POLL_S)  # let the tail deliver the last lines first
            await self._read_rest()
            self.exited = True
            self.stopped = status.state is RunState.STOPPED  # by `sgtui stop` or the TUI: not by itself
            self.exit_code = None if self.stopped else status.rc
            if self.stopped:
                self.printer.emit("note", f"run {self.record.id} was stopped", message="stopped")
            elif status.disk_full:  # no exit code because it could not be written
                self.printer.emit("disk_full", status.disk_full, message=status.disk_full)
            elif status.why:  # what happened to its container (removed, restarted by docker, ...)
                self.printer.emit("note", f"run {self.record.id}: {status.why}", message=status.why)
            for event in self.classifier.process_exited(self.exit_code) + self.classifier.finish():
                self._event(event)  # the process is gone: its log has ended (a trailing traceback killed it)

    def _event(self, event: LogEvent) -> None:
        from sgtui.core.logs import MILESTONE_KINDS

        if event.kind == "stalled":
            self.printer.emit("stalled", f"stalled: {event.text}", line=event.line, **event.values)
        elif event.kind in MILESTONE_KINDS:
            self.printer.milestone(event)

    def _verdict(self) -> str | None:
        state = self.classifier.state
        if state.error is None and self.classifier.analysis().outcome == "ready":
            return "ready"  # also versions that never print the ready banner but answer requests
        if state.error is not None:
            if self.error_seen_at is None:
                self.error_seen_at = time.monotonic()
            if self.exited or time.monotonic() - self.error_seen_at >= ERROR_SETTLE_S:
                return "failed"
        elif self.exited:
            return "failed" if self.exit_code != 0 else "exited"
        return None

    def _finish(self, verdict: str, still_running: bool = False) -> int:

        from sgtui.core.logs import diagnose

        analysis = self.classifier.analysis()
        error = analysis.error
        if error is not None:
            self.printer.emit(
                "error",
                f"error ({error.error_class}) at line {error.line}, while {phase_label(error.phase)}: "
                f"{error.text.strip()[:300]}",
                error_class=error.error_class,
                line=error.line,
                text=error.text,
                phase=error.phase,
                error=error.to_json(),
            )
        for item in diagnose(analysis, self.fit):
            self.printer.diagnosis(item)
        if verdict == "ready":
            self.printer.emit("ready", f"ready: {self.record.log_path}", log=self.record.log_path)
            return 0
        from sgtui.commands.launch_leftover import alive_note

        alive = alive_note(verdict, self.record, self.stop_command) if still_running else ""
        if verdict == "stalled":
            self.printer.emit(
                "failed",
                f"stalled: {error.text if error else ''} (log {self.record.log_path}){alive}",
                error_class="stalled",
                exit_code=self.exit_code,
                log=self.record.log_path,
                still_running=still_running,
            )
            return 1
        what = error.error_class if error else "stopped" if self.stopped else "the server exited"
        self.printer.emit(
            "failed",
            f"failed: {what} (log {self.record.log_path}){alive}",
            error_class=error.error_class if error else None,
            exit_code=self.exit_code,
            log=self.record.log_path,
            still_running=still_running,
        )
        return 1
