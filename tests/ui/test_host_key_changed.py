"""A changed host key: a modal naming the known_hosts file and the line of the recorded key."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import hmac
from collections.abc import AsyncIterator
from pathlib import Path

from sgtui.core.known_hosts import recorded_line
from sgtui.core.profiles import Profile
from sgtui.ui.app import SgtuiApp
from sgtui.ui.screens.host_key import HostKeyChangedScreen
from sgtui.ui.views import HostView
from tests.ui.conftest import wait_for
from tests.ui.fakes import FakeBackend


def test_the_recorded_line_is_found_plain_bracketed_and_hashed(tmp_path: Path) -> None:
    salt = b"0123456789abcdefghij"
    digest = hmac.new(salt, b"10.0.0.5", hashlib.sha1).digest()
    hashed = f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"
    path = tmp_path / "known_hosts"
    path.write_text(
        "# comment\n"
        "other ssh-ed25519 AAAA\n"
        "@revoked pve ssh-ed25519 AAAA\n"
        "pve,10.0.0.9 ssh-ed25519 AAAA\n"
        "[pve]:2222 ssh-ed25519 AAAA\n"
        f"{hashed} ssh-ed25519 AAAA\n"
    )
    assert recorded_line(path, "pve") == 4
    assert recorded_line(path, "pve", 2222) == 5
    assert recorded_line(path, "10.0.0.5") == 6
    assert recorded_line(path, "nowhere") is None


async def test_a_changed_key_opens_a_modal_naming_the_file_and_line(profile: object) -> None:
    detail = "HOST KEY CHANGED for pve (10.0.0.5:22): it now offers ...\n/home/u/.ssh/known_hosts line 12"
    backend = FakeBackend(states=[("connecting", ""), ("key-changed", detail)])
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, HostKeyChangedScreen) and app.screen.query("#host-key-text"),
            what="the modal",
        )
        shown = str(app.screen.query_one("#host-key-text").render())
        assert "/home/u/.ssh/known_hosts line 12" in shown and "CHANGED" in shown
        assert app.host_states["pve"] == "failed"
        await pilot.press("escape")
        assert not isinstance(app.screen, HostKeyChangedScreen)


NINE = [f"box-{i}" for i in range(9)]
CHANGED = (
    "HOST KEY CHANGED for {h} (10.0.0.5:22): it now offers ssh-ed25519 key SHA256:abcDEF123, which "
    "differs from the recorded one\n{path} line 3"
)


class NineAliases(FakeBackend):
    """Nine host names of one reinstalled box: each offers the same new key until known_hosts is fixed."""

    known: Path = Path("/nonexistent")

    def hosts(self) -> tuple[list[HostView], list[str]]:
        return [HostView(h, "10.0.0.5", "ssh config") for h in NINE], []

    async def connection_states(self, host: str) -> AsyncIterator[tuple[str, str]]:
        yield ("connecting", "")
        if host in self.retried:
            yield ("connected", "")
        else:
            yield ("key-changed", CHANGED.format(h=host, path=self.known))
            return
        await asyncio.Event().wait()


def dialogs(app: SgtuiApp) -> list[HostKeyChangedScreen]:
    return [s for s in app.screen_stack if isinstance(s, HostKeyChangedScreen)]


async def test_one_changed_key_under_nine_names_is_one_dialog_reopened_from_a_row_and_retried_on_fix(
    profile: Profile, tmp_path: Path
) -> None:
    """Nine dialogs, none reopenable, no retry until a restart: now one, naming the other eight; Enter on
    a host row shows it again; fixing the known_hosts file it names connects all nine again."""
    known = tmp_path / "known_hosts"
    known.write_text("a\nb\nbox ssh-ed25519 AAAA\n")
    backend = NineAliases()
    backend.known = known
    app = SgtuiApp(backend, dataclasses.replace(profile, host="box-0"), theme="textual-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: all(app.host_states.get(h) == "failed" for h in NINE), 10, "all nine")
        await pilot.pause(0.2)
        assert len(dialogs(app)) == 1
        shown = str(app.screen.query_one("#host-key-text").render())
        assert "8 more host name(s): " + ", ".join(h for h in NINE if h != dialogs(app)[0].host_name) in shown
        await pilot.press("escape")
        assert not dialogs(app)
        tree = app.fleet_pane.tree
        tree.focus()
        tree.move_cursor(tree.root.children[4])
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(dialogs(app)) == 1, 5, "the dialog again from the host row")
        await pilot.press("escape")
        known.write_text("a\nb\n")  # the user removed the old line
        await wait_for(pilot, lambda: all(app.host_states.get(h) == "connected" for h in NINE), 10, "retried")
        assert sorted(backend.retried) == sorted(NINE)
        await pilot.press("q")
