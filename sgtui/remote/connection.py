"""One SSH connection per host, many channels over it, and what the user sees of its state.

Host keys are always verified (the user's ~/.ssh/known_hosts, sgtui's own known_hosts, and any file the
host entry names). An unknown or changed key stops with `HostKeyError` showing the fingerprint; trusting a
new key is the explicit `accept_host_key()`. Channels are rationed below sshd's MaxSessions (OpenSSH frees
slots lazily) and a refused channel open is retried. A lost connection is re-opened with backoff; every
state change goes to subscribers as a `ConnectionEvent`. `LocalTransport` offers the same calls for running
on the GPU machine itself.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import asyncssh

from sgtui.core.errors import UserError
from sgtui.core.shell import RemoteCommand
from sgtui.remote.hosts import HostConfig, load_hosts, parse_jump
from sgtui.remote.known_hosts import (
    USER_KNOWN_HOSTS,
    HostKeyError,
    accept_host_key,
    known_hosts_paths,
    known_match,
    load_known_hosts,
    recorded_in,
    revoked_keys,
)
from sgtui.remote.local import LocalTransport
from sgtui.remote.proxy import ProxyCommand
from sgtui.remote.transport import (
    ConnectionEvent,
    ConnState,
    EventSink,
    RemoteError,
    Result,
    Stream,
    UnreachableError,
    _Subscribers,
)

__all__ = [  # what callers import from here
    "AuthError",
    "ConnState",
    "Connection",
    "ConnectionEvent",
    "ConnectionPool",
    "HostKeyError",
    "LocalTransport",
    "RemoteError",
    "Result",
    "Stream",
    "Transport",
    "UnreachableError",
    "accept_host_key",
]

PasswordCallback = Callable[[str], Awaitable[str | None]]
CHANNEL_RETRY_MAX_DELAY = 1.5
STREAM_RESERVE = 2  # channels of the budget kept for short commands


class AuthError(RemoteError):
    """The host refused every key and password offered; nothing is retried until `reset()`."""

    def __init__(self, message: str, host: HostConfig) -> None:
        super().__init__(message)
        self.host = host


async def _connect_learning_key_type(hostname: str, kwargs: dict[str, Any]) -> asyncssh.SSHClientConnection:
    """asyncssh only negotiates the key types recorded for a host, so a host that now offers another
    type fails key exchange and would read as "unreachable". Asking once more with every type gets the
    offered key, which is then refused as a changed key (it is not trusted), never accepted."""
    try:
        return await asyncssh.connect(hostname, **kwargs)
    except asyncssh.KeyExchangeFailed as exc:
        if "host key" not in str(exc.reason):
            raise
        return await asyncssh.connect(hostname, **kwargs, server_host_key_algs="default")


class _Client(asyncssh.SSHClient):  # type: ignore[misc]
    def __init__(self, owner: Connection) -> None:
        self._owner = owner
        self.offered_key: asyncssh.SSHKey | None = None
        self.addr = ""
        self._password_tries = 0
        self.answers: dict[str, str] = {}  # what the user typed on this attempt, by prompt

    async def _ask(self, prompt: str) -> str | None:
        """The answer kept from an earlier connection on the first try, else the user's."""
        cb = self._owner.password_cb
        kept = self._owner._secrets.get(prompt)
        if kept is not None and self._password_tries == 1:
            self.answers[prompt] = kept
            return kept
        answer = None if cb is None else await cb(prompt)
        if answer is not None:
            self.answers[prompt] = answer
        return answer

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        self.offered_key = key
        self.addr = addr
        return False

    async def password_auth_requested(self) -> str | None:
        cb = self._owner.password_cb
        if cb is None or self._password_tries >= 3:
            return None
        self._password_tries += 1
        host = self._owner.host
        who = f"{host.user}@{host.hostname}" if host.user else host.hostname
        return await self._ask(f"password for {who}")

    def kbdint_auth_requested(self) -> str | None:
        """Servers that ask for the password through keyboard-interactive (PAM) get the same prompt."""
        return "" if self._owner.password_cb is not None else None

    async def kbdint_challenge_received(
        self, name: str, instructions: str, lang: str, prompts: Sequence[tuple[str, bool]]
    ) -> list[str] | None:
        cb = self._owner.password_cb
        if cb is None:
            return None
        if not prompts:
            return []  # an empty challenge only carries a message
        if self._password_tries >= 3:
            return None
        self._password_tries += 1
        host = self._owner.host
        answers = []
        for prompt, echo in prompts:
            text = f"{host.name}: {prompt.strip() or 'password'}"
            answer = await (cb(text) if echo else self._ask(text))  # only secret answers are kept
            if answer is None:
                return None
            answers.append(answer)
        return answers

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._connection_lost(exc)


