"""An in-process SSH server on 127.0.0.x that runs every exec request with a real `bash -c`.

It stands in for a GPU host in tests and in `sgtui demo`. It is built to behave like OpenSSH with a root
login, because that is what sgtui meets on Proxmox hosts: SSH `signal` requests are ignored, a closed
channel only closes the command's pipes (the command dies at its next write, silent ones linger), and an
optional session cap refuses channels past MaxSessions. Keys are generated per server, so nothing leaks
in from the developer's ~/.ssh.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, Literal

import asyncssh

from sgtui.sim.ports import is_own_address
from sgtui.sim.ssh_exec import _ExecSession

OnClose = Literal["pipes", "killpg"]
ExecHook = Callable[[str], Callable[[Callable[[bytes], None], Callable[[], bool]], Awaitable[int]] | None]
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class _ServerConn(asyncssh.SSHServer):  # type: ignore[misc]
    def __init__(self, server: SimSSHServer) -> None:
        self._server = server
        self.sessions = 0
        self.conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self.conn = conn
        self._server._conns.add(conn)
        _no_ignore_packets(conn)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.conn is not None:
            self._server._conns.discard(self.conn)

    def begin_auth(self, username: str) -> bool | Awaitable[bool]:
        if self._server.login_delay > 0:  # a host across a network: the handshake's round trips, lumped
            return _after(self._server.login_delay, True)
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return key.public_data == self._server.client_key.public_data

    def password_auth_supported(self) -> bool:
        return self._server.password is not None and not self._server.kbdint_only

    def kbdint_auth_supported(self) -> bool:
        return self._server.password is not None and self._server.kbdint_only

    def get_kbdint_challenge(self, username: str, lang: str, submethods: str) -> tuple[str, str, str, list]:  # type: ignore[type-arg]
        return "", "", "", [("Password: ", False)]

    def validate_kbdint_response(self, username: str, responses: list[str]) -> bool:
        return self._server.password is not None and list(responses) == [self._server.password]

    def validate_password(self, username: str, password: str) -> bool:
        return self._server.password is not None and password == self._server.password

    def session_requested(self) -> _ExecSession:
        cap = self._server.max_sessions
        if cap is not None and self.sessions >= cap:
            raise asyncssh.ChannelOpenError(asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED, "no more sessions")
        self.sessions += 1
        return _ExecSession(self._server, self)

    def connection_requested(self, dest_host: str, dest_port: int, orig_host: str, orig_port: int) -> Any:
        """direct-tcpip to loopback only: enough for the health probe, nothing more. With a port map
        (a SimHost), a port its servers were asked to use leads to the sim's own port for it. On a fleet
        host with its own address, "127.0.0.1" means that address (its own loopback), as sshd there."""
        if not self._server.allow_tcp_forwarding:  # what sshd answers under `AllowTcpForwarding no`
            raise asyncssh.ChannelOpenError(asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED, "open failed")
        if is_own_address(dest_host) and not dest_host.startswith("127."):
            dest_host = "127.0.0.1"  # a sim pct container's own address (`ports.is_own_address`)
        if not (dest_host in _LOOPBACK or dest_host.startswith("127.")):
            return False
        alias = self._server.loopback_alias
        host = alias if alias and dest_host in _LOOPBACK else dest_host
        mapped = self._server.port_map(dest_port) if self._server.port_map is not None else None
        port = dest_port if mapped is None else mapped
        if host == dest_host and port == dest_port:
            return True
        return _forward_to(host, port)


def _no_ignore_packets(conn: asyncssh.SSHServerConnection) -> None:
    """Send what OpenSSH's sshd sends: asyncssh puts an empty SSH_MSG_IGNORE before every packet once
    encryption is on (`SSHConnection.send_packet`), which doubles the packets a client receives for each
    stdout chunk; sshd does not, and a fleet benchmark against the sim would charge the client for
    them. Only those empty ignore packets are dropped, on this server's connections."""
    send = conn.send_packet

    def send_packet(pkttype: int, *args: bytes, **kwargs: Any) -> None:
        if pkttype == _MSG_IGNORE and args == (_EMPTY_STRING,):
            return
        send(pkttype, *args, **kwargs)

    conn.send_packet = send_packet


_MSG_IGNORE = 2  # RFC 4253 section 11.2
_EMPTY_STRING = b"\0\0\0\0"  # an SSH string of length 0


