"""Answers that arrive late or in the middle of a change: a form being rebuilt is never missing or half
built to anyone reading it, and an answer asked for an earlier target or model is not applied to the new
one (on a loaded machine these orders happen; here they are forced)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sgtui.core.profiles import Profile
from sgtui.ui import messages as m
from sgtui.ui.app import SgtuiApp
from sgtui.ui.panes.flags import FlagsPane
from sgtui.ui.widgets.launch_form import LaunchForm
from tests.ui.conftest import wait_for
from tests.ui.fakes import QWEN_CONFIG, FakeBackend

SIZE = (120, 40)


async def test_while_a_rebuild_composes_the_new_form_readers_see_the_whole_old_one(
    profile: Profile, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[LaunchForm, dict[str, Any], bool]] = []
    compose = LaunchForm.compose

    def watched(form: LaunchForm) -> Any:
        pane = form.parent
        if isinstance(pane, FlagsPane) and pane.form is not form:  # a successor: what would a reader find?
            seen.append((pane.form, pane.form.values(), pane._rebuilding.locked()))
        return compose(form)

    monkeypatch.setattr(LaunchForm, "compose", watched)
    app = SgtuiApp(FakeBackend(version="0.5.23"), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.version == "0.5.23" and seen, what="the form rebuilt for 0.5.23")
        await wait_for(pilot, lambda: app.form is not seen[0][0], what="the new form in use")
        old, values, locked = seen[0]
        assert locked and values == profile.sglang  # the whole old form, not an empty or missing one
        new = app.form
        assert new.is_mounted and app.query_one(LaunchForm) is new and not old.is_attached
        assert new.values() == values  # the version's form shows the same flags
        await wait_for(pilot, lambda: app.fit_report is not None, what="the new form's own fit")


async def test_a_fit_landing_mid_rebuild_leaves_both_forms_alone(profile: Profile) -> None:
    """The hints of a fit computed before the rebuild are not mounted into the form being replaced."""
    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.fit_report is not None, what="the first fit")
        flags, old = app.flags, app.form
        report = app.fit_report
        async with flags._rebuilding:  # a rebuild under way: the fit arrives now
            await flags.on_fit_computed(m.FitComputed(report, "", app.deployment.fit_generation))
            assert app.form is old
        await pilot.pause()
        assert app.form is old and old.is_attached  # nothing rebuilt, nothing broken


async def test_an_answer_for_the_target_left_behind_is_dropped(profile: Profile) -> None:
    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.version == "0.5.9" and app.fit_inputs.model_config is not None)
        here = app.deployment.target_label
        assert here == "lxc 129"
        app.post_message(m.VersionDetected("pve", "lxc 130", "0.5.23"))  # asked before a retarget
        app.post_message(m.ModelConfigRead("pve", "/models/Qwen3.6-27B", None, "unreadable", "lxc 130"))
        await pilot.pause()
        await pilot.pause()
        assert app.version == "0.5.9" and app.fit_inputs.model_error == ""
        app.post_message(m.VersionDetected("pve", here, "0.5.23"))  # the target in use: applied
        await wait_for(pilot, lambda: app.version == "0.5.23", what="the version of the target in use")


async def test_a_model_config_for_a_model_no_longer_named_is_dropped(profile: Profile) -> None:
    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.fit_inputs.model_config is not None, what="the model's config")
        await app.form.set_flag("--model-path", "/models/Other")  # the user names another model
        await wait_for(
            pilot,
            lambda: app.deployment.model_for == "/models/Other" and app.fit_inputs.model_config is not None,
            what="the other model's config",
        )
        stale = {"config": QWEN_CONFIG, "weight_bytes": 1}  # the answer for the model named before
        app.post_message(m.ModelConfigRead("pve", "/models/Qwen3.6-27B", stale, target="lxc 129"))
        await pilot.pause()
        await pilot.pause()
        assert app.fit_inputs.weight_bytes == 55_600_000_000


async def test_stopping_another_run_does_not_cancel_a_stop_under_way(profile: Profile) -> None:
    """Each run's stop is exclusive only with a stop of the same run (they shared one group before)."""
    from sgtui.ui.views import RunView

    gate = asyncio.Event()

    class SlowGpus(FakeBackend):
        async def wait_gpus_free(self, run: RunView, timeout: float) -> Any:
            await gate.wait()  # the first run's GPUs take a while to be freed
            yield "free"

    backend = SlowGpus()
    app = SgtuiApp(backend, profile, theme="textual-dark")
    a = RunView("run-a", "pve", "lxc 129", "qwen", "running", "/l/a.log", gpus=(0,))
    b = RunView("run-b", "pve", "lxc 129", "qwen", "running", "/l/b.log", gpus=(1,))
    async with app.run_test(size=SIZE) as pilot:
        app.controller.stop([a])
        await wait_for(pilot, lambda: backend.stopped == ["run-a"], what="run-a signalled")
        app.controller.stop([b])
        await wait_for(pilot, lambda: backend.stopped == ["run-a", "run-b"], what="run-b signalled")
        gate.set()
        done = [f"{k} stopped; its GPUs are free" for k in ("run-a", "run-b")]
        await wait_for(pilot, lambda: all(any(d in n.message for n in app._notifications) for d in done))


