"""A changed host key: a modal naming the known_hosts file and the line of the recorded key."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

from sgtui.core.known_hosts import recorded_line
from sgtui.ui.app import SgtuiApp
from sgtui.ui.screens.host_key import HostKeyChangedScreen
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
