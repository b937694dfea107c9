"""`p`: open a profile, save the current one, or duplicate it under a new name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option


@dataclass(frozen=True)
class ProfileChoice:
    action: str  # open | save | duplicate
    path: Path | None = None
    name: str = ""


class ProfilesScreen(ModalScreen[ProfileChoice | None]):
    BINDINGS = [
        Binding("escape", "dismiss_none", "close", id="profiles-close"),
        Binding("ctrl+s", "save", "save current", id="profiles-save"),
        Binding("ctrl+d", "duplicate", "duplicate as…", id="profiles-duplicate"),
    ]
    DEFAULT_CSS = """
    ProfilesScreen { align: center middle; }
    ProfilesScreen > Vertical {
        width: 80; max-width: 95%; height: 80%; border: thick $accent; background: $surface; padding: 0 1;
    }
    ProfilesScreen OptionList { height: 1fr; }
    ProfilesScreen #dup-name { display: none; }
    ProfilesScreen #dup-name.-shown { display: block; }
    """

    def __init__(self, paths: list[Path], current: str) -> None:
        super().__init__()
        self.paths = paths
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(
                Text.assemble(
                    "Profiles (current: ",
                    (self.current, "bold"),
                    "). enter opens · ctrl+s saves the current one · ctrl+d duplicates it",
                ),
                id="profiles-title",
            )
            yield OptionList(
                *[Option(Text(str(p)), id=str(i)) for i, p in enumerate(self.paths)], id="profile-list"
            )
            yield Input(placeholder="name of the copy, then enter", id="dup-name")

    @on(OptionList.OptionSelected, "#profile-list")
    def _open(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(ProfileChoice("open", self.paths[int(event.option.id or 0)]))

    def action_save(self) -> None:
        self.dismiss(ProfileChoice("save"))

    def action_duplicate(self) -> None:
        box = self.query_one("#dup-name", Input)
        box.add_class("-shown")
        box.value = f"{self.current}-copy"
        box.focus()

    @on(Input.Submitted, "#dup-name")
    def _dup(self, event: Input.Submitted) -> None:
        name = event.value.strip()
        if name:
            self.dismiss(ProfileChoice("duplicate", name=name))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
