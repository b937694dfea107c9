"""Why the run failed, and the concrete change to make; `a` applies the first suggestion. Once applied,
this run's diagnosis offers no other: its other suggestions were made for the flags it failed with, and
one on top of the applied fix could stack two remedies for one shortfall (the restart's own diagnosis
says what is still wrong)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from sgtui.ui.views import DiagnosisView, SuggestionView


def diagnosis_text(
    diagnoses: list[DiagnosisView], note: str = "", applied: SuggestionView | None = None
) -> Text:
    """The host's note first (a full disk, the container gone: why the run ended so, in `sgtui runs`'s
    words), then per diagnosis its title, the change `a` applies, why, and the other suggestions: the
    side pane is ~30 columns at 80x24 and the why runs to 20 lines, so the fix must not wait below it."""
    text = Text()
    if note:
        text.append("! ", style="bold yellow")
        text.append(note, style="yellow")  # outside text: appended as text, never parsed as markup
    first = applied if applied is not None else first_applicable(diagnoses)
    for d in diagnoses:
        text.append("\n" if text else "")
        text.append("✗ " + d.title, style="bold red")
        if first is not None and any(s is first for s in d.suggestions):
            _suggestion(text, first, applies=applied is None, applied=applied is not None)
        if d.detail:
            text.append("\n" + d.detail)
        for s in d.suggestions:
            if s is not first:
                _suggestion(text, s, applies=False)
    return text


def _suggestion(text: Text, s: SuggestionView, *, applies: bool, applied: bool = False) -> None:
    text.append("\n→ ", style="cyan")
    if s.flag:
        text.append(s.as_flag, style="bold cyan" if s.applicable and not applied else "cyan")
    if applies:
        text.append("  [a] apply", style="bold reverse cyan")
    if applied:
        text.append("  ✓ applied: r restarts with it", style="bold green")
    if s.why:  # its own line: after "--max-running-requests 8", a why that begins "8 requests" read as one
        text.append(f"\n  {s.why}" if s.flag else s.why, style="dim")


class DiagnosisPanel(Static):
    DEFAULT_CSS = """
    DiagnosisPanel { height: auto; margin-top: 1; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__("", **kwargs)  # type: ignore[arg-type]
        self.diagnoses: list[DiagnosisView] = []
        self.note = ""
        self.applied: SuggestionView | None = None  # the fix `a` applied for the diagnoses shown
        self.display = False

    def show(self, diagnoses: list[DiagnosisView], note: str | None = None) -> None:
        """`note`: the host's word on why the run ended so; None keeps the one shown. The same diagnoses
        shown again keep their applied fix; another run's drop it."""
        if self.applied is not None and not any(self.applied in d.suggestions for d in diagnoses):
            self.applied = None
        self.diagnoses = diagnoses
        if note is not None:
            self.note = note
        self.display = bool(diagnoses or self.note)
        self.update(diagnosis_text(diagnoses, self.note, self.applied))

    @property
    def first_suggestion(self) -> SuggestionView | None:
        """What `a` would apply: none once this diagnosis's fix was applied."""
        return None if self.applied is not None else first_applicable(self.diagnoses)

    def consume_first(self) -> None:
        """The first applicable suggestion was applied: said so, and `a` offers nothing more here."""
        self.applied = first_applicable(self.diagnoses)
        self.show(self.diagnoses)


def first_applicable(diagnoses: list[DiagnosisView]) -> SuggestionView | None:
    return next((s for d in diagnoses for s in d.suggestions if s.applicable), None)
