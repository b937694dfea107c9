"""`?`: the keys, generated from the live bindings so the help can never disagree with the footer."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

INTRO = (
    "sgtui: pick a host and container (1), edit the launch flags with the memory fit beside them (2), "
    "launch with l and follow the log and startup timeline (3), see every run on the target (4). "
    "Quitting never stops a running server."
)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "close", id="help-close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 76; max-width: 95%; height: 90%; border: thick $accent; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, bindings: list[tuple[str, str]]) -> None:
        super().__init__()
        self.rows = bindings

    def compose(self) -> ComposeResult:
        table = Table(show_header=True, header_style="bold", box=None, expand=True)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("does")
        for key, description in self.rows:
            table.add_row(Text(key), Text(description))
        with VerticalScroll():
            yield Static(INTRO, id="help-intro")
            yield Static(table, id="help-keys")
