"""Small untruths on screen, each seen in tmux and fixed: a stop's last word that never left the log's
status line, a restarted run "stopped" in the header but "failed" in the runs tab, esc that did not clear
a kept search, a footer at 80x24 that lost `? help` and `q quit`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from sgtui.core.profiles import Profile
from sgtui.ui.app import SgtuiApp
from sgtui.ui.launcher import open_profile
from sgtui.ui.panes.runs import RunsTable
from sgtui.ui.views import HostView, RunView
from sgtui.ui.widgets.log_view import LogView
from tests.ui.conftest import asking, launch_anyway, wait_for
from tests.ui.fakes import FakeBackend
from tests.ui.scripts import failing_log, ready_log


def log_status(app: SgtuiApp) -> str:
    return str(app.query_one("#log-status", Static).render())


class StoppedFails(FakeBackend):
    """A SIGTERM'd server exits non-zero: once stopped, the host lists it as failed."""

    async def stop(self, run: RunView) -> None:
        await super().stop(run)
        self.existing_runs = [
            dataclasses.replace(r, state="failed") if r.run_id == run.run_id else r
            for r in self.existing_runs
        ]


async def test_after_a_restart_the_log_status_is_the_new_runs_and_the_old_run_reads_stopped_everywhere(
    profile: Profile,
) -> None:
    backend = StoppedFails(launch_logs=[ready_log(), ready_log()], hold_tail=True)
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.fit_report is not None, what="the fit")
        await launch_anyway(pilot, app)
        await wait_for(pilot, lambda: app.run_state == "ready", what="ready")
        await launch_anyway(pilot, app, "r")
        await wait_for(pilot, lambda: asking(app), what="the restart question")
        await pilot.press("y")
        await wait_for(pilot, lambda: app.current is not None and app.current.run_id == "run-2", what="run-2")
        await wait_for(pilot, lambda: log_status(app).startswith("following"), 8, "the view's own state")
        app.relist(app.deployment.host)
        table = app.main.query_one(RunsTable)
        await wait_for(
            pilot, lambda: [r.state for r in table.runs if r.run_id == "run-1"] == ["stopped"], what="stopped"
        )
        await pilot.press("q")


async def test_esc_in_the_log_clears_a_search_kept_with_enter(profile: Profile) -> None:
    backend = FakeBackend(launch_logs=[ready_log()], hold_tail=True)
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.fit_report is not None, what="the fit")
        await launch_anyway(pilot, app)
        await wait_for(pilot, lambda: app.run_state == "ready", what="ready")
        log = app.query_one(LogView)
        await pilot.press("slash", *"Load", "enter")
        await wait_for(pilot, lambda: log.store.search is not None and app.focused is log, what="kept search")
        await pilot.press("escape")
        await wait_for(pilot, lambda: log.store.search is None, 5, "esc clears it, as help says")
        await pilot.press("q")


async def test_at_80x24_after_a_failure_the_footer_keeps_help_and_quit(profile: Profile) -> None:
    app = SgtuiApp(FakeBackend(launch_logs=[failing_log()]), profile, theme="textual-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.fit_report is not None, what="the fit")
        await launch_anyway(pilot, app)
        await wait_for(pilot, lambda: app.run_state == "failed", what="failed")
        await pilot.pause(0.3)

        def shown() -> set[str]:
            keys = app.screen.query(FooterKey)
            return {str(k.action) for k in keys if k.region.width and k.region.right <= 80}

        await wait_for(pilot, lambda: {"help", "quit", "apply", "restart"} <= shown(), 5, "? help and q quit")
        await pilot.press("q")


async def test_a_followed_run_can_be_let_go_with_u_and_from_the_palette(profile: Profile) -> None:
    """Followed runs could never be dropped: `u` stops following the one in view (the next comes into
    view), the palette offers each followed run; the server is left running."""
    first = RunView("run-a", "pve", "lxc 129", "qwen", "running", "/l/a.log")
    second = RunView("run-b", "pve", "lxc 129", "qwen", "running", "/l/b.log")
    backend = FakeBackend(
        existing_runs=[first, second], existing_logs={"run-a": [], "run-b": []}, hold_tail=True
    )
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: len(app.followed) == 2, 10, "both reattached")
        shown = app.followed.in_view
        assert shown is not None
        app.log_pane.log.focus()
        await pilot.press("u")
        await wait_for(pilot, lambda: len(app.followed) == 1, 5, "one let go")
        assert shown.key not in app.followed and app.followed.in_view is not None
        assert any(
            n.message.startswith(f"stopped following {shown.key}; it keeps") for n in app._notifications
        )
        assert backend.stopped == []
        other = app.followed.in_view.key
        app.action_unfollow(other)  # what the palette's "stop following run ID" calls
        await pilot.pause()
        assert len(app.followed) == 0 and app.current is None
        await pilot.press("q")


class NoHosts(FakeBackend):
    def hosts(self) -> tuple[list[HostView], list[str]]:
        return [], []


async def test_an_empty_config_says_how_to_add_a_host_or_run_the_demo(_config_dir: Path) -> None:
    """A first start with nothing configured opened on a blank host ("Profile new for  › ...")."""
    profile, _ = open_profile(None)
    app = SgtuiApp(NoHosts(), profile, theme="textual-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: any("no hosts configured" in n.message for n in app._notifications))
        said = next(n.message for n in app._notifications if "no hosts configured" in n.message)
        assert str(_config_dir / "hosts.yaml") in said and "sgtui demo" in said
        lines = app.query_one(LogView).lines
        assert lines[0] == "No host yet. To add one:" and not any(" for  ›" in line for line in lines)
        await pilot.press("q")


def test_sgtui_profile_yaml_opens_the_app_on_it_and_typos_get_a_suggestion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sgtui import cli
    from sgtui.commands import tui

    opened: list[str] = []
    monkeypatch.setattr(tui, "run", lambda args: opened.append(args.profile) or 0)
    assert cli.main(["my-profile.yaml"]) == 0 and opened == ["my-profile.yaml"]
    assert cli.main(["launch", "p.yaml", "--wacth"]) == 2
    assert "unrecognised arguments: --wacth; did you mean --watch?" in capsys.readouterr().err
    assert cli.main(["runs", "--hots", "gpu1"]) == 2
    assert "did you mean --host?" in capsys.readouterr().err
    assert cli.main(["lanch", "p.yaml"]) == 2
    assert "unknown command 'lanch'; did you mean launch?" in capsys.readouterr().err