async def test_an_older_runs_listing_answered_late_does_not_overwrite_a_newer_one(profile: Profile) -> None:
    """Listings of one target overlap (a relist after each outcome, the periodic one); the newest asked
    for wins even when an older one is answered after it."""
    from sgtui.ui.views import RunView

    running = RunView("run-a", "pve", "bare host", "qwen", "running", "/l/a.log")
    ended = RunView("run-a", "pve", "bare host", "qwen", "exited", "/l/a.log")
    first_gate = asyncio.Event()
    answers = iter([(first_gate, [running]), (None, [ended])])

    class Overlapping(FakeBackend):
        async def runs(self, host: str, target: Any, runs_dir: str | None = None) -> list[RunView]:
            if host != "gpu2":
                return []
            gate, listing = next(answers)
            if gate is not None:
                await gate.wait()
            return listing

    app = SgtuiApp(Overlapping(states=[("connecting", "")]), profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        app.fleet.host("gpu2")  # known to the fleet from the fake's hosts
        app.controller.list_runs("gpu2", None)  # asked first, answered last
        app.controller.list_runs("gpu2", None)
        states = lambda: [r.state for r in app.fleet.host("gpu2").runs]  # noqa: E731
        await wait_for(pilot, lambda: states() == ["exited"], what="the newer listing")
        first_gate.set()
        listings = [w for w in app.workers if w.name == "runs:gpu2:bare host"]
        await wait_for(pilot, lambda: all(w.is_finished for w in listings), what="the older listing done")
        await pilot.pause()  # what it posted (if anything) is handled
        assert states() == ["exited"]


async def test_l_pressed_the_moment_the_host_is_connected_asks_before_the_first_gpu_sample(
    profile: Profile,
) -> None:
    """Connected, but no GPU sample yet (1-2 s on a LAN, longer over a real network): the fit cannot be
    computed, so `l` asks "the fit is not known yet (why): launch anyway?" with No focused, and Escape
    launches nothing. Once the sample came, the same `l` asks because the fit says it fails."""
    from sgtui.ui.screens.fit_confirm import FitConfirmScreen
    from tests.ui.conftest import press_until
    from tests.ui.fakes import gpus

    sampled = asyncio.Event()

    class NoSampleYet(FakeBackend):
        async def gpu_samples(self, host: str) -> Any:
            await sampled.wait()  # the order forced: the header says connected, no sample has come
            yield gpus()
            await asyncio.Event().wait()

    backend = NoSampleYet()
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.host_states.get("pve") == "connected", what="connected")
        assert app.fit_inputs.gpu_mib is None
        await press_until(pilot, "l", lambda: isinstance(app.screen, FitConfirmScreen), "the question")
        shown = str(app.screen.query_one("#fit-confirm-text").render())
        assert shown.startswith("The fit is not known yet (") and shown.endswith("launch anyway?")
        assert "first GPU sample" in shown
        assert app.focused is not None and app.focused.id == "no"
        assert not app.screen.query("#fix")  # nothing to apply: no fit, no fix
        await press_until(pilot, "escape", lambda: not isinstance(app.screen, FitConfirmScreen), "gone")
        await pilot.pause(0.2)
        assert backend.launched == []

        sampled.set()
        await wait_for(pilot, lambda: app.fit_report is not None, what="the fit once the sample came")
        await press_until(pilot, "l", lambda: isinstance(app.screen, FitConfirmScreen), "the question")
        assert "fails" in str(app.screen.query_one("#fit-confirm-text").render())


async def test_l_on_a_host_without_nvidia_smi_says_why_the_fit_is_not_known_and_y_launches(
    profile: Profile,
) -> None:
    """A host whose nvidia-smi is missing never sizes the fit: `l` says so instead of launching with no
    word; "launch anyway" (y) launches."""
    from sgtui.ui.screens.fit_confirm import FitConfirmScreen
    from sgtui.ui.views import GpuView
    from tests.ui.conftest import press_until

    note = "no nvidia-smi: install the NVIDIA driver utilities (bash: nvidia-smi: command not found)"
    backend = FakeBackend(gpu_frames=[[GpuView(-1, "", 0, 0, None, (), note)]])
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.fit_inputs.gpu_error, what="the GPU problem")
        await press_until(pilot, "l", lambda: isinstance(app.screen, FitConfirmScreen), "the question")
        shown = str(app.screen.query_one("#fit-confirm-text").render())
        assert shown.startswith("The fit is not known yet (cannot size the GPU: pve: no nvidia-smi")
        await press_until(pilot, "y", lambda: backend.launched, "the launch")
        assert len(backend.launched) == 1
