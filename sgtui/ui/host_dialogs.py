"""The questions a host's SSH connection asks the user, mixed into `SgtuiApp`: trust a first-seen host
key, a password (kept in memory by the connection, never written), and the changed-key modal naming the
known_hosts entry. Every text in them is outside text, shown as text.

A changed key is one case per offered key (`KeyCase`): nine aliases of one reinstalled box raise one
dialog naming them all; Enter on any of their host rows shows it again; its Retry, or a change to the
known_hosts file it names (checked on the app's tick), connects them all again without a restart."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sgtui.ui.screens.confirm import ConfirmScreen
from sgtui.ui.screens.host_key import HostKeyChangedScreen
from sgtui.ui.screens.password import PasswordScreen

if TYPE_CHECKING:
    from sgtui.ui.app import SgtuiApp

    Base = SgtuiApp
else:
    Base = object


_FINGERPRINT = re.compile(r"SHA256:[A-Za-z0-9+/=]+")


@dataclass
class KeyCase:
    """One changed host key and every host name that offered it."""

    text: str
    where: str  # "<known_hosts file> line N", or ""
    hosts: list[str] = field(default_factory=list)
    stamp: tuple[float, int] | None = None  # the known_hosts file's mtime and size when it was seen

    @property
    def path(self) -> Path | None:
        name = self.where.rsplit(" line ", 1)[0] if self.where else ""
        return Path(name) if name else None

    def file_stamp(self) -> tuple[float, int] | None:
        try:
            st = self.path.stat() if self.path is not None else None
        except OSError:
            return (0.0, -1)  # removed: that is a change too
        return (st.st_mtime, st.st_size) if st is not None else None


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
        """A changed key is never accepted from here: the modal names the recorded entry to fix. One
        dialog per offered key, however many host names offer it."""
        text, _, where = detail.rpartition("\n")
        text = text or detail
        found = _FINGERPRINT.search(text)
        ident = found.group() if found else text
        case = self.key_cases.get(ident)
        if case is None:
            case = self.key_cases[ident] = KeyCase(text, where)
            case.stamp = case.file_stamp()
        if host not in case.hosts:
            case.hosts.append(host)
        screen = self.screen
        if isinstance(screen, HostKeyChangedScreen) and screen.case is case:
            screen.refresh_text()  # the open dialog names the new host too
        elif len(case.hosts) == 1:
            self.show_key_case(case)

    def key_case_of(self, host: str) -> KeyCase | None:
        return next((c for c in self.key_cases.values() if host in c.hosts), None)

    def show_key_case(self, case: KeyCase) -> None:
        def answer(choice: str | None) -> None:
            if choice == "retry":
                self.retry_key_case(case)

        self.push_screen(HostKeyChangedScreen(case.hosts[0], case.text, case.where, case), answer)

    def retry_key_case(self, case: KeyCase) -> None:
        """Connect every host of the case again (the user fixed known_hosts, or says so)."""
        for ident, c in list(self.key_cases.items()):
            if c is case:
                del self.key_cases[ident]
        for host in case.hosts:
            retry = getattr(self.backend, "retry", None)
            if retry is not None:
                retry(host)
            self._connected.discard(host)
            self.connect(host)

    def check_key_files(self) -> None:
        """On the tick: a known_hosts file named by a case changed (the old line removed): try again."""
        for case in list(self.key_cases.values()):
            if case.path is not None and case.file_stamp() != case.stamp:
                self.notify(f"{case.path} changed: connecting again to {', '.join(case.hosts)}", timeout=8)
                self.retry_key_case(case)
