"""The app tells the truth: no one-key launch into a predicted failure, the fit's verdict on every tab,
stale values marked with their age, read-only mode, unsaved edits asked about, outside text as text."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from textual.widgets import TabbedContent

from sgtui.core.profiles import Profile
from sgtui.ui.app import SgtuiApp
from sgtui.ui.screens.fit_confirm import FitConfirmScreen
from sgtui.ui.screens.profiles import ProfilesScreen
from sgtui.ui.views import RunView
from sgtui.ui.widgets.fit_panel import FitPanel
from tests.ui.conftest import asking, launch_anyway, press_until, wait_for
from tests.ui.fakes import FakeBackend
from tests.ui.scripts import failing_log, ready_log

SIZE = (120, 40)


def status(app: SgtuiApp) -> str:
    return str(app.main.query_one("#status").render())


async def fitted(pilot: Any, app: SgtuiApp) -> None:
    await wait_for(pilot, lambda: app.host_states.get("pve") == "connected", what="the host")
    await wait_for(pilot, lambda: app.fit_report is not None, what="the fit")


async def test_l_on_a_launch_the_fit_says_fails_asks_first_and_escape_launches_nothing(
    profile: Profile,
) -> None:
    """The question quotes the predicted error, offers the report's first fix (`FitReport.first_fix`, the
    one ranking) as its one key, and shows each target check as a line."""
    from sgtui.core.preflight import Check, first_fix_json

    held = "GPU 1 held by others: pid 77 (alice) python3 (host) 20480 MiB on GPU 1"
    backend = FakeBackend(
        launch_logs=[failing_log()],
        checks=[Check("port", True, "port 30000 is free"), Check("gpus", False, held)],
    )
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        assert app.fit_report is not None and app.fit_report["verdict"] == "fails"
        assert "fit FAILS" in status(app)  # on the log tab, where the app opens
        await press_until(pilot, "l", lambda: isinstance(app.screen, FitConfirmScreen), "the question")
        shown = str(app.screen.query_one("#fit-confirm-text").render())
        first = first_fix_json(app.fit_report)
        assert first is not None
        assert "Not enough memory" in shown and f"fix: {first.flag} {first.value}" in shown
        assert "port: ok: port 30000 is free" in shown and f"gpus: FAILED: {held}" in shown
        assert backend.checked, "the target checks were asked for"
        await press_until(pilot, "escape", lambda: not isinstance(app.screen, FitConfirmScreen), "gone")
        await pilot.pause(0.2)
        assert backend.launched == []


async def test_apply_the_fix_and_launch_launches_with_the_fix(profile: Profile) -> None:
    backend = FakeBackend(launch_logs=[ready_log(), ready_log()], hold_tail=True)
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        fix = FitConfirmScreen(app.fit_report).fix
        assert fix is not None
        await press_until(pilot, "l", lambda: isinstance(app.screen, FitConfirmScreen), "the question")
        await pilot.press("f")
        await wait_for(pilot, lambda: backend.launched, what="the launch")
        assert backend.launched[0].sglang[fix[0]] == fix[1]


async def test_an_invalid_field_stops_the_fit_with_fix_the_flags_first(profile: Profile) -> None:
    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        field = app.form.field("--mem-fraction-static")
        assert field is not None
        field.control.value = "lots"  # type: ignore[union-attr]
        await wait_for(pilot, lambda: "fix the flags first" in status(app), what="the verdict withdrawn")
        assert "fix the flags first" in str(app.main.query_one(FitPanel).render())
        assert app.fit_report is None


async def test_a_new_model_path_is_read_again_for_the_fit(profile: Profile) -> None:
    asked: list[str] = []

    class Recording(FakeBackend):
        async def model_config(self, host: str, target: Any, model_path: str) -> dict[str, Any] | None:
            asked.append(model_path)
            return await super().model_config(host, target, model_path)

    app = SgtuiApp(Recording(), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        field = app.form.field("--model-path")
        assert field is not None
        field.control.value = "/models/other"  # type: ignore[union-attr]
        await wait_for(pilot, lambda: "/models/other" in asked, what="the new model's config.json")


async def test_values_go_stale_with_their_age_and_recover(profile: Profile) -> None:
    offset = [0.0]
    app = SgtuiApp(
        FakeBackend(launch_logs=[ready_log()], hold_tail=True),
        profile,
        theme="textual-dark",
        clock=lambda: time.monotonic() + offset[0],
    )
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        await wait_for(pilot, lambda: app.fleet.host("pve").ages.age("gpus") is not None, what="a GPU sample")
        offset[0] = 35.0  # no GPU sample for 35 s on a "connected" link: a frozen link
        app._tick()
        await pilot.pause()
        assert "connected, last seen 3" in status(app)
        assert "stale: last sample" in str(app.main.query_one("#gpu-holders").render())
        offset[0] = 0.0
        app._tick()
        await pilot.pause()
        assert "last seen" not in status(app)


async def test_readonly_launches_stops_and_restarts_nothing(profile: Profile) -> None:
    backend = FakeBackend(launch_logs=[ready_log()])
    app = SgtuiApp(backend, profile, theme="textual-dark", readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        await pilot.press("l", "r", "s")
        await pilot.pause(0.2)
        assert backend.launched == [] and backend.stopped == []
        assert "read-only" in status(app)


async def test_quitting_with_unsaved_flag_edits_asks_and_defaults_to_no(profile: Profile) -> None:
    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        field = app.form.field("--mem-fraction-static")
        assert field is not None
        field.control.value = "0.8"  # type: ignore[union-attr]
        await pilot.pause()
        app.main.query_one(TabbedContent).active = "log"
        app.log_pane.log.focus()
        await press_until(pilot, "q", lambda: asking(app), "the quit question")
        await pilot.press("escape")
        await pilot.pause()
        assert app.is_running


async def test_r_names_sgtuis_own_run_holding_the_gpus_and_offers_to_stop_it(profile: Profile) -> None:
    old = RunView("run-old", "pve", "lxc 129", "qwen", "exited", "/l/old.log", gpus=(0, 1))
    live = RunView("run-live", "pve", "lxc 129", "qwen", "running", "/l/live.log", gpus=(0, 1))
    backend = FakeBackend(existing_runs=[old, live], existing_logs={"run-old": failing_log(), "run-live": []})
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        app.follow(old, None, fresh=False)
        await wait_for(pilot, lambda: app.session is not None and not app.session.alive, what="old run ended")
        await wait_for(pilot, lambda: any(r.run_id == "run-live" for r in app.fleet.host("pve").runs))
        await launch_anyway(pilot, app, "r")
        await wait_for(pilot, lambda: asking(app), what="the holder question")
        assert "run-live holds GPU 0,1" in str(app.screen.query_one("#confirm-question").render())
        await pilot.press("y")
        await wait_for(pilot, lambda: backend.stopped == ["run-live"], what="the holder stopped")


async def test_a_profile_named_in_markup_opens_and_its_profiles_screen_too(profile: Profile) -> None:
    """Issue 11: `[/]` in a profile name used to raise MarkupError and kill the app."""
    hostile = dataclasses.replace(profile, name="[/][/opt/x][bold][@click=app.quit][link=https://e.x]")
    app = SgtuiApp(FakeBackend(), hostile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await press_until(pilot, "p", lambda: isinstance(app.screen, ProfilesScreen), "the profiles screen")
        assert "[/][/opt/x][bold][@click=app.quit]" in str(app.screen.query_one("#profiles-title").render())
        app.notify("remote said [/] and [rank0] [@click=app.quit]")
        await pilot.pause()
        assert app.is_running
        assert "[/][/opt/x]" in app.sub_title


async def test_a_host_without_gpus_says_why_the_fit_cannot_size_it_and_takes_a_typed_gpu(
    profile: Profile,
) -> None:
    from sgtui.ui.views import GpuView

    note = "no nvidia-smi: install the NVIDIA driver utilities (nvidia-smi) on that host"
    app = SgtuiApp(
        FakeBackend(gpu_frames=[[GpuView(-1, "", 0, 0, None, (), note)]]), profile, theme="textual-dark"
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.fit_inputs.gpu_error, what="the GPU problem")
        panel = app.main.query_one(FitPanel)
        await wait_for(pilot, lambda: "cannot size the GPU" in str(panel.render()), what="the fit's reason")
        assert "no nvidia-smi" in str(panel.render())
        app.main.query_one(TabbedContent).active = "flags"
        box = app.main.query_one("#fit-gpu")
        assert box.display
        box.focus()
        await pilot.press(*"A6000", "enter")
        await wait_for(pilot, lambda: app.fit_report is not None, what="a fit for the typed GPU")
        assert app.fit_inputs.gpu_mib == 49140


def test_milestones_sit_at_their_log_times_and_an_old_runs_are_not_replayed_now() -> None:
    from types import SimpleNamespace

    from sgtui.ui.session.run import RunSession

    def session(started_at: float) -> RunSession:
        run = RunView("r", "pve", "lxc 129", "p", "running", "/l", raw=SimpleNamespace(started_at=started_at))
        s = RunSession(run, None, lambda _m: None)
        s.feed(0, ready_log(), 1)
        return s

    old = session(time.time() - 6 * 3600)  # reattached hours later: its startup is no moment of this chart
    assert [label for _, label in old.history.marks] == []
    fresh = session(time.time())  # launched now: each milestone at its own offset from the first line
    marks = dict((label, x) for x, label in fresh.history.marks)
    assert "load_weight_begin" in marks and "ready" in marks
    assert marks["ready"] - marks["load_weight_begin"] > 60  # the log's own spacing, not all at once
