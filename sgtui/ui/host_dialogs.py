"""The questions a host's SSH connection asks the user, mixed into `SgtuiApp`: trust a first-seen host
key, a password (kept in memory by the connection, never written), and the changed-key modal naming the
known_hosts entry. Every text in them is outside text, shown as text."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from sgtui.ui.screens.confirm import ConfirmScreen
from sgtui.ui.screens.host_key import HostKeyChangedScreen
from sgtui.ui.screens.password import PasswordScreen

if TYPE_CHECKING:
    from sgtui.ui.app import SgtuiApp

    Base = SgtuiApp
else:
    Base = object


class HostDialogs(Base):
    def ask_host_key(self, host: str, fingerprint: str) -> None:
        """A first-seen key: trust it (recorded in sgtui's own known_hosts) or connect to nothing."""

        def answer(yes: bool | None) -> None:
            self.backend.trust_host_key(host, bool(yes))

        self.push_screen(
            ConfirmScreen(
                f"Trust {host}'s host key?",
                f"sgtui has never seen this host: its key is\n  {fingerprint}\nCompare it with "
                "`ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub` on the host. Yes records it in sgtui's "
                "own known_hosts; no connects to nothing.",
            ),
            answer,
        )

    async def ask_password(self, prompt: str) -> str | None:
        """The backend's password prompt: a modal whose answer goes straight to the SSH connection."""
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self.push_screen(PasswordScreen(prompt), lambda value: answer.done() or answer.set_result(value))
        return await answer

    def tell_key_changed(self, host: str, detail: str) -> None:
        """A changed key is never accepted from here: the modal names the recorded entry to fix."""
        text, _, where = detail.rpartition("\n")
        self.push_screen(HostKeyChangedScreen(host, text or detail, where))
