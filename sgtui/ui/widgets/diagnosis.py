"""Why the run failed, and the concrete change to make; `a` applies the first suggestion."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from sgtui.ui.views import DiagnosisView, SuggestionView


def diagnosis_text(diagnoses: list[DiagnosisView], note: str = "") -> Text:
    """The host's note first (a full disk, the container gone: why the run ended so, in `sgtui runs`'s
    words), then per diagnosis its title, the change `a` applies, why, and the other suggestions: the
    side pane is ~30 columns at 80x24 and the why runs to 20 lines, so the fix must not wait below it."""
    text = Text()
    if note:
        text.append("! ", style="bold yellow")
        text.append(note, style="yellow")  # outside text: appended as text, never parsed as markup
    first = first_applicable(diagnoses)
    for d in diagnoses:
        text.append("\n" if text else "")
        text.append("✗ " + d.title, style="bold red")
        if first is not None and any(s is first for s in d.suggestions):
            _suggestion(text, first, applies=True)
        if d.detail:
            text.append("\n" + d.detail)
        for s in d.suggestions:
            if s is not first:
                _suggestion(text, s, applies=False)
    return text


def _suggestion(text: Text, s: SuggestionView, *, applies: bool) -> None:
    text.append("\n→ ", style="cyan")
    if s.flag:
        text.append(s.as_flag, style="bold cyan" if s.applicable else "cyan")
    if applies:
        text.append("  [a] apply", style="bold reverse cyan")
    if s.why:
        text.append(f"  {s.why}" if s.flag else s.why, style="dim")


class DiagnosisPanel(Static):
    DEFAULT_CSS = """
    DiagnosisPanel { height: auto; margin-top: 1; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__("", **kwargs)  # type: ignore[arg-type]
        self.diagnoses: list[DiagnosisView] = []
        self.note = ""
        self.display = False

    def show(self, diagnoses: list[DiagnosisView], note: str | None = None) -> None:
        """`note`: the host's word on why the run ended so; None keeps the one shown."""
        self.diagnoses = diagnoses
        if note is not None:
            self.note = note
        self.display = bool(diagnoses or self.note)
        self.update(diagnosis_text(diagnoses, self.note))

    @property
    def first_suggestion(self) -> SuggestionView | None:
        return first_applicable(self.diagnoses)

    def consume_first(self) -> None:
        """Drop the first applicable suggestion (it was applied) so `a` moves on to the next one."""
        self.show(without_first(self.diagnoses))


def first_applicable(diagnoses: list[DiagnosisView]) -> SuggestionView | None:
    return next((s for d in diagnoses for s in d.suggestions if s.applicable), None)


def without_first(diagnoses: list[DiagnosisView]) -> list[DiagnosisView]:
    first = first_applicable(diagnoses)
    out: list[DiagnosisView] = []
    for d in diagnoses:
        kept = tuple(s for s in d.suggestions if s is not first)
        if len(kept) != len(d.suggestions):
            first = None
        out.append(DiagnosisView(d.title, d.detail, kept))
    return out
