"""The serving numbers: SGLang's /metrics page under both name prefixes, rates and window percentiles
from two scrapes, the batch log lines of every release window, the warnings, and the bench figures."""

from __future__ import annotations

import json

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from sgtui.core.serving.bench import RequestTiming, percentile, report_from_bench_serving, report_from_timings
from sgtui.core.serving.derive import MetricsDeriver, snapshot_from_pages
from sgtui.core.serving.history import ServingHistory
from sgtui.core.serving.loglines import LogServingReader
from sgtui.core.serving.prom import parse_metrics, quantile
from sgtui.core.serving.state import ServingSnapshot
from sgtui.core.sglang.windows import serving_rules

SCHED = {"model_name": "m", "engine_type": "unified", "tp_rank": "0", "pp_rank": "0"}


class Server:
    """A registry with SGLang's own series (names, labels and buckets of metrics_collector.py)."""

    def __init__(self, tp: int = 1) -> None:
        r = self.registry = CollectorRegistry()
        labels = list(SCHED)
        self.running = Gauge("sglang:num_running_reqs", "", labels, registry=r)
        self.queued = Gauge("sglang:num_queue_reqs", "", labels, registry=r)
        self.usage = Gauge("sglang:token_usage", "", labels, registry=r)
        self.gen = Counter("sglang:generation_tokens_total", "", ["model_name"], registry=r)
        self.prompt = Counter("sglang:prompt_tokens_total", "", ["model_name"], registry=r)
        self.cached = Counter("sglang:cached_tokens_total", "", ["model_name"], registry=r)
        self.ttft = Histogram("sglang:time_to_first_token_seconds", "", ["model_name"], registry=r,
                              buckets=(0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4))  # fmt: skip
        self.tp = tp

    def set(self, running: int, queued: int, usage: float) -> None:
        for rank in range(self.tp):  # every rank of a TP group reports the same batch
            labels = SCHED | {"tp_rank": str(rank)}
            self.running.labels(**labels).set(running)
            self.queued.labels(**labels).set(queued)
            self.usage.labels(**labels).set(usage)

    def page(self, prefix: str = "sglang:") -> str:
        return generate_latest(self.registry).decode().replace("sglang:", prefix)


def test_both_prefixes_read_the_same_and_two_scrapes_give_rates_and_window_percentiles() -> None:
    server = Server(tp=2)
    server.set(3, 1, 0.5)
    server.gen.labels("m").inc(1000)
    server.ttft.labels("m").observe(3.0)  # before the window: must not count
    for prefix in ("sglang:", "sglang_"):
        d = MetricsDeriver()
        first = d.feed(server.page(prefix), at=10.0)
        assert first.gen_tokens_per_s is None and first.ttft_ms.p50 is None  # one scrape: no window yet
        assert (first.running, first.queued, first.kv_usage) == (3, 1, 0.5)  # TP ranks not added up
    d1, d2 = MetricsDeriver(), MetricsDeriver()
    d1.feed(server.page("sglang:"), 10.0)
    d2.feed(server.page("sglang_"), 10.0)
    server.gen.labels("m").inc(600)
    server.prompt.labels("m").inc(100)
    server.cached.labels("m").inc(25)
    for _ in range(10):
        server.ttft.labels("m").observe(0.15)
    a, b = d1.feed(server.page("sglang:"), 12.0), d2.feed(server.page("sglang_"), 12.0)
    assert a == b and a.source == "metrics"
    assert a.gen_tokens_per_s == pytest.approx(300.0) and a.prompt_tokens_per_s == pytest.approx(50.0)
    assert a.cache_hit_rate == pytest.approx(0.25)
    assert a.ttft_ms.p50 == pytest.approx(150.0) and a.ttft_ms.p99 is not None and a.ttft_ms.p99 <= 200.0


