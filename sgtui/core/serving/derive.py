"""Two scrapes of `/metrics` -> one `ServingSnapshot` (source "metrics").

Rates are counter deltas over the time between the scrapes; latency percentiles come from the
histograms' bucket deltas over the same window (what happened lately, not since start). Names as SGLang
defines them (`metrics_collector.py` in 0.5.23, `metrics/collector.py` before): `generation_tokens_total`,
`prompt_tokens_total`, `cached_tokens_total`, `num_running_reqs`, `num_queue_reqs`, `token_usage`,
`cache_hit_rate`, `time_to_first_token_seconds`, `inter_token_latency_seconds`,
`e2e_request_latency_seconds`, `spec_accept_length`, `num_retracted_requests_total` / `num_retracted_reqs`.
"""

from __future__ import annotations

from sgtui.core.serving.prom import Labels, MetricsPage, merged_buckets, quantile
from sgtui.core.serving.state import Percentiles, ServingSnapshot

HISTOGRAMS = {
    "ttft_ms": "time_to_first_token_seconds",
    "itl_ms": "inter_token_latency_seconds",
    "e2e_ms": "e2e_request_latency_seconds",
}


def _first_rank(rows: list[tuple[Labels, float]]) -> list[tuple[Labels, float]]:
    """A scheduler gauge is reported by every rank of a TP group alike: keep tp_rank 0's (every DP rank
    stays: their requests add up)."""
    kept = [(labels, v) for labels, v in rows if dict(labels).get("tp_rank", "0") == "0"]
    return kept or rows


def gauge_sum(page: MetricsPage, name: str) -> float | None:
    rows = _first_rank(page.values(name))
    return sum(v for _, v in rows) if rows else None


def gauge_max(page: MetricsPage, name: str) -> float | None:
    rows = page.values(name)
    return max(v for _, v in rows) if rows else None


def _rate(prev: MetricsPage, cur: MetricsPage, name: str, seconds: float) -> float | None:
    a, b = prev.total(name), cur.total(name)
    if b is None or seconds <= 0:
        return None
    if a is None:
        a = 0.0  # a labelled counter appears on its first increment: it was 0 before
    return max(0.0, b - a) / seconds  # a restarted server's counter starts again: no negative rate


def window_percentiles(prev: MetricsPage | None, cur: MetricsPage, name: str) -> Percentiles:
    """p50/p99 in ms of the observations between the two scrapes (None without new observations)."""
    now = cur.buckets.get(name)
    if not now or prev is None:
        return Percentiles()
    before = prev.buckets.get(name, {})
    deltas = []
    for labels, rows in now.items():
        old = dict(before.get(labels, []))
        deltas.append([(bound, max(0.0, count - old.get(bound, 0.0))) for bound, count in rows])
    merged = merged_buckets(deltas)
    p50, p99 = quantile(merged, 0.5), quantile(merged, 0.99)
    return Percentiles(None if p50 is None else p50 * 1000, None if p99 is None else p99 * 1000)


def _fraction(x: float | None) -> float | None:
    """0..1; the first exporters (2024) gave the hit rate in percent."""
    if x is None:
        return None
    return x / 100 if x > 1 else x


def snapshot_from_pages(
    prev: MetricsPage | None, prev_at: float | None, cur: MetricsPage, at: float
) -> ServingSnapshot:
    """The numbers of `cur` (read at `at`), with rates and percentiles over the window since `prev`.

    Without a previous scrape the rates fall back to SGLang's own gauge (`gen_throughput`, its last
    decode log interval) and the percentiles are None."""
    seconds = at - prev_at if prev_at is not None else 0.0
    gen = prompt = hit = None
    if prev is not None and seconds > 0:
        gen = _rate(prev, cur, "generation_tokens_total", seconds)
        prompt = _rate(prev, cur, "prompt_tokens_total", seconds)
        cached = _rate(prev, cur, "cached_tokens_total", seconds)
        if cached is not None and prompt:
            hit = min(1.0, cached / prompt)
    if gen is None:
        gen = gauge_sum(cur, "gen_throughput")
    if hit is None:
        hit = _fraction(gauge_max(cur, "cache_hit_rate"))
    running = gauge_sum(cur, "num_running_reqs")
    queued = gauge_sum(cur, "num_queue_reqs")
    usage = gauge_max(cur, "token_usage")
    spec = gauge_max(cur, "spec_accept_length")
    retracted = cur.total("num_retracted_requests_total")
    if retracted is None:
        retracted = gauge_sum(cur, "num_retracted_reqs")
    return ServingSnapshot(
        source="metrics",
        at=at,
        gen_tokens_per_s=gen,
        prompt_tokens_per_s=prompt,
        running=None if running is None else int(running),
        queued=None if queued is None else int(queued),
        kv_usage=None if usage is None else min(max(usage, 0.0), 1.0),
        cache_hit_rate=hit,
        ttft_ms=window_percentiles(prev, cur, HISTOGRAMS["ttft_ms"]),
        itl_ms=window_percentiles(prev, cur, HISTOGRAMS["itl_ms"]),
        e2e_ms=window_percentiles(prev, cur, HISTOGRAMS["e2e_ms"]),
        spec_accept_length=spec if spec else None,
        retracted=None if retracted is None else int(retracted),
    )


class MetricsDeriver:
    """Keeps the previous scrape of one server: `feed(text, at)` -> the snapshot over the last window."""

    def __init__(self) -> None:
        self.prev: MetricsPage | None = None
        self.prev_at: float | None = None

    def feed(self, text: str, at: float) -> ServingSnapshot:
        from sgtui.core.serving.prom import parse_metrics

        page = parse_metrics(text)
        snap = snapshot_from_pages(self.prev, self.prev_at, page, at)
        self.prev, self.prev_at = page, at
        return snap
