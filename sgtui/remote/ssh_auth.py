"""The authentication dialogue of one SSH attempt: the host key offered, passwords and keyboard-interactive
answers asked through the user's callback, and the answers kept in memory for the session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import asyncssh

from sgtui.remote.hosts import HostConfig

PasswordCallback = Callable[[str], Awaitable[str | None]]


class Secrets(dict[str, str]):
    """Passwords kept in memory, by prompt; their repr never shows them (logs, tracebacks, debuggers)."""

    def __repr__(self) -> str:
        return f"<{len(self)} password(s) kept in memory>"


class AuthClient(asyncssh.SSHClient):  # type: ignore[misc]
    """One connection attempt's client: records the host key offered (verification itself is asyncssh's,
    against the known_hosts given), answers password and keyboard-interactive prompts (at most 3 tries),
    and reports a lost connection to `on_lost`. `answers` holds what the user typed on this attempt."""

    def __init__(
        self,
        host: HostConfig,
        password_cb: PasswordCallback | None,
        kept: Secrets,
        on_lost: Callable[[Exception | None], None],
    ) -> None:
        self._host = host
        self._password_cb = password_cb
        self._kept = kept
        self._on_lost = on_lost
        self.offered_key: asyncssh.SSHKey | None = None
        self.addr = ""
        self._password_tries = 0
        self.tried_password = False  # a password was sent: a server that hangs up now refused it
        self.answers: dict[str, str] = {}  # what the user typed on this attempt, by prompt

    async def _ask(self, prompt: str) -> str | None:
        """The answer kept from an earlier connection on the first try, else the user's."""
        cb = self._password_cb
        kept = self._kept.get(prompt)
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
        if self._password_cb is None or self._password_tries >= 3:
            return None
        self._password_tries += 1
        self.tried_password = True
        host = self._host
        who = f"{host.user}@{host.hostname}" if host.user else host.hostname
        return await self._ask(f"password for {who}")

    def kbdint_auth_requested(self) -> str | None:
        """Servers that ask for the password through keyboard-interactive (PAM) get the same prompt."""
        return "" if self._password_cb is not None else None

    async def kbdint_challenge_received(
        self, name: str, instructions: str, lang: str, prompts: Sequence[tuple[str, bool]]
    ) -> list[str] | None:
        cb = self._password_cb
        if cb is None:
            return None
        if not prompts:
            return []  # an empty challenge only carries a message
        if self._password_tries >= 3:
            return None
        self._password_tries += 1
        answers = []
        for prompt, echo in prompts:
            text = f"{self._host.name}: {prompt.strip() or 'password'}"
            answer = await (cb(text) if echo else self._ask(text))  # only secret answers are kept
            if answer is None:
                return None
            answers.append(answer)
        return answers

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_lost(exc)
