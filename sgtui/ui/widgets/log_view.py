"""The log of one run, readable while it streams: Toolong's line API (a ScrollView whose `render_line`
draws only the rows on screen) over a bounded `LineStore`.

- It follows the end by default, past any number of lines; only the last `max_lines` are kept.
- Any upward move (keys, wheel, scrollbar, Home, a search) pauses following; End resumes it. While paused
  a cursor line shows where Enter, n and N act.
- `w` wraps long lines; Enter opens the cursor's line whole (a traceback block, a server_args= dump).
- A search (`set_search`) filters to matching lines and highlights the matches; n/N move between them.
Highlighting and search look only at the first few thousand characters of a line (a 1 MB tensor dump costs
what a short line does). The text is never parsed as markup.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from sgtui.ui.widgets.log_find import LogFinding
from sgtui.ui.widgets.log_rows import one_style_row, rich_row
from sgtui.ui.widgets.log_store import LineStore
from sgtui.ui.widgets.run_log import LogHighlighter


class LogView(LogFinding, ScrollView, can_focus=True):
    BINDINGS = [
        Binding("up", "cursor(-1)", "up", show=False, id="log-up"),
        Binding("down", "cursor(1)", "down", show=False, id="log-down"),
        Binding("pageup", "page(-1)", "page up", show=False, id="log-page-up"),
        Binding("pagedown", "page(1)", "page down", show=False, id="log-page-down"),
        Binding("home", "home", "first line", show=False, id="log-home"),
        Binding("end", "end", "follow", id="log-end"),
        Binding("left", "scroll_left", "left", show=False),
        Binding("right", "scroll_right", "right", show=False),
        Binding("w", "wrap", "wrap", id="log-wrap"),
        Binding("enter", "open_line", "open line", show=False, id="log-open"),
        Binding("n", "next_match(1)", "next match", show=False, id="log-next"),
        Binding("N", "next_match(-1)", "previous match", show=False, id="log-previous"),
    ]
    DEFAULT_CSS = """
    LogView { background: $surface; }
    LogView:focus { background-tint: $foreground 3%; }
    """

    class Changed(Message):
        """Following, wrap, search or the counts changed: the status line redraws."""

    class OpenLine(Message):
        def __init__(self, text: str, number: int) -> None:
            super().__init__()
            self.text = text
            self.number = number

    def __init__(self, max_lines: int = 20_000, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.store = LineStore(max_lines)
        self.following = True
        self.wrap = False
        self.cursor: int | None = None  # absolute line number, while paused
        self.highlighter = LogHighlighter()
        self._cache: LRUCache[tuple[int, int], Strip] = LRUCache(1024)
        self._generation = 0
        self._pass_style: Style | None = None
        self._pass_width: int | None = None

    # ---- feeding --------------------------------------------------------------------------------------
    @property
    def total_lines(self) -> int:
        return self.store.total

    @property
    def lines(self) -> list[str]:
        """The lines the view shows: every kept line, or only the search's matches."""
        store = self.store
        return [store.line(store.view_line_number(i)) for i in range(store.view_count)]

    @property
    def line_count(self) -> int:
        return self.store.view_count

    def first_error_index(self) -> int | None:
        """The view index of the first error line kept (clears no search)."""
        n = self.first_error_line()
        return None if n is None else self.store.view_index(n)

    def append(self, lines: Iterable[str]) -> None:
        store = self.store
        total = store.total
        removed_rows = store.append(lines)
        if store.total == total:
            return
        if store.search_changed:  # a pattern too slow for the new lines: the view's matches all changed
            store.search_changed = False
            self._cache.clear()
            self._generation += 1
        self._resize()
        if removed_rows and not self.following:
            # keep the lines being read where they are on screen while older ones drop off the top
            self._scroll_y_to(max(0, self.scroll_y - removed_rows))
        if self.following:
            self._to_end()
        self.post_message(self.Changed())

    def reset(self) -> None:
        self.store.clear()
        self.store.set_search("")
        self.cursor = None
        self.following = True
        self._cache.clear()
        self._resize()
        self.scroll_to(0, 0, animate=False, immediate=True, force=True)
        self.post_message(self.Changed())

    def _resize(self) -> None:
        width = self.store.widest if not self.wrap else 0
        self.virtual_size = Size(width, self.store.row_count)
        self.refresh()

    def _to_end(self) -> None:
        """To the last row with the geometry known now; a layout pass that changes it (a scrollbar shows:
        a row fewer) ends the view again in `_size_updated`, before the frame is drawn."""
        self._scroll_y_to(self.max_scroll_y)

    def _scroll_y_to(self, y: float) -> None:
        """`force`: Textual ignores a scroll while its vertical scrollbar is hidden, and that flag is only
        brought up to date by the next layout pass, so lines that just arrived would not move the view."""
        self.scroll_to(y=y, animate=False, immediate=True, force=True)

    def _view_height(self) -> int:
        """Rows on screen, from the geometry `max_scroll_y` uses (it holds on a hidden tab too)."""
        return max(0, self.container_size.height - self.scrollbar_size_horizontal)

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        """Each layout pass hands the view its final geometry here: its size and which scrollbars show (a
        scrollbar appearing changes where the end is, with no Resize event). The wrap width and, while
        following, the end derive from that geometry alone, never from a size read before layout."""
        resized = super()._size_updated(size, virtual_size, container_size, layout)
        if self.wrap and self.container_size and self.store.wrap_width != self._content_width():
            keep = self.cursor
            self.store.set_wrap(self._content_width())
            self._cache.clear()
            self._resize()  # new rows: the next layout pass comes back here with them
            if not self.following and keep is not None and (i := self.store.view_index(keep)) is not None:
                self._show_index(i)
        if self.following:
            self._to_end()
        if self.show_vertical_scrollbar:  # a scroll made while it was hidden never reached the thumb
            self.vertical_scrollbar.position = self.scroll_y
        return resized

    # ---- following ------------------------------------------------------------------------------------
    def set_following(self, follow: bool) -> None:
        if follow == self.following:
            return
        self.following = follow
        before = self.cursor
        if follow:
            self.cursor = None
            self._to_end()
        elif self.cursor is None:
            self.cursor = self._last_visible_line()
        self._forget_lines(before, self.cursor)
        self.refresh()
        self.post_message(self.Changed())

    def _last_visible_line(self) -> int | None:
        store = self.store
        if not store.view_count:
            return None
        bottom = int(self.scroll_y) + self._view_height() - 1
        at = store.row(min(bottom, store.row_count - 1))
        return store.view_line_number(at[0]) if at else None

    def _pause(self) -> None:
        if self.following:
            self.set_following(False)

    def _on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._pause()
        super()._on_mouse_scroll_up(event)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new < old and self.following and new < self.max_scroll_y:
            self._pause()  # the scrollbar dragged up, or anything else moving the view back

    # ---- keys -----------------------------------------------------------------------------------------
    def _cursor_index(self) -> int | None:
        if self.cursor is None:
            return None
        return self.store.view_index(self.cursor)

    def _move_cursor_to(self, i: int) -> None:
        store = self.store
        if not store.view_count:
            return
        i = max(0, min(i, store.view_count - 1))
        before = self.cursor
        self.cursor = store.view_line_number(i)
        self._show_index(i)
        self._forget_lines(before, self.cursor)
        self.refresh()
        self.post_message(self.Changed())

    def _show_index(self, i: int) -> None:
        """Scroll the least that puts view line `i` on screen."""
        top, rows = self.store.row_of(i), self.store.rows_of(i)
        height = self._view_height()
        if top < self.scroll_y:
            self._scroll_y_to(top)
        elif top + rows > self.scroll_y + height:
            self._scroll_y_to(top + rows - height)

    def _forget_lines(self, *numbers: int | None) -> None:
        """Drop the cached rows of these lines only (the cursor's style moved between them): a key press
        while a flood streams redraws two lines, not every row on screen."""
        gone = {n for n in numbers if n is not None}
        if gone:
            kept = self._cache.keys()
            for key in [key for key in kept if key[0] in gone]:
                self._cache.discard(key)

    def action_cursor(self, delta: int) -> None:
        if self.following:
            self._pause()
            if delta > 0:
                return
        i = self._cursor_index()
        self._move_cursor_to((self.store.view_count - 1 if i is None else i) + delta)

    def action_page(self, delta: int) -> None:
        self._pause()
        i = self._cursor_index()
        step = max(1, self._view_height() - 1)
        self._move_cursor_to((self.store.view_count - 1 if i is None else i) + delta * step)

    def action_home(self) -> None:
        self._pause()
        self._move_cursor_to(0)

    def action_end(self) -> None:
        self.set_following(True)
        self._to_end()

    def action_wrap(self) -> None:
        self.set_wrap(not self.wrap)

    def set_wrap(self, wrap: bool) -> None:
        keep = self.cursor
        self.wrap = wrap
        self.store.set_wrap(self._content_width() if wrap else 0)
        self._cache.clear()
        self._resize()
        if self.following:
            self._to_end()
        elif keep is not None and (i := self.store.view_index(keep)) is not None:
            self._move_cursor_to(i)
        self.post_message(self.Changed())

    def _content_width(self) -> int:
        """Columns on screen, from the same geometry as `_view_height`."""
        width, _ = self.container_size
        return max(10, width - self.scrollbar_size_vertical if width else 80)

    def action_open_line(self) -> None:
        n = self.cursor if self.cursor is not None else (self.store.total - 1 if self.store.total else None)
        if n is None or n < self.store.first:
            return
        self.post_message(self.OpenLine(self.whole_line(n), n))

    def whole_line(self, n: int) -> str:
        """The line; for a traceback's first line, the traceback through its exception line."""
        store = self.store
        text = store.line(n)
        if "Traceback (most recent call last)" not in text:
            return text
        out = [text]
        for m in range(n + 1, min(store.total, n + 400)):
            line = store.line(m)
            out.append(line)
            if line and not line[0].isspace() and not line.lstrip().startswith("File "):
                break
        return "\n".join(out)

    # ---- drawing --------------------------------------------------------------------------------------
    def render_lines(self, crop: Region) -> list[Strip]:
        """`rich_style` resolves the CSS cascade (a fifth of a millisecond): once per pass, not per row."""
        self._pass_style = self.rich_style
        self._pass_width = self.scrollable_content_region.width
        try:
            return super().render_lines(crop)
        finally:
            self._pass_style = self._pass_width = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self._pass_width if self._pass_width is not None else self.scrollable_content_region.width
        rich_style = self._pass_style or self.rich_style
        at = self.store.row(scroll_y + y)
        if at is None:
            return Strip.blank(width, rich_style)
        strip = self._line_strip(at[0], at[1], rich_style)
        if self.wrap:
            return strip.extend_cell_length(width, rich_style).crop(0, width)
        return strip.crop_extend(scroll_x, scroll_x + width, rich_style)

    def _line_strip(self, i: int, piece: int, rich_style: Style) -> Strip:
        n = self.store.view_line_number(i)
        key = (n, piece)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        line = self.store.line(n)
        search = self.store.search
        spans = search.spans(line) if search is not None else []
        cursor = n == self.cursor
        strip = None if spans or cursor or self.wrap else one_style_row(line, rich_style)
        if strip is None:
            wrap = self.store.wrap_width if self.wrap else 0
            strip = rich_row(line, rich_style, self.app.console, self.highlighter, spans, cursor, wrap, piece)
        self._cache[key] = strip
        return strip
