"""One followed run's serving state: its recent snapshots (metrics or log), the smoke request, the load
probe in flight and the last report. `RunSession.serving` holds one; the serving panel renders it, the
runs table and the fleet rows read `tokens_text()`.

Scales are fixed so a glance compares moments: tokens/s against the highest seen (rounded up to a round
number, never shrinking), running and queued against the run's max_running_requests (as its log says, else as
the fit predicted, else the highest seen), KV usage against 0-100%."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sgtui.core.serving.bench import BenchReport
from sgtui.core.serving.history import ServingHistory, ServingWarning
from sgtui.core.serving.loglines import LogServingReader
from sgtui.core.serving.state import ServingSnapshot, SmokeResult

LOG_FALLBACK_S = 5.0  # log numbers stand in once the metrics have been silent this long


def round_up(x: float) -> float:
    """The next 1, 2 or 5 x 10^n at or above x (at least 10): a tokens/s scale that reads well."""
    if x <= 10:
        return 10.0
    base = 10 ** math.floor(math.log10(x))
    for step in (1, 2, 5, 10):
        if step * base >= x:
            return float(step * base)
    return float(10 * base)


@dataclass
class BenchState:
    running: bool = False
    done: int = 0
    total: int = 0
    error: str | None = None


class ServingState:
    def __init__(self) -> None:
        self.history = ServingHistory()
        self.log_reader = LogServingReader()
        self.smoke: SmokeResult | None = None
        self.smoke_asked = False
        self.note: str | None = None  # why there are no metrics ("launched without --enable-metrics")
        self.bench = BenchState()
        self.report: BenchReport | None = None
        self.tokens_scale = 10.0
        self.last_metrics_at: float | None = None
        self.warned: set[str] = set()  # the warning codes already notified

    @property
    def latest(self) -> ServingSnapshot | None:
        return self.history.latest

    @property
    def shown(self) -> bool:
        """Anything to show: a snapshot, the smoke answer, a probe running or its report."""
        return bool(self.history.snapshots or self.smoke or self.bench.running or self.report)

    def add(self, snap: ServingSnapshot) -> None:
        if snap.source == "metrics":
            self.last_metrics_at = snap.at
        self.history.add(snap)
        if snap.gen_tokens_per_s is not None:
            self.tokens_scale = max(self.tokens_scale, round_up(snap.gen_tokens_per_s))

    def feed_log(self, lines: list[str], at: float) -> None:
        """Batch lines of a ready run: the numbers when metrics are off (or silent a while)."""
        snap = self.log_reader.feed(lines, at)
        stale = self.last_metrics_at is None or at - self.last_metrics_at > LOG_FALLBACK_S
        if snap is not None and stale and snap != self.latest:
            self.add(snap)

    def warnings(self) -> list[ServingWarning]:
        return self.history.warnings()

    def tokens_text(self) -> str:
        """ "312 tok/s" for a runs row or a fleet row; "" when unknown."""
        snap = self.latest
        if snap is None or snap.gen_tokens_per_s is None:
            return ""
        return f"{snap.gen_tokens_per_s:,.0f} tok/s"

    def requests_scale(self, mrr: Any) -> int:
        """The run's max_running_requests (as its log says, else as predicted), or the most seen."""
        seen = max((max(s.running or 0, s.queued or 0) for s in self.history.snapshots), default=0)
        return max(int(mrr) if isinstance(mrr, (int, float)) and mrr > 0 else 0, seen, 1)
