"""A sparkline on a fixed 0..total scale.

Textual's Sparkline rescales to the data's own min..max, so 30 GiB of 48 and 47 GiB of 48 can look alike.
GPU memory must be read against the card's capacity, hence this widget.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from rich.text import Text
from textual.widget import Widget

BARS = " ▁▂▃▄▅▆▇█"


def bar_for(value: float, total: float) -> str:
    """The block character for `value` on a 0..total scale; any non-zero value shows at least ▁."""
    if total <= 0 or value <= 0:
        return BARS[0]
    frac = min(value / total, 1.0)
    idx = max(1, round(frac * (len(BARS) - 1)))
    return BARS[idx]


def level_style(frac: float) -> str:
    if frac >= 0.95:
        return "bold red"
    if frac >= 0.80:
        return "yellow"
    return "green"


def sparkline_text(values: Iterable[float], total: float, width: int) -> Text:
    """The last `width` values, right-aligned, each coloured by how full the card was."""
    tail = list(values)[-width:] if width > 0 else []
    text = Text(" " * (width - len(tail)))
    for v in tail:
        frac = v / total if total > 0 else 0.0
        text.append(bar_for(v, total), style=level_style(frac))
    return text


class FixedSparkline(Widget):
    """Memory history of one GPU, newest sample on the right: `show` draws a history kept elsewhere
    (the host's own, `GpuHistory`), `push` one it keeps itself."""

    DEFAULT_CSS = """
    FixedSparkline { height: 1; width: 1fr; }
    """

    def __init__(self, total: float, history: int = 240, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.total = total
        self._values: deque[float] = deque(maxlen=history)

    @property
    def values(self) -> list[float]:
        return list(self._values)

    def show(self, values: Iterable[float], total: float) -> None:
        """Draw exactly `values` (oldest first) on a 0..total scale: what was drawn before is dropped."""
        self._values.clear()
        self._values.extend(values)
        if total > 0:
            self.total = total
        self.refresh()

    def push(self, value: float, total: float | None = None) -> None:
        if total is not None and total > 0:
            self.total = total
        self._values.append(value)
        self.refresh()

    def render(self) -> Text:
        return sparkline_text(self._values, self.total, self.size.width)
