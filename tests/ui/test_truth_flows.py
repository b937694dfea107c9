"""The app tells the truth: no one-key launch into a predicted failure, the fit's verdict on every tab,
stale values marked with their age, read-only mode, unsaved edits asked about, outside text as text."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from textual.widgets import TabbedContent

from sgtui.core.profiles import Profile
from sgtui.ui import messages as m
from sgtui.ui import profile_ops
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
        assert first.verdict == "fits"  # the ranked fix, not the tight --mem-fraction-static raise
        assert "Not enough memory" in shown and f"First fix that fits: {first.flag} {first.value}" in shown
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
        # each key says why it did nothing (a disabled binding said nothing at all)
        said = [n.message for n in app._notifications if n.message.startswith("read-only: ")]
        assert [m.split(", so no ")[1].split(";")[0] for m in said] == ["launch", "restart", "stop"]


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


async def test_the_fit_is_sized_from_what_is_free_now_as_the_headless_preflight_sizes_it(
    profile: Profile,
) -> None:
    """Another process holds 20 GiB on GPU 1: the launch that fits on empty GPUs (8 running requests) is
    fitted from what is free now, by the function headless `sgtui launch` uses (`fit_on_target`): it
    fails, the panel says what it was sized from, and `l` asks first."""
    from sgtui.core.model import model_facts_from_config
    from sgtui.core.preflight import LiveGpu, fit_on_target
    from tests.ui.fakes import QWEN_CONFIG, gpus

    mrr8 = dataclasses.replace(profile, sglang={**profile.sglang, "--max-running-requests": 8})
    held = gpus((3, 20483))  # GPU 1: 20 GiB in use by another process
    app = SgtuiApp(FakeBackend(gpu_frames=[held]), mrr8, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        report = app.fit_report
        assert report is not None and report["verdict"] == "fails"
        live = [LiveGpu(g.index, g.name, g.total_mib, float(g.used_mib)) for g in held]
        model = model_facts_from_config(QWEN_CONFIG, weight_bytes=55_600_000_000)
        headless = fit_on_target(mrr8.spec, model, live, version="0.5.9", n_gpus=2)
        assert report["baseline_free_gib"] == headless.to_json()["baseline_free_gib"]
        assert report["verdict"] == headless.verdict
        panel = str(app.main.query_one(FitPanel).render())
        shown = " ".join(panel.split())
        assert "sized from what is free now: GPU 1 20.00 GiB in use" in shown
        # an estimate is said in the app's terms: it has no --draft-weights-gib to pass (`sgtui fit` has)
        assert "draft weights are estimated" in shown and "--draft-weights-gib" not in shown
        await press_until(pilot, "l", lambda: isinstance(app.screen, FitConfirmScreen), "the question")


async def test_the_memory_sgtuis_own_live_run_holds_does_not_shrink_the_fit(profile: Profile) -> None:
    """Once sgtui's own run is alive on the host its memory climbs; that is not another's memory (a
    restart frees it), so the fit keeps the reading from before the run started; later samples count again
    once it ended."""
    from sgtui.ui import messages as m
    from tests.ui.fakes import gpus

    backend = FakeBackend(launch_logs=[[]], hold_tail=True)
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        before = app.fit_inputs.live
        assert [g.used_mib for g in before] == [512.0, 512.0]
        await launch_anyway(pilot, app)
        await wait_for(pilot, lambda: app.session is not None and app.session.alive, what="the run")
        app.post_message(m.GpuSampled("pve", gpus((40_000, 40_000)), time.monotonic()))
        await pilot.pause(0.2)
        assert app.fit_inputs.live == before
        assert app.session is not None
        app.session.state = "stopped"
        app.post_message(m.GpuSampled("pve", gpus((3, 20_483)), time.monotonic()))
        await wait_for(pilot, lambda: app.fit_inputs.live != before, what="the new reading")
        assert [g.used_mib for g in app.fit_inputs.live] == [3.0, 20_483.0]


# ---- a field holding a typo is never dropped from the profile ------------------------------------------
async def _mistype(pilot: Any, app: SgtuiApp, flag: str, text: str) -> None:
    await fitted(pilot, app)
    app.main.query_one(TabbedContent).active = "flags"
    field = app.form.field(flag)
    assert field is not None
    field.control.value = text
    await wait_for(pilot, lambda: bool(app.form.errors()), what="the field's error")


async def test_saving_with_a_field_in_error_saves_nothing_and_says_which(
    profile: Profile, _config_dir: Path
) -> None:
    """Saved, the profile would lose the flag (the form leaves an invalid field out of its values) and
    launch with SGLang's default: TP 1 instead of 2."""
    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await _mistype(pilot, app, "--tp-size", "x")
        await press_until(pilot, "p", lambda: isinstance(app.screen, ProfilesScreen), "the profiles screen")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not list(_config_dir.glob("profiles/*.yaml"))
        assert any("not saved: fix the flags first" in n.message for n in app._notifications)
        assert profile_ops.values(app.deployment.profile)["--tp-size"] == 2


