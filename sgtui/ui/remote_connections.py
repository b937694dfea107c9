"""The connection side of `RemoteBackend`: one ConnectionPool over the configured hosts, each host's
connection states as the UI names them, a first-seen host key asked through the UI (and recorded once
trusted), the password prompt. The backend holds one (`RemoteBackend.connections`); what runs on the hosts
is the backend's own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from sgtui.core.errors import UserError
from sgtui.remote.connection import (
    AuthError,
    Connection,
    ConnectionEvent,
    ConnectionPool,
    HostKeyError,
    RemoteError,
    Transport,
    accept_host_key,
)
from sgtui.remote.hosts import HostConfig, load_hosts
from sgtui.ui.remote_views import STATE_NAMES, key_entry
from sgtui.ui.views import HostView

RETRY_AFTER_FAILURE_S = 10.0  # a host that could not be reached is tried again after this long


class RemoteConnections:
    """`hosts=None`: hosts.yaml and ~/.ssh/config (a problem reading them is listed, not raised)."""

    def __init__(self, hosts: dict[str, HostConfig] | None = None, **conn_options: Any) -> None:
        self.problems: list[str] = []
        self._password_prompt: Callable[[str], Awaitable[str | None]] | None = None
        self._key_answers: dict[str, asyncio.Future[bool]] = {}
        if hosts is None:
            try:
                hosts = load_hosts()
            except UserError as exc:
                self.problems.append(str(exc))
                hosts = {}
        self.pool = ConnectionPool(hosts, password_cb=self._ask_password, **conn_options)

    def conn(self, host: str) -> Transport:
        return self.pool.get(host)

    def hosts(self) -> tuple[list[HostView], list[str]]:
        views = [HostView(name, cfg.hostname, cfg.source) for name, cfg in self.pool.hosts.items()]
        notes = [cfg.match_exec_note for cfg in self.pool.hosts.values() if cfg.skipped_exec]
        return views, [*self.problems, *notes]

    async def _ask_password(self, prompt: str) -> str | None:
        return None if self._password_prompt is None else await self._password_prompt(prompt)

    def set_password_prompt(self, prompt: Callable[[str], Awaitable[str | None]]) -> None:
        self._password_prompt = prompt

    def trust_host_key(self, host: str, trusted: bool) -> None:
        answer = self._key_answers.get(host)
        if answer is not None and not answer.done():
            answer.set_result(trusted)

    async def _decide_host_key(self, host: str, exc: HostKeyError) -> bool:
        """Ask (through the "unknown-key" state) whether to trust a first-seen key; record it if so."""
        answer = asyncio.get_running_loop().create_future()
        self._key_answers[host] = answer
        try:
            trusted = await answer
        finally:
            self._key_answers.pop(host, None)
        if trusted and exc.key is not None:
            accept_host_key(exc.host, exc.key)
            self.retry(host)
        return trusted

    def retry(self, host: str) -> None:
        conn = self.conn(host)
        if isinstance(conn, Connection):
            conn.reset()

    async def connection_states(self, host: str) -> AsyncIterator[tuple[str, str]]:
        conn = self.conn(host)
        queue: asyncio.Queue[ConnectionEvent] = asyncio.Queue()
        unsubscribe = conn.subscribe(queue)
        try:
            while True:
                yield ("connecting", "")
                try:
                    await conn.connect()
                except HostKeyError as exc:
                    if exc.changed:  # never accepted from here: a modal names the recorded entry
                        yield ("key-changed", f"{exc}\n{key_entry(exc)}")
                        return
                    if exc.key is None:
                        yield ("failed", str(exc))
                        return
                    yield ("unknown-key", f"{exc.key.get_algorithm()} {exc.fingerprint}")
                    if not await self._decide_host_key(host, exc):
                        yield ("failed", "host key not trusted: nothing was sent to the host")
                        return
                    continue
                except AuthError as exc:
                    yield ("failed", str(exc))
                    return
                except (RemoteError, OSError) as exc:
                    yield ("failed", str(exc))
                    await asyncio.sleep(RETRY_AFTER_FAILURE_S)
                    continue
                yield ("connected", "")
                break
            while True:
                event = await queue.get()
                detail = event.message
                if event.retry_in is not None:
                    detail = f"{detail} (retry in {event.retry_in:.0f} s)".strip()
                yield (STATE_NAMES.get(event.state, event.state.value), detail)
        finally:
            unsubscribe()

    async def close(self) -> None:
        await self.pool.close()
