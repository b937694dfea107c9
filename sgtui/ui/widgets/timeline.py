"""The startup timeline beside the log: phase, elapsed, milestones, memory numbers, predicted vs actual."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from sgtui.ui.views import TimelineView

PHASE_STYLE = {"ready": "bold green", "failed": "bold red", "stopped": "yellow", "dead": "red"}


def elapsed(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def timeline_text(view: TimelineView) -> Text:
    text = Text()
    text.append("Startup ", style="bold")
    text.append(view.phase, style=PHASE_STYLE.get(view.phase, "bold cyan"))
    if view.progress_pct is not None and view.phase not in ("ready", "failed"):
        text.append(f" {view.progress_pct}%")
    if view.elapsed_s is not None:
        text.append(f" · {elapsed(view.elapsed_s)}", style="dim")
    text.append("\n")
    for m in view.milestones:
        mark, style = ("✓", "green") if m.done else ("·", "dim")
        text.append(f"{mark} ", style=style)
        text.append(f"{m.label:<17}", style="" if m.done else "dim")
        text.append(f"{elapsed(m.elapsed_s):>6}\n", style="dim")
    if view.facts:
        text.append("\n")
        for label, value in view.facts:
            text.append(f"{label:<18}", style="dim")
            text.append(f"{value}\n")
    for label, predicted, actual in view.comparisons:
        text.append(f"{label} ", style="dim")
        text.append("predicted ")
        text.append(predicted, style="cyan")
        text.append(" / actual ")
        text.append(actual, style="bold")
        text.append("\n")
    if view.error:
        text.append("\n")
        text.append(view.error, style="bold red")
    return text


class Timeline(Static):
    DEFAULT_CSS = """
    Timeline { height: auto; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(timeline_text(TimelineView()), **kwargs)  # type: ignore[arg-type]
        self.view = TimelineView()

    def show(self, view: TimelineView) -> None:
        self.view = view
        self.update(timeline_text(view))
