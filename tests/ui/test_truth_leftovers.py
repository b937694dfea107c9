"""Issue 9, what the engine knew and the screen did not show: why a run ended so (a full disk lost its
exit code, its docker container is gone), a live run's health aged and marked stale in the fleet and runs
rows on a frozen link (a lost one greys the host's rows), and the GPU sparklines of the host in view only.

Every clock here is moved by hand: ages are exact, never the machine's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

from rich.text import Text

from sgtui.core.profiles import Profile
from sgtui.remote.run_records import RunRecord, status_from_marker
from sgtui.remote.runs import RunManager
from sgtui.remote.targets import Target
from sgtui.remote.transport import Result
from sgtui.ui import messages as m
from sgtui.ui.app import SgtuiApp
from sgtui.ui.backend import RunExit
from sgtui.ui.panes.hosts import FleetPane
from sgtui.ui.panes.runs import RunsTable
from sgtui.ui.remote_backend import RemoteBackend
from sgtui.ui.views import ContainerView, GpuView, RunView
from sgtui.ui.widgets.diagnosis import DiagnosisPanel
from sgtui.ui.widgets.gpu_sparkline import FixedSparkline
from tests.ui.conftest import launch_anyway, wait_for
from tests.ui.fakes import A6000_MIB, FakeBackend, gpus
from tests.ui.scripts import ready_log

SIZE = (120, 40)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def status(app: SgtuiApp) -> str:
    return str(app.main.query_one("#status").render())


def fleet_row(app: SgtuiApp, host: str) -> str:
    pane = app.main.query_one(FleetPane)
    pane.refresh_fleet()
    return next(n.label.plain for n in pane.tree.root.children if n.data is not None and n.data.host == host)


def runs_row(app: SgtuiApp, run_id: str) -> list[Text]:
    table = app.main.query_one(RunsTable)
    run = next(r for r in table.runs if r.run_id == run_id)
    return list(table.get_row(run.row_key))  # type: ignore[arg-type]


def dim(text: Text) -> bool:
    """The whole of `text` is drawn dim (its own style, or a span over all of it)."""
    whole = [s.style for s in text.spans if s.start == 0 and s.end >= len(text)]
    return any("dim" in str(style) for style in [text.style, *whole])


def disk_full_note() -> str:
    """The sentence `sgtui runs` prints for a run whose exit code a full disk swallowed."""
    note = status_from_marker({"free_kib": 12, "rc_tmp": "empty"}, "/runs/r1/server.log").note
    assert note is not None
    return note


# ---- why a run ended so ----------------------------------------------------------------------------------
async def test_a_run_that_ended_on_a_full_disk_says_so_in_the_status_line_the_side_panel_and_its_row(
    profile: Profile,
) -> None:
    note = disk_full_note()
    backend = FakeBackend(launch_logs=[ready_log()[:4]], exit_notes={"run-1": note})
    app = SgtuiApp(backend, profile, theme="textual-dark", clock=Clock())
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.fit_report is not None, what="the fit")
        await launch_anyway(pilot, app)
        await wait_for(pilot, lambda: app.session is not None and not app.session.alive, what="the end")
        assert app.run_state == "dead"  # no exit code and no stop by sgtui: not "stopped"
        await wait_for(pilot, lambda: note in status(app), what="the note in the status line")
        panel = app.main.query_one(DiagnosisPanel)
        # whole, where the user reads the diagnosis (the panel and the table are drawn on their own messages)
        await wait_for(pilot, lambda: panel.display and note in str(panel.render()), what="the side panel")

        def row_state() -> str:
            app.draw_runs()
            if not any(r.run_id == "run-1" for r in app.runs):
                return ""
            return runs_row(app, "run-1")[3].plain  # the state as listed, then the host's note

        await wait_for(pilot, lambda: "12 KiB free" in row_state(), what="the note in the run's row")
        assert ": the disk holding the log is full (/runs/r1: 12 KiB free)" in row_state()


async def test_a_docker_runs_fate_reaches_the_runs_table_in_the_words_of_sgtui_runs_and_as_text(
    profile: Profile,
) -> None:
    """The host's note is outside text: a container named like markup is shown as written."""
    why = "Docker container [/opt/x][bold] is gone from pve (removed), and the run ended with it"
    dead = RunView("run-old", "pve", "docker [/opt/x]", "qwen", "dead", "/l/old.log", note=why)
    app = SgtuiApp(FakeBackend(existing_runs=[dead]), profile, theme="textual-dark", clock=Clock())
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.runs, what="the runs listed")
        state = runs_row(app, "run-old")[3].plain
        assert state.startswith("dead: Docker container [/opt/x][bold] is gone from pve (removed)")
        assert state.endswith("…")  # cut in the table; whole in the side panel and `sgtui runs`
        app.follow(dead, None, fresh=False)
        await wait_for(pilot, lambda: why in str(app.main.query_one(DiagnosisPanel).render()), what="why")
        assert app.is_running


