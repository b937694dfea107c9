"""Per-GPU memory: a fixed-scale sparkline, used/total, utilisation, and who holds the memory.

The sparklines draw the shown host's own `GpuHistory` (one series per GPU index), so after the followed
run switches to another host they show that host's samples only."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from sgtui.ui.session.gpu_history import GpuHistory
from sgtui.ui.views import GpuView
from sgtui.ui.widgets.gpu_sparkline import FixedSparkline, level_style


def gib(mib: float) -> str:
    return f"{mib / 1024:.1f}"


def usage_text(gpu: GpuView) -> Text:
    if gpu.note:
        return Text(gpu.note, style="dim")
    frac = gpu.used_mib / gpu.total_mib if gpu.total_mib else 0.0
    text = Text()
    text.append(f"{gib(gpu.used_mib):>5}", style=level_style(frac))
    text.append(f"/{gib(gpu.total_mib)} GiB")
    if gpu.util_pct is not None:
        text.append(f" util {gpu.util_pct:>3}%", style="dim")
    return text


def problem_text(gpus: list[GpuView]) -> Text | None:
    """A host whose GPUs cannot be read at all (index -1): one line with the named state and what to do."""
    if not gpus or any(g.index >= 0 for g in gpus):
        return None
    text = Text("GPUs: ", style="bold")
    text.append(gpus[0].note or "not readable", style="yellow")
    return text


def age_text(age_s: float | None, stale: bool) -> Text:
    if age_s is None or not stale:
        return Text()
    return Text(f"stale: last sample {age_s:.0f} s ago · ", style="bold yellow")


def holders_text(gpus: list[GpuView]) -> Text:
    """One line naming each process holding memory: the thing to look at when a card is not freed."""
    parts: list[str] = []
    for gpu in gpus:
        for proc in gpu.processes:
            where = f"@{proc.container}" if proc.container else ""
            used = "N/A" if proc.used_mib is None else f"{gib(proc.used_mib)}G"  # [N/A] is not zero
            parts.append(f"{gpu.index}:{proc.name}[{proc.pid}]{where} {used}")
    if not parts:
        return Text("no processes hold GPU memory", style="dim")
    return Text("holders: " + ", ".join(parts), overflow="ellipsis", no_wrap=True)


class GpuRow(Horizontal):
    DEFAULT_CSS = """
    GpuRow { height: 1; }
    GpuRow > .gpu-label { width: 12; }
    GpuRow > .gpu-usage { width: 26; padding-left: 1; }
    """

    def __init__(self, gpu: GpuView) -> None:
        super().__init__(id=f"gpu-row-{gpu.index}")
        self.gpu = gpu
        self.spark = FixedSparkline(gpu.total_mib, id=f"gpu-spark-{gpu.index}")
        self.usage = Static(usage_text(gpu), classes="gpu-usage")

    def compose(self) -> ComposeResult:
        label = "GPUs" if self.gpu.index < 0 else f"GPU{self.gpu.index} {short_name(self.gpu.name)}"
        yield Static(Text(label), classes="gpu-label")  # index -1: the host could not be read at all
        yield self.spark
        yield self.usage

    def update_gpu(self, gpu: GpuView, history: GpuHistory | None = None) -> None:
        """`history`: the host's own samples, this one included; without it the row keeps its own."""
        self.gpu = gpu
        if history is not None:
            self.spark.show(history.used_gib(gpu.index), gpu.total_mib / 1024)
        else:
            self.spark.push(gpu.used_mib, gpu.total_mib)
        self.usage.update(usage_text(gpu), layout=False)


def short_name(name: str) -> str:
    for prefix in ("NVIDIA ", "GeForce "):
        name = name.removeprefix(prefix)
    return name.replace("RTX ", "")[:7]


class GpuPanel(Vertical):
    """Rows appear when the first sample arrives; the shape follows the host's GPU count."""

    DEFAULT_CSS = """
    GpuPanel { height: auto; max-height: 10; }
    GpuPanel > #gpu-holders { height: 1; }
    GpuPanel > #gpu-empty { height: auto; max-height: 3; }
    GpuPanel.-stale GpuRow { opacity: 60%; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._rows: dict[int, GpuRow] = {}
        self.latest: list[GpuView] = []
        self.age_s: float | None = None
        self.stale = False

    def compose(self) -> ComposeResult:
        yield Static(Text("no GPU samples yet: pick a host", style="dim"), id="gpu-empty")
        yield Static("", id="gpu-holders")

    def show(self, gpus: list[GpuView], history: GpuHistory | None = None) -> None:
        """The host's newest sample; `history`, its own `GpuHistory`, is what the sparklines draw."""
        self.latest = gpus
        problem = problem_text(gpus)
        rows = [] if problem is not None else gpus
        if sorted(self._rows) != sorted(g.index for g in rows):
            for row in self._rows.values():
                row.remove()
            self._rows = {g.index: GpuRow(g) for g in rows}
            self.mount_all(self._rows.values(), before="#gpu-holders")
        empty = self.query_one("#gpu-empty", Static)
        empty.display = not rows
        if problem is not None:
            empty.update(problem)
        for gpu in rows:
            self._rows[gpu.index].update_gpu(gpu, history)
        self.stale = False
        self._draw_holders()

    def set_age(self, age_s: float | None, stale: bool) -> None:
        """How old the last sample is; a stale panel is dimmed and says so (it recovers by itself)."""
        changed = stale != self.stale
        self.age_s, self.stale = age_s, stale
        self.set_class(stale, "-stale")
        if changed or stale:
            self._draw_holders()

    def _draw_holders(self) -> None:
        holders = self.query_one("#gpu-holders", Static)
        rows = [g for g in self.latest if g.index >= 0]
        holders.display = bool(rows)
        if rows:
            text = age_text(self.age_s, self.stale)
            text.append_text(holders_text(rows))
            holders.update(text, layout=False)