class _Secrets(dict[str, str]):
    """Passwords kept in memory, by prompt; their repr never shows them (logs, tracebacks, debuggers)."""

    def __repr__(self) -> str:
        return f"<{len(self)} password(s) kept in memory>"


class _ProcStream:
    def __init__(self, proc: asyncssh.SSHClientProcess[bytes]) -> None:
        self._proc = proc

    async def read(self, n: int = 65536) -> bytes:
        return await self._proc.stdout.read(n)

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode


class Connection:
    """One host: an asyncssh connection opened on first use, kept alive, re-opened when lost."""

    def __init__(
        self,
        host: HostConfig,
        *,
        password_cb: PasswordCallback | None = None,
        client_keys: Sequence[asyncssh.SSHKey] | None = None,
        agent_path: str | tuple[()] | None = (),
        user_known_hosts: Path | None = USER_KNOWN_HOSTS,
        channel_budget: int = 8,
        keepalive_interval: float = 10.0,
        keepalive_count_max: int = 3,
        connect_timeout: float = 15.0,
        max_backoff: float = 10.0,
        wait_timeout: float = 60.0,
        tunnel: Connection | None = None,
    ) -> None:
        self.host = host
        self.password_cb = password_cb
        self._client_keys = list(client_keys) if client_keys is not None else None
        self._agent_path = agent_path
        self._user_known_hosts = user_known_hosts
        self._budget = channel_budget
        self._sem = asyncio.Semaphore(channel_budget)
        # long-lived streams (log tails, the GPU sampler) may never hold the last channels: stop and
        # status must still get through when many logs are followed
        self._stream_sem = asyncio.Semaphore(max(1, channel_budget - STREAM_RESERVE))
        self._keepalive = (keepalive_interval, keepalive_count_max)
        self._connect_timeout = connect_timeout
        self._max_backoff = max_backoff
        self._wait_timeout = wait_timeout
        self._tunnel = tunnel
        self._conn: asyncssh.SSHClientConnection | None = None
        self._subs = _Subscribers()
        self._lock = asyncio.Lock()
        self._reconnect: asyncio.Task[asyncssh.SSHClientConnection] | None = None
        self._fatal: RemoteError | None = None
        self._closing = False
        self._keys: dict[str, asyncssh.SSHKey] = {}
        self._key_notes: list[str] = []
        # passwords the user typed, by prompt: kept in memory for the session so a reconnect does not ask
        # again (never written anywhere); dropped when the host refuses them
        self._secrets = _Secrets()
        self._proxy: ProxyCommand | None = None
        self._closers: set[asyncio.Future[None]] = set()
        self.state = ConnState.CLOSED

    # -- events -------------------------------------------------------------------------------------------
    def subscribe(self, sink: EventSink) -> Callable[[], None]:
        """Receive every ConnectionEvent (a callback or an asyncio.Queue); returns an unsubscribe."""
        return self._subs.add(sink)

    def _emit(self, state: ConnState, message: str = "", **kw: Any) -> None:
        self.state = state
        self._subs.emit(ConnectionEvent(self.host.name, state, message, **kw))

    # -- connecting ---------------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self._conn is not None and self.state is ConnState.UP

    async def connect(self) -> Connection:
        """Open the connection now (otherwise the first command does); raises on failure."""
        await self._ensure()
        return self

    async def _open(self) -> asyncssh.SSHClientConnection:
        self._emit(ConnState.CONNECTING, f"connecting to {self.host.hostname}:{self.host.port}")
        known_paths = known_hosts_paths(self.host, self._user_known_hosts)
        known = load_known_hosts(known_paths)
        client = _Client(self)
        kwargs: dict[str, Any] = {
            "port": self.host.port,
            "known_hosts": known,
            "config": None,
            "client_factory": lambda: client,
            "keepalive_interval": self._keepalive[0],
            "keepalive_count_max": self._keepalive[1],
            "connect_timeout": self._connect_timeout,
        }
        if self.host.user:
            kwargs["username"] = self.host.user
        if self.host.host_key_alias:  # OpenSSH looks the alias up alone (no address, no port)
            kwargs["known_hosts"] = known_match(known, self.host, "")[:3]
        if self._agent_path != ():
            kwargs["agent_path"] = self._agent_path
        if self._client_keys is not None:
            kwargs["client_keys"] = self._client_keys
        elif self.host.identities_only and self.host.identity_files:
            # only these keys, from their files or the agent: never ~/.ssh/id_* or other agent keys
            keys = await self._identity_keys()
            kwargs["client_keys"] = keys or None  # asyncssh reads [] as "the default keys"
            if keys:
                kwargs["agent_identities"] = [k[0] if isinstance(k, tuple) else k for k in keys]
            else:
                kwargs["agent_path"] = None
        elif any(Path(p).is_file() for p in self.host.identity_files):
            keys = await self._identity_keys()
            if keys:
                kwargs["client_keys"] = keys
        if self.host.proxy_command and self._tunnel is None:
            try:
                self._proxy = await ProxyCommand.start(self.host)
            except (OSError, UserError) as exc:
                msg = f"cannot reach {self.host.name}: its ProxyCommand could not be started ({exc})"
                self._emit(ConnState.UNREACHABLE, msg)
                raise UnreachableError(msg) from None
            kwargs["sock"] = self._proxy.sock
        proxy = self._proxy  # connection_lost may drop self._proxy while this attempt fails
        if self._tunnel is not None:
            try:
                kwargs["tunnel"] = await self._tunnel._ensure()
            except RemoteError as exc:
                self._emit(ConnState.UNREACHABLE, f"{self.host.name}: via {self._tunnel.host.name}: {exc}")
                raise
        try:
            conn = await _connect_learning_key_type(self.host.hostname, kwargs)
        except asyncssh.HostKeyNotVerifiable as exc:
            await self._end_proxy()
            matched = known_match(known, self.host, client.addr)
            revoked = revoked_keys(known, self.host, client.addr)
            offered = client.offered_key
            if "revoked" in str(exc.reason) or (
                offered is not None and any(k.public_data == offered.public_data for k in revoked)
            ):
                if offered is not None:
                    revoked = [offered]
                err = HostKeyError(
                    self.host,
                    revoked[0] if len(revoked) == 1 else None,
                    True,
                    recorded_in(known_paths, self.host, client.addr, revoked=True),
                    revoked=True,
                )
                self._emit(ConnState.HOST_KEY_CHANGED, str(err), fingerprint=err.fingerprint)
                raise err from None
            changed = bool(matched[0])
            recorded = recorded_in(known_paths, self.host, client.addr) if changed else None
            err = HostKeyError(self.host, client.offered_key, changed, recorded)
            state = ConnState.HOST_KEY_CHANGED if changed else ConnState.HOST_KEY_UNKNOWN
            self._emit(state, str(err), fingerprint=err.fingerprint)
            raise err from None
        except asyncssh.PermissionDenied as exc:
            await self._end_proxy()
            for prompt in client.answers:
                self._secrets.pop(prompt, None)
            skipped = "".join(f"; {note}" for note in self._key_notes)
            if self.host.identities_only and self.host.identity_files:
                skipped += "; IdentitiesOnly: only " + ", ".join(self.host.identity_files) + " were offered"
            err2 = AuthError(
                f"{self.host.name}: authentication failed as {self.host.user or 'the current user'} "
                f"({exc.reason}){skipped}; check the key (identity_file), the agent, or the password",
                self.host,
            )
            self._emit(ConnState.AUTH_FAILED, str(err2))
            raise err2 from None
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            await self._end_proxy()
            if proxy is not None:
                await proxy.close()  # its stderr is read to the end
                said = proxy.stderr_tail()
                msg = (
                    f"cannot reach {self.host.name} through its ProxyCommand `{proxy.command}`: "
                    f"{said or exc or 'timed out'}; run that command by hand to see why"
                )
            else:
                msg = (
                    f"cannot reach {self.host.name} ({self.host.hostname}:{self.host.port}): "
                    f"{exc or 'timed out'}; check that the host is up and that its hostname and port are "
                    "right"
                )
            err3 = UnreachableError(msg)
            self._emit(ConnState.UNREACHABLE, str(err3))
            raise err3 from None
        self._secrets.update(client.answers)
        self._conn = conn
        self._emit(ConnState.UP, f"connected to {self.host.hostname}:{self.host.port}")
        return conn

    async def _identity_keys(self) -> list[asyncssh.SSHKey | tuple[asyncssh.SSHKey, str]]:
        """The host's identity files, decrypted in memory; an encrypted one asks its passphrase through
        `password_cb` (once per sgtui session: the key stays in memory, the passphrase is dropped)."""
        keys: list[asyncssh.SSHKey | tuple[asyncssh.SSHKey, str]] = []
        self._key_notes = []
        for path in self.host.identity_files:
            if not Path(path).is_file():
                continue
            key = self._keys.get(path) or await self._read_identity(path)
            if key is None:
                continue
            self._keys[path] = key
            cert = f"{path}-cert.pub"
            keys.append((key, cert) if Path(cert).is_file() else key)
        return keys

    async def _read_identity(self, path: str) -> asyncssh.SSHKey | None:
        try:
            return asyncssh.read_private_key(path)
        except OSError as exc:
            self._key_notes.append(f"cannot read key {path} ({exc.strerror})")
            return None
        except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
            if "passphrase" not in str(exc).lower():
                self._key_notes.append(f"key {path} is not a private key sgtui can read ({exc})")
                return None
        if self.password_cb is None:
            self._key_notes.append(f"key {path} is encrypted; load it into ssh-agent (ssh-add {path})")
            return None
        for _ in range(3):
            passphrase = await self.password_cb(f"passphrase for key {path}")
            if passphrase is None:
                break
            try:
                return asyncssh.read_private_key(path, passphrase)
            except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
                if "bcrypt" in str(exc):
                    self._key_notes.append(f"key {path} needs the bcrypt module; ssh-add it instead")
                    return None
        self._key_notes.append(f"no working passphrase for key {path}")
        return None

    async def _ensure(self) -> asyncssh.SSHClientConnection:
        if self._closing:
            raise RemoteError(f"{self.host.name}: connection closed")
        if self._conn is not None and self.state is ConnState.UP:
            return self._conn
        if self._fatal is not None:
            raise self._fatal
        if self._reconnect is not None and not self._reconnect.done():
            try:
                return await asyncio.wait_for(asyncio.shield(self._reconnect), self._wait_timeout)
            except TimeoutError:
                raise UnreachableError(
                    f"{self.host.name}: still reconnecting after {self._wait_timeout:.0f} s"
                ) from None
        async with self._lock:
            if self._conn is not None and self.state is ConnState.UP:
                return self._conn
            try:
                return await self._open()
            except (HostKeyError, AuthError) as exc:
                self._remember_fatal(exc)
                raise

    def _remember_fatal(self, exc: HostKeyError | AuthError) -> None:
        """Stop retrying on a failure that needs the user, unless it was the jump host's (its own
        Connection remembers that one, and fixing it must unblock this one)."""
        if exc.host == self.host:
            self._fatal = exc

    async def _end_proxy(self) -> None:
        if self._proxy is not None:
            proxy, self._proxy = self._proxy, None
            await proxy.close()

    def _connection_lost(self, exc: Exception | None) -> None:
        was_up = self._conn is not None
        self._conn = None
        if self._proxy is not None:
            proxy, self._proxy = self._proxy, None
            self._closers.add(task := asyncio.ensure_future(proxy.close()))
            task.add_done_callback(self._closers.discard)
        if self._closing or not was_up:
            return
        self._emit(ConnState.LOST, f"{self.host.name}: connection lost ({exc or 'closed by the server'})")
        if self._reconnect is None or self._reconnect.done():
            self._reconnect = asyncio.ensure_future(self._reconnect_loop())
            # its failure is reported as an event and raised to callers; nobody may be awaiting it now
            self._reconnect.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _reconnect_loop(self) -> asyncssh.SSHClientConnection:
        delay = 0.05
        while not self._closing:
            self._emit(ConnState.RETRYING, f"{self.host.name}: reconnecting in {delay:.2f} s", retry_in=delay)
            await asyncio.sleep(delay)
            try:
                async with self._lock:
                    return await self._open()
            except (HostKeyError, AuthError) as exc:
                self._remember_fatal(exc)
                raise
            except RemoteError:
                delay = min(delay * 2, self._max_backoff)
        raise RemoteError(f"{self.host.name}: connection closed")

    def reset(self) -> None:
        """Forget a host-key or auth failure (after `accept_host_key` or fixing the key) so the next call
        connects again."""
        self._fatal = None

    async def close(self) -> None:
        self._closing = True
        if self._reconnect is not None and not self._reconnect.done():
            self._reconnect.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reconnect
        if self._conn is not None:
            self._conn.close()
            with contextlib.suppress(Exception):
                await self._conn.wait_closed()
            self._conn = None
        await self._end_proxy()
        self._emit(ConnState.CLOSED, f"{self.host.name}: closed")

    def abort(self) -> None:
        """Drop the transport without a goodbye (tests use it to simulate a cut link)."""
        if self._conn is not None:
            self._conn.abort()

    # -- channels -----------------------------------------------------------------------------------------
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
                yield _ProcStream(proc)
            finally:
                proc.close()

    async def open_connection(
        self, host: str, port: int
    ) -> tuple[asyncssh.SSHReader[bytes], asyncssh.SSHWriter[bytes]]:
        """A direct-tcpip channel to host:port as seen from the remote machine (no curl needed)."""
        conn = await self._ensure()
        return await conn.open_connection(host, port, encoding=None)


