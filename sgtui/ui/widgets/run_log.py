"""How a log line is coloured: errors, warnings and startup milestones (with their numbers).

The log view (`log_view.py`) highlights only the lines on screen and only their first REGEX_SPAN
characters, so a 1 MB line of tensor dump costs the same as a short one.
"""

from __future__ import annotations

import re

from rich.highlighter import Highlighter
from rich.text import Text

REGEX_SPAN = 400
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
