"""What the simulated server does with requests: a bounded batch (`--max-running-requests` slots, a
KV pool in tokens), a queue in front of it, tokens paced like a small model, SGLang's batch log lines in
the release's wording, and (with `--enable-metrics`) the `/metrics` series SGLang exports, under their
real names (`sglang:...`, metrics_collector.py), through prometheus_client as SGLang does.

`SGTUI_SIM_GENERATION=fail` in the server's environment makes generation hang (HTTP still answers
/health), as a server whose scheduler is wedged does.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
E2E_BUCKETS = (*TTFT_BUCKETS, 600, 1200, 1800, 2400)
ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
               0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0)  # fmt: skip
DECODE_LOG_INTERVAL = 40  # --decode-log-interval's default: a "Decode batch" line per 40 decode steps
TOKEN_S = 0.004  # one decode step
WORDS = [
    "The",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "and",
    "keeps",
    "on",
    "running",
    "far",
    "away",
]


@dataclass
class Request:
    input_tokens: int
    max_new_tokens: int
    stream: bool = True


class SimEngine:
    def __init__(
        self, log_line: Callable[..., None], version: str, values: dict[str, Any], model: str
    ) -> None:
        self.log_line = lambda text: log_line(text, 0)  # the scheduler's lines carry TP0's prefix
        self.model = str(values.get("--served-model-name") or model)
        self.max_running = int(values.get("--max-running-requests") or 32)
        self.kv_tokens = int(values.get("--max-total-tokens") or 60000)
        self.version = version
        self.fails = os.environ.get("SGTUI_SIM_GENERATION") == "fail"
        self.lock = threading.Condition()
        self.running = 0
        self.queued = 0
        self.used_tokens = 0
        self.steps = 0
        self.last_decode_log = time.monotonic()
        self.tokens_since_log = 0
        self.metrics = _Metrics(self.model) if values.get("--enable-metrics") else None

    # --- the batch ----------------------------------------------------------------------------------

    def _heading(self, kind: str) -> str:
        return batch_heading(self.version, kind, self.steps)

    def _admit(self, req: Request) -> None:
        need = req.input_tokens + req.max_new_tokens
        with self.lock:
            self.queued += 1
            self._gauges()
            while self.running >= self.max_running or self.used_tokens + need > self.kv_tokens:
                self.lock.wait(0.5)
            self.queued -= 1
            self.running += 1
            self.used_tokens += need
            self.log_line(
                f"{self._heading('Prefill')}#new-seq: 1, #new-token: {req.input_tokens}, #cached-token: 0, "
                f"token usage: {self.used_tokens / self.kv_tokens:.2f}, #running-req: {self.running - 1}, "
                f"#queue-req: {self.queued}, "
            )
            self._gauges()

    def _release(self, req: Request) -> None:
        with self.lock:
            self.running -= 1
            self.used_tokens -= req.input_tokens + req.max_new_tokens
            self._gauges()
            self.lock.notify_all()

    def _step(self, n: int) -> None:
        with self.lock:
            self.steps += 1
            self.tokens_since_log += n
            if self.steps % DECODE_LOG_INTERVAL == 0:
                now = time.monotonic()
                rate = self.tokens_since_log / max(now - self.last_decode_log, 1e-6)
                self.last_decode_log, self.tokens_since_log = now, 0
                self.log_line(
                    f"{self._heading('Decode')}#running-req: {self.running}, #token: {self.used_tokens}, "
                    f"token usage: {self.used_tokens / self.kv_tokens:.2f}, cuda graph: True, "
                    f"gen throughput (token/s): {rate:.2f}, #queue-req: {self.queued}, "
                )
                if self.metrics is not None:
                    self.metrics.gen_throughput.labels(**self.metrics.sched).set(rate)

    def _gauges(self) -> None:
        if self.metrics is not None:
            m, s = self.metrics, self.metrics.sched
            m.running.labels(**s).set(self.running)
            m.queued.labels(**s).set(self.queued)
            m.usage.labels(**s).set(round(self.used_tokens / self.kv_tokens, 2))
            m.used.labels(**s).set(self.used_tokens)

    def generate(self, req: Request) -> Iterator[str]:
        """Yield each new token's text as it is decoded (blocks while queued; hangs when failing)."""
        if self.fails:
            while True:
                time.sleep(3600)
        start = time.monotonic()
        self._admit(req)
        try:
            time.sleep(0.002 + req.input_tokens * 2e-5)  # the prefill
            first = last = time.monotonic()
            for i in range(req.max_new_tokens):
                if i:
                    time.sleep(TOKEN_S)
                now = time.monotonic()
                if i == 0:
                    first = now
                elif self.metrics is not None:
                    self.metrics.itl.labels(**self.metrics.sched).observe(now - last)
                last = now
                self._step(1)
                yield " " + WORDS[i % len(WORDS)]
        finally:
            self._release(req)
        if self.metrics is not None:
            m, t = self.metrics, {"model_name": self.model, "is_streaming": str(req.stream).lower()}
            m.prompt.labels(**t).inc(req.input_tokens)
            m.generation.labels(**t).inc(req.max_new_tokens)
            m.requests.labels(model_name=self.model).inc()
            m.ttft.labels(**t).observe(first - start)
            m.e2e.labels(**t).observe(last - start)

    def health_generate(self) -> bool:
        """SGLang's /health_generate: one token through the scheduler; False when none comes in 20 s."""
        return not self.fails

    def metrics_text(self) -> bytes | None:
        if self.metrics is None:
            return None
        from prometheus_client import generate_latest

        return generate_latest(self.metrics.registry)