Transport = Connection | LocalTransport


class ConnectionPool:
    """One Connection per host alias, created on first use; ProxyJump hops become tunnels."""

    def __init__(
        self,
        hosts: dict[str, HostConfig] | None = None,
        *,
        password_cb: PasswordCallback | None = None,
        **conn_options: Any,
    ) -> None:
        self.hosts = hosts if hosts is not None else load_hosts()
        self._password_cb = password_cb
        self._options = conn_options
        self._conns: dict[str, Transport] = {}

    def get(self, name: str) -> Transport:
        if name in self._conns:
            return self._conns[name]
        host = self.hosts.get(name)
        if host is None:
            from sgtui.core.errors import UserError

            known = ", ".join(sorted(self.hosts)) or "none configured"
            raise UserError(
                f"unknown host {name!r}: add it to ~/.ssh/config or sgtui's hosts.yaml (known: {known})"
            )
        transport: Transport
        if host.local:
            transport = LocalTransport(name)
        else:
            tunnel = self._jump(host.proxy_jump) if host.proxy_jump else None
            transport = Connection(host, password_cb=self._password_cb, tunnel=tunnel, **self._options)
        self._conns[name] = transport
        return transport

    def _jump(self, spec: str) -> Connection:
        hops = [h.strip() for h in spec.split(",") if h.strip()]
        last, earlier = hops[-1], hops[:-1]
        if last in self.hosts and not earlier:
            conn = self.get(last)
            if not isinstance(conn, Connection):
                raise RemoteError(f"ProxyJump {last!r} is a local host entry; it cannot be a jump host")
            return conn
        user, hostname, port = parse_jump(last)
        base = self.hosts.get(hostname) or HostConfig(name=last, hostname=hostname, source="ProxyJump")
        hop = replace(
            base,
            name=last,
            user=user or base.user,
            port=port or base.port,
            proxy_jump=",".join(earlier) if earlier else base.proxy_jump,
        )
        self.hosts[last] = hop
        return self.get(last)  # type: ignore[return-value]

    async def close(self) -> None:
        for conn in list(self._conns.values()):
            await conn.close()
        self._conns.clear()
