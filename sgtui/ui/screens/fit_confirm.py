"""`l`/`r` on a launch the preflight stops (`launch_gate.py`): ask first, No focused.

Asked when the fit says FAILS (quoting the predicted error and the fix offered first, `FitReport.first_fix`),
when the fit is not known yet ("the fit is not known yet (why): launch anyway?"), or when a blocking target
check failed; each target check is a line under the question.

Answers: "fix" (apply the best fix, then launch), "launch" (as it is), None (no: the default, and Escape).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from sgtui.core.preflight import Preflight, check_lines, first_fix_json, from_fit_json


def best_fix(report: dict[str, Any] | None) -> tuple[str, Any, str] | None:
    """(flag, value, why) of the fix offered first: `FitReport.first_fix()` of the report (the one
    ranking: the first fix that fits, else a tight one), or None when it has none."""
    fix = first_fix_json(report)
    return (fix.flag, fix.value, fix.why) if fix is not None else None


def fix_label(report: dict[str, Any] | None) -> str:
    """What the offered fix is: one whose own fit fits, a tight one, or (before the ranking) a suggestion."""
    fix = first_fix_json(report)
    verdict = fix.verdict if fix is not None else ""
    return {"fits": "First fix that fits", "tight": "First fix (tight)"}.get(verdict, "Suggested fix")


def as_flag(flag: str, value: Any) -> str:
    return flag if value is True else f"{flag} {value}"


def predicted_error(report: dict[str, Any] | None) -> str:
    return str((report or {}).get("error") or "the fit predicts this launch fails")


def tight_warning(report: dict[str, Any] | None) -> str | None:
    """The one line a "tight" launch gets before it starts; None for any other verdict."""
    if (report or {}).get("verdict") != "tight":
        return None
    slack = (report or {}).get("slack_gib")
    room = f" ({slack:.2f} GiB of slack)" if isinstance(slack, int | float) else ""
    return f"the fit says tight{room}: it may fail under load; launching anyway"


def confirm_text(report: dict[str, Any] | None, what: str, pre: Preflight | None = None) -> Text:
    """The question: why it is asked (the fit fails, is not known yet, or a target check failed), the
    predicted error and the fix offered first, then one line per target check."""
    pre = pre or from_fit_json(report, [], None)
    text = Text()
    if pre.verdict == "unknown":
        text.append(f"The fit is not known yet ({pre.why_unknown}): {what} anyway?", style="bold")
    elif pre.verdict == "fails":
        text.append(f"The memory fit says this {what} fails:\n", style="bold")
        text.append(predicted_error(report), style="red")
        fix = best_fix(report)
        if fix is not None:
            flag, value, why = fix
            text.append(f"\n\n{fix_label(report)}: ")
            text.append(as_flag(flag, value), style="bold cyan")
            if why:
                text.append(f"\n{why}", style="dim")
        else:
            text.append("\n\nThe fit has no single-flag fix: see the fit panel (2).", style="dim")
    else:
        text.append(f"A check on the target failed: {what} anyway?", style="bold")
    lines = [(c, line) for c, line in zip(_target(pre), check_lines(pre), strict=True)]
    if lines:
        text.append("\n\nOn the target:")
        for check, line in lines:
            style = "green" if check.ok else ("red" if check.blocking else "yellow")
            text.append(f"\n{line}", style=style)
    return text


def _target(pre: Preflight) -> list[Any]:
    return [c for c in pre.checks if c.name != "fit"]  # check_lines leaves the fit to the headline


class FitConfirmScreen(ModalScreen[str | None]):
    BINDINGS = [
        Binding("f", "answer('fix')", "apply the fix and launch", id="fit-confirm-fix"),
        Binding("y", "answer('launch')", "launch anyway", id="fit-confirm-yes"),
        Binding("n,escape", "answer(None)", "no", id="fit-confirm-no"),
    ]
    DEFAULT_CSS = """
    FitConfirmScreen { align: center middle; }
    FitConfirmScreen > Vertical {
        width: 72; max-width: 95%; height: auto; max-height: 90%; border: thick $error; background: $surface;
        padding: 1 2;
    }
    FitConfirmScreen VerticalScroll { height: auto; max-height: 14; }
    FitConfirmScreen Horizontal { height: auto; margin-top: 1; align-horizontal: right; }
    FitConfirmScreen Button { margin-left: 1; }
    """

    def __init__(
        self, report: dict[str, Any] | None, what: str = "launch", preflight: Preflight | None = None
    ) -> None:
        super().__init__()
        self.report = report
        self.what = what
        self.preflight = preflight or from_fit_json(report, [], None)
        self.fix = best_fix(report) if self.preflight.verdict == "fails" else None

    def compose(self) -> ComposeResult:
        with Vertical():
            with VerticalScroll():
                yield Static(confirm_text(self.report, self.what, self.preflight), id="fit-confirm-text")
            with Horizontal():
                if self.fix is not None:
                    yield Button("Apply fix, launch (f)", variant="primary", id="fix")
                yield Button("Launch anyway (y)", variant="error", id="launch")
                yield Button("No (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None if event.button.id == "no" else event.button.id)

    def action_answer(self, answer: str | None) -> None:
        if answer == "fix" and self.fix is None:
            return
        self.dismiss(answer)
