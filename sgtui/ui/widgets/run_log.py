"""How a log line is coloured: errors, warnings and startup milestones (with their numbers).

The log view (`log_view.py`) highlights only the lines on screen and only their first REGEX_SPAN
characters, so a 1 MB line of tensor dump costs the same as a short one.
"""

from __future__ import annotations

import re

from rich.highlighter import Highlighter
from rich.text import Text

REGEX_SPAN = 400
# What marks a line as an error or a milestone: plain words, so a substring test per word decides (an
# alternation's regex search on every row drawn cost ~15x more); the regexes are the same words, for callers.
ERROR_WORDS = (
    "Traceback",
    "Error",
    "error:",
    "Exception",
    "out of memory",
    "Not enough memory",
    "sigquit",
    "SIGQUIT",
    "Killed",
    "FAILED",
    "[ERROR]",
    "CRITICAL",
)
MILESTONE_WORDS = (
    "Load weight begin",
    "Load weight end",
    "KV Cache is allocated",
    "Memory pool end",
    "Mamba Cache is allocated",
    "Capture cuda graph begin",
    "Capture cuda graph end",
    "max_total_num_tokens=",
    "Uvicorn running",
    "The server is fired up",
    "Init torch distributed begin",
    "Init torch distributed end",
)
ERROR_RE = re.compile("|".join(map(re.escape, ERROR_WORDS)))
MILESTONE_RE = re.compile("|".join(map(re.escape, MILESTONE_WORDS)))
WARNING_RE = re.compile(r"WARNING|Warning:|\bwarn(ing)?\b", re.IGNORECASE)
NUMBER_RE = re.compile(r"(?<![\w.])\d+(\.\d+)?(?= ?(GB|GiB|MB|s\b|%))")


def line_kind(line: str) -> str:
    head = line[:REGEX_SPAN]
    for word in ERROR_WORDS:
        if word in head:
            return "error"
    for word in MILESTONE_WORDS:
        if word in head:
            return "milestone"
    # case-insensitive: an ASCII line without "warn" in any case cannot match (non-ASCII: the regex decides)
    if (not head.isascii() or "warn" in head.lower()) and WARNING_RE.search(head):
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
