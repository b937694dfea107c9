"""Enter on a log line: the line whole and wrapped (a traceback block, a server_args= dump), as text."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class LineScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,enter,q", "app.pop_screen", "close", id="line-close")]
    DEFAULT_CSS = """
    LineScreen { align: center middle; }
    LineScreen > VerticalScroll {
        width: 95%; height: 85%; border: thick $accent; background: $surface; padding: 0 1;
    }
    LineScreen #line-title { color: $text-muted; }
    """

    def __init__(self, text: str, number: int) -> None:
        super().__init__()
        self.text = text
        self.number = number

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(
                Text(f"line {self.number + 1:,} · {len(self.text):,} chars · esc closes"), id="line-title"
            )
            yield Static(Text(self.text), id="line-text")
