"""One row of the log view as a Strip, for `LogView._line_strip` (which caches it per line and piece).

Most rows have one style from end to end (a plain, warning or error line with no search match and no cursor
on it); they are built as one Segment, exactly what rich's Text would render for them, without Text's span
machinery (a Text, its styles and `render` cost several times the row's other work under a flood). Rows with
styles inside the line (a milestone's numbers, search matches, the cursor) or wrapped pieces go through Text.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console
from rich.control import strip_control_codes
from rich.highlighter import Highlighter
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from sgtui.ui.widgets.run_log import LogHighlighter, line_kind

MATCH_STYLE = Style(reverse=True, bold=True)  # reverse works in every theme, ANSI included
CURSOR_STYLE = Style(underline=True, bold=True)
KIND_STYLES = {kind: Style.parse(style) for kind, style in LogHighlighter.STYLES.items()}


def one_style_row(line: str, rich_style: Style) -> Strip | None:
    """The row of a line drawn in one style (its kind's), or None when the line has styles inside it."""
    if not line:
        return None
    kind = line_kind(line)
    if kind == "milestone":
        return None
    style = rich_style if kind == "plain" else rich_style + KIND_STYLES[kind]
    text = strip_control_codes(line)  # as Text does, which also leaves a null style off
    return Strip([Segment(text, style or None)], cell_len(text))


def rich_row(
    line: str,
    rich_style: Style,
    console: Console,
    highlighter: Highlighter,
    spans: list[tuple[int, int]],
    cursor: bool,
    wrap_width: int = 0,
    piece: int = 0,
) -> Strip:
    text = Text(line, no_wrap=True, end="")
    text.stylize(rich_style)
    highlighter.highlight(text)
    for start, end in spans:
        text.stylize(MATCH_STYLE, start, end)
    if cursor:
        text.stylize(CURSOR_STYLE)
    if wrap_width:
        text = text[piece * wrap_width : (piece + 1) * wrap_width]
    segments = [Segment(s.text, s.style) for s in text.render(console)]
    return Strip(segments, text.cell_len)
