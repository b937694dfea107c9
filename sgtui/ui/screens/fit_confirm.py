"""`l`/`r` on a launch the fit says FAILS: ask first, quoting the predicted error and the best fix.

Answers: "fix" (apply the best fix, then launch), "launch" (as it is), None (no: the default, and Escape).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from sgtui.core.fit.report import first_offered


def best_fix(report: dict[str, Any] | None) -> tuple[str, Any, str] | None:
    """(flag, value, why) of the fit's first fix (`FitReport.first_fix()`: the first ranked fix that
    fits, else the first tight one); a report without the ranking: its first concrete suggestion."""
    fixes = [f for f in (report or {}).get("fixes") or [] if isinstance(f.get("flag"), str)]
    fix = first_offered(fixes, lambda f: f.get("verdict"))
    if fix is not None:
        return fix["flag"], fix.get("value"), str(fix.get("why", ""))
    if fixes:
        return None
    for w in (report or {}).get("warnings") or []:
        flag, value = w.get("flag"), w.get("suggested_value")
        if isinstance(flag, str) and flag.startswith("--") and value is not None:
            return flag, value, str(w.get("message", ""))
    return None


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


def confirm_text(report: dict[str, Any] | None, what: str) -> Text:
    text = Text()
    text.append(f"The memory fit says this {what} fails:\n", style="bold")
    text.append(predicted_error(report), style="red")
    fix = best_fix(report)
    if fix is not None:
        flag, value, why = fix
        text.append("\n\nBest fix: ")
        text.append(as_flag(flag, value), style="bold cyan")
        if why:
            text.append(f"\n{why}", style="dim")
    else:
        text.append("\n\nThe fit has no single-flag fix: see the fit panel (2).", style="dim")
    return text


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
    FitConfirmScreen Horizontal { height: auto; margin-top: 1; align-horizontal: right; }
    FitConfirmScreen Button { margin-left: 1; }
    """

    def __init__(self, report: dict[str, Any] | None, what: str = "launch") -> None:
        super().__init__()
        self.report = report
        self.what = what
        self.fix = best_fix(report)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(confirm_text(self.report, self.what), id="fit-confirm-text")
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
