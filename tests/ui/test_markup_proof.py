"""Text from outside (remote output, file contents, names, profile fields, exceptions, paths, run ids) is
shown as typed in every widget, dialog, table cell, title and notification: never parsed as markup, so
`[/]` cannot crash the app and `[rank0]` is not eaten."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widget import Widget

from sgtui.ui.panes.runs import RunsTable
from sgtui.ui.screens.confirm import ConfirmScreen
from sgtui.ui.screens.fit_confirm import FitConfirmScreen
from sgtui.ui.screens.help import HelpScreen
from sgtui.ui.screens.line import LineScreen
from sgtui.ui.screens.password import PasswordScreen
from sgtui.ui.screens.profiles import ProfilesScreen
from sgtui.ui.views import (
    ContainerView,
    DiagnosisView,
    GpuProcessView,
    GpuView,
    HostView,
    RunView,
    SuggestionView,
    TimelineView,
)
from sgtui.ui.widgets.diagnosis import DiagnosisPanel
from sgtui.ui.widgets.fit_panel import FitPanel
from sgtui.ui.widgets.gpu_panel import GpuPanel
from sgtui.ui.widgets.launch_form import FlagInfo, LaunchForm
from sgtui.ui.widgets.log_column import LogColumn
from sgtui.ui.widgets.timeline import Timeline

HOSTILE = ("[/]", "[/opt/x]", "[bold]b", "[@click=app.quit]q", "[link=https://e.x]l", "[rank0]")


def screen_text(app: App[Any]) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


class Host(App[Any]):
    def __init__(self, widget: Widget | None = None, screen: Screen[Any] | None = None) -> None:
        super().__init__()
        self.widget = widget
        self.modal = screen

    def compose(self) -> ComposeResult:
        if self.widget is not None:
            yield self.widget

    def on_mount(self) -> None:
        if self.modal is not None:
            self.push_screen(self.modal)


async def shows(app: Host, *texts: str, size: tuple[int, int] = (160, 50)) -> None:
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        if app.widget is not None and hasattr(app, "feed"):
            app.feed()  # type: ignore[attr-defined]
            await pilot.pause()
        shown = screen_text(app)
        for text in texts:
            assert text in shown, f"{text!r} not shown as typed"
        assert app.is_running  # `[@click=app.quit]` did not quit it


@pytest.mark.parametrize("bad", HOSTILE)
async def test_dialogs_show_outside_text_as_typed(bad: str) -> None:
    await shows(Host(screen=ConfirmScreen(f"Stop {bad}?", f"{bad}: TERM to its group")), f"Stop {bad}?")
    report = {"verdict": "fails", "error": f"RuntimeError {bad}", "warnings": []}
    await shows(Host(screen=FitConfirmScreen(report)), f"RuntimeError {bad}")
    await shows(Host(screen=LineScreen(f"line {bad}", 3)), f"line {bad}")
    await shows(Host(screen=PasswordScreen(f"{bad}'s password")), f"{bad}'s password")
    path = Path(f"/p/{bad}.yaml")
    await shows(Host(screen=ProfilesScreen([path], bad)), bad, str(path))
    await shows(Host(screen=HelpScreen([(bad, f"does {bad}")])), f"does {bad}")


@pytest.mark.parametrize("bad", HOSTILE)
async def test_widgets_show_outside_text_as_typed(bad: str) -> None:
    from sgtui.ui.panes.hosts import FleetPane

    class Feeding(Host):
        def feed(self) -> None:
            w = self.widget
            if isinstance(w, RunsTable):
                run = RunView(f"run{bad}", f"h{bad}", f"lxc {bad}", f"p{bad}", "ready", f"/logs/{bad}")
                w.show([run], {})
            elif isinstance(w, FleetPane):
                w.refresh_fleet()
            elif isinstance(w, GpuPanel):
                w.show([GpuView(0, f"G{bad}", 1, 2, 0, (GpuProcessView(1, f"p{bad}", 1),))])
            elif isinstance(w, DiagnosisPanel):
                w.show([DiagnosisView(f"t{bad}", f"d{bad}", (SuggestionView("--x", 1, f"w{bad}"),))])
            elif isinstance(w, Timeline):
                w.show(TimelineView(phase="failed", error=f"e{bad}"))
            elif isinstance(w, FitPanel):
                w.show({"verdict": "fails", "error": f"e{bad}", "warnings": [{"message": f"m{bad}"}]})
            elif isinstance(w, LogColumn):
                w.view.append([f"l{bad}"])
                w.set_path(f"/logs/{bad}/server.log")

    from sgtui.ui.session import FleetState

    fleet = FleetState()
    fleet.load([HostView(f"h{bad}", address=f"a{bad}")])
    host = fleet.host(f"h{bad}")
    host.set_state("failed", f"d{bad}")
    host.containers, host.containers_error = [ContainerView("docker", f"c{bad}")], f"e{bad}"
    fleet_pane = FleetPane(fleet)
    fleet_pane.unfolded.add(f"h{bad}")
    form = LaunchForm({}, {f"--x{bad}": f"v{bad}"})
    for widget, texts in (
        (RunsTable(), (f"run{bad}", f"h{bad}", f"lxc {bad}", f"p{bad}")),
        (fleet_pane, (f"h{bad}", f"d{bad}", f"c{bad}", f"e{bad}")),
        (GpuPanel(), (f"p{bad}",)),
        (DiagnosisPanel(), (f"t{bad}", f"d{bad}")),
        (Timeline(), (f"e{bad}",)),
        (FitPanel(), (f"e{bad}", f"m{bad}")),
        (LogColumn(), (f"l{bad}", f"/logs/{bad}/server.log")),
        (form, (f"--x{bad}",)),
    ):
        await shows(Feeding(widget), *texts)


def test_the_flag_info_of_an_unknown_flag_keeps_its_name() -> None:
    assert FlagInfo("--x[/]").name == "--x[/]"
