"""The demo story on the simulated Proxmox host, through real SSH on 127.0.0.1: launch, fail with "Not
enough memory", read the diagnosis, apply its flag with one key, restart, become ready."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgtui.core.preflight import first_fix_json
from sgtui.core.profiles import load_profile
from sgtui.remote.hosts import load_hosts
from sgtui.remote.runs import RunManager
from sgtui.remote.targets import Target
from sgtui.sim.host import SimHost
from sgtui.ui import remote_backend
from sgtui.ui.app import SgtuiApp
from sgtui.ui.panes.runs import RunsTable
from sgtui.ui.remote_backend import RemoteBackend
from sgtui.ui.remote_views import run_view
from sgtui.ui.widgets.diagnosis import DiagnosisPanel
from sgtui.ui.widgets.gpu_panel import GpuPanel
from sgtui.ui.widgets.log_view import LogView
from tests.ui.conftest import asking, launch_anyway, wait_for

SPEED = 20.0


async def test_the_demo_story_from_failure_to_ready_with_the_footer_keys(_config_dir: Path) -> None:
    async with SimHost(speed=SPEED) as host:
        written = host.write_config(_config_dir)
        path = next(p for p in written.profiles if "a6000" in p.stem)
        backend = RemoteBackend(
            load_hosts(ssh_config=False), runs_dir=str(host.state_dir / "runs"), user_known_hosts=None
        )
        app = SgtuiApp(backend, load_profile(path), path, theme="textual-dark")
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.host_states.get("sim") == "connected", 20, "SSH to the sim")
            await wait_for(pilot, lambda: app.version == "0.5.9", 20, "the SGLang version of lxc 129")
            await launch_anyway(pilot, app)
            await wait_for(pilot, lambda: app.run_state == "failed", 30, "the launch to fail")
            # the host can say the process died before the tail has read the log's last lines: they follow
            log, panel = app.query_one(LogView), app.query_one(DiagnosisPanel)
            await wait_for(pilot, lambda: any("Not enough memory" in ln for ln in log.lines), 30, "the error")

            def suggests(flag: str, value: str) -> bool:  # the whole log's diagnosis has the last word
                first = panel.first_suggestion
                return first is not None and (first.flag, first.value) == (flag, value)

            # the diagnosis leads with the fit's first ranked fix, the one the question offered (not a
            # number of its own): fewer running requests, a value that fits
            first = first_fix_json(app.fit_report)
            assert first is not None and first.flag == "--max-running-requests" and first.verdict == "fits"
            await wait_for(pilot, lambda: suggests(first.flag, str(first.value)), 30, "the diagnosis's fix")
            failed_run = app.current
            await pilot.press("a")
            await wait_for(
                pilot, lambda: app.form.values().get(first.flag) == first.value, 20, "the fix in the form"
            )
            await launch_anyway(pilot, app, "r")
            await wait_for(pilot, lambda: app.current is not failed_run, 30, "the relaunch")
            await wait_for(pilot, lambda: app.run_state == "ready", 30, "ready")
            assert app.current is not None and failed_run is not None
            assert app.current.log_path != failed_run.log_path

            def peak() -> float:
                return max(max(s) for s in ([g[1] for g in pts] for pts in app.history.series.values()))

            # GiB: the sparklines saw the weights and pools arrive (the GPU sampler's next sample may come
            # after the log said ready)
            await wait_for(pilot, lambda: peak() > 20, 10, "the pools in the GPU history")
            await wait_for(
                pilot,
                lambda: any(
                    p.name.startswith("sglang") for g in app.query_one(GpuPanel).latest for p in g.processes
                ),
                10,
                "the server's processes among the GPU holders",
            )
            await pilot.press("q")
        assert host.gpu_memory()[0] > 20_000  # quitting left the server running on the host


def _a6000_app(host: SimHost, config_dir: Path) -> SgtuiApp:
    """The app on the sim's A6000 profile with 8 running requests (it fits), over real SSH."""
    written = host.write_config(config_dir)
    path = next(p for p in written.profiles if "a6000" in p.stem)
    profile = load_profile(path)
    profile.sglang["--max-running-requests"] = 8
    backend = RemoteBackend(
        load_hosts(ssh_config=False), runs_dir=str(host.state_dir / "runs"), user_known_hosts=None
    )
    return SgtuiApp(backend, profile, path, theme="textual-dark")


