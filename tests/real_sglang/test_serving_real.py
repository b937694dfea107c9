"""The serving numbers against the real SGLang 0.5.23 on CPU (the real_sglang tier, issue 19): its
/metrics under the real names (`sglang:` + metrics_collector.py's families) read by sgtui's reader,
`sgtui bench` with 20 requests (SGLang's own bench_serving in the run's environment, and the built-in
client), then `sgtui status` ready with a metrics snapshot.

Uses the tier's fixtures (tests/real_sglang/conftest.py, realhost.py: branch realsg); skips without them.
One launch serves the module (a start costs 20-45 s here)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

realhost = pytest.importorskip("tests.real_sglang.realhost", reason="the real-SGLang tier's harness")
conftest = pytest.importorskip("tests.real_sglang.conftest", reason="the real-SGLang tier's fixtures")

pytestmark = pytest.mark.real_sglang


@pytest.fixture(scope="module")
def served(real_env: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path, str, int]]:
    for host in conftest.real_host_at(tmp_path_factory.mktemp("serving"), real_env):
        port = realhost.free_port()
        profile = host.profile("tiny-metrics", port, extra={"enable-metrics": True})
        launch = host.launch(profile)
        assert launch.rc == 0, launch.stdout[-3000:] + launch.stderr[-2000:]
        yield host, profile, launch.run_id, port


def test_metrics_carry_sglangs_real_names_and_the_reader_reads_them(
    served: tuple[Any, Path, str, int],
) -> None:
    from sgtui.core.serving.derive import MetricsDeriver
    from sgtui.core.serving.prom import parse_metrics

    _host, _profile, _run_id, port = served
    status, page = realhost.http(port, "/metrics")
    assert status == 200
    names = ["sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage",
             "sglang:generation_tokens_total", "sglang:prompt_tokens_total",
             "sglang:time_to_first_token_seconds_bucket",
             "sglang:e2e_request_latency_seconds_bucket"]  # fmt: skip
    for name in names:
        assert name in page, name
    parsed = parse_metrics(page)
    assert {"num_running_reqs", "num_queue_reqs", "token_usage"} <= parsed.names()
    assert parsed == parse_metrics(page, fast=False)  # the fast path agrees with prometheus_client here
    snap = MetricsDeriver().feed(page, 0.0)
    assert snap.running == 0 and snap.queued == 0 and snap.kv_usage is not None


@pytest.mark.parametrize("client", ["sglang", "builtin"])
def test_bench_20_requests(served: tuple[Any, Path, str, int], client: str) -> None:
    host, profile, run_id, _port = served
    done = host.sgtui(
        "bench", run_id, "--profile", str(profile), "--requests", "20", "--concurrency", "4",
        "--input-len", "32", "--output-len", "16", "--client", client, "--json", timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["tool"] == ("sglang.bench_serving" if client == "sglang" else "sgtui")
    assert (report["completed"], report["failed"]) == (20, 0)
    assert report["output_tokens_per_s"] > 0 and report["request_throughput"] > 0
    for key in ("ttft_ms", "itl_ms", "e2e_ms"):
        assert report[key]["p50"] is not None and report[key]["p99"] is not None, report
    saved = Path(report["report_path"])
    assert saved.stat().st_mode & 0o777 == 0o600 and json.loads(saved.read_text())["completed"] == 20


def test_status_is_ready_with_a_metrics_snapshot(served: tuple[Any, Path, str, int]) -> None:
    host, profile, run_id, _port = served
    done = host.sgtui("status", run_id, "--profile", str(profile), "--json", timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["health"] == "ready" and data["smoke"]["ok"] is True, data
    assert data["endpoints"]["/model_info"] == "200" and "/get_model_info" not in data["endpoints"]
    m = data["metrics"]
    assert m["source"] == "metrics" and m["running"] is not None and m["queued"] is not None
    assert m["gen_tokens_per_s"] is not None and 0.0 <= m["kv_usage"] <= 1.0
