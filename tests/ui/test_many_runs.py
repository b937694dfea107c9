"""Several runs followed at once, each with its own log, timeline and diagnosis; a run that changes state
out of view says so once and marks its row; a multi-node run shows every node."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from sgtui.core.profiles import Profile
from sgtui.ui.app import SgtuiApp
from sgtui.ui.panes.runs import RunsTable
from sgtui.ui.views import RunView
from sgtui.ui.widgets.log_view import LogView
from sgtui.ui.widgets.node_timeline import NodeTimeline
from sgtui.ui.widgets.timeline import Timeline
from tests.ui.conftest import wait_for
from tests.ui.fakes import FakeBackend
from tests.ui.scripts import failing_log, ready_log

SIZE = (120, 40)


def alive(run_id: str, rank: int | None = None) -> RunView:
    return RunView(
        run_id, "pve", "lxc 129", "qwen36-27b-2xa6000", "running", f"/r/{run_id}.log", node_rank=rank
    )


def notes(app: SgtuiApp, text: str) -> list[str]:
    return [n.message for n in app._notifications if text in n.message]


async def two_followed(pilot: Pilot[Any], app: SgtuiApp) -> None:
    await wait_for(pilot, lambda: len(app.followed) == 2, what="both runs followed")
    await wait_for(
        pilot, lambda: app.current is not None and app.current.run_id == "run-8", what="run-8 in view"
    )


async def test_two_runs_are_followed_and_the_one_out_of_view_announces_ready_once(profile: Profile) -> None:
    backend = FakeBackend(
        existing_runs=[alive("run-7"), alive("run-8")],
        existing_logs={"run-7": ready_log(), "run-8": failing_log()},
        hold_tail=True,
    )
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await two_followed(pilot, app)
        await wait_for(pilot, lambda: notes(app, "run-7 on pve is ready"), what="run-7's notification")
        await wait_for(pilot, lambda: app.run_state == "failed", what="run-8's own failure, in view")
        assert app.followed.get("run-7").unseen == "ready"  # type: ignore[union-attr]
        table = app.query_one(RunsTable)
        await wait_for(pilot, lambda: table.marks.get("run-7") == "changed", what="run-7's row marked")
        assert table.marks["run-8"] == "view"
        seven = next(r for r in table.runs if r.run_id == "run-7")
        assert str(table.get_row(seven.row_key)[0]) == "!"
        # the one in view keeps its own log and diagnosis
        await wait_for(
            pilot, lambda: app.query_one(LogView).line_count == len(failing_log()), what="all of it"
        )
        assert app.log_pane.diagnosis.diagnoses

        await pilot.press("right_square_bracket")
        assert app.current is not None and app.current.run_id == "run-7"
        assert app.run_state == "ready"
        assert app.query_one(LogView).line_count == len(ready_log())
        assert app.query_one(Timeline).view.phase == "ready"
        assert not app.log_pane.diagnosis.diagnoses  # run-8's diagnosis stays with run-8
        assert app.followed.get("run-7").unseen is None  # type: ignore[union-attr]
        assert table.marks["run-7"] == "view" and table.marks["run-8"] == "followed"

        await pilot.press("left_square_bracket")
        assert app.current is not None and app.current.run_id == "run-8"
        assert app.log_pane.diagnosis.diagnoses
        assert len(notes(app, "run-7 on pve is ready")) == 1  # one notification, not one per look


async def test_the_palette_switches_to_a_followed_run_by_its_id(profile: Profile) -> None:
    backend = FakeBackend(
        existing_runs=[alive("run-7"), alive("run-8")],
        existing_logs={"run-7": ready_log()[:6], "run-8": ready_log()[:4]},
        hold_tail=True,
    )
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await two_followed(pilot, app)
        await pilot.press("ctrl+p")
        await pilot.press(*"show run run-7")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.current is not None and app.current.run_id == "run-7", what="run-7")
        await wait_for(pilot, lambda: app.query_one(LogView).line_count == 6, what="run-7's own lines")


async def test_each_followed_run_keeps_its_own_gpu_history_and_a_bounded_log(profile: Profile) -> None:
    flood = [f"line {i}" for i in range(500)]
    backend = FakeBackend(
        existing_runs=[alive("run-7"), alive("run-8")],
        existing_logs={"run-7": flood, "run-8": ready_log()[:3]},
        hold_tail=True,
    )
    app = SgtuiApp(backend, profile, theme="textual-dark", max_log_lines=100)
    async with app.run_test(size=SIZE) as pilot:
        await two_followed(pilot, app)
        seven = app.followed.get("run-7")
        assert seven is not None
        await wait_for(pilot, lambda: seven.log.total == 500, what="run-7's whole flood")
        assert len(seven.log.entries) == 100 and seven.log.dropped == 400
        assert seven.history is not app.followed.get("run-8").history  # type: ignore[union-attr]


async def test_a_multi_node_run_has_one_timeline_per_node_and_a_log_with_a_node_column(
    profile: Profile,
) -> None:
    backend = FakeBackend(
        existing_runs=[alive("run-9", 0), alive("run-9", 1)],
        existing_logs={"run-9:0": ready_log(), "run-9:1": ready_log()[:3]},
        hold_tail=True,
    )
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.session is not None and len(app.session.nodes) == 2, what="2 nodes")
        session = app.session
        assert session is not None
        total = len(ready_log()) + 3
        await wait_for(pilot, lambda: app.query_one(LogView).line_count == total, what="both nodes' lines")
        lines = list(app.query_one(LogView).lines)
        assert {line.split(" │ ")[0] for line in lines} == {"n0", "n1"}
        nodes = app.query_one(NodeTimeline)
        await wait_for(
            pilot, lambda: nodes.nodes[0][2].phase if nodes.nodes else None == "ready", what="node 0 ready"
        )
        assert nodes.display and len(nodes.nodes) == 2
        assert nodes.nodes[1][2].phase != "ready"
        assert app.run_state != "ready"  # ready only when every node is
        await pilot.press("v")
        assert session.log_rank == 0 and app.query_one(LogView).line_count == len(ready_log())
        await pilot.press("v")
        assert session.log_rank == 1 and app.query_one(LogView).line_count == 3
        await pilot.press("v")
        assert session.log_rank is None and app.query_one(LogView).line_count == total


async def test_connected_hosts_list_their_runs_again_every_period(profile: Profile) -> None:
    now = [1000.0]
    backend = FakeBackend()
    asked: list[str] = []
    listed = backend.runs

    async def runs(host: str, target: Any, runs_dir: str | None = None) -> list[RunView]:
        asked.append(host)
        return await listed(host, target, runs_dir)

    backend.runs = runs  # type: ignore[method-assign]
    app = SgtuiApp(backend, profile, theme="textual-dark", clock=lambda: now[0])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            pilot, lambda: app.fleet.host("pve").ages.seen("runs") is not None, what="first listing"
        )
        await pilot.pause(1.5)
        before = len(asked)
        assert before and all(h == "pve" for h in asked)  # gpu2 never connected: never asked
        now[0] += 31
        await wait_for(pilot, lambda: len(asked) > before, 5, "the periodic listing")