async def test_a_new_release_rebuilds_the_form_with_the_mistyped_text_and_the_flag_kept(
    profile: Profile,
) -> None:
    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await _mistype(pilot, app, "--tp-size", "x")
        old = app.form
        d = app.deployment
        app.post_message(m.VersionDetected(d.host, d.target_label, "0.5.11"))
        await wait_for(pilot, lambda: app.form is not old, what="the new release's form")
        field = app.form.field("--tp-size")
        assert field is not None and field.control.value == "x" and field.error
        assert profile_ops.values(d.profile)["--tp-size"] == 2  # the last good value, until it is fixed
        await pilot.pause()
        assert app.form.dirty  # still unsaved: quitting or opening another profile asks


async def test_opening_another_profile_with_unsaved_edits_asks_first(profile: Profile) -> None:
    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        field = app.form.field("--context-length")
        assert field is not None
        field.control.value = "16384"
        await wait_for(pilot, lambda: app.form.dirty, what="an unsaved edit")
        await press_until(pilot, "p", lambda: isinstance(app.screen, ProfilesScreen), "the profiles screen")
        await pilot.press("enter")  # the first profile in the list
        await wait_for(pilot, lambda: asking(app), what="the question")
        assert "lose the unsaved flag edits" in str(app.screen.query_one("#confirm-question").render())
        await pilot.press("n")
        await pilot.pause()
        assert app.form.field("--context-length").control.value == "16384"  # type: ignore[union-attr]


async def test_a_run_opened_from_the_list_is_compared_with_the_fit_only_if_launched_with_these_flags(
    profile: Profile,
) -> None:
    """Its memory panel put "KV tokens predicted" from the form's fit beside the actual count of a run
    launched with other flags (or on another host): "none (2.42 GiB short)" for a run serving 40k."""
    from types import SimpleNamespace

    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        d = app.deployment

        def run(host: str, argv: list[str] | None) -> RunView:
            raw = SimpleNamespace(argv=argv) if argv is not None else None
            return RunView("r", host, "pct 129", "qwen", "running", "/l/r.log", raw=raw)  # as a record says

        assert app._fit_of(run(d.host, list(profile.command))) is app.fit_report is not None
        assert app._fit_of(run(d.host, [*profile.command, "--max-running-requests", "38"])) is None
        assert app._fit_of(run("gpu2", list(profile.command))) is None


async def test_a_run_in_another_hosts_container_is_listed_again_where_it_is(profile: Profile) -> None:
    """Its row said "running" for 20-40 s after its stop: the host's bare host was listed again, not the
    container the run is in."""
    from sgtui.ui.views import ContainerView

    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        lxc = ContainerView("pct", "129", "sglang", "running")
        app.fleet.host("gpu2").containers = [ContainerView("host", ""), lxc]
        asked: list[tuple[str, object]] = []
        app.controller.list_runs = lambda host, target, runs_dir=None: asked.append((host, target))  # type: ignore[method-assign]
        app.relist_runs([RunView("r", "gpu2", "pct 129", "qwen", "stopped", "/l/r.log")])
        assert asked == [("gpu2", lxc)]


async def test_the_welcome_names_the_target_in_use_after_a_retarget(profile: Profile) -> None:
    """It kept naming the first profile's host while the status line named the new one."""
    from sgtui.ui.views import ContainerView

    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await fitted(pilot, app)
        assert app.log_pane.log.store.lines[0] == "Profile qwen36-27b-2xa6000 for pve › lxc 129."
        app.deploy.retarget("gpu2", ContainerView("host", ""))
        await pilot.pause()
        assert app.log_pane.log.store.lines[0] == "Profile qwen36-27b-2xa6000 for gpu2 › bare host."
        assert sum(line.startswith("Profile ") for line in app.log_pane.log.store.lines) == 1
