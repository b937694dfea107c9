"""A password asked for when a host wants one; it goes to the SSH connection and is never written down."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class PasswordScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "cancel", id="password-cancel")]
    DEFAULT_CSS = """
    PasswordScreen { align: center middle; }
    PasswordScreen > Vertical {
        width: 64; max-width: 90%; height: auto; border: thick $accent; background: $surface; padding: 1 2;
    }
    """

    def __init__(self, prompt: str) -> None:
        super().__init__()
        self.prompt = prompt

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.prompt, markup=False, id="password-prompt")
            yield Input(password=True, id="password")
            yield Static("enter sends it (kept in memory for this session only) · esc cancels", classes="dim")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _submit(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
