"""`?`: the keys, generated from the live bindings so the help can never disagree with the footer, then
how to move around, what the dialogs take, and how to remap a key in keys.yaml."""

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
    "Quitting never stops a running server (in `sgtui demo`, the demo host stops with the app)."
)
NAVIGATION = (
    ("1 2 3 4", "the Hosts, Flags, Log and Runs tabs"),
    ("↑ ↓  tab  shift+tab", "move between fields (flags) or lines (log); the focused one is highlighted"),
    ("esc", "leave a text field: single-letter keys only act outside fields"),
    ("enter", "open: a host or container, a run's log, a log line whole"),
    ("/ (hosts tab)", "filter hosts by name, state (connected, failed, ...) or container; enter: the list"),
    ("ctrl+p", "command palette: every action by name"),
    ("ctrl+y", "apply the fit's suggestion under a flag"),
)
LOG_KEYS = (
    ("↑ pgup home, wheel", 'pause following (the status says "paused: End follows")'),
    ("end", "follow the end again"),
    ("/", "search: a regex (or the literal text), showing only matching lines"),
    ("n  N", "next / previous match"),
    ("esc", "clear the search"),
    ("w", "wrap long lines"),
    ("x", "jump to the first error"),
)
DIALOGS = (
    ("y  n  esc", "confirmations: yes / no; no is the default, esc says no"),
    ("f", "a launch the fit says fails: apply the best fix and launch"),
    ("enter", "presses the focused button"),
    ("esc  q", "close help, a log line, the GPU chart"),
)


def table(rows: list[tuple[str, str]] | tuple[tuple[str, str], ...], title: str) -> Table:
    out = Table(title=title, title_justify="left", title_style="bold", box=None, expand=True)
    out.show_header = False
    out.add_column("key", style="bold cyan", no_wrap=True)
    out.add_column("does")
    for key, description in rows:
        out.add_row(Text(key), Text(description))
    return out


def remap_text(keys_file: str, ids: list[str]) -> Text:
    text = Text()
    text.append("Remapping keys", style="bold")
    text.append(
        f"\nWrite `binding-id: key` lines in {keys_file} (e.g. `launch: L`, `quit: ctrl+q`), then restart. "
        "Every problem in the file is reported at once; the default keys apply meanwhile.\nIds: "
    )
    text.append(", ".join(ids), style="dim")
    return text


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "close", id="help-close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90; max-width: 95%; height: 90%; border: thick $accent; background: $surface; padding: 0 1;
    }
    HelpScreen Static { margin-bottom: 1; }
    """

    def __init__(
        self, bindings: list[tuple[str, str]], keys_file: str = "keys.yaml", ids: list[str] | None = None
    ) -> None:
        super().__init__()
        self.rows = bindings
        self.keys_file = keys_file
        self.ids = ids or []

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(INTRO), id="help-intro")
            yield Static(table(self.rows, "Keys"), id="help-keys")
            yield Static(table(NAVIGATION, "Moving around"), id="help-navigation")
            yield Static(table(LOG_KEYS, "In the log"), id="help-log")
            yield Static(table(DIALOGS, "In dialogs"), id="help-dialogs")
            yield Static(remap_text(self.keys_file, self.ids), id="help-remap")
