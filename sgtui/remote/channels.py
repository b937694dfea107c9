"""Commands over one SSH connection: `run` (to completion), `stream` (stdout as bytes), `open_connection`
(direct-tcpip). Channels are rationed below sshd's MaxSessions (OpenSSH frees slots lazily), a refused
channel open is retried, and long-lived streams never hold the last channels."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import asyncssh

from sgtui.core.shell import RemoteCommand
from sgtui.remote.hosts import HostConfig
from sgtui.remote.transport import RemoteError, Result, Stream

CHANNEL_RETRY_MAX_DELAY = 1.5
STREAM_RESERVE = 2  # channels of the budget kept for short commands


class ProcStream:
    def __init__(self, proc: asyncssh.SSHClientProcess[bytes]) -> None:
        self._proc = proc

    async def read(self, n: int = 65536) -> bytes:
        return await self._proc.stdout.read(n)

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode


class _CallbackSession(asyncssh.SSHClientSession):  # type: ignore[misc]
    """Hands each stdout chunk to `on_data` as it arrives; `done` ends with the channel."""

    def __init__(self, on_data: Callable[[bytes], None]) -> None:
        self.on_data = on_data
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes, datatype: int | None) -> None:
        if datatype is None:
            self.on_data(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            if exc is None:
                self.done.set_result(None)
            else:
                self.done.set_exception(exc)


class Channels:
    """The command calls of `Connection` (mixed into it): they open channels on the connection that
    `_ensure()` returns, at most `channel_budget` at once."""

    host: HostConfig

    def _init_channels(self, channel_budget: int) -> None:
        self._budget = channel_budget
        self._sem = asyncio.Semaphore(channel_budget)
        # long-lived streams (log tails, the GPU sampler) may never hold the last channels: stop and
        # status must still get through when many logs are followed
        self._stream_sem = asyncio.Semaphore(max(1, channel_budget - STREAM_RESERVE))

    async def _ensure(self) -> asyncssh.SSHClientConnection:
        raise NotImplementedError

    async def _create_process(self, command: str, encoding: str | None) -> asyncssh.SSHClientProcess[Any]:
        """Open a channel, retrying refusals: sshd frees MaxSessions slots lazily (about 2.5 s in all)."""
        delay = 0.005
        while True:
            conn = await self._ensure()
            try:
                return await conn.create_process(command, encoding=encoding, errors="replace")
            except asyncssh.ChannelOpenError:
                if delay > CHANNEL_RETRY_MAX_DELAY:
                    raise
                await asyncio.sleep(delay)
                delay *= 2

    async def run(
        self, command: str | RemoteCommand, *, input: str | bytes | None = None, timeout: float | None = None
    ) -> Result:
        """Run one command to completion; output decoded as UTF-8 (bad bytes replaced)."""
        if isinstance(command, RemoteCommand):
            command, input = command.command, command.stdin
        data = input.decode("utf-8") if isinstance(input, bytes) else input
        async with self._sem:
            try:
                proc = await self._create_process(command, "utf-8")
            except asyncssh.ChannelOpenError as exc:
                raise RemoteError(
                    f"{self.host.name} keeps refusing new SSH sessions ({exc.reason}): its sshd allows fewer "
                    f"than the {self._budget} sgtui uses (MaxSessions); raise MaxSessions there or follow "
                    "fewer logs on it"
                ) from None
            except (asyncssh.Error, OSError) as exc:
                raise RemoteError(f"{self.host.name}: cannot run a command: {exc}") from None
            try:
                out, err = await asyncio.wait_for(proc.communicate(data), timeout)
            except TimeoutError:
                raise RemoteError(f"{self.host.name}: command timed out after {timeout} s") from None
            except (asyncssh.Error, OSError) as exc:
                raise RemoteError(f"{self.host.name}: connection failed during a command: {exc}") from None
            finally:
                proc.close()
            return Result(
                str(out or ""),
                str(err or ""),
                proc.exit_status,
                proc.exit_signal[0] if proc.exit_signal else None,
            )

    @contextlib.asynccontextmanager
    async def stream(self, command: str | RemoteCommand, *, long_lived: bool = True) -> AsyncIterator[Stream]:
        """A command whose stdout is read as bytes; the channel is closed on exit. A stream that ends by
        itself soon (a stop with progress lines) says `long_lived=False` and is rationed like `run`."""
        stdin = None
        if isinstance(command, RemoteCommand):
            command, stdin = command.command, command.stdin
        async with self._stream_sem if long_lived else contextlib.nullcontext(), self._sem:
            proc = await self._create_process(command, None)
            try:
                if stdin is not None:
                    proc.stdin.write(stdin)
                    proc.stdin.write_eof()
                yield ProcStream(proc)
            finally:
                proc.close()

    async def stream_to(self, command: str | RemoteCommand, on_data: Callable[[bytes], None]) -> None:
        """A long-lived command whose stdout chunks go to `on_data` straight from the connection's
        callback: no reader, future or task switch per chunk (the fleet's GPU streams: 500 hosts x 1 Hz).
        Returns when the output ends; raises when the connection is lost; cancelling closes the channel."""
        stdin = None
        if isinstance(command, RemoteCommand):
            command, stdin = command.command, command.stdin
        async with self._stream_sem, self._sem:
            delay = 0.005
            while True:
                conn = await self._ensure()
                try:
                    chan, session = await conn.create_session(
                        lambda: _CallbackSession(on_data), command, encoding=None
                    )
                    break
                except asyncssh.ChannelOpenError:
                    if delay > CHANNEL_RETRY_MAX_DELAY:
                        raise
                    await asyncio.sleep(delay)
                    delay *= 2
            try:
                if stdin is not None:
                    chan.write(stdin)
                    chan.write_eof()
                await session.done
            finally:
                chan.close()

    async def open_connection(
        self, host: str, port: int
    ) -> tuple[asyncssh.SSHReader[bytes], asyncssh.SSHWriter[bytes]]:
        """A direct-tcpip channel to host:port as seen from the remote machine (no curl needed)."""
        conn = await self._ensure()
        return await conn.open_connection(host, port, encoding=None)