class _Metrics:
    """The series the stand-in exports, named and labelled as SGLang 0.5.23's collectors do."""

    def __init__(self, model: str) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        r = self.registry = CollectorRegistry()
        self.sched = {"model_name": model, "engine_type": "unified", "tp_rank": "0", "pp_rank": "0"}
        sl = list(self.sched)
        tl = ["model_name", "is_streaming"]
        self.running = Gauge("sglang:num_running_reqs", "The number of running requests.", sl, registry=r)
        self.queued = Gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", sl,
                            registry=r)  # fmt: skip
        self.usage = Gauge("sglang:token_usage", "The token usage.", sl, registry=r)
        self.used = Gauge("sglang:num_used_tokens", "The number of used tokens.", sl, registry=r)
        self.gen_throughput = Gauge("sglang:gen_throughput", "The generation throughput (token/s).", sl,
                                    registry=r)  # fmt: skip
        self.hit = Gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", sl, registry=r)
        self.prompt = Counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", tl,
                              registry=r)  # fmt: skip
        self.generation = Counter("sglang:generation_tokens_total", "Number of generation tokens processed.",
                                  tl, registry=r)  # fmt: skip
        self.cached = Counter("sglang:cached_tokens_total", "Number of cached prompt tokens.", tl, registry=r)
        self.requests = Counter("sglang:num_requests_total", "Number of requests processed.", ["model_name"],
                                registry=r)  # fmt: skip
        self.ttft = Histogram("sglang:time_to_first_token_seconds",
                              "Histogram of time to first token in seconds.", tl, buckets=TTFT_BUCKETS,
                              registry=r)  # fmt: skip
        self.itl = Histogram("sglang:inter_token_latency_seconds",
                             "Histogram of inter-token latency in seconds.", sl, buckets=ITL_BUCKETS,
                             registry=r)  # fmt: skip
        self.e2e = Histogram("sglang:e2e_request_latency_seconds",
                             "Histogram of End-to-end request latency in seconds", tl, buckets=E2E_BUCKETS,
                             registry=r)  # fmt: skip
        for g in (self.running, self.queued, self.usage, self.used, self.gen_throughput, self.hit):
            g.labels(**self.sched).set(0)


def batch_heading(version: str | None, kind: str, step: int = 0) -> str:
    """ "Prefill batch. " / "Prefill batch [N], " / "Prefill batch, " as `version`'s scheduler writes it."""
    from sgtui.core.sglang.windows import serving_rules

    heading = serving_rules(version).batch_heading
    if r"\[\d+\], " in heading and "(?:" not in heading:  # 0.5.4: "batch [N], "
        return f"{kind} batch [{step}], "
    sep = ". " if heading.startswith(r"(?P<kind>Prefill|Decode) batch\.") else ", "
    return f"{kind} batch{sep}"