def _forward_to(host: str, port: int) -> Callable[[asyncssh.SSHReader, asyncssh.SSHWriter], Awaitable[None]]:
    """A direct-tcpip handler that pipes the channel to host:port (the sim's own port)."""

    async def handler(reader: asyncssh.SSHReader, writer: asyncssh.SSHWriter) -> None:  # type: ignore[type-arg]
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return

        async def pump(src: Any, dst: Any) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(Exception):
                dst.write_eof()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        up_writer.close()
        writer.close()

    return handler


class SimSSHServer:
    """An asyncssh server that runs commands with the local bash, OpenSSH-for-root style.

    `env` is the whole environment of every command (a fake PATH can put fake `nvidia-smi`/`pct`
    first). `on_close="killpg"` kills a command's process group when its channel goes away instead of
    only closing its pipes. `max_sessions` emulates sshd's MaxSessions per connection.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        max_sessions: int | None = None,
        allow_signals: bool = False,
        on_close: OnClose = "pipes",
        kill_grace: float = 1.0,
        password: str | None = None,
        kbdint_only: bool = False,
        allow_tcp_forwarding: bool = True,
        host_key: asyncssh.SSHKey | None = None,
        client_key: asyncssh.SSHKey | None = None,
        port_map: Callable[[int], int | None] | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.env: dict[str, str] = dict(env) if env is not None else _default_env()
        self.cwd = str(cwd) if cwd is not None else None
        self.max_sessions = max_sessions
        self.allow_signals = allow_signals
        self.on_close: OnClose = on_close
        self.kill_grace = kill_grace
        self.password = password
        self.allow_tcp_forwarding = allow_tcp_forwarding
        self.kbdint_only = kbdint_only  # ask the password through keyboard-interactive, as PAM setups do
        self.loopback_alias: str | None = None  # a fleet host's own address, which its "127.0.0.1" means
        self.login_delay = 0.0  # seconds each login waits before auth (network latency, for benchmarks)
        # command -> a coroutine function (write, is_open) -> exit code that answers it in-process, or
        # None for bash (SimHost serves its nvidia-smi loops so: `sim/smi_stream.py`)
        self.exec_hook: ExecHook | None = None
        self.port_map = port_map
        self.host_key = host_key or asyncssh.generate_private_key("ssh-ed25519")
        self.client_key = client_key or asyncssh.generate_private_key("ssh-ed25519")
        self._acceptor: asyncssh.SSHAcceptor | None = None
        self._conns: set[asyncssh.SSHServerConnection] = set()
        self._procs: set[asyncio.subprocess.Process] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def host_key_public(self) -> asyncssh.SSHKey:
        return self.host_key.convert_to_public()

    def known_hosts_line(self) -> str:
        """The known_hosts line for this server (`[host]:port key`), as OpenSSH writes it."""
        name = self.host if self.port == 22 else f"[{self.host}]:{self.port}"
        return f"{name} {self.host_key_public.export_public_key().decode().strip()}"

    def write_client_key(self, path: Path) -> Path:
        """Write the authorized client's private key (0600) for tools that want a key file."""
        path.write_bytes(self.client_key.export_private_key())
        path.chmod(0o600)
        return path

    async def start(self) -> SimSSHServer:
        self._acceptor = await asyncssh.create_server(
            lambda: _ServerConn(self),
            self.host,
            self.port,
            server_host_keys=[self.host_key],
            encoding=None,
            keepalive_interval=0,
        )
        sockets = self._acceptor.sockets
        self.port = sockets[0].getsockname()[1]
        return self

    async def abort_connections(self) -> None:
        """Drop every client connection abruptly (what a network cut or a killed sshd child looks like)."""
        for conn in list(self._conns):
            conn.abort()
        await asyncio.sleep(0)

    def connection_count(self) -> int:
        return len(self._conns)

    async def close(self) -> None:
        """Stop listening, drop connections, and reap the commands this server started."""
        if self._acceptor is not None:
            self._acceptor.close()
            await self._acceptor.wait_closed()
            self._acceptor = None
        for conn in list(self._conns):
            conn.abort()
        for proc in list(self._procs):
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=2.0)
        for proc in list(self._procs):  # unreaped (a stray child holds its pipes): closed now, not later
            if (transport := getattr(proc, "_transport", None)) is not None:
                transport.close()
        for task in (left := list(self._tasks)):
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def __aenter__(self) -> SimSSHServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _after(seconds: float, value: bool) -> bool:
    await asyncio.sleep(seconds)
    return value


def _default_env() -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
    }
