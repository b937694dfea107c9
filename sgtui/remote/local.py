"""The Connection interface for commands on this machine, when the jump box is the GPU host."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable

from sgtui.core.shell import RemoteCommand
from sgtui.remote.hosts import HostConfig
from sgtui.remote.transport import (
    ConnectionEvent,
    ConnState,
    EventSink,
    RemoteError,
    Result,
    Stream,
    _Subscribers,
)


class LocalTransport:
    """The Connection interface for commands on this machine (the jump box is the GPU host)."""

    def __init__(self, name: str = "local") -> None:
        self.host = HostConfig(name=name, hostname="localhost", local=True, source="local")
        self.state = ConnState.UP
        self._subs = _Subscribers()

    def subscribe(self, sink: EventSink) -> Callable[[], None]:
        return self._subs.add(sink)

    @property
    def connected(self) -> bool:
        return True

    @property
    def host_key_fingerprint(self) -> str:
        """No SSH host key: this machine is "local" (see `remote/identity.py`)."""
        return "local"

    async def connect(self) -> LocalTransport:
        self._subs.emit(ConnectionEvent(self.host.name, ConnState.UP, "local"))
        return self

    async def run(
        self, command: str | RemoteCommand, *, input: str | bytes | None = None, timeout: float | None = None
    ) -> Result:
        if isinstance(command, RemoteCommand):
            command, input = command.command, command.stdin
        data = input.encode("utf-8") if isinstance(input, str) else input
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(data), timeout)
        except TimeoutError:
            await _end(proc, 9)
            raise RemoteError(f"local command timed out after {timeout} s") from None
        except asyncio.CancelledError:
            await _end(proc, 9)
            raise
        rc = proc.returncode
        sig = None
        if rc is not None and rc < 0:
            import signal as _signal

            sig, rc = _signal.Signals(-rc).name.removeprefix("SIG"), None
        return Result(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), rc, sig)

    async def stream_to(self, command: str | RemoteCommand, on_data: Callable[[bytes], None]) -> None:
        """`Connection.stream_to` here: each stdout chunk to `on_data` until the output ends."""
        async with self.stream(command) as proc:
            while data := await proc.read(65536):
                on_data(data)

    @contextlib.asynccontextmanager
    async def stream(self, command: str | RemoteCommand, *, long_lived: bool = True) -> AsyncIterator[Stream]:
        stdin = None
        if isinstance(command, RemoteCommand):
            command, stdin = command.command, command.stdin
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            command,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        if stdin is not None and proc.stdin is not None:
            proc.stdin.write(stdin)
            proc.stdin.close()
        try:
            yield _LocalStream(proc)
        finally:
            await _end(proc, 15)

    async def open_connection(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(host, port)

    async def close(self) -> None:
        self.state = ConnState.CLOSED
        self._subs.emit(ConnectionEvent(self.host.name, ConnState.CLOSED, "local"))


async def _end(proc: asyncio.subprocess.Process, sig: int) -> None:
    """Signal the command's own process group (start_new_session: pgid = its pid) while it runs, reap it,
    and close its transport: one left open (output not read to the end) is collected after the event loop
    closed, which raises there."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), 2)
    transport = getattr(proc, "_transport", None)  # asyncio's Process has no public close()
    if transport is not None:
        transport.close()  # SIGKILLs the command if TERM did not end it


class _LocalStream:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc

    async def read(self, n: int = 65536) -> bytes:
        assert self._proc.stdout is not None
        return await self._proc.stdout.read(n)

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode
