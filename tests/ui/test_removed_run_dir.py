"""Issue 18: a followed run whose run dir was removed while it runs. The host's listing no longer has it,
but the session still holds its record (the remote side tells it by pid, start time and boot id), so its
row stays in the runs table, the host's note says why, and it can still be stopped."""

from __future__ import annotations

from sgtui.core.profiles import Profile
from sgtui.ui.app import SgtuiApp
from sgtui.ui.panes.runs import RunsTable
from sgtui.ui.views import RunView
from sgtui.ui.widgets.diagnosis import DiagnosisPanel
from sgtui.ui.widgets.log_view import LogView
from tests.ui.conftest import asking, wait_for
from tests.ui.fakes import FakeBackend
from tests.ui.scripts import ready_log

SIZE = (120, 40)
REMOVED = "its run dir /var/tmp/r7 was removed"  # `RunStatus.note` as remote/run_records.py words it


def status(app: SgtuiApp) -> str:
    return str(app.main.query_one("#status").render())


def row_state(app: SgtuiApp, run_id: str) -> str | None:
    table = app.main.query_one(RunsTable)
    run = next((r for r in table.runs if r.run_id == run_id), None)
    return None if run is None else list(table.get_row(run.row_key))[3].plain  # type: ignore[arg-type]


async def test_a_followed_run_whose_dir_was_removed_keeps_its_row_says_why_and_stays_stoppable(
    profile: Profile,
) -> None:
    """On the old code the next listing dropped the row and the live run showed no note at all."""
    alive = RunView("run-7", "pve", "lxc 129", "qwen36-27b-2xa6000", "running", "/var/tmp/r7/server.log")
    backend = FakeBackend(existing_runs=[alive], existing_logs={"run-7": ready_log()[:6]}, hold_tail=True)
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.session is not None and app.session.key == "run-7", what="reattach")
        await wait_for(pilot, lambda: app.query_one(LogView).line_count == 6, what="the log")
        await wait_for(pilot, lambda: row_state(app, "run-7") is not None, what="the row")
        backend.existing_runs = []  # someone removed the run dir: the listing no longer has it
        backend.running_notes["run-7"] = REMOVED
        app.relist("pve")
        await wait_for(pilot, lambda: REMOVED in status(app), what="the note in the status line")
        assert app.session is not None and app.session.alive  # still followed: it runs
        state = row_state(app, "run-7")
        assert state is not None and f": {REMOVED}"[:20] in state  # the row kept, marked with the note
        panel = app.main.query_one(DiagnosisPanel)
        assert panel.display and REMOVED in str(panel.render())
        app.relist("pve")  # a later listing keeps it too
        await pilot.pause(0.2)
        assert row_state(app, "run-7") is not None
        await pilot.press("s")
        await wait_for(pilot, lambda: asking(app), what="the stop question")
        await pilot.press("y")
        await wait_for(pilot, lambda: backend.stopped == ["run-7"], what="the stop from the record in hand")
