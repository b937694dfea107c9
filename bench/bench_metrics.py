"""The serving view's cost (run by hand): parsing SGLang's /metrics page, and reading 10 ready runs at 1 Hz.

1. parse: a /metrics page shaped like SGLang 0.5.23's (its family names, labels and bucket lists from
   `sglang/srt/observability/metrics_collector.py`; the per-stage, HiCache and grammar families repeated
   over label values until the page is `--kib` kB), read by `MetricsDeriver.feed` (the wanted families'
   lines, the plain-line fast path, the snapshot); median and max CPU time over `--repeat` runs. Also
   the whole page through prometheus_client's parser (`everything=True, fast=False`) for comparison.
   Target: <= 5 ms for 200 kB.
2. poll: 10 HTTP servers (another process) each serving such a page with counters that move, reached
   through `sgtui sim-host` (another process) over one SSH connection's direct-tcpip channels, gzip as
   SGLang's prometheus_client app answers it, exactly as the TUI's poller does (`ServingReader.scrape`,
   10 runs every second) for `--seconds`; this process's CPU time / wall time. Target: <= 2% of one core.

    .venv/bin/python bench/bench_metrics.py [--kib 200] [--repeat 50] [--seconds 30] [--poll-kib 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TTFT = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
ITL = (0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.06, 0.08, 0.1, 0.2,
       0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0)  # fmt: skip
LABELS = 'model_name="Qwen/Qwen3.6-27B",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0"'
GAUGES = ("num_running_reqs", "num_queue_reqs", "num_grammar_queue_reqs", "gen_throughput", "cache_hit_rate",
          "token_usage", "full_token_usage", "swa_token_usage", "mamba_usage", "num_used_tokens",
          "kv_available_tokens", "kv_evictable_tokens", "kv_used_tokens", "spec_accept_length",
          "spec_accept_rate", "num_retracted_reqs", "num_paused_reqs", "utilization", "new_token_ratio",
          "max_total_num_tokens", "context_len", "page_size")  # fmt: skip


def histogram(name: str, labels: str, buckets: tuple[float, ...], count: int, total: float) -> list[str]:
    out = [f"# HELP sglang:{name} Histogram.", f"# TYPE sglang:{name} histogram"]
    for i, b in enumerate(buckets):
        out.append(
            f'sglang:{name}_bucket{{{labels},le="{float(b)}"}} {float(count * (i + 1) // len(buckets))}'
        )
    out.append(f'sglang:{name}_bucket{{{labels},le="+Inf"}} {float(count)}')
    out.append(f"sglang:{name}_count{{{labels}}} {float(count)}")
    out.append(f"sglang:{name}_sum{{{labels}}} {total}")
    return out


def page(kib: int, tick: int = 0) -> str:
    """One scrape's text at time `tick` (counters grow with it), padded to `kib` kB."""
    lines: list[str] = []
    for g in GAUGES:
        lines += [
            f"# HELP sglang:{g} Gauge.",
            f"# TYPE sglang:{g} gauge",
            f"sglang:{g}{{{LABELS}}} {tick % 7}.0",
        ]
    for c, per_s in (("prompt_tokens", 900), ("generation_tokens", 300), ("cached_tokens", 200),
                     ("num_requests", 3), ("num_retracted_requests", 0)):  # fmt: skip
        lines += [f"# HELP sglang:{c}_total Counter.", f"# TYPE sglang:{c}_total counter"]
        for stream in ("true", "false"):
            lines.append(f'sglang:{c}_total{{{LABELS},is_streaming="{stream}"}} {float(per_s * tick)}')
    for stream in ("true", "false"):
        s = f'{LABELS},is_streaming="{stream}"'
        lines += histogram("time_to_first_token_seconds", s, TTFT, 3 * tick, 0.1 * tick)
        lines += histogram("e2e_request_latency_seconds", s, TTFT, 3 * tick, 2.0 * tick)
        lines += histogram("request_time_per_output_token_seconds", s, ITL, 3 * tick, 0.02 * tick)
    lines += histogram("inter_token_latency_seconds", LABELS, ITL, 300 * tick, 6.0 * tick)
    text = "\n".join(lines)
    i = 0
    while len(text) < kib * 1000:  # the families a busy server adds: per-stage, queue, grammar, HiCache...
        extra = histogram(f"per_stage_req_latency_seconds_{i % 4}", f'{LABELS},stage="s{i}"', ITL, tick, 1.0)
        text += "\n" + "\n".join(extra)
        i += 1
    return text + "\n"


