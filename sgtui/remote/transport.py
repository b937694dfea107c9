"""What every transport to a host shares: its connection states and events, the errors, a finished
command's result and a running command's stream. `Connection` (SSH) and `LocalTransport` implement them;
callers import them from `sgtui.remote.connection`."""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sgtui.remote.hosts import HostConfig

_log = logging.getLogger("sgtui.remote.connection")


class ConnState(enum.Enum):
    CONNECTING = "connecting"
    UP = "up"
    LOST = "lost"
    RETRYING = "retrying"
    AUTH_FAILED = "auth failed"
    UNREACHABLE = "unreachable"
    HOST_KEY_UNKNOWN = "host key unknown"
    HOST_KEY_CHANGED = "host key changed"
    CLOSED = "closed"


@dataclass(frozen=True)
class ConnectionEvent:
    """A state change of one host's connection; `retry_in` is set for RETRYING."""

    host: str
    state: ConnState
    message: str = ""
    retry_in: float | None = None
    fingerprint: str | None = None
    at: float = field(default_factory=time.time)


class RemoteError(Exception):
    """Talking to a host failed; the message says which host and why."""


class UnreachableError(RemoteError):
    pass


class AuthError(RemoteError):
    """The host refused every key and password offered; nothing is retried until `reset()`."""

    def __init__(self, message: str, host: HostConfig) -> None:
        super().__init__(message)
        self.host = host


@dataclass(frozen=True)
class Result:
    """A finished command. `rc` is None when it was killed by a signal (see `signal`)."""

    stdout: str
    stderr: str
    rc: int | None
    signal: str | None = None

    @property
    def ok(self) -> bool:
        return self.rc == 0


class Stream(Protocol):
    """A running command's stdout as bytes chunks; b"" at EOF."""

    async def read(self, n: int = 65536) -> bytes: ...

    @property
    def returncode(self) -> int | None: ...


EventSink = Callable[[ConnectionEvent], None] | asyncio.Queue[ConnectionEvent]


class _Subscribers:
    def __init__(self) -> None:
        self._sinks: list[EventSink] = []
        self.last: ConnectionEvent | None = None

    def add(self, sink: EventSink) -> Callable[[], None]:
        self._sinks.append(sink)
        return lambda: self._sinks.remove(sink) if sink in self._sinks else None

    def emit(self, event: ConnectionEvent) -> None:
        """Deliver to every sink; a failing one is logged and skipped, because events are emitted from
        inside asyncssh's callbacks, where an exception would stop the reconnect from being scheduled."""
        self.last = event
        for sink in list(self._sinks):
            try:
                if isinstance(sink, asyncio.Queue):
                    sink.put_nowait(event)
                else:
                    sink(event)
            except Exception:
                _log.exception("connection event subscriber failed on %s", event.state.value)