class GoneContainer:
    """A transport whose `docker exec` finds no container: what docker says once it was removed."""

    host = SimpleNamespace(name="dockerhost")

    async def run(self, command: Any, input: Any = None, timeout: float | None = None) -> Result:
        return Result("", "Error response from daemon: No such container: web-1\n", 1)


async def test_the_remote_backend_hands_the_tui_the_same_note_as_the_run_status() -> None:
    target = Target("docker", "web-1")
    manager = RunManager(GoneContainer(), target, "/runs")  # type: ignore[arg-type]
    record = RunRecord("r1", "dockerhost", target, "/runs/r1", ["/usr/bin/python3"], {}, [], 5, 5, 9, "b")

    async def list_runs() -> list[RunRecord]:
        return [record]

    manager.list_runs = list_runs  # type: ignore[method-assign]
    backend = RemoteBackend({})
    backend._manager = lambda *a, **k: manager  # type: ignore[assignment,method-assign,return-value]
    expected = (await manager.status(record)).note
    assert expected is not None and "is gone from dockerhost (removed)" in expected
    [view] = await backend.runs("dockerhost", ContainerView("docker", "web-1"))
    assert view.note == expected
    assert await backend.run_exit(view) == RunExit("dead", None, expected)


# ---- stale health in the fleet and runs rows -------------------------------------------------------------
async def test_a_frozen_link_ages_each_live_runs_health_in_the_fleet_and_runs_rows_until_it_speaks(
    profile: Profile,
) -> None:
    clock = Clock()
    backend = FakeBackend(launch_logs=[ready_log()], hold_tail=True)
    app = SgtuiApp(backend, profile, theme="textual-dark", clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.fit_report is not None, what="the fit")
        await launch_anyway(pilot, app)
        await wait_for(pilot, lambda: app.run_state == "ready", what="ready")
        await wait_for(pilot, lambda: any(r.run_id == "run-1" for r in app.runs), what="the run's row")
        app._tick()
        assert "last seen" not in fleet_row(app, "pve") and "1 run ready" in fleet_row(app, "pve")
        assert runs_row(app, "run-1")[3].plain == "ready"
        # nothing heard for 20 s on a "connected" link (under the 30 s relisting a frozen link never answers)
        clock.now += 20.0
        app._tick()
        assert "1.0/96 GiB 20s ago  1 run ready, last seen 20s ago" in fleet_row(app, "pve")
        assert runs_row(app, "run-1")[3].plain == "ready, last seen 20s ago"
        app.post_message(m.GpuSampled("pve", gpus(), clock.now))  # the link speaks again
        await wait_for(pilot, lambda: app.fleet.host("pve").ages.age("gpus") == 0, what="the sample")
        app._tick()
        assert "last seen" not in fleet_row(app, "pve")
        assert runs_row(app, "run-1")[3].plain == "ready"


async def test_at_80_columns_the_status_line_drops_the_version_before_the_runs_stale_mark(
    profile: Profile,
) -> None:
    clock = Clock()
    app = SgtuiApp(
        FakeBackend(launch_logs=[ready_log()], hold_tail=True), profile, theme="textual-dark", clock=clock
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.fit_report is not None, what="the fit")
        line = status(app)  # the whole line; the terminal shows its first 80 cells
        assert len(line) <= 80 and line.endswith("no run followed: l launches")  # the version went
        await launch_anyway(pilot, app)
        await wait_for(pilot, lambda: app.run_state == "ready", what="ready")
        clock.now += 20.0
        app._tick()
        line = status(app)
        assert len(line) <= 80 and line.endswith("run run-1 ready, last seen 20s ago")


