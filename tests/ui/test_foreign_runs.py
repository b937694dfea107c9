"""On a shared box the TUI reattaches only to the user's own runs, and its stop question shows what the
stop will hit, read from the target (simulated host, real SSH on 127.0.0.1)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from textual.widgets import Static

from sgtui.core.profiles import load_profile
from sgtui.remote.hosts import load_hosts
from sgtui.remote.runs import RunManager
from sgtui.remote.targets import Target
from sgtui.sim.host import SimHost
from sgtui.ui.app import SgtuiApp
from sgtui.ui.remote_backend import RemoteBackend
from tests.ui.conftest import asking, wait_for


async def test_a_planted_record_that_sorts_last_is_not_reattached_and_stop_shows_its_target(
    _config_dir: Path,
) -> None:
    victim = subprocess.Popen(["sleep", "120"], start_new_session=True)
    try:
        async with SimHost(speed=20.0) as host:
            written = host.write_config(_config_dir)
            path = next(p for p in written.profiles if "a6000" in p.stem)
            runs = host.state_dir / "runs"
            backend = RemoteBackend(load_hosts(ssh_config=False), runs_dir=str(runs), user_known_hosts=None)
            own = await RunManager(backend.pool.get("sim"), Target("pct", "129"), str(runs)).launch(
                ["/bin/sleep", "120"]
            )
            # a record that sorts after ours, pointing at another session, without a start time
            planted = runs / "20991231-235959-ffffff"
            planted.mkdir(mode=0o700)
            boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
            meta = {"pid": victim.pid, "pgid": victim.pid, "sid": victim.pid, "start": None, "boot": boot}
            (planted / "run.json").write_text(json.dumps(meta))
            (planted / "command.json").write_text(json.dumps({"target": {"kind": "pct", "id": "129"}}))
            app = SgtuiApp(backend, load_profile(path), path, theme="textual-dark")
            async with app.run_test(size=(120, 40)) as pilot:
                await wait_for(pilot, lambda: app.current is not None, 20, "the reattach")
                assert app.current is not None and app.current.run_id == own.id
                assert [r.state for r in app.runs if r.run_id == planted.name] == ["foreign"]
                refusals = [n.message for n in app._notifications if planted.name in n.message]
                assert refusals == [
                    f"refusing run {planted.name} on sim: "
                    + (
                        "its run.json records no start time (start: null), so its pid cannot be told from a "
                        "reused one"
                    )
                ]
                await pilot.press("s")
                await wait_for(pilot, lambda: asking(app), 5, "the stop question")
                preview = app.screen.query_one("#confirm-preview", Static)
                await wait_for(pilot, lambda: "process group" in str(preview.render()), 10, "the preview")
                text = str(preview.render())
                assert f"process group {own.pgid}" in text and "/bin/sleep 120" in text
                await pilot.press("n")
                await pilot.press("q")
            await RunManager(backend.pool.get("sim"), Target("pct", "129"), str(runs)).stop(own, grace=1)
            await backend.close()
            assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()
