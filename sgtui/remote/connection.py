"""One SSH connection per host, many channels over it, and what the user sees of its state.

Host keys are always verified (the user's ~/.ssh/known_hosts, sgtui's own known_hosts, and any file the
host entry names). An unknown or changed key stops with `HostKeyError` showing the fingerprint; trusting a
new key is the explicit `accept_host_key()`. A lost connection is re-opened with backoff; every state
change goes to subscribers as a `ConnectionEvent`. `LocalTransport` offers the same calls for running on
the GPU machine itself. The pieces: `ssh_options.py` (what one connect is given), `ssh_auth.py` (the
password and keyboard-interactive dialogue), `ssh_failures.py` (what a failed connect means),
`channels.py` (`run`/`stream`/`open_connection`, rationed channels), `transport.py` (the shared types).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import asyncssh

from sgtui.core.errors import UserError
from sgtui.remote.channels import Channels
from sgtui.remote.hosts import HostConfig, load_hosts, parse_jump
from sgtui.remote.known_hosts import (
    USER_KNOWN_HOSTS,
    HostKeyError,
    accept_host_key,
    known_hosts_paths,
    load_known_hosts,
)
from sgtui.remote.local import LocalTransport
from sgtui.remote.proxy import ProxyCommand
from sgtui.remote.ssh_auth import AuthClient, PasswordCallback, Secrets
from sgtui.remote.ssh_failures import auth_disconnect, auth_failure, host_key_failure, unreachable_failure
from sgtui.remote.ssh_options import Identities, connect_learning_key_type, connect_options
from sgtui.remote.transport import (
    AuthError,
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


class Connection(Channels):
    """One host: an asyncssh connection opened on first use, kept alive, re-opened when lost; commands go
    over it through `Channels` (`run`, `stream`, `open_connection`)."""

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
        self._init_channels(channel_budget)
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
        self._identities = Identities(host, password_cb)
        # passwords the user typed, by prompt: kept in memory for the session so a reconnect does not ask
        # again (never written anywhere); dropped when the host refuses them
        self._secrets = Secrets()
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

    @property
    def host_key_fingerprint(self) -> str | None:
        """The fingerprint of the host key the current connection was made with; None while down."""
        key = self._conn.get_server_host_key() if self._conn is not None else None
        return None if key is None else str(key.get_fingerprint())

    async def connect(self) -> Connection:
        """Open the connection now (otherwise the first command does); raises on failure."""
        await self._ensure()
        return self

    async def _open(self) -> asyncssh.SSHClientConnection:
        self._emit(ConnState.CONNECTING, f"connecting to {self.host.hostname}:{self.host.port}")
        known_paths = known_hosts_paths(self.host, self._user_known_hosts)
        known = load_known_hosts(known_paths)
        client = AuthClient(self.host, self.password_cb, self._secrets, self._connection_lost)
        kwargs = await connect_options(
            self.host,
            known,
            client,
            self._identities,
            client_keys=self._client_keys,
            agent_path=self._agent_path,
            keepalive=self._keepalive,
            connect_timeout=self._connect_timeout,
        )
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
            conn = await connect_learning_key_type(self.host.hostname, kwargs)
        except asyncssh.HostKeyNotVerifiable as exc:
            await self._end_proxy()
            state, err = host_key_failure(exc, self.host, known, known_paths, client)
            self._emit(state, str(err), fingerprint=err.fingerprint)
            raise err from None
        except asyncssh.PermissionDenied as exc:
            await self._end_proxy()
            for prompt in client.answers:
                self._secrets.pop(prompt, None)
            auth = auth_failure(exc, self.host, self._identities.notes)
            self._emit(ConnState.AUTH_FAILED, str(auth))
            raise auth from None
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            await self._end_proxy()
            refused = auth_disconnect(exc, self.host, client)
            if refused is not None:  # hung up during login: not an unreachable host
                self._emit(ConnState.AUTH_FAILED, str(refused))
                raise refused from None
            if proxy is not None:
                await proxy.close()  # its stderr is read to the end
            unreachable = unreachable_failure(exc, self.host, proxy)
            self._emit(ConnState.UNREACHABLE, str(unreachable))
            raise unreachable from None
        self._secrets.update(client.answers)
        if conn.is_closed():
            # lost between the handshake and here: its connection_lost came while no connection was
            # current, so it scheduled no reconnect; keeping it would leave a dead connection marked up
            lost = UnreachableError(f"{self.host.name}: the connection was lost as soon as it opened")
            self._emit(ConnState.UNREACHABLE, str(lost))
            raise lost
        self._conn = conn
        self._emit(ConnState.UP, f"connected to {self.host.hostname}:{self.host.port}")
        return conn

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


Transport = Connection | LocalTransport


MAX_JUMPS = 16  # ProxyJump hops to one host; a chain that loops back is refused whatever its length


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
        self._chain: list[str] = []  # the hosts being set up, each reached through the next

    def get(self, name: str) -> Transport:
        if name in self._conns:
            return self._conns[name]
        if name in self._chain or len(self._chain) >= MAX_JUMPS:
            chain = " -> ".join([*self._chain, name])
            first = self.hosts.get(self._chain[0])
            where = f"{first.source}: " if first is not None else ""
            why = "loops back" if name in self._chain else f"is longer than {MAX_JUMPS} hops"
            self._chain.clear()
            raise UserError(f"{where}the ProxyJump chain {chain} {why}; fix proxy_jump / ProxyJump")
        self._chain.append(name)
        try:
            return self._make(name)
        finally:
            if self._chain and self._chain[-1] == name:
                self._chain.pop()

    def _make(self, name: str) -> Transport:
        host = self.hosts.get(name)
        if host is None:
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
        """Close every connection, all at once (500 one after the other wait 500 goodbyes in a row): the
        ones through a jump host first, then the rest (jump hosts among them)."""
        conns = list(self._conns.values())
        tunneled = [c for c in conns if isinstance(c, Connection) and c._tunnel is not None]
        for wave in (tunneled, [c for c in conns if c not in tunneled]):
            await asyncio.gather(*(c.close() for c in wave), return_exceptions=True)
        self._conns.clear()
