"""`g`: each GPU's memory over the session, the run's milestones on the time axis, the fit's budget."""

from __future__ import annotations

from typing import Any

from rich.console import RenderResult
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual_plotext import PlotextPlot
from textual_plotext.plotext_plot import _themes

from sgtui.ui.session.gpu_history import GpuHistory

ANSI_SERIES = ("cyan", "green", "magenta", "blue", "white", "yellow", "red")

SHORT_MARK = {  # the milestones worth a line on the chart, and their labels
    "launch": "launch",
    "load_weight_begin": "load",
    "kv_cache_allocated": "KV",
    "cuda_graph_end": "graphs",
    "ready": "ready",
    "failed": "failed",
}
LABEL_ROWS = 4  # milestone names stack at most this deep below the top; the rest keep only their line
LEGEND_COLS = 9  # plotext's legend ("⢕⢕ GPU0") in the top-left corner, one row per GPU


def static_budget_gib(report: dict[str, Any] | None) -> float | None:
    """SGLang reserves total × mem_fraction_static for weights and pools: the line the chart compares to."""
    if not report:
        return None
    total, frac = report.get("gpu_total_gib"), report.get("mem_fraction_static")
    if isinstance(total, int | float) and isinstance(frac, int | float):
        return float(total) * float(frac)
    return None


def place_labels(
    marks: list[tuple[float, str]],
    x_max: float,
    cols: int,
    *,
    legend_rows: int = 0,
    max_rows: int = LABEL_ROWS,
) -> list[tuple[int, int, str]]:
    """(column, row, label) for each milestone name that fits: a name goes on the first row from the
    top where it overlaps no other name (nor the legend), starting at its line's column, shifted left at
    the right edge. Milestones seconds apart (launch, load) otherwise print over each other."""
    taken: dict[int, list[tuple[int, int]]] = {row: [(0, LEGEND_COLS)] for row in range(legend_rows)}
    placed: list[tuple[int, int, str]] = []
    for x, label in marks:
        col = round(x / x_max * (cols - 1)) if x_max > 0 else 0
        start = max(0, min(col, cols - len(label)))
        end = start + len(label) + 1  # a blank after each name keeps neighbours apart
        for row in range(max_rows):
            if all(end <= a or start >= b for a, b in taken.get(row, [])):
                taken.setdefault(row, []).append((start, end))
                placed.append((start, row, label))
                break
    return placed


def is_ansi_theme(name: str, variables: dict[str, str]) -> bool:
    foreground = variables.get("foreground", "")
    return name.startswith("ansi") or name == "textual-ansi" or foreground.startswith("ansi")


class GpuChart(PlotextPlot):
    """Draws at render time: where the milestone names go depends on the chart's size in cells.

    In an ANSI theme (tmux without truecolor) textual-plotext's automatic theme comes out black on black:
    the chart then uses the terminal's own default colours for canvas, axes and labels instead."""

    def __init__(self, history: GpuHistory, report: dict[str, Any] | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.history = history
        self.report = report

    def render(self) -> RenderResult:
        self.draw(self.size.width, self.size.height)
        return super().render()

    def _register_theme(self, app_theme_name: str) -> None:
        if self.theme == "auto" and is_ansi_theme(app_theme_name, self.app.theme_variables):
            name = self._get_plotext_theme_name(app_theme_name)
            _themes[name] = ("default", "default", "default", "default", list(ANSI_SERIES))
            self.refresh()
            return
        super()._register_theme(app_theme_name)

    def draw(self, width: int, height: int) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        h = self.history
        top = max(h.totals.values(), default=1.0)
        x_max = max([h.last_time()] + [x for x, _ in h.marks] + [1.0])
        for idx, series in sorted(h.series.items()):
            if series:
                plt.plot(series.times(), series.used_gib(), label=f"GPU{idx}", marker="braille")
        budget = static_budget_gib(self.report)
        if budget is not None:
            plt.hline(budget, "red")
        marks = [(x, label) for x, label in h.marks if label in SHORT_MARK]
        for x, label in marks:
            plt.vline(x, "red" if label == "failed" else "yellow")
        # the plot area: the y tick labels, the tick mark and the two borders take the sides; the
        # borders, the x ticks and the x label take four rows
        cols = max(1, width - len(f"{top:.1f}") - 2)
        rows = max(1, height - 4)
        named = [(x, SHORT_MARK[label]) for x, label in marks]
        for col, row, name in place_labels(named, x_max, cols, legend_rows=len(h.series)):
            x = col / max(1, cols - 1) * x_max
            y = top - (row + 0.5) * top / rows
            plt.text(name, x=x, y=y, color="yellow", alignment="left")
        plt.xlim(0, x_max)
        plt.ylim(0, top)
        plt.xlabel("seconds")
        plt.ylabel("GiB")
        if not h.series:
            plt.title("no GPU samples yet")


class GpuDetailScreen(Screen[None]):
    BINDINGS = [Binding("escape,g,q", "app.pop_screen", "back", id="gpu-back")]
    DEFAULT_CSS = """
    GpuDetailScreen > #gpu-detail-caption { height: auto; padding: 0 1; }
    GpuDetailScreen > GpuChart { height: 1fr; }
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
        yield GpuChart(self.history, self.report, id="gpu-chart")
        yield Footer()
