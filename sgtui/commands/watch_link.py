"""`launch --watch`'s view of its SSH connection: it says at once when the link is lost, when it is back
(and the byte of the log the follow resumes at), and when it has been gone longer than `--give-up-after`:
then the watch ends, saying the server may well still be running and the exact commands that check."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sgtui.remote.connection import ConnectionEvent, ConnState, Transport

DOWN = (ConnState.LOST, ConnState.RETRYING, ConnState.UNREACHABLE)
FATAL = (ConnState.AUTH_FAILED, ConnState.HOST_KEY_UNKNOWN, ConnState.HOST_KEY_CHANGED)


class LinkWatch:
    def __init__(
        self,
        conn: Transport | None,
        printer: Any,
        give_up_after: float,
        offset: Callable[[], int],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.conn = conn
        self.host = conn.host.name if conn is not None else "the host"
        self.printer = printer
        self.give_up_after = give_up_after
        self.offset = offset
        self.clock = clock
        self.down_since: float | None = None
        self.fatal = ""  # a host key or authentication failure on reconnect: retrying cannot help
        self._unsubscribe: Callable[[], None] | None = None

    def start(self) -> None:
        if self.conn is not None:
            self._unsubscribe = self.conn.subscribe(self._event)

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _event(self, event: ConnectionEvent) -> None:
        if event.state in DOWN:
            self.lost(event.message)
        elif event.state in FATAL:
            self.fatal = event.message
        elif event.state is ConnState.UP:
            self.back()

    def lost(self, why: str = "") -> None:
        """Said once per outage, at its first sign (a dropped link, a status poll not answered)."""
        if self.down_since is not None:
            return
        self.down_since = self.clock()
        self.printer.emit(
            "connection_lost",
            f"connection to {self.host} lost; retrying (giving up after {self.give_up_after:g} s without it)"
            + (f": {why}" if why else ""),
            host=self.host,
            reason=why,
            give_up_after=self.give_up_after,
        )

    def back(self) -> None:
        if self.down_since is None:
            return
        gone = self.clock() - self.down_since
        self.down_since = None
        offset = self.offset()
        self.printer.emit(
            "reconnected",
            f"reconnected to {self.host} after {gone:.0f} s; resuming the log at byte {offset}",
            host=self.host,
            offset=offset,
            down_s=round(gone, 1),
        )

    def gone_too_long(self) -> bool:
        return self.down_since is not None and self.clock() - self.down_since >= self.give_up_after

    def give_up(self, run_id: str, place: str, stop: str | None = None) -> int:
        """The watch ends (exit 1); the server is left as it is, and may still be running."""
        from sgtui.commands import COMMANDS

        why = self.fatal or f"no connection to {self.host} for {self.give_up_after:g} s"
        checks = f"`sgtui runs {place}`"
        if "status" in COMMANDS:  # the health check, where this build has it
            checks += f" or `sgtui status {run_id} {place}`"
        self.printer.emit(
            "gave_up",
            f"gave up watching run {run_id}: {why}; the server may still be running there: check with "
            f"{checks}; stop it with `{stop or f'sgtui stop {run_id} {place}'}`",
            host=self.host,
            run=run_id,
            reason=why,
            check=f"sgtui runs {place}",
        )
        return 1
