"""The log tab's left column: the search box (`/`), the log view, and one status line saying what the view
shows: following or "paused: End follows", wrap, the search's match count, dropped lines and the log's path.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Static

from sgtui.ui.widgets.log_view import LogView


def tail_of(path: str, room: int) -> str:
    """The end of a path in `room` columns: the run id and file name are what tell runs apart."""
    if room <= 0 or len(path) <= room:
        return path
    return "…" + path[-(room - 1) :] if room > 1 else "…"


def status_text(view: LogView, path: str = "", width: int = 0, extra: str = "", where: str = "") -> Text:
    """One line, always plain text (a path or a search may hold brackets)."""
    store = view.store
    text = Text(no_wrap=True, overflow="ellipsis")
    if extra:
        text.append(extra)
        return text
    if view.following:
        text.append("following", style="green")
    else:
        text.append("paused: End follows", style="bold yellow")
    bits: list[str] = [where] if where else []
    if view.wrap:
        bits.append("wrap")
    if store.search is not None:
        room = width - text.cell_len - sum(len(bit) + 3 for bit in bits) - 3 if width else 0
        bits.append(match_text(view, room))
    elif store.dropped:  # earlier lines are no longer kept here: say so, and where the whole log is
        bits.append(f"last {len(store.lines):,} of {store.total:,} lines")
    else:
        bits.append(f"{store.total:,} lines")
    for bit in bits:
        text.append(" · " + bit)
    if path:
        label = " · whole log " if store.dropped else " · "
        room = (width or 200) - text.cell_len - len(label)
        if store.dropped or room >= 12:
            text.append(label, style="yellow" if store.dropped else "")
            text.append(tail_of(path, max(room, 12)), style="dim")
    return text


def match_text(view: LogView, room: int = 0) -> str:
    """The search's count, "12 of 40,001 lines match, at 3"; without the word "lines" where `room`
    columns are too few (an 80-column terminal), so the position that n/N move is not cut off."""
    store = view.store
    kept = f"{store.total:,}"
    if store.dropped:
        kept = f"the last {len(store.lines):,} of {kept}"
    at = view.match_position()
    tail = "" if at is None else f", at {at:,}"
    if store.search is not None and store.search.literal:
        tail += " (literal: the pattern was too slow)" if store.search.slow else " (literal)"
    found = f"{store.match_count:,} of {kept} lines match{tail}"
    if room and len(found) > room:
        found = f"{store.match_count:,} of {kept} match{tail}"
    return found


class LogColumn(Vertical):
    DEFAULT_CSS = """
    LogColumn { height: 1fr; }
    LogColumn > #log-search { display: none; height: 3; }
    LogColumn > #log-search.-shown { display: block; }
    LogColumn > LogView { height: 1fr; }
    LogColumn > #log-status { height: 1; }
    """

    def __init__(self, max_lines: int = 20_000, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.view = LogView(max_lines=max_lines, id="log-view")
        self.path = ""
        self.extra = ""
        self.where = ""  # "all nodes" / "node 1" for a multi-node run

    def compose(self) -> ComposeResult:
        hint = "search: a regex (or literal text) · enter keeps · esc clears"
        yield Input(placeholder=hint, id="log-search")
        yield self.view
        yield Static("", id="log-status", markup=False)

    def on_mount(self) -> None:
        self.draw_status()

    def set_path(self, path: str) -> None:
        self.path = path
        self.draw_status()

    def set_extra(self, extra: str) -> None:
        """A transient line (stop progress) shown instead of the view's state until cleared with ""."""
        self.extra = extra
        self.draw_status()

    def draw_status(self) -> None:
        status = self.query_one("#log-status", Static)
        text = status_text(self.view, self.path, status.content_size.width, self.extra, self.where)
        status.update(text, layout=False)

    @on(LogView.Changed)
    def _changed(self) -> None:
        self.draw_status()

    def on_resize(self) -> None:
        self.draw_status()

    # ---- search ---------------------------------------------------------------------------------------
    @property
    def search_box(self) -> Input:
        return self.query_one("#log-search", Input)

    def open_search(self) -> None:
        box = self.search_box
        box.add_class("-shown")
        box.focus()

    def clear_search(self) -> None:
        box = self.search_box
        box.value = ""
        box.remove_class("-shown")
        self.view.set_search("")
        self.view.focus()

    @on(Input.Changed, "#log-search")
    def _search_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.view.set_search(event.value)

    @on(Input.Submitted, "#log-search")
    def _search_kept(self, event: Input.Submitted) -> None:
        event.stop()
        self.view.focus()
