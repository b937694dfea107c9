"""The serving view end to end on the simulated host, through real SSH: a profile with --enable-metrics
launched from the TUI becomes ready; the 1 Hz poll reads its /metrics through the SSH connection, the
smoke request answers, `b` runs the built-in load probe (the sim has no bench_serving) whose report is
saved beside the run and shown, and the numbers moved under that load."""

from __future__ import annotations

from pathlib import Path

from sgtui.core.profiles import load_profile
from sgtui.remote.hosts import load_hosts
from sgtui.sim.host import SimHost
from sgtui.ui.app import SgtuiApp
from sgtui.ui.remote_backend import RemoteBackend
from tests.ui.conftest import launch_anyway, wait_for

SPEED = 20.0


async def test_a_metrics_run_is_read_smoked_and_probed_from_the_tui(_config_dir: Path) -> None:
    async with SimHost(speed=SPEED) as host:
        written = host.write_config(_config_dir)
        path = next(p for p in written.profiles if "a6000" in p.stem)
        profile = load_profile(path)
        profile.sglang["--max-running-requests"] = 8
        profile.sglang["--enable-metrics"] = True
        backend = RemoteBackend(
            load_hosts(ssh_config=False), runs_dir=str(host.state_dir / "runs"), user_known_hosts=None
        )
        app = SgtuiApp(backend, profile, path, theme="textual-dark")
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.host_states.get("sim") == "connected", 20, "SSH to the sim")
            await wait_for(pilot, lambda: app.version == "0.5.9", 20, "the SGLang version of lxc 129")
            await launch_anyway(pilot, app)
            await wait_for(pilot, lambda: app.run_state == "ready", 40, "ready")
            session = app.session
            assert session is not None
            serving = session.serving
            # until the first /metrics answer the panel shows the log's batch numbers (the warm-up's can
            # land first): what this asks is that the poll's numbers, from /metrics, replace them
            await wait_for(
                pilot,
                lambda: serving.latest is not None and serving.latest.source == "metrics",
                15,
                "the first /metrics poll",
            )
            await wait_for(pilot, lambda: serving.smoke is not None, 15, "the smoke request")
            assert serving.smoke is not None and serving.smoke.ok, serving.smoke
            await pilot.press("b")
            await wait_for(pilot, lambda: serving.report is not None, 60, "the load probe's report")
            report = serving.report
            assert report is not None and report.tool == "sgtui" and report.completed == report.requests == 20
            assert report.report_path and Path(report.report_path).stat().st_mode & 0o777 == 0o600
            await wait_for(
                pilot,
                lambda: any((s.gen_tokens_per_s or 0) > 0 for s in serving.history.snapshots),
                15,
                "tokens/s moving under the probe",
            )
            assert app.rate_of(app.current) != ""  # type: ignore[arg-type]
            await pilot.press("q")
