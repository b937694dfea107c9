"""A load probe's report: the `sgtui bench --json` object (DESIGN.md), from SGLang's own
`sglang.bench_serving` output or from the built-in client's per-request timings.

bench_serving (`sglang/benchmark/serving.py` in 0.5.23, `sglang/bench_serving.py` before; the old
module path still runs it) appends one JSON line to `--output-file` with `completed`, `duration`,
`request_throughput`, `input_throughput`, `output_throughput`, `median_/p99_ttft_ms`, `median_/p99_itl_ms`,
`median_/p99_e2e_latency_ms` (and `total_input_tokens`, `total_output_tokens`, `max_concurrency`, ...).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sgtui.core.errors import UserError
from sgtui.core.serving.state import Percentiles

BENCH_LIMITS = {
    "requests": (1, 2000),
    "concurrency": (1, 256),
    "input_len": (1, 32768),
    "output_len": (1, 8192),
}


def check_bench_args(requests: int, concurrency: int, input_len: int, output_len: int) -> None:
    """Bounded load only: each figure within its range, else a UserError naming the flag."""
    for name, value in (
        ("requests", requests),
        ("concurrency", concurrency),
        ("input_len", input_len),
        ("output_len", output_len),
    ):
        low, high = BENCH_LIMITS[name]
        if not low <= value <= high:
            flag = "--" + name.replace("_", "-")
            raise UserError(f"{flag} {value}: use {low}..{high} (a load probe is bounded)")


def percentile(values: Sequence[float], q: float) -> float | None:
    """numpy's default (linear) percentile, q in 0..100, as bench_serving computes its figures."""
    if not values:
        return None
    xs = sorted(values)
    k = (len(xs) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def pct(values_ms: Sequence[float]) -> Percentiles:
    return Percentiles(percentile(values_ms, 50), percentile(values_ms, 99))


@dataclass(frozen=True)
class RequestTiming:
    """One request of the built-in client: ok, prompt and output tokens, TTFT, the gaps between
    streamed chunks and the end-to-end time (seconds)."""

    ok: bool
    input_tokens: int = 0
    output_tokens: int = 0
    ttft: float | None = None
    itls: tuple[float, ...] = ()
    e2e: float | None = None
    error: str | None = None


@dataclass
class BenchReport:
    tool: str  # "sglang.bench_serving" | "sgtui"
    requests: int
    completed: int
    failed: int
    duration_s: float
    request_throughput: float | None
    input_tokens_per_s: float | None
    output_tokens_per_s: float | None
    ttft_ms: Percentiles = field(default_factory=Percentiles)
    itl_ms: Percentiles = field(default_factory=Percentiles)
    e2e_ms: Percentiles = field(default_factory=Percentiles)
    report_path: str | None = None
    concurrency: int | None = None
    started: str | None = None  # UTC, ISO 8601
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.completed == self.requests and self.failed == 0

    def to_json(self) -> dict[str, Any]:
        """The `sgtui bench --json` contract (DESIGN.md), in its order."""
        r = _round
        return {
            "tool": self.tool,
            "requests": self.requests,
            "completed": self.completed,
            "failed": self.failed,
            "duration_s": r(self.duration_s),
            "request_throughput": r(self.request_throughput),
            "input_tokens_per_s": r(self.input_tokens_per_s),
            "output_tokens_per_s": r(self.output_tokens_per_s),
            "ttft_ms": self.ttft_ms.to_json(),
            "itl_ms": self.itl_ms.to_json(),
            "e2e_ms": self.e2e_ms.to_json(),
            "report_path": self.report_path,
        }

    def saved_json(self) -> dict[str, Any]:
        """What is written beside the run: the contract plus when, how hard and the first errors."""
        return self.to_json() | {
            "concurrency": self.concurrency,
            "started": self.started,
            "errors": self.errors[:5],
        }

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> BenchReport:
        def p(key: str) -> Percentiles:
            v = data.get(key) or {}
            return Percentiles(v.get("p50"), v.get("p99"))

        return cls(
            tool=str(data.get("tool", "?")),
            requests=int(data.get("requests", 0)),
            completed=int(data.get("completed", 0)),
            failed=int(data.get("failed", 0)),
            duration_s=float(data.get("duration_s") or 0.0),
            request_throughput=data.get("request_throughput"),
            input_tokens_per_s=data.get("input_tokens_per_s"),
            output_tokens_per_s=data.get("output_tokens_per_s"),
            ttft_ms=p("ttft_ms"),
            itl_ms=p("itl_ms"),
            e2e_ms=p("e2e_ms"),
            report_path=data.get("report_path"),
            concurrency=data.get("concurrency"),
            started=data.get("started"),
            errors=list(data.get("errors") or []),
        )


def report_from_timings(timings: Sequence[RequestTiming], duration_s: float, requests: int) -> BenchReport:
    """The built-in client's figures, computed as bench_serving computes them (completed requests only;
    ITL is every gap between streamed chunks)."""
    done = [t for t in timings if t.ok]
    dur = max(duration_s, 1e-9)
    itls = [gap * 1000 for t in done for gap in t.itls]
    return BenchReport(
        tool="sgtui",
        requests=requests,
        completed=len(done),
        failed=requests - len(done),
        duration_s=duration_s,
        request_throughput=len(done) / dur,
        input_tokens_per_s=sum(t.input_tokens for t in done) / dur,
        output_tokens_per_s=sum(t.output_tokens for t in done) / dur,
        ttft_ms=pct([t.ttft * 1000 for t in done if t.ttft is not None]),
        itl_ms=pct(itls),
        e2e_ms=pct([t.e2e * 1000 for t in done if t.e2e is not None]),
        errors=[t.error for t in timings if t.error][:5],
    )


def report_from_bench_serving(text: str, requests: int) -> BenchReport:
    """The last JSON line bench_serving appended to its --output-file (ValueError when there is none)."""
    lines = [line for line in text.splitlines() if line.strip().startswith("{")]
    if not lines:
        raise ValueError("sglang.bench_serving wrote no result line")
    data = json.loads(lines[-1])
    completed = int(data.get("completed") or 0)

    def p(stem: str) -> Percentiles:
        return Percentiles(data.get(f"median_{stem}"), data.get(f"p99_{stem}"))

    return BenchReport(
        tool="sglang.bench_serving",
        requests=requests,
        completed=completed,
        failed=max(0, requests - completed),
        duration_s=float(data.get("duration") or 0.0),
        request_throughput=data.get("request_throughput"),
        input_tokens_per_s=data.get("input_throughput"),
        output_tokens_per_s=data.get("output_throughput"),
        ttft_ms=p("ttft_ms"),
        itl_ms=p("itl_ms"),
        e2e_ms=p("e2e_latency_ms"),
        concurrency=data.get("max_concurrency"),
    )


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 3)
