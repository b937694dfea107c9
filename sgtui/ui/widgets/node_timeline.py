"""A multi-node run's startup, one line per node: which milestones each node (and its ranks) reached."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from sgtui.ui.views import TimelineView
from sgtui.ui.widgets.timeline import PHASE_STYLE, elapsed

SHORT = {
    "loading weights": "load",
    "weights loaded": "weights",
    "Mamba cache": "mamba",
    "KV cache": "KV",
    "CUDA graphs": "graphs",
    "ready": "ready",
}


def node_timeline_text(nodes: list[tuple[int, str, TimelineView]]) -> Text:
    text = Text()
    text.append("Nodes\n", style="bold")
    for rank, host, view in nodes:
        text.append(f"n{rank} ", style="bold")
        text.append(Text(host[:12]))  # a host name is outside text: never markup
        text.append(" ")
        text.append(view.phase, style=PHASE_STYLE.get(view.phase, "cyan"))
        if view.elapsed_s is not None:
            text.append(f" {elapsed(view.elapsed_s)}", style="dim")
        text.append("\n   ")
        for m in view.milestones:
            if rank > 0 and m.kind == "ready":  # only node 0 serves HTTP; a worker is done at its graphs
                continue
            style = "green" if m.done else "dim"
            text.append(("✓" if m.done else "·") + SHORT.get(m.label, m.label) + " ", style=style)
        text.append("\n")
    return text


class NodeTimeline(Static):
    """Hidden for a single-node run; the Timeline below shows node 0 in full."""

    DEFAULT_CSS = """
    NodeTimeline { height: auto; margin-bottom: 1; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__("", **kwargs)  # type: ignore[arg-type]
        self.nodes: list[tuple[int, str, TimelineView]] = []

    def on_mount(self) -> None:
        self.display = False

    def show(self, nodes: list[tuple[int, str, TimelineView]]) -> None:
        self.nodes = nodes
        self.display = bool(nodes)
        if nodes:
            self.update(node_timeline_text(nodes))