async def test_restarting_a_ready_run_stops_it_waits_for_its_gpus_and_relaunches(_config_dir: Path) -> None:
    async with SimHost(speed=SPEED) as host:
        app = _a6000_app(host, _config_dir)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.version == "0.5.9", 20, "the SGLang version of lxc 129")
            await launch_anyway(pilot, app)
            await wait_for(pilot, lambda: app.run_state == "ready", 30, "the first run ready")
            first = app.current
            await launch_anyway(pilot, app, "r")
            await wait_for(pilot, lambda: asking(app), 20, "the restart question")
            await pilot.press("y")
            await wait_for(pilot, lambda: app.current is not first, 40, "the relaunch")
            await wait_for(pilot, lambda: app.run_state == "ready", 30, "the second run ready")
            assert any("stopped; its GPUs are free" in n.message for n in app._notifications)
            # the stop's steps with their times: SGLang's drain on TERM to its main process, no KILL
            assert any(
                "TERM to main 0.0 s, main ended" in n.message and "KILL" not in n.message
                for n in app._notifications
            ), [n.message for n in app._notifications]
            assert first is not None
            await wait_for(
                pilot,
                lambda: {r.run_id: r.state for r in app.runs}.get(first.run_id) == "stopped",
                10,
                "the first run listed as stopped",
            )
            second = app.current
            assert second is not None
            await wait_for(  # the host only says "running"; the table shows what the log says
                pilot,
                lambda: {r.run_id: r.state for r in app.runs}.get(second.run_id) == "ready",
                10,
                "ready listed",
            )


async def test_a_first_seen_host_key_is_trusted_only_after_the_user_says_yes(_config_dir: Path) -> None:
    async with SimHost(speed=SPEED) as host:
        written = host.write_config(_config_dir)
        written.known_hosts.write_text("")  # sgtui has never seen this host
        path = next(p for p in written.profiles if "a6000" in p.stem)
        backend = RemoteBackend(
            load_hosts(ssh_config=False), runs_dir=str(host.state_dir / "runs"), user_known_hosts=None
        )
        app = SgtuiApp(backend, load_profile(path), path, theme="textual-dark")
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: asking(app), 20, "the host key question")
            assert "SHA256:" in str(app.screen.query_one("#confirm-detail").render())
            assert app.host_states["sim"] == "unknown-key"
            await pilot.press("y")
            await wait_for(pilot, lambda: app.host_states.get("sim") == "connected", 20, "the connection")
        assert host.known_hosts_line().split()[-1] in written.known_hosts.read_text()


async def test_a_run_that_dies_mid_line_shows_that_last_line_once_over_ssh(
    _config_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_backend, "STATUS_POLL_S", 0.05)
    async with SimHost(speed=SPEED) as host:
        host.write_config(_config_dir)
        backend = RemoteBackend(
            load_hosts(ssh_config=False), runs_dir=str(host.state_dir / "runs"), user_known_hosts=None
        )
        try:
            manager = RunManager(backend.pool.get("sim"), Target(), backend.runs_dir)
            record = await manager.launch(["/bin/sh", "-c", "printf 'first\\nsecond\\nKilled mid-wr'"])
            run = run_view(record, "starting")
            lines = [line async for _, chunk in backend.tail(run, 0) for line in chunk]
        finally:
            await backend.close()
    assert lines[-3:] == ["first", "second", "Killed mid-wr"]
    assert lines.count("second") == 1


async def test_a_failed_run_whose_server_lives_on_is_named_and_offered_a_stop(_config_dir: Path) -> None:
    """SGLang 0.5.23 with its port taken hangs after the bind error: the TUI says the server is still
    running and cannot serve, and asks whether to stop it; yes stops it (its record says stopped) and the
    run still reads failed in the runs table: the stop freed its memory, the launch had failed."""
    async with SimHost("port-in-use", speed=SPEED) as host:
        app = _a6000_app(host, _config_dir)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.host_states.get("sim") == "connected", 20, "SSH to the sim")
            await launch_anyway(pilot, app)
            await wait_for(pilot, lambda: app.run_state == "failed", 30, "the launch to fail")
            await wait_for(pilot, lambda: asking(app), 20, "the offer to stop it")
            assert "still running" in str(app.screen.query_one("#confirm-question").render())
            failed = app.current
            assert failed is not None
            await pilot.press("y")
            await wait_for(
                pilot,
                lambda: {r.run_id: r.state for r in app.fleet.all_runs()}.get(failed.run_id) == "stopped",
                30,
                "the run's record says stopped",
            )
            await wait_for(pilot, lambda: max(host.gpu_memory().values()) < 1000, 20, "its memory freed")
            shown = {r.run_id: r.state for r in app.main.query_one(RunsTable).runs}
            assert shown[failed.run_id] == "failed" and app.run_state == "failed"
            await pilot.press("q")
