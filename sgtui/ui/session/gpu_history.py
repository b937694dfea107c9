"""GPU memory over time plus the run's milestones, kept for the `g` detail chart (bounded).

One history per host and, inside it, one series per GPU index: every host keeps its own
(`HostModel.history`, what the GPU panel's sparklines draw), and every followed run one per host of its
nodes (`RunSession.histories`, with its milestones), so no view ever mixes two hosts' samples."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from sgtui.ui.views import GpuView


@dataclass
class GpuHistory:
    maxlen: int = 3600
    start: float | None = None
    series: dict[int, deque[tuple[float, float]]] = field(default_factory=dict)
    totals: dict[int, float] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    marks: deque[tuple[float, str]] = field(default_factory=lambda: deque(maxlen=200))

    def _rel(self, t: float) -> float:
        if self.start is None:
            self.start = t
        return t - self.start

    def add(self, t: float, gpus: list[GpuView]) -> None:
        x = self._rel(t)
        for gpu in gpus:
            if gpu.note:
                continue
            self.series.setdefault(gpu.index, deque(maxlen=self.maxlen)).append((x, gpu.used_mib / 1024))
            self.totals[gpu.index] = gpu.total_mib / 1024
            self.names[gpu.index] = gpu.name

    def widen(self, maxlen: int) -> None:
        """Keep up to `maxlen` samples per GPU from now on (the deployment host's, for the `g` chart)."""
        if maxlen > self.maxlen:
            self.maxlen = maxlen
            self.series = {i: deque(s, maxlen=maxlen) for i, s in self.series.items()}

    def used_gib(self, index: int) -> list[float]:
        """GPU `index`'s memory in use, oldest sample first (GiB)."""
        return [v for _, v in self.series.get(index, ())]

    def mark(self, t: float, label: str) -> None:
        self.marks.append((self._rel(t), label))
