"""The lines of one run's log as the log view shows them: bounded, numbered from the first line ever seen,
optionally filtered by a search, optionally wrapped. Pure data (no Textual) so it is cheap to test and bench.

Line numbers are absolute: line n is the n-th line the run printed (0-based), whether or not it is still
kept. `first` is the oldest line still kept; `total` counts every line seen. The *view* is what the screen
scrolls through: every kept line, or only the ones matching the search. With wrap on, a view line takes
ceil(len / width) rows.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left, bisect_right
from collections.abc import Iterable

from sgtui.ui.widgets.log_search import Search, SearchTooSlow

MAX_LINE = 16_384  # a server_args= dump is ~6 k characters; a tensor dump is cut here, saying by how much


def clip(line: str) -> str:
    if "\t" in line:
        line = line.expandtabs(4)
    if len(line) <= MAX_LINE:
        return line
    return line[:MAX_LINE] + f" … [{len(line) - MAX_LINE:,} more chars]"


class LineStore:
    def __init__(self, max_lines: int) -> None:
        self.max_lines = max(1, max_lines)
        self.lines: list[str] = []
        self.search_changed = False  # set by an append that turned the search literal; the view resets it
        self.total = 0
        self.search: Search | None = None
        self.filtering = True  # with a search: show only the matching lines
        self._matches: list[int] = []  # absolute numbers of kept matching lines, ascending
        self.wrap_width = 0  # 0: no wrap
        self._row_ends: list[int] = []  # with wrap: cumulative rows after each view line (minus _row_base)
        self._row_base = 0
        self.widest = 0

    # ---- what is kept ---------------------------------------------------------------------------------
    @property
    def first(self) -> int:
        return self.total - len(self.lines)

    @property
    def dropped(self) -> int:
        return self.first

    def line(self, n: int) -> str:
        return self.lines[n - self.first]

    def append(self, new: Iterable[str]) -> int:
        """Add lines; returns how many rows at the top of the view the oldest-dropping removed."""
        batch = new if isinstance(new, list) else list(new)
        if not batch:
            return 0
        widest = max(map(len, batch))
        if widest > MAX_LINE or "\t" in "".join(batch):  # else clip changes nothing (one C pass)
            batch = [clip(line) for line in batch]
            widest = max(map(len, batch))
        start = self.total
        self.lines.extend(batch)
        self.total += len(batch)
        self.widest = max(self.widest, widest)
        if self.search is not None:
            before = self.search
            hits = self._hits(batch)
            self._matches.extend(start + i for i in hits)
            if self.search is not before:  # turned literal: every kept line was asked again
                self.search_changed = True
                self._rebuild_rows()
                return self._trim()
            added_view = [batch[i] for i in hits] if self.filtering else batch
        else:
            added_view = batch
        if self.wrap_width:
            self._extend_rows(added_view)
        return self._trim()

    def _trim(self) -> int:
        extra = len(self.lines) - self.max_lines
        if extra <= 0:
            return 0
        first_after = self.first + extra
        del self.lines[:extra]
        if self.search is not None and self.filtering:
            gone = bisect_left(self._matches, first_after)
        else:
            gone = extra
        if self.search is not None:
            del self._matches[: bisect_left(self._matches, first_after)]
        if self.wrap_width and gone:
            old_base, self._row_base = self._row_base, self._row_ends[gone - 1]
            del self._row_ends[:gone]
            return self._row_base - old_base
        return gone

    def clear(self) -> None:
        self.lines.clear()
        self.total = 0
        self._matches.clear()
        self._row_ends.clear()
        self._row_base = 0
        self.widest = 0

    # ---- search -----------------------------------------------------------------------------------------
    def set_search(self, text: str) -> Search | None:
        self.search = Search.parse(text)
        if self.search is None:
            self._matches = []
        else:
            first = self.first
            self._matches = [first + i for i in self._hits(self.lines)]
        self._rebuild_rows()
        return self.search

    def _hits(self, lines: list[str]) -> list[int]:
        """The search's matching lines among `lines` (all kept lines, or an appended batch, which is kept
        already); a pattern too slow is searched as its literal text from then on, the kept lines asked
        again (`Search.slow` says so beside the count): a keystroke never holds the app up."""
        assert self.search is not None
        try:
            return self.search.lines(lines)
        except SearchTooSlow:
            literal = Search.parse(self.search.text, literal=True)
            assert literal is not None
            self.search = dataclasses.replace(literal, slow=True)
            if lines is not self.lines:  # an append: the lines before it matched the pattern, not the text
                older = self.lines[: len(self.lines) - len(lines)]
                self._matches = [self.first + i for i in self.search.lines(older)]
            return self.search.lines(lines)

    @property
    def match_count(self) -> int:
        return len(self._matches)

    @property
    def match_lines(self) -> list[int]:
        return self._matches

    # ---- the view -----------------------------------------------------------------------------------------
    @property
    def filtered(self) -> bool:
        return self.search is not None and self.filtering

    @property
    def view_count(self) -> int:
        return len(self._matches) if self.filtered else len(self.lines)

    def view_line_number(self, i: int) -> int:
        """The absolute line number of view line i."""
        return self._matches[i] if self.filtered else self.first + i

    def view_index(self, n: int) -> int | None:
        """View index of absolute line n (the nearest view line at or after it, for a filtered view)."""
        if self.filtered:
            i = bisect_left(self._matches, n)
            return min(i, len(self._matches) - 1) if self._matches else None
        i = n - self.first
        return i if 0 <= i < len(self.lines) else None

    def _view_texts(self) -> Iterable[str]:
        if self.filtered:
            first = self.first
            return (self.lines[n - first] for n in self._matches)
        return self.lines

    # ---- rows (wrap) --------------------------------------------------------------------------------
    def set_wrap(self, width: int) -> None:
        """0 turns wrap off; otherwise rows are `width` characters wide."""
        self.wrap_width = max(0, width)
        self._rebuild_rows()

    def _rebuild_rows(self) -> None:
        self._row_ends = []
        self._row_base = 0
        if self.wrap_width:
            self._extend_rows(self._view_texts())

    def _extend_rows(self, texts: Iterable[str]) -> None:
        width = self.wrap_width
        ends = self._row_ends
        end = ends[-1] if ends else self._row_base
        for text in texts:
            end += max(1, -(-len(text) // width))
            ends.append(end)

    @property
    def row_count(self) -> int:
        if not self.wrap_width:
            return self.view_count
        return (self._row_ends[-1] - self._row_base) if self._row_ends else 0

    def row(self, y: int) -> tuple[int, int] | None:
        """Row y -> (view index, which wrapped piece of that line); None past the end."""
        if y < 0:
            return None
        if not self.wrap_width:
            return (y, 0) if y < self.view_count else None
        target = y + self._row_base
        i = bisect_right(self._row_ends, target)
        if i >= len(self._row_ends):
            return None
        start = self._row_ends[i - 1] if i else self._row_base
        return i, target - start

    def row_of(self, i: int) -> int:
        """The first row of view line i."""
        if not self.wrap_width:
            return i
        return (self._row_ends[i - 1] if i else self._row_base) - self._row_base

    def rows_of(self, i: int) -> int:
        if not self.wrap_width:
            return 1
        return self._row_ends[i] - (self._row_ends[i - 1] if i else self._row_base)