def test_dp_ranks_add_up_and_other_series_are_ignored() -> None:
    text = (
        "# TYPE sglang:num_running_reqs gauge\n"
        'sglang:num_running_reqs{dp_rank="0",tp_rank="0"} 4.0\n'
        'sglang:num_running_reqs{dp_rank="1",tp_rank="0"} 2.0\n'
        'sglang:num_running_reqs{dp_rank="1",tp_rank="1"} 2.0\n'
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 9.0\n"
        "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.0\n"
    )
    page = parse_metrics(text)
    assert page.names() == {"num_running_reqs"}
    assert snapshot_from_pages(None, None, page, 1.0).running == 6


def test_quantile_is_prometheus_histogram_quantile() -> None:
    buckets = [(0.1, 0.0), (0.2, 10.0), (0.4, 20.0), (float("inf"), 20.0)]
    assert quantile(buckets, 0.5) == pytest.approx(0.2)
    assert quantile(buckets, 0.25) == pytest.approx(0.15)
    assert quantile([(0.1, 0.0), (float("inf"), 0.0)], 0.5) is None
    assert quantile([(0.1, 0.0), (float("inf"), 5.0)], 0.5) == 0.1  # +Inf answers the highest bound


@pytest.mark.parametrize(
    "line",
    [
        # 0.4.6 scheduler.log_decode_stats
        "[2025-05-01 10:00:00] Decode batch. #running-req: 3, #token: 812, token usage: 0.40, "
        "gen throughput (token/s): 95.12, #queue-req: 2",
        # 0.5.4: the forward count in brackets
        "[2025-10-01 10:00:00 TP0] Decode batch [1234], #running-req: 3, #token: 812, token usage: 0.40, "
        "cuda graph: True, gen throughput (token/s): 95.12, #queue-req: 2, ",
        # 0.5.5 onwards (0.5.23's metrics_reporter): a comma, no count unless SGLANG_LOG_FORWARD_ITERS
        "[2026-10-01 10:00:00] Decode batch, #running-req: 3, #token: 812, token usage: 0.40, "
        "accept len: 2.51, accept rate: 0.50, cuda graph: True, gen throughput (token/s): 95.12, "
        "#queue-req: 2",
    ],
)
def test_decode_lines_of_every_window(line: str) -> None:
    snap = LogServingReader().feed([line], at=5.0)
    assert snap is not None and snap.source == "log"
    assert (snap.running, snap.queued, snap.kv_usage, snap.gen_tokens_per_s) == (3, 2, 0.40, 95.12)


def test_prefill_lines_hybrid_usage_and_retractions() -> None:
    reader = LogServingReader("0.5.23")
    snap = reader.feed(
        [
            "Prefill batch, #new-seq: 2, #new-token: 300, #cached-token: 100, full token usage: 0.30, "
            "swa token usage: 0.70, #running-req: 1, #queue-req: 5, #pending-token: 0, cuda graph: False, "
            "input throughput (token/s): 1500.00",
            "KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_tokens_gained: 4096",
        ],
        at=1.0,
    )
    assert snap is not None and snap.kv_usage == 0.70 and snap.queued == 5 and snap.running == 1
    assert snap.cache_hit_rate == pytest.approx(0.25) and snap.prompt_tokens_per_s == 1500.0
    assert snap.retracted == 3
    # a release reads its own heading only: 0.5.23 never printed "Decode batch."
    assert LogServingReader("0.5.23").feed(["Decode batch. #running-req: 1, token usage: 0.1"], 1.0) is None


def test_endpoint_names_per_release_window() -> None:
    """/model_info and /server_info came in 0.5.6 (http_server.py), the /get_* names deprecated then."""
    assert serving_rules("0.5.5").model_info_path == "/get_model_info"
    assert serving_rules("0.4.6").server_info_path == "/get_server_info"
    assert serving_rules("0.5.6").model_info_path == "/model_info"
    assert serving_rules("0.5.23").server_info_path == "/server_info"
    assert serving_rules(None).model_info_path == "/model_info"


def _snap(at: float, usage: float, queued: int, retracted: int = 0) -> ServingSnapshot:
    return ServingSnapshot("metrics", at, kv_usage=usage, queued=queued, retracted=retracted)


