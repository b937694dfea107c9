"""Yes/no before anything that stops a server; a stop's confirmation also shows what it will hit.
The question, detail and preview are text, never markup: they name runs, hosts and commands from outside."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [
        Binding("y", "answer(True)", "yes", id="confirm-yes"),
        Binding("n,escape", "answer(False)", "no", id="confirm-no"),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 64; max-width: 90%; height: auto; max-height: 100%;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    /* a long preview (a server's whole command line) scrolls; the question and the buttons stay on screen */
    ConfirmScreen #confirm-body { height: auto; max-height: 60vh; }
    ConfirmScreen Horizontal { height: auto; margin-top: 1; align-horizontal: right; }
    ConfirmScreen Button { margin-left: 2; }
    """

    def __init__(
        self, question: str, detail: str | Text = "", preview: Callable[[], Awaitable[str]] | None = None
    ) -> None:
        """`preview` reads, from the target, what the answer would act on (shown as plain text)."""
        super().__init__()
        self.question = question
        self.detail = detail
        self.preview = preview

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.question, style="bold"), id="confirm-question")
            with VerticalScroll(id="confirm-body", can_focus=False):
                if self.detail:
                    detail = self.detail if isinstance(self.detail, Text) else Text(self.detail)
                    yield Static(detail, id="confirm-detail")
                if self.preview is not None:
                    yield Static("reading what this will hit…", id="confirm-preview", markup=False)
            with Horizontal():
                yield Button("Yes (y)", variant="warning", id="yes")
                yield Button("No (n)", id="no")

    def on_mount(self) -> None:
        for no in self.query("#no").results(Button):  # none when the app closed while this was composed
            no.focus()
        if self.preview is not None:
            self.run_worker(
                self._show_preview(self.preview), group="confirm-preview", exclusive=True, exit_on_error=False
            )

    async def _show_preview(self, preview: Callable[[], Awaitable[str]]) -> None:
        try:
            text = await preview()
        except Exception as exc:  # shown in the dialog: the question can still be answered (or declined)
            text = f"could not read what this will hit: {exc}"
        try:
            self.query_one("#confirm-preview", Static).update(Text(text))
        except NoMatches:  # answered before the target did: the dialog is gone
            pass

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
