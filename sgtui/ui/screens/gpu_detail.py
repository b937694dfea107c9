"""`g`: each GPU's memory over the session, the run's milestones on the time axis, the fit's budget."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual_plotext import PlotextPlot

from sgtui.ui.gpu_history import GpuHistory

SHORT_MARK = {  # the milestones worth a line on the chart, and their labels
    "launch": "launch",
    "load_weight_begin": "load",
    "kv_cache_allocated": "KV",
    "cuda_graph_end": "graphs",
    "ready": "ready",
    "failed": "failed",
}


def static_budget_gib(report: dict[str, Any] | None) -> float | None:
    """SGLang reserves total × mem_fraction_static for weights and pools: the line the chart compares to."""
    if not report:
        return None
    total, frac = report.get("gpu_total_gib"), report.get("mem_fraction_static")
    if isinstance(total, int | float) and isinstance(frac, int | float):
        return float(total) * float(frac)
    return None


class GpuDetailScreen(Screen[None]):
    BINDINGS = [Binding("escape,g,q", "app.pop_screen", "back", id="gpu-back")]
    DEFAULT_CSS = """
    GpuDetailScreen > #gpu-detail-caption { height: auto; padding: 0 1; }
    GpuDetailScreen > PlotextPlot { height: 1fr; }
    """

    def __init__(self, history: GpuHistory, report: dict[str, Any] | None) -> None:
        super().__init__()
        self.history = history
        self.report = report

    def compose(self) -> ComposeResult:
        budget = static_budget_gib(self.report)
        caption = "GPU memory (GiB) over this session; vertical lines are the run's milestones"
        if budget is not None:
            caption += f"; the flat line is the predicted static budget ({budget:.1f} GiB)"
        yield Static(caption, id="gpu-detail-caption")
        yield PlotextPlot(id="gpu-chart")
        yield Footer()

    def on_mount(self) -> None:
        self.draw()

    def draw(self) -> None:
        plt = self.query_one(PlotextPlot).plt
        plt.clear_data()
        plt.clear_figure()
        h = self.history
        top = max(h.totals.values(), default=1.0)
        for idx, points in sorted(h.series.items()):
            if points:
                plt.plot([p[0] for p in points], [p[1] for p in points], label=f"GPU{idx}", marker="braille")
        budget = static_budget_gib(self.report)
        if budget is not None:
            plt.hline(budget, "red")
        for x, label in h.marks:
            if label in SHORT_MARK:
                plt.vline(x, "red" if label == "failed" else "yellow")
                plt.text(SHORT_MARK[label], x=x, y=top * 0.97, color="yellow")
        plt.ylim(0, top)
        plt.xlabel("seconds")
        plt.ylabel("GiB")
        if not h.series:
            plt.title("no GPU samples yet")
        self.query_one(PlotextPlot).refresh()
