"""GPU memory over time plus the run's milestones, kept for the `g` detail chart (bounded).

One history per host and, inside it, one series per GPU index: every host keeps its own
(`HostModel.history`, what the GPU panel's sparklines draw), and every followed run one per host of its
nodes (`RunSession.histories`, with its milestones), so no view ever mixes two hosts' samples.

A series is a fixed-size ring in two `array`s, not a deque of tuples: 8 bytes a sample (the seconds since
the history's start as a float32, the MiB in use as a uint32) instead of ~100 (a tuple of two floats), so
500 hosts x 8 GPUs x 240 samples hold ~8 MiB, not ~90 (bench/bench_fleet_history.py)."""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from sgtui.ui.views import GpuView

MIB_MAX = 2**32 - 1  # a uint32 cell; no card reports more MiB than this
_V = TypeVar("_V", int, float)


class GpuSeries:
    """One GPU's last `cap` samples, oldest first: (seconds, GiB) pairs as the chart reads them.

    Seconds are float32: a 0.5 s sampling interval stays distinct and in order for the first ~12 days of a
    session (2**20 s, where float32's step is 1/8 s); the MiB are nvidia-smi's integers, exact."""

    __slots__ = ("_head", "_mib", "_t", "cap")

    def __init__(self, cap: int) -> None:
        self.cap = max(1, cap)
        self._t: array[float] = array("f")
        self._mib: array[int] = array("I")
        self._head = 0  # once full, the oldest sample's slot (the next one written)

    def append(self, t: float, used_mib: int) -> None:
        mib = min(max(int(used_mib), 0), MIB_MAX)
        if len(self._t) < self.cap:
            self._t.append(t)
            self._mib.append(mib)
            return
        self._t[self._head] = t
        self._mib[self._head] = mib
        self._head = (self._head + 1) % self.cap

    def _ordered(self, values: array[_V]) -> array[_V]:
        h = self._head
        return values[h:] + values[:h] if h else values[:]

    def times(self) -> list[float]:
        """The samples' seconds since the history's start, oldest first."""
        return self._ordered(self._t).tolist()

    def used_mib(self) -> list[int]:
        return self._ordered(self._mib).tolist()

    def used_gib(self) -> list[float]:
        return [v / 1024 for v in self._ordered(self._mib)]

    def last_time(self) -> float | None:
        if not self._t:
            return None
        return self._t[(self._head - 1) % len(self._t)]

    def resize(self, cap: int) -> None:
        """Keep up to `cap` samples from now on; the newest `cap` of those held stay."""
        cap = max(1, cap)
        t, mib = self._ordered(self._t)[-cap:], self._ordered(self._mib)[-cap:]
        self.cap, self._t, self._mib, self._head = cap, t, mib, 0

    def __len__(self) -> int:
        return len(self._t)

    def __iter__(self) -> Iterator[tuple[float, float]]:
        return zip(self.times(), self.used_gib(), strict=True)


@dataclass
class GpuHistory:
    maxlen: int = 3600
    start: float | None = None
    series: dict[int, GpuSeries] = field(default_factory=dict)
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
            series = self.series.get(gpu.index)
            if series is None:
                series = self.series[gpu.index] = GpuSeries(self.maxlen)
            series.append(x, gpu.used_mib)
            self.totals[gpu.index] = gpu.total_mib / 1024
            self.names[gpu.index] = gpu.name

    def widen(self, maxlen: int) -> None:
        """Keep up to `maxlen` samples per GPU from now on (the deployment host's, for the `g` chart)."""
        if maxlen > self.maxlen:
            self.maxlen = maxlen
            for series in self.series.values():
                series.resize(maxlen)

    def used_gib(self, index: int) -> list[float]:
        """GPU `index`'s memory in use, oldest sample first (GiB)."""
        series = self.series.get(index)
        return series.used_gib() if series is not None else []

    def last_time(self) -> float:
        """The newest sample's seconds since the start over every GPU (0.0 before any)."""
        return max((s.last_time() or 0.0 for s in self.series.values()), default=0.0)

    def mark(self, t: float, label: str) -> None:
        self.marks.append((self._rel(t), label))
