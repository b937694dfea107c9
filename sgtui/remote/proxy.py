"""A host's ProxyCommand, run the way OpenSSH runs it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket

from sgtui.remote.hosts import HostConfig, expand_proxy_command


class ProxyCommand:
    """A host's ProxyCommand run as OpenSSH runs it (`$SHELL -c "exec CMD"`, tokens expanded), its stdin
    and stdout one end of a socket pair whose other end carries the SSH connection. Its stderr is kept
    (not printed over the TUI) for the message when it fails."""

    def __init__(self, command: str, proc: asyncio.subprocess.Process, sock: socket.socket) -> None:
        self.command = command
        self.proc = proc
        self.sock = sock
        self._err = bytearray()
        self._reader = asyncio.ensure_future(self._read_stderr())

    @classmethod
    async def start(cls, host: HostConfig) -> ProxyCommand:
        command = expand_proxy_command(host)
        ours, theirs = socket.socketpair()
        try:
            proc = await asyncio.create_subprocess_exec(
                os.environ.get("SHELL") or "/bin/sh",
                "-c",
                f"exec {command}",
                stdin=theirs,
                stdout=theirs,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # a Ctrl+C in the TUI does not reach it; close() ends it
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        return cls(command, proc, ours)

    async def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(4096):
            self._err += chunk[: max(0, 4096 - len(self._err))]

    def stderr_tail(self) -> str:
        lines = [ln.strip() for ln in self._err.decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1][:300] if lines else ""

    async def close(self) -> None:
        """End its process group (a pipeline such as `relay | cat` outlives the shell otherwise, holding
        stderr open), read stderr to its end, and close the subprocess transport in every case: left
        open, it is collected after the event loop closed ("Event loop is closed")."""
        self.sock.close()
        self._signal_group(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), 2)
        except TimeoutError:
            self._signal_group(signal.SIGKILL)
            await self.proc.wait()
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), 2)
        except TimeoutError:  # a member of the group ignored TERM and still holds stderr
            self._signal_group(signal.SIGKILL)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._reader), 2)
        except Exception:
            pass
        self._reader.cancel()
        transport = getattr(self.proc, "_transport", None)  # asyncio's Process has no public close()
        if transport is not None:
            transport.close()

    def _signal_group(self, sig: signal.Signals) -> None:
        """Its own process group only (start_new_session: pgid = its pid); never anything else."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)