async def test_a_lost_connection_greys_its_hosts_rows_and_reconnecting_restores_them(
    profile: Profile,
) -> None:
    live = RunView("run-live", "pve", "lxc 129", "qwen", "running", "/l/live.log")
    backend = FakeBackend(existing_runs=[live], existing_logs={"run-live": []}, hold_tail=True)
    app = SgtuiApp(backend, profile, theme="textual-dark", clock=Clock())
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.runs and app.fleet.host("pve").containers, what="runs, containers")
        pane = app.main.query_one(FleetPane)

        def greyed() -> tuple[bool, bool]:
            pane.refresh_fleet()
            row = runs_row(app, "run-live")
            leaf = next(n for n in pane.tree.root.children if n.data and n.data.host == "pve").children[0]
            return all(dim(c) for c in row if c.plain), dim(leaf.label)

        assert greyed() == (False, False)
        backend.push_state("lost", "keepalive timeout")
        await wait_for(pilot, lambda: app.host_states["pve"] == "lost", what="lost")
        assert greyed() == (True, True)
        backend.push_state("connected")
        await wait_for(pilot, lambda: app.host_states["pve"] == "connected", what="back")
        assert greyed() == (False, False)


# ---- the GPU sparklines of the host in view, only --------------------------------------------------------
def frame(used: int) -> list[GpuView]:
    return [GpuView(0, "NVIDIA RTX A6000", used, A6000_MIB, 10, ())]


class TwoHosts(FakeBackend):
    """pve and gpu2 both connect, each with its own GPU samples and its own running run."""

    frames: dict[str, list[list[GpuView]]] = {
        "pve": [frame(1024), frame(2048)],
        "gpu2": [frame(40960), frame(41984), frame(43008)],
    }

    async def connection_states(self, host: str) -> AsyncIterator[tuple[str, str]]:
        yield ("connecting", "")
        yield ("connected", "")
        await asyncio.Event().wait()

    async def gpu_samples(self, host: str) -> AsyncIterator[list[GpuView]]:
        for f in self.frames[host]:
            yield f
        await asyncio.Event().wait()

    async def runs(self, host: str, target: Any, runs_dir: str | None = None) -> list[RunView]:
        return [r for r in self.existing_runs if r.host == host]


async def test_switching_to_a_run_on_another_host_shows_that_hosts_gpu_history_only(profile: Profile) -> None:
    on_pve = RunView("run-a", "pve", "lxc 129", "qwen", "running", "/l/a.log")
    on_gpu2 = RunView("run-b", "gpu2", "bare host", "qwen", "running", "/l/b.log")
    backend = TwoHosts(
        existing_runs=[on_pve, on_gpu2], existing_logs={"run-a": [], "run-b": []}, hold_tail=True
    )
    app = SgtuiApp(backend, profile, theme="textual-dark", clock=Clock())

    def spark() -> list[float]:
        """What GPU0's sparkline draws, as fractions of the card."""
        line = app.main.query_one("#gpu-spark-0", FixedSparkline)
        return [round(v / line.total, 6) for v in line.values]

    def card(*mib: int) -> list[float]:
        return [round(v / A6000_MIB, 6) for v in mib]

    pve, gpu2 = card(1024, 2048), card(40960, 41984, 43008)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.session is not None and app.session.key == "run-a", what="reattach")
        last = lambda h: app.fleet.host(h).gpus[-1:] == TwoHosts.frames[h][-1]  # noqa: E731
        await wait_for(pilot, lambda: last("pve") and last("gpu2"), what="every sample of both hosts")
        await wait_for(pilot, lambda: spark() == pve, what="pve's own samples")
        app.follow(on_gpu2, None, fresh=False)
        await pilot.pause()
        assert app.gpu_host == "gpu2"
        assert spark() == gpu2  # gpu2's own history, none of pve's
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: app.gpu_host == "pve", what="back on pve's run")
        assert spark() == pve
        assert app.history is app.followed.get("run-a").history  # type: ignore[union-attr]


async def test_a_lost_link_retrying_is_said_once_and_stays_lost_since_it_was_lost(profile: Profile) -> None:
    """Each retry (lost, connecting, lost ...) used to notify again, stacking notices over the screen, and
    to reset the host's "lost 3s" age."""
    clock = Clock()
    backend = FakeBackend(hold_tail=True)
    app = SgtuiApp(backend, profile, theme="textual-dark", clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.host_states.get("pve") == "connected", what="connected")
        backend.push_state("lost", "keepalive timeout")
        await wait_for(pilot, lambda: app.host_states["pve"] == "lost", what="lost")
        clock.now += 25.0
        for state in ("lost", "connecting", "lost", "connecting", "lost"):
            backend.push_state(state, "reconnecting in 10.00 s" if state == "lost" else "")
            await pilot.pause()
        await pilot.pause()
        said = [n for n in app._notifications if "connection to pve lost" in n.message]
        assert len(said) == 1 and app.host_states["pve"] == "lost"
        assert app.fleet.host("pve").state_age == 25.0
        backend.push_state("connected")
        await wait_for(pilot, lambda: app.host_states["pve"] == "connected", what="back")