def bench_parse(kib: int, repeat: int) -> None:
    from sgtui.core.serving.derive import MetricsDeriver
    from sgtui.core.serving.prom import parse_metrics

    pages = [page(kib, t) for t in range(repeat + 1)]
    d = MetricsDeriver()
    d.feed(pages[0], 0.0)
    times, whole = [], []
    for t in range(1, repeat + 1):
        start = time.process_time()
        snap = d.feed(pages[t], float(t))
        times.append(time.process_time() - start)
    for t in range(min(repeat, 10)):
        start = time.process_time()
        parse_metrics(pages[t], everything=True, fast=False)
        whole.append(time.process_time() - start)
    print(f"page {len(pages[1]) / 1000:.0f} kB: feed (filter + parse + snapshot) median "
          f"{1000 * statistics.median(times):.2f} ms, max {1000 * max(times):.2f} ms over {repeat}; "
          f"whole page through prometheus_client {1000 * statistics.median(whole):.1f} ms")  # fmt: skip
    print(f"  snapshot: gen {snap.gen_tokens_per_s} tok/s, ttft p50 {snap.ttft_ms.p50} ms")


SERVER = r"""
import gzip, http.server, sys, time, threading
sys.path.insert(0, sys.argv[1])
from bench.bench_metrics import page
kib, ports = int(sys.argv[2]), []
start = time.monotonic()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = page(kib, int(time.monotonic() - start)).encode()
        self.send_response(200)
        if "gzip" in self.headers.get("accept-encoding", ""):  # as prometheus_client's ASGI app
            body = gzip.compress(body); self.send_header("content-encoding", "gzip")
        self.send_header("content-length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
for _ in range(10):
    s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    ports.append(s.server_address[1]); threading.Thread(target=s.serve_forever, daemon=True).start()
print(" ".join(map(str, ports)), flush=True)
time.sleep(10**6)
"""


async def bench_poll(kib: int, seconds: float) -> None:
    from sgtui.remote.connection import ConnectionPool
    from sgtui.remote.serving import ServingReader
    from tests.sim.simhost_process import running_sim_host

    servers = subprocess.Popen([sys.executable, "-c", SERVER, str(ROOT), str(kib)], stdout=subprocess.PIPE,
                               text=True, start_new_session=True)  # fmt: skip
    try:
        assert servers.stdout is not None
        ports = [int(p) for p in servers.stdout.readline().split()]
        with tempfile.TemporaryDirectory() as tmp, running_sim_host(Path(tmp)):
            os.environ["SGTUI_CONFIG_DIR"] = tmp
            conn = ConnectionPool().get("sim")
            await conn.connect()
            readers = [ServingReader(conn, port) for port in ports]
            await asyncio.gather(*(r.scrape() for r in readers))  # warm: channels, first pages
            cpu0, wall0, got = time.process_time(), time.monotonic(), 0
            while time.monotonic() - wall0 < seconds:
                tick = time.monotonic()
                snaps = await asyncio.gather(*(r.scrape() for r in readers))
                got += sum(s is not None for s in snaps)
                await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
            cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
            await conn.close()
        share, per = 100 * cpu / wall, 1000 * cpu / max(got, 1)
        print(f"poll: 10 runs x {kib} kB pages at 1 Hz for {wall:.0f} s: {got} snapshots, this process "
              f"{share:.2f}% of one core ({per:.2f} ms CPU per scrape)")  # fmt: skip
    finally:
        os.killpg(servers.pid, 15)
        servers.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kib", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--poll-kib", type=int, nargs="*", default=[200])
    ap.add_argument("--skip-poll", action="store_true")
    args = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    bench_parse(args.kib, args.repeat)
    if not args.skip_poll:
        for kib in args.poll_kib:
            asyncio.run(bench_poll(kib, args.seconds))


if __name__ == "__main__":
    main()
