"""A host's ProxyCommand, run the way OpenSSH runs it."""

from __future__ import annotations

import asyncio
import contextlib
import os
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
        self.sock.close()
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 2)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                await self.proc.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._reader, 1)
