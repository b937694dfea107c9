"""The log view's cheap paths give exactly what the full paths give: the row a one-style line gets is the
row rich's Text renders for it, a line's kind is what the original regexes say, a printable line is clean
as it is, and the store keeps what `clip` makes."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.style import Style

from sgtui.core.logs.prefix import strip_controls
from sgtui.ui.logtext import clean_line, strip_ansi
from sgtui.ui.widgets.log_rows import one_style_row, rich_row
from sgtui.ui.widgets.log_store import MAX_LINE, LineStore, clip
from sgtui.ui.widgets.run_log import REGEX_SPAN, LogHighlighter, line_kind

ROOT = Path(__file__).resolve().parents[2]
# the rules as first written: alternations searched on every row
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
TRICKY = [
    "",
    "plain text",
    "WARNİNG with a dotted capital I",
    "ᴡarn in small capitals, warn in a word: forewarned",
    "warn",
    "a Warning: here",
    "x" * (REGEX_SPAN - 3) + "Error just past the span",
    "Load weight begin, elapsed 3.2 s",
    "[ERROR] a bracketed error",
    "bell\x07 and form feed\x0c kept out, 中文 wide",
    "a\ttab",
    "sigquit",
]


def original_kind(line: str) -> str:
    head = line[:REGEX_SPAN]
    if ERROR_RE.search(head):
        return "error"
    if MILESTONE_RE.search(head):
        return "milestone"
    if WARNING_RE.search(head):
        return "warning"
    return "plain"


def made_lines() -> list[str]:
    """Every word of the rules in a line, in other cases too, and near misses."""
    out = []
    for word in (*ERROR_RE.pattern.split("|"), "Load weight begin", "Init torch distributed end", "warning"):
        word = word.replace("\\", "")
        for form in (word, word.lower(), word.upper(), word[:-1], f"[2026-01-01 10:00:00 TP0] x {word}: y"):
            out.append(form)
    return out


def log_lines() -> list[str]:
    """The fixture logs, ../shared/logs when it is there, and made-up lines (enough without ../shared)."""
    files = sorted((ROOT / "tests" / "fixtures" / "logs").glob("*.log"))
    shared = ROOT.parent / "shared" / "logs"
    files += sorted(shared.glob("*.log")) if shared.is_dir() else []
    lines = [line for f in files for line in f.read_text(encoding="utf-8", errors="replace").splitlines()]
    return lines + TRICKY + made_lines()


def test_a_line_s_kind_is_what_the_original_regexes_say() -> None:
    lines = log_lines()
    assert len(lines) > 100
    assert [line_kind(line) for line in lines] == [original_kind(line) for line in lines]
    kinds = {line_kind(line) for line in lines}
    assert kinds == {"plain", "warning", "error", "milestone"}


@pytest.mark.parametrize("style", [Style(), Style(color="white", bgcolor="#101010"), Style(bold=True)])
def test_a_one_style_row_is_the_row_rich_renders(style: Style) -> None:
    console = Console()
    highlighter = LogHighlighter()
    shown = 0
    for line in log_lines():
        row = one_style_row(line, style)
        if row is None:
            assert line == "" or line_kind(line) == "milestone"
            continue
        full = rich_row(line, style, console, highlighter, [], False)
        assert list(row) == list(full), line
        assert row.cell_length == full.cell_length
        shown += 1
    assert shown > 100


def full_clean(line: str) -> str:
    """clean_line without its shortcut for printable lines."""
    text = strip_ansi(line)
    if "\r" in text:
        parts = [p for p in text.split("\r") if p]
        text = parts[-1] if parts else ""
    return strip_controls(text)


def test_a_printable_line_is_clean_as_it_is_and_every_line_cleans_as_before() -> None:
    rng = random.Random(3)
    alphabet = [
        "a",
        " ",
        "\t",
        "\r",
        "\x1b[31m",
        "\x1b]0;t\x07",
        "\x07",
        "\x7f",
        "\x9b1m",
        "\u2028",
        "é",
        "中",
        "\x00",
    ]
    lines = log_lines() + [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(2000)
    ]
    assert [clean_line(line) for line in lines] == [full_clean(line) for line in lines]


def test_the_store_keeps_lines_as_clip_makes_them() -> None:
    lines = ["plain", "a\ttab", "x" * (MAX_LINE + 5), ""]
    for batch in (lines, lines[:1], lines[2:], iter(lines)):
        store = LineStore(100)
        want = [clip(line) for line in (lines if not isinstance(batch, list) else batch)]
        store.append(batch)
        assert store.lines == want
        assert store.widest == max(len(line) for line in want)
