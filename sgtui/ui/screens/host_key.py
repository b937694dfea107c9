"""A host whose key changed: a modal, as the first-contact one is, naming the known_hosts file and line.

Nothing is sent to such a host and sgtui never replaces the recorded key: the user checks with the
host's owner, and only then removes the old entry themselves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


def changed_text(host: str, message: str, where: str, also: Sequence[str] = ()) -> Text:
    text = Text()
    text.append(f"{host}'s host key has CHANGED\n\n", style="bold red")
    text.append(message)
    if also:
        text.append(f"\n\nThe same key is offered under {len(also)} more host name(s): ")
        text.append(", ".join(also), style="bold")
    if where:
        text.append("\n\nThe recorded key: ")
        text.append(where, style="bold")
        text.append(
            "\nIf the owner confirms the host was reinstalled, remove that line "
            "(`ssh-keygen -R` does it): sgtui sees the file change and connects again (or press r). "
            "sgtui sent nothing to the host."
        )
    text.append("\nEnter on the host's row shows this again.", style="dim")
    return text


class HostKeyChangedScreen(ModalScreen[str | None]):
    BINDINGS = [
        Binding("escape,enter", "close", "close", id="host-key-close"),
        Binding("r", "retry", "retry", id="host-key-retry"),
    ]
    DEFAULT_CSS = """
    HostKeyChangedScreen { align: center middle; }
    HostKeyChangedScreen > Vertical {
        width: 80; max-width: 95%; height: auto; border: thick $error; background: $surface; padding: 1 2;
    }
    HostKeyChangedScreen Horizontal { height: auto; margin-top: 1; align-horizontal: right; }
    """

    def __init__(self, host: str, message: str, where: str = "", case: Any = None) -> None:
        super().__init__()
        self.host_name = host
        self.key_message = message
        self.where = where
        self.case = case  # the app's KeyCase: every host name offering this key

    def _text(self) -> Text:
        also = self.case.hosts[1:] if self.case is not None else ()
        return changed_text(self.host_name, self.key_message, self.where, also)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._text(), id="host-key-text")
            with Horizontal():
                yield Button("Retry (r)", id="retry")
                yield Button("Close (esc)", id="close")

    def refresh_text(self) -> None:
        if self.is_mounted:
            self.query_one("#host-key-text", Static).update(self._text())

    def on_mount(self) -> None:
        self.query_one("#close", Button).focus()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_retry(self) -> None:
        self.dismiss("retry")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss("retry" if event.button.id == "retry" else None)
