"""The serving state of one run: the shapes every reader fills and every view renders.

A `ServingSnapshot` is one reading of the engine's numbers, from `/metrics` (source "metrics") or from
SGLang's own "Decode batch" / "Prefill batch" log lines (source "log"); a number the source does not give
is None, never 0. `at` is the reader's monotonic clock when the numbers were true, so every view can say
their age. `ServingStatus` is `sgtui status`'s object (DESIGN.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Source = Literal["metrics", "log"]
HealthWord = Literal["ready", "starting", "unhealthy", "orphaned-http", "stopped", "unknown"]


@dataclass(frozen=True)
class Percentiles:
    """p50 and p99 of a latency over the last window, in milliseconds (None: no samples)."""

    p50: float | None = None
    p99: float | None = None

    def to_json(self) -> dict[str, float | None]:
        return {"p50": _r(self.p50), "p99": _r(self.p99)}


@dataclass(frozen=True)
class ServingSnapshot:
    """One reading of a server's serving numbers; None for what its source does not give."""

    source: Source
    at: float  # monotonic seconds when the numbers were read
    gen_tokens_per_s: float | None = None
    prompt_tokens_per_s: float | None = None
    running: int | None = None
    queued: int | None = None
    kv_usage: float | None = None  # 0..1 of the KV pool's tokens in use
    cache_hit_rate: float | None = None  # 0..1 of prompt tokens served from the prefix cache
    ttft_ms: Percentiles = field(default_factory=Percentiles)
    itl_ms: Percentiles = field(default_factory=Percentiles)
    e2e_ms: Percentiles = field(default_factory=Percentiles)
    spec_accept_length: float | None = None
    retracted: int | None = None  # requests SGLang retracted ("KV cache pool is full. Retract requests")

    def age_s(self, now: float) -> float:
        return max(0.0, now - self.at)

    def to_json(self, now: float) -> dict[str, Any]:
        """The `metrics` object of `sgtui status --json` (DESIGN.md)."""
        return {
            "source": self.source,
            "age_s": round(self.age_s(now), 1),
            "gen_tokens_per_s": _r(self.gen_tokens_per_s),
            "prompt_tokens_per_s": _r(self.prompt_tokens_per_s),
            "running": self.running,
            "queued": self.queued,
            "kv_usage": _r(self.kv_usage),
            "cache_hit_rate": _r(self.cache_hit_rate),
            "ttft_ms": self.ttft_ms.to_json(),
            "itl_ms": self.itl_ms.to_json(),
            "e2e_ms": self.e2e_ms.to_json(),
            "spec_accept_length": _r(self.spec_accept_length),
        }


@dataclass(frozen=True)
class SmokeResult:
    """One short real completion after ready: it answered in `seconds`, or `error` says why not."""

    ok: bool
    seconds: float | None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "seconds": _r(self.seconds), "error": self.error}


@dataclass(frozen=True)
class ServingStatus:
    """`sgtui status RUN --json`: health with its reason, each endpoint's answer, the smoke request and
    the latest serving snapshot."""

    id: str
    health: HealthWord
    reason: str = ""
    endpoints: dict[str, str] = field(default_factory=dict)  # "/health" -> "200", "timeout", ...
    smoke: SmokeResult | None = None
    metrics: ServingSnapshot | None = None

    def to_json(self, now: float) -> dict[str, Any]:
        return {
            "id": self.id,
            "health": self.health,
            "reason": self.reason,
            "endpoints": dict(self.endpoints),
            "smoke": self.smoke.to_json() if self.smoke else None,
            "metrics": self.metrics.to_json(now) if self.metrics else None,
        }


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)
