"""The footer: the live bindings, as Textual's; when they do not all fit (an 80-column terminal after a
failure, with `a fix` and the log's own keys shown), they are put in the order that matters: the run
actions, then `? help` and `q quit`, then the rest, so the ones cut off are those `?` lists anyway. When
they fit, the order is the bindings' own."""

from __future__ import annotations

from collections.abc import Iterator

from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

FIRST = ("launch", "stop", "restart", "apply")
THEN = ("help", "quit")


def _rank(widget: Widget) -> int:
    action = str(getattr(widget, "action", ""))
    return 0 if action in FIRST else 1 if action in THEN else 2


def _width(widgets: list[Widget]) -> int:
    """Columns the keys take in the compact style: "k description" and a one-column margin each."""
    keys = [w for w in widgets if isinstance(w, FooterKey)]
    return sum(len(k.key_display) + 1 + len(k.description) + 1 for k in keys)


class SgtuiFooter(Footer):
    def compose(self) -> Iterator[Widget]:  # type: ignore[override]
        keys = list(super().compose())
        if _width(keys) <= self.app.size.width:
            yield from keys
            return
        yield from sorted(keys, key=_rank)  # stable: each group keeps the bindings' order
