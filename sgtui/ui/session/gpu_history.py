"""GPU memory over time plus the run's milestones, kept for the `g` detail chart (bounded)."""

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

    def mark(self, t: float, label: str) -> None:
        self.marks.append((self._rel(t), label))
