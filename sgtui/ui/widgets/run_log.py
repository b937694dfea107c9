"""The log of one run: Textual's Log (lazy, line-cached, bounded) with a line highlighter and a filter.

Highlighting runs only for lines on screen and only over the first REGEX_SPAN characters, so a 1 MB line
of tensor dump costs the same as a short one.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable

from rich.highlighter import Highlighter
from rich.text import Text
from textual.widgets import Log

REGEX_SPAN = 400
MAX_LINE = 4000
ERROR_RE = re.compile(
    r"Traceback|Error|error:|Exception|out of memory|Not enough memory|sigquit|SIGQUIT|Killed|FAILED|"
    r"\[ERROR\]|CRITICAL"
)
WARNING_RE = re.compile(r"WARNING|Warning:|\bwarn(ing)?\b", re.IGNORECASE)
MILESTONE_RE = re.compile(
    r"Load weight (begin|end)|KV Cache is allocated|Memory pool end|Mamba Cache is allocated|"
    r"Capture cuda graph (begin|end)|max_total_num_tokens=|Uvicorn running|The server is fired up|"
    r"Init torch distributed (begin|end)"
)
NUMBER_RE = re.compile(r"(?<![\w.])\d+(\.\d+)?(?= ?(GB|GiB|MB|s\b|%))")


def line_kind(line: str) -> str:
    head = line[:REGEX_SPAN]
    if ERROR_RE.search(head):
        return "error"
    if MILESTONE_RE.search(head):
        return "milestone"
    if WARNING_RE.search(head):
        return "warning"
    return "plain"


class LogHighlighter(Highlighter):
    """Colours a whole line by its kind, then the memory/time numbers inside milestones."""

    STYLES = {"error": "bold red", "warning": "yellow", "milestone": "bold green"}

    def highlight(self, text: Text) -> None:
        kind = line_kind(text.plain)
        if kind == "plain":
            return
        text.stylize(self.STYLES[kind])
        if kind == "milestone":
            for m in NUMBER_RE.finditer(text.plain[:REGEX_SPAN]):
                text.stylize("bold cyan", m.start(), m.end())


def clip(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[:MAX_LINE] + f" … [{len(line) - MAX_LINE} more chars]"


class RunLog(Log):
    """Follows (auto-scrolls) by default; a filter shows only lines containing the text, case-insensitive."""

    def __init__(self, max_lines: int = 20_000, **kwargs: object) -> None:
        super().__init__(highlight=True, max_lines=max_lines, auto_scroll=True, **kwargs)  # type: ignore[arg-type]
        self.highlighter = LogHighlighter()
        self._history: deque[str] = deque(maxlen=max_lines)
        self.filter_text = ""
        self.total_lines = 0

    def on_resize(self) -> None:
        if self.auto_scroll:
            self.call_after_refresh(self.scroll_end, animate=False)

    @property
    def following(self) -> bool:
        return self.auto_scroll

    def set_following(self, follow: bool) -> None:
        self.auto_scroll = follow
        if follow:
            self.scroll_end(animate=False)

    def append(self, lines: Iterable[str]) -> None:
        batch = [clip(line) for line in lines]
        if not batch:
            return
        self.total_lines += len(batch)
        self._history.extend(batch)
        if self.filter_text:
            needle = self.filter_text
            batch = [line for line in batch if needle in line.lower()]
        if batch:
            self.write_lines(batch)

    def reset(self) -> None:
        self._history.clear()
        self.total_lines = 0
        self.clear()

    def set_filter(self, text: str) -> int:
        """Show only matching lines (all lines when empty); returns how many are shown."""
        self.filter_text = text.strip().lower()
        self.clear()
        lines = list(self._history)
        if self.filter_text:
            lines = [line for line in lines if self.filter_text in line.lower()]
        if lines:
            self.write_lines(lines)
        return len(lines)

    def first_error_index(self) -> int | None:
        for i, line in enumerate(self.lines):
            if line_kind(line) == "error":
                return i
        return None

    def jump_to_first_error(self) -> bool:
        index = self.first_error_index()
        if index is None:
            return False
        self.set_following(False)
        self.scroll_to(y=max(0, index - 2), animate=False)
        return True
