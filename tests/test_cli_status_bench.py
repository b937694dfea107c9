"""`sgtui status` and `sgtui bench` against `sgtui sim-host` (DESIGN.md contracts): a profile with
`enable-metrics: true` launches to ready; a 20-request bench at concurrency 4 completes with throughput
and TTFT/ITL percentiles and saves its report beside the run (0600); `status` then says ready with a
metrics snapshot whose counters moved under that load. Without metrics the numbers come from the log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sim.simhost_process import free_port, running_sim_host, sgtui

PROFILE = "qwen36-27b-2xa6000-mrr8.yaml"
BENCH_KEYS = [
    "tool", "requests", "completed", "failed", "duration_s", "request_throughput", "input_tokens_per_s",
    "output_tokens_per_s", "ttft_ms", "itl_ms", "e2e_ms", "report_path",
]  # fmt: skip
STATUS_KEYS = ["id", "health", "reason", "endpoints", "smoke", "metrics"]
METRICS_KEYS = [
    "source", "age_s", "gen_tokens_per_s", "prompt_tokens_per_s", "running", "queued", "kv_usage",
    "cache_hit_rate", "ttft_ms", "itl_ms", "e2e_ms", "spec_accept_length",
]  # fmt: skip


def _launch_ready(config_dir: Path, profile: Path) -> str:
    watched = sgtui(
        "launch", str(profile), "--watch", "--json-events", "--timeout", "50", config_dir=config_dir
    )
    assert watched.returncode == 0, watched.stdout + watched.stderr
    launched = next(json.loads(x) for x in watched.stdout.splitlines() if '"launched"' in x)
    return str(launched["run"]["id"])


def _with_flags(profile: Path, extra: str) -> Path:
    path = profile.with_name(profile.stem + "-serving.yaml")
    path.write_text(profile.read_text() + extra)
    return path


def test_bench_then_status_with_metrics_on_the_sim(tmp_path: Path) -> None:
    with running_sim_host(tmp_path) as host:
        profile = _with_flags(host.profile(PROFILE, free_port()), "  enable-metrics: true\n")
        run_id = _launch_ready(tmp_path, profile)

        bench = sgtui(
            "bench", run_id, "--profile", str(profile), "--requests", "20", "--concurrency", "4",
            "--input-len", "32", "--output-len", "24", "--json", config_dir=tmp_path,
        )  # fmt: skip
        assert bench.returncode == 0, bench.stdout + bench.stderr
        report = json.loads(bench.stdout)
        assert list(report) == BENCH_KEYS
        assert report["tool"] == "sgtui"  # the sim's environment has no sglang.bench_serving
        assert (report["requests"], report["completed"], report["failed"]) == (20, 20, 0)
        assert report["request_throughput"] > 0 and report["output_tokens_per_s"] > 0
        assert report["input_tokens_per_s"] == pytest.approx(report["request_throughput"] * 32, rel=0.01)
        for key in ("ttft_ms", "itl_ms", "e2e_ms"):
            p = report[key]
            assert p["p50"] is not None and p["p99"] is not None and 0 < p["p50"] <= p["p99"], (key, p)
        saved = Path(report["report_path"])
        assert saved.parent.name == run_id and saved.stat().st_mode & 0o777 == 0o600
        assert json.loads(saved.read_text())["completed"] == 20

        listed = sgtui("bench", run_id, "--profile", str(profile), "--list", "--json", config_dir=tmp_path)
        assert listed.returncode == 0, listed.stderr
        assert [r["report_path"] for r in json.loads(listed.stdout)] == [str(saved)]

        status = sgtui("status", run_id, "--profile", str(profile), "--json", config_dir=tmp_path)
        assert status.returncode == 0, status.stdout + status.stderr
        data = json.loads(status.stdout)
        assert list(data) == STATUS_KEYS
        assert data["id"] == run_id and data["health"] == "ready", data
        assert data["smoke"]["ok"] is True and data["smoke"]["seconds"] > 0
        # 0.5.9 has /model_info: the deprecated /get_model_info is not asked
        assert data["endpoints"]["/health"] == "200" and data["endpoints"]["/model_info"] == "200"
        assert "/get_model_info" not in data["endpoints"] and data["endpoints"]["/metrics"] == "200"
        m = data["metrics"]
        assert list(m) == METRICS_KEYS and m["source"] == "metrics" and 0 <= m["age_s"] < 30
        assert m["running"] == 0 and m["queued"] == 0 and m["kv_usage"] == 0.0
        assert m["gen_tokens_per_s"] is not None and m["prompt_tokens_per_s"] is not None


def test_status_without_metrics_reads_the_log_and_text_output(tmp_path: Path) -> None:
    with running_sim_host(tmp_path) as host:
        profile = host.profile(PROFILE, free_port())
        run_id = _launch_ready(tmp_path, profile)
        bench = sgtui(
            "bench", run_id, "--profile", str(profile), "--requests", "8", "--concurrency", "8",
            "--output-len", "48", config_dir=tmp_path,
        )  # fmt: skip
        assert bench.returncode == 0, bench.stdout + bench.stderr
        assert "sgtui: 8/8" in bench.stdout and "saved " in bench.stdout
        assert "8/8 requests" not in bench.stderr  # the `\r` progress count is for a terminal, not a pipe
        insisted = sgtui(
            "bench", run_id, "--profile", str(profile), "--client", "sglang", config_dir=tmp_path
        )
        assert insisted.returncode == 1 and insisted.stderr.count("\n") == 1, insisted.stderr
        assert "has no sglang.bench_serving; --client builtin (or auto)" in insisted.stderr
        status = sgtui("status", run_id, "--profile", str(profile), "--json", config_dir=tmp_path)
        data = json.loads(status.stdout)
        assert data["health"] == "ready" and "/metrics" not in data["endpoints"]
        m = data["metrics"]
        assert m["source"] == "log" and m["gen_tokens_per_s"] > 0, m  # the "Decode batch" lines
        assert m["running"] is not None and m["kv_usage"] is not None and m["ttft_ms"]["p50"] is None
        text = sgtui("status", run_id, "--profile", str(profile), config_dir=tmp_path)
        assert text.returncode == 0 and f"{run_id}: ready" in text.stdout and "from log" in text.stdout
        assert "smoke: answers in" in text.stdout


def test_generation_failing_behind_a_live_http_is_unhealthy(tmp_path: Path) -> None:
    with running_sim_host(tmp_path) as host:
        base = host.profile(PROFILE, free_port())
        text = base.read_text().replace("env:\n", "env:\n  SGTUI_SIM_GENERATION: fail\n")
        profile = base.with_name("wedged.yaml")
        profile.write_text(text)
        run_id = _launch_ready(tmp_path, profile)
        status = sgtui("status", run_id, "--profile", str(profile), "--json", config_dir=tmp_path, timeout=90)
        assert status.returncode == 1, status.stdout + status.stderr
        data = json.loads(status.stdout)
        assert data["health"] == "unhealthy" and data["endpoints"]["/health"] == "200"
        assert data["smoke"]["ok"] is False and "generation fails" in data["reason"]


def test_bad_bench_input_is_one_line_exit_2(tmp_path: Path) -> None:
    for args, words in (
        (["--requests", "0"], "--requests 0: use 1..2000"),
        (["--concurrency", "999"], "--concurrency 999: use 1..256"),
    ):
        bad = sgtui("bench", "20990101-000000-000000", "--host", "nowhere", *args, config_dir=tmp_path)
        assert bad.returncode == 2 and words in bad.stderr and "Traceback" not in bad.stderr


def test_an_unreachable_host_is_one_line_exit_1(tmp_path: Path) -> None:
    (tmp_path / "hosts.yaml").write_text("deadhost:\n  hostname: 127.0.0.1\n  port: 1\n")
    for command in ("status", "bench"):
        done = sgtui(command, "20990101-000000-000000", "--host", "deadhost", config_dir=tmp_path)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith(f"sgtui {command}: cannot reach deadhost"), done.stderr
