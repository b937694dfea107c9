"""The TUI follows a real SGLang 0.5.23 launch to ready: `l` on a bare-host profile over OpenSSH, the log view
fills with the real server's lines, the run state becomes ready; `s` stops it and nothing of it is left."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgtui.core.profiles import load_profile
from sgtui.remote.hosts import load_hosts
from sgtui.ui.app import SgtuiApp
from sgtui.ui.remote_backend import RemoteBackend
from sgtui.ui.widgets.log_view import LogView
from tests.real_sglang.realhost import HOST, RealHost, free_port
from tests.ui.conftest import asking, launch_anyway, press_until, wait_for

pytestmark = pytest.mark.real_sglang

READY_LINE = "The server is fired up and ready to roll!"


async def test_the_tui_follows_a_real_launch_to_ready_and_stops_it(
    real_host: RealHost, tmp_path: Path
) -> None:
    path = real_host.profile("tiny-tui", free_port())
    backend = RemoteBackend(
        load_hosts(ssh_config=False), runs_dir=str(real_host.runs_dir), user_known_hosts=None
    )
    app = SgtuiApp(backend, load_profile(path), path, theme="textual-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.host_states.get(HOST) == "connected", 30, "SSH to the bare host")
        await launch_anyway(pilot, app)
        await wait_for(pilot, lambda: app.current is not None, 30, "the launch")
        await wait_for(pilot, lambda: app.run_state in ("ready", "failed"), 300, "ready or failed")
        log = app.query_one(LogView)
        assert app.run_state == "ready", "\n".join(log.lines[-30:])
        await wait_for(pilot, lambda: any(READY_LINE in line for line in log.lines), 30, "the ready line")
        assert app.current is not None
        run_id = app.current.run_id
        await press_until(pilot, "s", lambda: asking(app), "the stop question")
        await press_until(pilot, "y", lambda: not asking(app), "the answer")
        await wait_for(pilot, lambda: app.run_state not in ("ready", "starting"), 90, "the stop")
        await pilot.press("q")
    assert real_host.wait_gone(run_id, 60) == []