def test_warnings_kv_full_while_the_queue_grows_and_retractions_name_the_flag() -> None:
    h = ServingHistory()
    for i in range(7):
        h.add(_snap(float(i), 0.97, i))
    (w,) = h.warnings()
    assert w.code == "kv-full-queue-growing" and "--mem-fraction-static" in w.message
    calm = ServingHistory()
    for i in range(7):
        calm.add(_snap(float(i), 0.97, 2))  # full but the queue is steady: no warning
    assert calm.warnings() == []
    brief = ServingHistory()
    for i in range(3):
        brief.add(_snap(float(i), 0.97, i))  # not sustained for 5 s
    assert brief.warnings() == []
    retract = ServingHistory()
    retract.add(_snap(0.0, 0.5, 0, retracted=2))
    assert [w.code for w in retract.warnings()] == ["retracting"]
    assert "--mem-fraction-static" in retract.warnings()[0].message


def test_bench_figures_as_bench_serving_computes_them() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5  # numpy's linear percentile
    assert percentile([1.0, 2.0, 3.0, 4.0], 99) == pytest.approx(3.97)
    timings = [RequestTiming(True, 10, 5, 0.1, (0.01, 0.02), 0.2), RequestTiming(False, 10, error="boom")]
    r = report_from_timings(timings, 2.0, 2)
    assert (r.completed, r.failed, r.ok) == (1, 1, False) and r.output_tokens_per_s == 2.5
    assert r.itl_ms.p50 == pytest.approx(15.0) and r.errors == ["boom"]
    line = json.dumps({"completed": 20, "duration": 4.0, "request_throughput": 5.0, "input_throughput": 640.0,
                       "output_throughput": 320.0, "median_ttft_ms": 12.0, "p99_ttft_ms": 30.0,
                       "median_itl_ms": 4.0, "p99_itl_ms": 9.0, "median_e2e_latency_ms": 300.0,
                       "p99_e2e_latency_ms": 400.0, "max_concurrency": 4})  # fmt: skip
    b = report_from_bench_serving("noise\n" + line + "\n", 20)
    assert b.ok and b.tool == "sglang.bench_serving" and b.ttft_ms.p99 == 30.0 and b.e2e_ms.p50 == 300.0
    with pytest.raises(ValueError):
        report_from_bench_serving("", 20)


def test_the_fast_path_reads_what_prometheus_client_reads() -> None:
    """Plain lines go through a regex (the 2%-of-a-core budget); anything less plain (an escaped quote
    in a label value) goes to prometheus_client's parser; both give the same page."""
    server = Server(tp=2)
    server.set(5, 2, 0.25)
    server.gen.labels("m").inc(123)
    for x in (0.05, 0.3, 7.0):
        server.ttft.labels("m").observe(x)
    queue = "# TYPE sglang:num_queue_reqs gauge\n"
    extra = 'sglang:num_queue_reqs{model_name="1e-05 NaN",tp_rank="0",dp_rank="3"} 1e-05\n'
    text = server.page().replace(queue, queue + extra)  # in its family's group, as the format requires
    fast, slow = parse_metrics(text), parse_metrics(text, fast=False)
    assert fast.buckets and fast.samples and fast == slow and len(fast.values("num_queue_reqs")) == 3
    running = "# TYPE sglang:num_running_reqs gauge\n"
    odd = text.replace(
        running, running + 'sglang:num_running_reqs{model_name="a \\"quoted\\" name",tp_rank="0"} 1.0\n'
    )
    assert parse_metrics(odd) == parse_metrics(odd, fast=False)
    assert ("model_name", 'a "quoted" name') in [
        kv for labels, _ in parse_metrics(odd).values("num_running_reqs") for kv in labels
    ]
    with pytest.raises(ValueError):
        parse_metrics("sglang:num_running_reqs{broken 1\n")
    untyped = "sglang_num_running_reqs 4.0\nsglang_token_usage 0.5\nother 1\n"  # no TYPE lines at all
    assert parse_metrics(untyped).samples == {"num_running_reqs": [((), 4.0)], "token_usage": [((), 0.5)]}
