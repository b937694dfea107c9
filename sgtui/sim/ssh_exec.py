"""The sim SSH server's exec channel: one real `bash -c COMMAND` per channel, as sshd runs it.

`_ExecSession` starts the command in its own session (pid = pgid = sid), relays stdin/stdout/stderr with
flow control, ignores SSH `signal` requests (as OpenSSH does for root), and when the channel goes away
either only closes the command's pipes (sshd's way) or kills its group after a grace (`on_close`).
An `exec_hook` of the server may answer a command in-process instead (the fleet's nvidia-smi stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

import asyncssh

if TYPE_CHECKING:
    from sgtui.sim.sshserver import SimSSHServer, _ServerConn


class _ExecSession(asyncssh.SSHServerSession):  # type: ignore[misc]
    """One channel: one `bash -c COMMAND` in its own session (pid = pgid = sid, as sshd does)."""

    def __init__(self, server: SimSSHServer, owner: _ServerConn) -> None:
        self._server = server
        self._owner = owner
        self._chan: asyncssh.SSHServerChannel | None = None
        self._command: str | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._pending_stdin: list[bytes] = []
        self._stdin_eof = False
        self._task: asyncio.Task[None] | None = None

    def connection_made(self, chan: asyncssh.SSHServerChannel) -> None:
        self._chan = chan

    def shell_requested(self) -> bool:
        return False

    def exec_requested(self, command: str) -> bool:
        self._command = command
        return True

    def session_started(self) -> None:
        self._task = asyncio.ensure_future(self._run())
        self._server._tasks.add(self._task)
        self._task.add_done_callback(self._server._tasks.discard)

    async def _run(self) -> None:
        assert self._chan is not None and self._command is not None
        chan = self._chan
        hook = self._server.exec_hook
        served = hook(self._command) if hook is not None else None
        if served is not None:  # the host answers this command itself (SimHost: nvidia-smi loops)
            rc = await served(self._write_out, lambda: self._chan is not None and not chan.is_closing())
            if chan.get_extra_info("connection") is not None:
                with contextlib.suppress(OSError, asyncssh.Error):
                    chan.exit(rc)
            return
        try:
            self._proc = await asyncio.create_subprocess_exec(
                "bash",
                "-c",
                self._command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                env=dict(self._server.env),
                cwd=self._server.cwd,
            )
        except OSError as exc:
            chan.write_stderr(f"sim sshd: cannot start bash: {exc}\n".encode())
            chan.exit(127)
            return
        self._server._procs.add(self._proc)
        if self._chan is None:  # the channel went away while bash was starting
            self._on_channel_gone(self._proc)
        for data in self._pending_stdin:
            self._feed_stdin(data)
        self._pending_stdin.clear()
        if self._stdin_eof:
            self._close_stdin()
        proc = self._proc
        assert proc.stdout is not None and proc.stderr is not None
        await asyncio.gather(self._pump(proc.stdout, chan.write), self._pump(proc.stderr, chan.write_stderr))
        rc = await proc.wait()
        self._server._procs.discard(proc)
        if chan.get_extra_info("connection") is None:
            return
        with contextlib.suppress(OSError, asyncssh.Error):
            if rc < 0:
                chan.exit_with_signal(signal.Signals(-rc).name.removeprefix("SIG"))
            else:
                chan.exit(rc)

    async def _pump(self, stream: asyncio.StreamReader, write: Callable[[bytes], object]) -> None:
        while True:
            data = await stream.read(65536)
            if not data:
                return
            await self._can_write.wait()
            if self._chan is None or self._chan.is_closing():
                continue  # keep draining so the process is not blocked; the data has nowhere to go
            with contextlib.suppress(OSError, asyncssh.Error):
                write(data)

    def _write_out(self, data: bytes) -> None:
        if self._chan is not None and not self._chan.is_closing():
            with contextlib.suppress(OSError, asyncssh.Error):
                self._chan.write(data)

    def _feed_stdin(self, data: bytes) -> None:
        if self._proc and self._proc.stdin and not self._proc.stdin.is_closing():
            self._proc.stdin.write(data)

    def _close_stdin(self) -> None:
        if self._proc and self._proc.stdin and not self._proc.stdin.is_closing():
            with contextlib.suppress(OSError):
                self._proc.stdin.write_eof()

    def data_received(self, data: bytes, datatype: int | None) -> None:
        if self._proc is None:
            self._pending_stdin.append(data)
        else:
            self._feed_stdin(data)

    def eof_received(self) -> bool:
        if self._proc is None:
            self._stdin_eof = True
        else:
            self._close_stdin()
        return True

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    def signal_received(self, signal_name: str) -> None:
        """OpenSSH refuses SSH signals for root ("session signalling requires privilege separation")."""
        if not self._server.allow_signals or self._proc is None or self._proc.returncode is not None:
            return  # once reaped, the pid may belong to someone else
        sig = getattr(signal, "SIG" + signal_name, None)
        if isinstance(sig, signal.Signals):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, sig)

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner.sessions -= 1
        self._chan = None
        self._can_write.set()
        if self._proc is not None:
            self._on_channel_gone(self._proc)

    def _on_channel_gone(self, proc: asyncio.subprocess.Process) -> None:
        if proc.returncode is not None:
            return
        if self._server.on_close == "killpg":
            self._server._spawn(_killpg_with_grace(proc, self._server.kill_grace))
        else:
            _close_pipes(proc)


def _close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Close the command's pipes the way sshd does; never `proc._transport.close()`, which SIGKILLs."""
    transport = getattr(proc, "_transport", None)
    if transport is None:
        return
    for fd in (0, 1, 2):
        pipe = transport.get_pipe_transport(fd)
        if pipe is not None:
            pipe.close()


async def _killpg_with_grace(proc: asyncio.subprocess.Process, grace: float) -> None:
    for sig in (signal.SIGHUP, signal.SIGTERM):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
    try:
        await asyncio.wait_for(proc.wait(), grace)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
