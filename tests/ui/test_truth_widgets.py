"""Widgets that tell the truth: readable colours in every theme, named GPU problems, stale data marked, and
a question before launching into a predicted failure."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.widget import Widget

from sgtui.ui.screens.fit_confirm import FitConfirmScreen, best_fix, confirm_text, tight_warning
from sgtui.ui.screens.gpu_detail import GpuChart
from sgtui.ui.session.gpu_history import GpuHistory
from sgtui.ui.views import GpuView
from sgtui.ui.widgets.gpu_panel import GpuPanel, usage_text
from tests.ui.conftest import wait_for

FAILS: dict[str, Any] = {
    "verdict": "fails",
    "error": "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    "warnings": [
        {
            "code": "x",
            "message": "the KV pool is 3.1 GiB short",
            "flag": "--mem-fraction-static",
            "suggested_value": 0.9,
        },
    ],
}


class One(App[Any]):
    def __init__(self, widget: Widget, theme: str = "textual-dark") -> None:
        super().__init__()
        self.widget = widget
        self.theme = theme

    def compose(self) -> ComposeResult:
        yield self.widget


def colours(widget: Widget) -> set[tuple[str, str]]:
    out = set()
    for strip in widget.render_lines(widget.region.reset_offset):
        for seg in strip:
            if seg.text.strip() and seg.style is not None:
                out.add(
                    (
                        str(seg.style.color and seg.style.color.name),
                        str(seg.style.bgcolor and seg.style.bgcolor.name),
                    )
                )
    return out


async def test_the_chart_axes_and_labels_are_visible_in_the_ansi_theme() -> None:
    """tmux without truecolor: textual-plotext's own theme drew them black on black."""
    history = GpuHistory()
    for t in range(10):
        history.add(float(t), [GpuView(0, "A6000", 1000 * t, 49140, 3)])
    app = One(GpuChart(history, None), theme="ansi-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        seen = colours(app.widget)
        assert ("#000000", "#000000") not in seen
        assert ("default", "default") in seen  # the terminal's own foreground on its own background


def test_utilisation_is_labelled() -> None:
    assert "util  37%" in usage_text(GpuView(0, "A6000", 1024, 49140, 37)).plain


async def test_a_host_without_nvidia_smi_gets_one_named_line_and_no_holders_line() -> None:
    panel = GpuPanel()
    app = One(panel)
    async with app.run_test(size=(100, 10)) as pilot:
        note = "no nvidia-smi: install the NVIDIA driver utilities on that host (bash: not found)"
        panel.show([GpuView(-1, "", 0, 0, None, (), note)])
        await pilot.pause()
        line = app.query_one("#gpu-empty")
        assert line.display and "no nvidia-smi: install" in str(line.render())
        assert not app.query_one("#gpu-holders").display
        assert not app.query("GpuRow")


async def test_stale_gpu_numbers_say_how_old_they_are_and_recover() -> None:
    panel = GpuPanel()
    app = One(panel)
    async with app.run_test(size=(100, 10)) as pilot:
        panel.show([GpuView(0, "NVIDIA RTX A6000", 1024, 49140, 3)])
        panel.set_age(35.0, stale=True)
        await pilot.pause()
        assert "stale: last sample 35 s ago" in str(app.query_one("#gpu-holders").render())
        assert panel.has_class("-stale")
        panel.show([GpuView(0, "NVIDIA RTX A6000", 1024, 49140, 3)])
        panel.set_age(0.5, stale=False)
        await pilot.pause()
        assert "stale" not in str(app.query_one("#gpu-holders").render())


def test_the_fails_question_quotes_the_error_and_the_best_fix() -> None:
    text = confirm_text(FAILS, "launch").plain
    assert "Not enough memory" in text
    assert "--mem-fraction-static 0.9" in text
    assert best_fix(FAILS) == ("--mem-fraction-static", 0.9, "the KV pool is 3.1 GiB short")
    assert best_fix({"verdict": "fails", "warnings": [{"flag": "--x", "suggested_value": None}]}) is None


def test_tight_gets_one_line_and_fits_none() -> None:
    assert "tight" in (tight_warning({"verdict": "tight", "slack_gib": 0.4}) or "")
    assert tight_warning({"verdict": "fits"}) is None and tight_warning(FAILS) is None


class Asking(App[Any]):
    def __init__(self) -> None:
        super().__init__()
        self.answers: list[str | None] = []

    def on_mount(self) -> None:
        self.push_screen(FitConfirmScreen(FAILS), self.answers.append)


async def test_the_fails_question_defaults_to_no_and_escape_launches_nothing() -> None:
    app = Asking()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "no"
        await pilot.press("escape")
        assert app.answers == [None]
    app = Asking()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")  # on the focused No
        assert app.answers == [None]


async def test_the_fails_question_offers_apply_the_fix_and_launch() -> None:
    app = Asking()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("f")
        assert app.answers == ["fix"]


# ---- the keyboard model ------------------------------------------------------------------------------------
def form() -> Any:
    from sgtui.ui.widgets.launch_form import FlagInfo, LaunchForm

    catalogue = {
        "--model-path": FlagInfo("--model-path", "model"),
        "--tp-size": FlagInfo("--tp-size", "parallelism", "int"),
        "--mem-fraction-static": FlagInfo("--mem-fraction-static", "memory", "float"),
    }
    values = {"--model-path": "/models/qwen", "--tp-size": 2, "--mem-fraction-static": 0.85}
    return LaunchForm(catalogue, values, id="form")


async def test_arrows_and_tab_move_between_fields_and_esc_then_tab_continues_from_there() -> None:
    app = One(form())
    async with app.run_test(size=(100, 30)) as pilot:
        fields = app.widget.controls()
        fields[0].focus()
        await pilot.press("down")
        assert app.focused is fields[1]
        await pilot.press("tab")
        assert app.focused is fields[2]
        await pilot.press("up")
        assert app.focused is fields[1]
        app.widget.focus()  # what esc does: out of the field, so single-letter keys act again
        await pilot.press("tab")
        assert app.focused is fields[2]  # not back to the first field


async def test_the_form_knows_when_its_edits_are_unsaved() -> None:
    app = One(form())
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert not app.widget.dirty
        app.widget.controls()[1].focus()
        await pilot.press("backspace", "4")
        assert app.widget.dirty
        app.widget.mark_saved()
        assert not app.widget.dirty


async def test_hints_arriving_for_a_form_already_replaced_are_dropped_not_a_crash() -> None:
    """A fit result can land after a version change removed its form; the new form's own fit brings hints."""
    from sgtui.ui.widgets.launch_form import LaunchForm

    full = form()
    app = One(LaunchForm(full.catalogue, {"--model-path": "/models/qwen"}, id="form"))
    async with app.run_test(size=(100, 30)) as pilot:
        stale = app.widget
        await stale.remove()
        await pilot.pause()
        await stale.set_hints({"--mem-fraction-static": ("lower it", 0.8)})  # a field it would have to add
        assert stale.field("--mem-fraction-static") is None


def test_a_lost_host_keeps_its_last_gpu_row_greyed() -> None:
    from sgtui.ui.panes.hosts import gpu_text, host_label
    from sgtui.ui.session import FleetState

    fleet = FleetState()
    host = fleet.host("pve")
    host.set_state("connected")
    host.set_gpus([GpuView(0, "NVIDIA RTX A6000", 24_000, 49_140, 3)])
    summary = gpu_text(host).plain
    assert summary and summary in host_label(host).plain
    host.set_state("lost", "keepalive timeout")
    lost = host_label(host)
    assert "lost" in lost.plain and summary in lost.plain  # still there, as the last value known
    greyed = [span for span in lost.spans if "strike" in str(span.style)]
    assert greyed, "the last known GPU values are shown struck through and dim"


async def test_a_stop_question_with_a_long_command_line_keeps_its_buttons_on_an_80x24_screen() -> None:
    """A server's whole argv in the preview scrolls inside the dialog; the question and Yes/No stay on
    screen, No focused."""
    from sgtui.ui.screens.confirm import ConfirmScreen

    argv = " ".join(f"--flag-{i} value-{i}" for i in range(120))

    async def preview() -> str:
        leader = f"python -m sglang.launch_server {argv}"
        return f"process group 4242: 3 process(es)\n  leader: {leader}\n  recorded: {argv}"

    class Stopping(App[Any]):
        def __init__(self) -> None:
            super().__init__()
            self.answers: list[bool | None] = []

        def on_mount(self) -> None:
            self.push_screen(
                ConfirmScreen("Stop run-1 on sim?", "TERM to its group", preview), self.answers.append
            )

    app = Stopping()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "leader" in str(app.screen.query_one("#confirm-preview").render()))
        await pilot.pause()
        screen = app.screen.region
        assert screen.contains_region(app.screen.query_one("Vertical").region), "the dialog is cut"
        question = app.screen.query_one("#confirm-question").region
        assert question.height >= 1 and screen.contains_region(question), (
            f"the question is off screen: {question}"
        )
        for button in app.screen.query("Button"):
            seen = button.region  # the part on screen (empty when it is pushed off the bottom)
            assert seen.height == 3 and screen.contains_region(seen), f"{button.id} is off screen: {seen}"
        assert app.focused is not None and app.focused.id == "no"
        await pilot.press("enter")
        assert app.answers == [False]
