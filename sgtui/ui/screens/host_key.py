"""A host whose key changed: a modal, as the first-contact one is, naming the known_hosts file and line.

Nothing is sent to such a host and sgtui never replaces the recorded key: the user checks with the
host's owner, and only then removes the old entry themselves."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


def changed_text(host: str, message: str, where: str) -> Text:
    text = Text()
    text.append(f"{host}'s host key has CHANGED\n\n", style="bold red")
    text.append(message)
    if where:
        text.append("\n\nThe recorded key: ")
        text.append(where, style="bold")
        text.append(
            "\nIf the owner confirms the host was reinstalled, remove that line "
            "(`ssh-keygen -R` does it), then connect again. sgtui sent nothing to the host."
        )
    return text


class HostKeyChangedScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,enter", "app.pop_screen", "close", id="host-key-close")]
    DEFAULT_CSS = """
    HostKeyChangedScreen { align: center middle; }
    HostKeyChangedScreen > Vertical {
        width: 80; max-width: 95%; height: auto; border: thick $error; background: $surface; padding: 1 2;
    }
    HostKeyChangedScreen Horizontal { height: auto; margin-top: 1; align-horizontal: right; }
    """

    def __init__(self, host: str, message: str, where: str = "") -> None:
        super().__init__()
        self.host_name = host
        self.key_message = message
        self.where = where

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(changed_text(self.host_name, self.key_message, self.where), id="host-key-text")
            with Horizontal():
                yield Button("Close (esc)", id="close")

    def on_mount(self) -> None:
        self.query_one("#close", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)
