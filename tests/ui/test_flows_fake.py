"""The app's flows against a scripted backend: what a user sees and what reaches the host."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static, TabbedContent

from sgtui.core.profiles import Profile, load_profile
from sgtui.ui.app import SgtuiApp
from sgtui.ui.panes.hosts import FleetPane
from sgtui.ui.panes.runs import RunsTable
from sgtui.ui.screens.gpu_detail import GpuDetailScreen
from sgtui.ui.screens.help import HelpScreen
from sgtui.ui.views import DiagnosisView, RunView, SuggestionView
from sgtui.ui.widgets.diagnosis import DiagnosisPanel
from sgtui.ui.widgets.fit_panel import FitPanel
from sgtui.ui.widgets.gpu_panel import GpuPanel
from sgtui.ui.widgets.log_view import LogView
from sgtui.ui.widgets.timeline import Timeline
from tests.ui.conftest import asking, launch_anyway, press_until, wait_for
from tests.ui.fakes import A6000_MIB, FakeBackend, gpus
from tests.ui.scripts import failing_log, ready_log

SIZE = (120, 40)


def make_app(backend: FakeBackend, profile: Profile) -> SgtuiApp:
    return SgtuiApp(backend, profile, theme="textual-dark")


async def launch_until(pilot: Pilot[Any], app: SgtuiApp, state: str) -> None:
    """Wait for the host, press `l`, and wait until the run is `state` ("ready" or "failed")."""
    await wait_for(pilot, lambda: app.host_states.get("pve") == "connected")
    await launch_anyway(pilot, app)
    await wait_for(pilot, lambda: app.run_state == state, what=state)


async def test_launch_follows_the_new_run_to_ready_with_the_timeline(profile: Profile) -> None:
    backend = FakeBackend(launch_logs=[ready_log()], hold_tail=True)  # the server keeps running
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.fit_report is not None, what="the fit before launching")
        await launch_anyway(pilot, app)
        await wait_for(pilot, lambda: app.run_state == "ready", what="ready")
        assert backend.launched[0].sglang["--tp-size"] == 2
        view = app.query_one(Timeline).view
        assert view.phase == "ready"
        assert all(m.done for m in view.milestones)
        report = app.fit_report
        assert report is not None and report["max_total_num_tokens"] < 0  # 0.5.9 predicts the failure
        predicted = f"none ({-report['kv_pool_gib']:.2f} GiB short)"  # never a negative token count
        assert ("KV tokens", predicted, "248,120") in view.comparisons
        marks = [label for _, label in app.history.marks]
        assert marks.count("ready") == 1, marks  # one chart line: the milestone and the outcome are one
        assert app.query_one(LogView).line_count == len(ready_log())
        assert app.query_one(TabbedContent).active == "log"


async def test_a_failure_shows_its_diagnosis_and_a_applies_the_suggested_flag(profile: Profile) -> None:
    backend = FakeBackend(launch_logs=[failing_log()])
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        await launch_until(pilot, app, "failed")
        panel = app.query_one(DiagnosisPanel)
        assert panel.display
        assert "Not enough GPU memory" in panel.diagnoses[0].title
        suggestion = panel.first_suggestion
        assert suggestion is not None and suggestion.applicable
        assert app.query_one(Timeline).view.error.startswith("RuntimeError: Not enough memory")
        await pilot.press("a")
        await wait_for(pilot, lambda: suggestion.flag in app.form.values(), what="applied flag")
        assert str(app.form.values()[suggestion.flag]) == str(suggestion.value)
        assert app.profile.sglang[suggestion.flag] == app.form.values()[suggestion.flag]


async def test_restart_asks_first_waits_for_the_gpus_then_launches_into_a_new_log(profile: Profile) -> None:
    backend = FakeBackend(launch_logs=[ready_log(), ready_log()], hold_tail=True)
    backend.gpu_wait_lines = ["waiting for GPUs 0, 1 to be free: sglang::scheduler[4242] 31000 MiB"]
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        await launch_until(pilot, app, "ready")
        first = app.current
        await launch_anyway(pilot, app, "r")
        await wait_for(pilot, lambda: asking(app), what="confirmation")
        assert backend.stopped == []
        await pilot.press("y")
        await wait_for(
            pilot, lambda: app.current is not None and app.current.run_id == "run-2", what="second run"
        )
        assert backend.stopped == ["run-1"]
        await wait_for(pilot, lambda: app.run_state == "ready")
        assert first is not None and first.log_path != app.current.log_path
        runs = app.query_one(RunsTable)
        await wait_for(pilot, lambda: [r.run_id for r in runs.runs] == ["run-1", "run-2"])


async def test_declining_the_stop_question_stops_nothing(profile: Profile) -> None:
    backend = FakeBackend(launch_logs=[ready_log()], hold_tail=True)
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        await launch_until(pilot, app, "ready")
        await pilot.press("s")
        await wait_for(pilot, lambda: asking(app))
        await pilot.press("n")
        await pilot.pause(0.1)
        assert backend.stopped == []
        await pilot.press("s", "y")
        await wait_for(pilot, lambda: backend.stopped == ["run-1"], what="stop")
        await wait_for(pilot, lambda: app.run_state == "stopped")


async def test_editing_a_flag_updates_the_fit(profile: Profile) -> None:
    app = make_app(FakeBackend(), profile)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.query_one(FitPanel).report is not None, what="first fit")
        assert app.fit_report is not None and app.fit_report["context_length"] == 32768
        await pilot.press("2")
        box = app.form.field("--context-length").control  # type: ignore[union-attr]
        assert isinstance(box, Input)
        box.focus()
        box.value = "8192"
        await wait_for(pilot, lambda: (app.fit_report or {}).get("context_length") == 8192, what="refit")


async def test_a_bad_flag_value_is_shown_at_the_flag_and_blocks_the_launch(profile: Profile) -> None:
    backend = FakeBackend(launch_logs=[ready_log()])
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.host_states.get("pve") == "connected")
        field = app.form.field("--mem-fraction-static")
        assert field is not None and isinstance(field.control, Input)
        field.control.value = "lots"
        await pilot.pause(0.05)
        assert field.error.startswith("--mem-fraction-static:") and "lots" in field.error
        assert field.has_class("-invalid")
        app.query_one(LogView).focus()
        await press_until(pilot, "l", lambda: app.query_one(TabbedContent).active == "flags", "the flags tab")
        assert backend.launched == []
        assert any("--mem-fraction-static" in n.message for n in app._notifications)


async def test_a_lost_connection_is_shown_and_its_recovery_too(profile: Profile) -> None:
    backend = FakeBackend()
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.host_states.get("pve") == "connected")
        backend.push_state("lost", "connection reset")
        await wait_for(pilot, lambda: app.host_states["pve"] == "lost")
        assert "lost" in str(app.query_one("#status").render())
        assert app.query_one("#status").has_class("-lost")
        assert app.query_one(FleetPane).hosts["pve"].state == "lost"
        backend.push_state("connected")
        await wait_for(pilot, lambda: app.host_states["pve"] == "connected")
        assert not app.query_one("#status").has_class("-lost")
        assert any("reconnected" in n.message for n in app._notifications)


async def test_a_running_run_is_reattached_after_a_restart_of_sgtui(profile: Profile) -> None:
    alive = RunView("run-7", "pve", "lxc 129", "qwen36-27b-2xa6000", "running", "/var/tmp/r7/server.log")
    backend = FakeBackend(existing_runs=[alive], existing_logs={"run-7": ready_log()[:6]}, hold_tail=True)
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            pilot, lambda: app.current is not None and app.current.run_id == "run-7", what="reattach"
        )
        await wait_for(pilot, lambda: app.query_one(LogView).line_count == 6)
        assert backend.launched == []


async def test_an_old_run_log_can_be_opened_from_the_runs_tab(profile: Profile) -> None:
    old = RunView("run-3", "pve", "lxc 129", "qwen36-27b-2xa6000", "failed", "/var/tmp/r3/server.log")
    backend = FakeBackend(existing_runs=[old], existing_logs={"run-3": failing_log()})
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.query_one(RunsTable).runs == [old])
        assert app.current is None
        await pilot.press("4")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.run_state == "failed", what="old run's outcome")
        assert app.query_one(DiagnosisPanel).diagnoses


async def test_the_log_filter_and_the_jump_to_the_first_error(profile: Profile) -> None:
    backend = FakeBackend(launch_logs=[failing_log()])
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        await launch_until(pilot, app, "failed")
        log = app.query_one(LogView)
        await pilot.press("slash")
        assert isinstance(app.focused, Input) and app.focused.id == "log-search"
        await pilot.press(*"sigquit")
        await wait_for(pilot, lambda: log.line_count == 1)
        assert "sigquit" in log.lines[0]
        await pilot.press("escape")
        await wait_for(pilot, lambda: log.line_count == len(failing_log()))
        await pilot.press("x")
        assert not log.following
        first = log.first_error_index()
        assert first is not None and "Traceback" in log.lines[first]
        await pilot.press("f")
        assert log.following


async def test_hosts_show_their_state_and_containers_and_filter_as_you_type(profile: Profile) -> None:
    app = make_app(FakeBackend(), profile)
    async with app.run_test(size=SIZE) as pilot:
        picker = app.query_one(FleetPane)
        await wait_for(pilot, lambda: app.fleet.host("pve").containers, what="containers")
        await pilot.press("1")
        labels = [str(n.label) for n in picker.tree.root.children]
        assert labels[0].startswith("● pve  connected")
        assert str(picker.tree.root.children[0].children[0].label).startswith("lxc 129 sglang running")
        picker.query_one("#host-filter", Input).value = "docker"
        await pilot.pause(0.05)
        assert [str(n.label).split()[1] for n in picker.tree.root.children] == ["pve"]
        assert [str(c.label) for c in picker.tree.root.children[0].children] == ["docker vllm exited"]


async def test_every_host_connects_at_start_and_a_failing_one_says_why_in_its_row(profile: Profile) -> None:
    app = make_app(FakeBackend(), profile)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.host_states.get("gpu2") == "failed", what="gpu2's failure")
        await wait_for(pilot, lambda: app.fleet.host("pve").gpus, what="pve's GPUs")
        picker = app.query_one(FleetPane)
        picker.refresh_fleet()
        rows = {n.data.host: n.label.plain for n in picker.tree.root.children if n.data is not None}
        assert rows["gpu2"].startswith("✗ gpu2") and rows["gpu2"].endswith("no route to host")
        assert "GPU 0/2" in rows["pve"] and "1.0/96 GiB" in rows["pve"]  # two A6000s, 512 MiB used each
        assert app.host_states["pve"] == "connected"  # the failing host held nothing up


async def test_the_gpu_panel_draws_each_gpu_on_its_fixed_scale_with_its_holders(profile: Profile) -> None:
    backend = FakeBackend(gpu_frames=[gpus((512, 512)), gpus((31000, 30000), holder="x")])
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        panel = app.query_one(GpuPanel)
        await wait_for(pilot, lambda: len(panel.latest) == 2 and panel.latest[0].used_mib == 31000)
        spark = app.query_one("#gpu-spark-0")
        shares = [v / spark.total for v in spark.values[-2:]]  # type: ignore[attr-defined]
        assert shares == pytest.approx([512 / A6000_MIB, 31000 / A6000_MIB])  # on the card's fixed scale
        assert "sglang::scheduler[4242]@lxc 129" in str(app.query_one("#gpu-holders").render())
        await pilot.press("g")
        assert isinstance(app.screen, GpuDetailScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, GpuDetailScreen)


async def test_help_lists_the_keys_from_the_bindings(profile: Profile) -> None:
    app = make_app(FakeBackend(), profile)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = dict(app.screen.rows)
        for key in ("l", "s", "r", "e", "/", "g", "p", "?", "q"):
            assert key in keys
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_profiles_can_be_saved_and_duplicated_into_the_config_dir(
    profile: Profile, _config_dir: Path
) -> None:
    app = make_app(FakeBackend(), profile)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await pilot.press("ctrl+d")
        box = app.screen.query_one("#dup-name", Input)
        box.value = "mine"
        await pilot.press("enter")
        saved = _config_dir / "profiles" / "mine.yaml"
        await wait_for(pilot, saved.exists, what="saved copy")
        copy = load_profile(saved)
        assert copy.name == "mine" and copy.sglang == profile.sglang


async def test_quitting_leaves_the_run_running(profile: Profile) -> None:
    backend = FakeBackend(launch_logs=[ready_log()], hold_tail=True)
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        await launch_until(pilot, app, "ready")
        await pilot.press("q")
    assert backend.stopped == []
    assert backend.closed


async def test_any_flag_can_be_added_by_name_and_a_wrong_name_is_explained(profile: Profile) -> None:
    app = make_app(FakeBackend(), profile)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        adder = app.form.query_one("#add-flag", Input)
        adder.focus()
        adder.value = "--mamba-ssm-dtype bfloat16"
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: app.form.values().get("--mamba-ssm-dtype") == "bfloat16", what="new field"
        )
        adder.value = "--max-runing-requests 8"
        await pilot.press("enter")
        await pilot.pause(0.05)
        assert any("--max-runing-requests is not an SGLang flag" in n.message for n in app._notifications)
        assert "--max-runing-requests" not in app.form.values()


async def test_the_command_palette_runs_the_apps_actions_by_name(profile: Profile) -> None:
    app = make_app(FakeBackend(), profile)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"GPU detail")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, GpuDetailScreen), what="the GPU screen")


async def test_keys_can_be_remapped_by_binding_id_in_keys_yaml(profile: Profile, _config_dir: Path) -> None:
    _config_dir.mkdir(parents=True, exist_ok=True)
    (_config_dir / "keys.yaml").write_text("gpus: G\n")
    app = make_app(FakeBackend(), profile)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g")
        assert not isinstance(app.screen, GpuDetailScreen)
        await pilot.press("G")
        assert isinstance(app.screen, GpuDetailScreen)


def test_a_keys_file_with_unknown_ids_names_each_line(tmp_path: Path) -> None:
    import pytest

    from sgtui.core.errors import UserError
    from sgtui.ui.keymap import load_keymap

    path = tmp_path / "keys.yaml"
    path.write_text("launch: L\nlaunchh: X\nquit: ''\n")
    with pytest.raises(UserError) as err:
        load_keymap(path, ["launch", "quit"])
    assert str(err.value).splitlines() == [
        f"{path}:2: 'launchh' is not a binding id (known: launch, quit)",
        f"{path}:3: quit: give a key such as `L` or `ctrl+l` (several: `L,f5`)",
    ]


async def test_the_flags_follow_the_sglang_version_installed_on_the_target(profile: Profile) -> None:
    profile.sglang["--cuda-graph-max-bs"] = 32  # known to 0.5.9, gone in 0.5.23
    app = make_app(FakeBackend(version="0.5.23"), profile)
    async with app.run_test(size=SIZE) as pilot:
        assert app.version == "0.5.9"  # the profile's word until the host answers
        await wait_for(pilot, lambda: app.version == "0.5.23", what="the host's version")
        await wait_for(pilot, lambda: not app.form.info_for("--cuda-graph-max-bs").known, what="rebuilt form")
        assert app.catalogue["--attn-dp-size"].known
        field = app.form.field("--cuda-graph-max-bs")
        assert field is not None and "not known to the target's SGLang version" in str(field.note.render())


async def test_a_gpu_problem_is_named_instead_of_showing_zeros(profile: Profile) -> None:
    from sgtui.ui.views import GpuView

    problem = [GpuView(-1, "", 0, 0, None, (), "no driver: NVIDIA-SMI has failed")]
    app = make_app(FakeBackend(gpu_frames=[problem]), profile)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.query_one(GpuPanel).latest == problem, what="the problem sample")
        await pilot.pause(0.05)
        line = app.query_one("#gpu-empty")
        assert line.display and "no driver: NVIDIA-SMI has failed" in str(line.render())
        assert not app.query("#gpu-row--1")  # one clear line, not a row of zeros
        assert not app.query_one("#gpu-holders").display  # and no "no processes hold GPU memory"
        assert app.fit_inputs.gpu_mib is None


async def test_a_password_is_asked_in_a_modal_and_handed_back_not_stored(profile: Profile) -> None:
    from sgtui.ui.screens.password import PasswordScreen

    backend = FakeBackend()
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        assert backend.password_prompt == app.ask_password
        task = asyncio.ensure_future(backend.password_prompt("pve: root@10.0.0.5's password"))
        await wait_for(pilot, lambda: isinstance(app.screen, PasswordScreen), what="the password modal")
        await pilot.press(*"s3cret", "enter")
        assert await task == "s3cret"
        assert "s3cret" not in repr(app.profile)


async def test_opening_another_profile_replaces_the_form(profile: Profile) -> None:
    from textual.widgets import OptionList

    from tests.ui.conftest import REPO

    app = make_app(FakeBackend(), profile)
    async with app.run_test(size=SIZE) as pilot:
        await press_until(pilot, "p", lambda: app.screen.query(OptionList), "the profiles screen")
        options = app.screen.query_one(OptionList)
        wanted = str(REPO / "profiles" / "llama31-8b-h100.yaml")
        index = next(
            i for i in range(options.option_count) if str(options.get_option_at_index(i).prompt) == wanted
        )
        options.highlighted = index
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.profile.name == load_profile(wanted).name, what="the other profile")
        await wait_for(pilot, lambda: app.form.values() == load_profile(wanted).sglang, what="its flags")
        assert app.sub_title.split(" · ")[0] == app.profile.name  # then the flag table in use


async def test_a_restart_right_after_applying_a_fix_predicts_with_the_fix(profile: Profile) -> None:
    backend = FakeBackend(launch_logs=[failing_log(), ready_log()])
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.fit_report is not None, what="the fit")
        await launch_anyway(pilot, app)
        await wait_for(pilot, lambda: app.run_state == "failed")
        app.main.query_one(DiagnosisPanel).show(
            [DiagnosisView("Not enough memory", "", (SuggestionView("--max-running-requests", "8"),))]
        )
        await pilot.press("a")
        await launch_anyway(pilot, app, "r")  # faster than the fit panel's debounce
        await wait_for(pilot, lambda: app.run_state == "ready" and len(backend.launched) == 2, what="ready")
        compared = {label: predicted for label, predicted, _ in app.main.query_one(Timeline).view.comparisons}
        assert compared["max running req"] == "8"


async def test_the_welcome_lines_fit_the_log_at_80_columns_so_no_key_is_cut_off(profile: Profile) -> None:
    app = make_app(FakeBackend(), profile)
    async with app.run_test(size=(80, 24)) as pilot:
        log = app.query_one(LogView)

        def fits() -> bool:  # once laid out at 80 columns ("-narrow" applies a layout pass after mount)
            width = log.scrollable_content_region.width
            return len(log.lines) >= 5 and width > 0 and all(len(line) <= width for line in log.lines)

        await wait_for(pilot, fits, what="every welcome line within the log's width")


async def test_the_log_status_at_80_columns_keeps_the_end_of_the_log_path(profile: Profile) -> None:
    app = make_app(FakeBackend(launch_logs=[ready_log()]), profile)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.fit_report is not None, what="the fit before launching")
        await launch_anyway(pilot, app)
        await wait_for(pilot, lambda: app.run_state == "ready", what="ready")
        status = app.query_one("#log-status", Static)
        shown = str(status.render())
        assert shown.startswith("following · ") and shown.endswith("/run-1.log")
        assert len(shown) <= status.content_size.width


async def test_a_restart_of_a_live_run_is_not_refused_for_the_port_and_gpus_that_run_itself_holds(
    profile: Profile,
) -> None:
    """The target checks find the run's own port and GPUs taken; a restart stops that run first (and
    waits for its GPUs), so those two lines do not apply to it, while a fresh launch shows them."""
    from sgtui.core.preflight import Check
    from sgtui.ui.screens.fit_confirm import FitConfirmScreen

    backend = FakeBackend(launch_logs=[ready_log(), ready_log()], hold_tail=True)
    backend.checks = [
        Check("port", False, "port 30000 is already in use (Address already in use)"),
        Check("gpus", False, "GPU 0, 1 held by others: pid 4242 (root) sglang::scheduler"),
        Check("model_path", True, "/models/Qwen3.6-27B exists (config.json read)"),
    ]
    app = make_app(backend, profile)
    async with app.run_test(size=SIZE) as pilot:
        await launch_until(pilot, app, "ready")
        await press_until(pilot, "r", lambda: isinstance(app.screen, FitConfirmScreen), "the question")
        shown = str(app.screen.query_one("#fit-confirm-text").render())
        assert "model_path: ok" in shown
        assert "port:" not in shown and "gpus:" not in shown
