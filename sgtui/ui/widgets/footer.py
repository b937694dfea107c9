"""The footer: the live bindings, as Textual's; on a narrow terminal (under 100 columns) the keys are put
in the order that matters when not all of them fit: the run actions, then `? help` and `q quit`, then the
rest, so the last ones cut off are the ones `?` lists anyway."""

from __future__ import annotations

from collections.abc import Iterator

from textual.widget import Widget
from textual.widgets import Footer

NARROW = 100
FIRST = ("launch", "stop", "restart", "apply")
THEN = ("help", "quit")


def _rank(widget: Widget) -> int:
    action = str(getattr(widget, "action", ""))
    return 0 if action in FIRST else 1 if action in THEN else 2


class SgtuiFooter(Footer):
    def compose(self) -> Iterator[Widget]:  # type: ignore[override]
        keys = list(super().compose())
        if self.app.size.width >= NARROW:
            yield from keys
            return
        yield from sorted(keys, key=_rank)  # stable: each group keeps the bindings' order
