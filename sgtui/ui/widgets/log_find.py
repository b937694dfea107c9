"""Finding things in a run's log view: the search that filters and highlights (n/N between matches, "match 3
of 12") and the jump to the first error line. Mixed into `LogView`, whose cursor and scrolling it moves."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING

from sgtui.ui.widgets.log_search import Search
from sgtui.ui.widgets.run_log import line_kind

if TYPE_CHECKING:
    from sgtui.ui.widgets.log_view import LogView

    Base = LogView
else:
    Base = object


class LogFinding(Base):
    def set_search(self, text: str) -> Search | None:
        """Filter to the lines matching `text` (a regex, or the literal text when it is not one)."""
        search = self.store.set_search(text)
        self._cache.clear()
        self._generation += 1
        if search is not None:
            self._pause()
        self._resize()
        if self.following:
            self._to_end()
        elif self.cursor is not None and (i := self.store.view_index(self.cursor)) is not None:
            self._move_cursor_to(i)
        elif self.store.view_count:
            self._move_cursor_to(self.store.view_count - 1)
        self.post_message(self.Changed())
        return search

    def action_next_match(self, direction: int) -> None:
        store = self.store
        matches = store.match_lines
        if not matches:
            return
        self._pause()
        cur = self.cursor if self.cursor is not None else store.total
        if direction > 0:
            j = bisect_right(matches, cur)
            n = matches[j] if j < len(matches) else matches[0]
        else:
            j = bisect_left(matches, cur) - 1
            n = matches[j] if j >= 0 else matches[-1]
        i = store.view_index(n)
        if i is not None:
            self._move_cursor_to(i)

    def match_position(self) -> int | None:
        """1-based index of the cursor's line among the matches (for "match 3 of 12")."""
        if self.cursor is None or not self.store.match_lines:
            return None
        matches = self.store.match_lines
        j = bisect_left(matches, self.cursor)
        return j + 1 if j < len(matches) and matches[j] == self.cursor else None

    # ---- errors ---------------------------------------------------------------------------------------
    def first_error_line(self) -> int | None:
        store = self.store
        for i, line in enumerate(store.lines):
            if line_kind(line) == "error":
                return store.first + i
        return None

    def jump_to_first_error(self) -> bool:
        n = self.first_error_line()
        if n is None:
            return False
        if self.store.filtered:
            self.set_search("")
        self._pause()
        i = self.store.view_index(n)
        if i is None:
            return False
        self._move_cursor_to(i)
        self._scroll_y_to(max(0, self.store.row_of(i) - 2))
        return True
