"""TUI responsiveness under a log flood, and memory after a million lines (run by hand).

    .venv/bin/python bench/bench_ui_keys.py [--rate 20000] [--seconds 10] [--total 1000000]

Phase 1 feeds the followed run's log at --rate lines/s for --seconds while a thread injects a key every
20 ms through the app's driver (the path a terminal's keys take; `pilot.press` waits for idle and cannot
measure this). Latency is the time from injection to the bound action running. Phase 2 feeds --total
lines as fast as the app takes them and reports Python heap (tracemalloc) and RSS growth, and the log
widget's line count against its max_lines.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import threading
import time
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from textual import events

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sgtui.core.profiles import load_profile
from sgtui.ui.app import SgtuiApp
from sgtui.ui.views import RunView
from sgtui.ui.widgets.log_view import LogView
from tests.ui.fakes import FakeBackend

PROFILE = Path(__file__).resolve().parents[1] / "profiles" / "qwen36-27b-2xa6000.yaml"
CHUNK_S = 0.01  # the flood arrives in 10 ms chunks, as an SSH channel delivers it


def flood_line(i: int) -> str:
    kinds = (
        "[2026-01-15 08:01:{s:02d} TP0] Decode batch. #running-req: 8, #token: {i}, token usage: 0.41, "
        "gen throughput (token/s): 512.3",
        "[2026-01-15 08:01:{s:02d} TP1] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: {i}",
        '[2026-01-15 08:01:{s:02d}] INFO:     127.0.0.1:5{s:04d} - "POST /generate HTTP/1.1" 200 OK',
        "[2026-01-15 08:01:{s:02d} TP0] WARNING: request {i} exceeded the soft deadline",
    )
    return kinds[i % 4].format(i=i, s=i % 60)


class FloodBackend(FakeBackend):
    """The followed run's log is a generated flood at a fixed rate (or unthrottled with rate=0)."""

    def __init__(self, plan: list[tuple[int, float]]) -> None:
        super().__init__(existing_runs=[RunView("flood", "pve", "lxc 129", "bench", "running", "/flood.log")])
        self.plan = plan  # [(lines, rate lines/s)]; rate 0 = as fast as possible
        self.fed = 0
        self.done = asyncio.Event()

    async def tail(self, run: RunView, offset: int) -> AsyncIterator[tuple[int, list[str]]]:
        i = 0
        for total, rate in self.plan:
            per_chunk = max(1, int(rate * CHUNK_S)) if rate else 5000
            start = time.perf_counter()
            sent = 0
            while sent < total:
                n = min(per_chunk, total - sent)
                yield i + n, [flood_line(k) for k in range(i, i + n)]
                i += n
                sent += n
                self.fed = i
                if rate:
                    delay = start + sent / rate - time.perf_counter()
                    await asyncio.sleep(max(0.0, delay))
                else:
                    await asyncio.sleep(0)
        self.done.set()
        await asyncio.Event().wait()


class MeasuredApp(SgtuiApp):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.handled: list[float] = []

    def action_follow(self) -> None:
        self.handled.append(time.perf_counter())
        super().action_follow()


def rss_mib() -> float:
    with open(f"/proc/{os.getpid()}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def main(rate: int, seconds: float, total: int, keys: bool = True) -> None:
    burst = int(rate * seconds)
    backend = FloodBackend([(burst, float(rate)), (total, 0.0)])
    app = MeasuredApp(backend, load_profile(PROFILE), theme="textual-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        while app.current is None or backend.fed == 0:
            await pilot.pause(0.01)
        app.query_one(LogView).focus()
        driver = app._driver
        assert driver is not None
        sent: list[float] = []
        stop = threading.Event()

        def inject() -> None:
            while keys and not stop.is_set() and backend.fed < burst:
                sent.append(time.perf_counter())
                driver.send_message(events.Key("f", "f"))
                time.sleep(0.02)

        t0, cpu0 = time.perf_counter(), time.process_time()
        thread = threading.Thread(target=inject, daemon=True)
        thread.start()
        while backend.fed < burst:
            # not pilot.pause: it forces a full screen update each call, a second redraw loop the app
            # itself never runs (it doubled the frames drawn during the burst)
            await asyncio.sleep(0.05)
        stop.set()
        thread.join()
        burst_s = time.perf_counter() - t0
        burst_cpu = time.process_time() - cpu0  # this process's CPU: steadier than wall time under load
        await pilot.pause(0.3)
        lat = sorted((h - s) * 1000 for s, h in zip(sent, app.handled, strict=False)) or [0.0]
        p95 = lat[int(0.95 * (len(lat) - 1))]
        achieved = burst / burst_s
        print(
            f"burst: {burst:,} lines at {rate:,}/s target, fed in {burst_s:.1f} s ({achieved:,.0f} lines/s), "
            f"CPU {burst_cpu * 1e6 / burst:.1f} us a line ({burst_cpu / burst_s:.2f} of a core; app + feeder)"
        )
        print(
            f"key->action during the burst: {len(app.handled)}/{len(sent)} keys handled, "
            f"median {statistics.median(lat):.1f} ms, p95 {p95:.1f} ms, max {lat[-1]:.1f} ms "
            f"({'PASS' if p95 < 50 else 'FAIL'} p95 < 50 ms)"
        )

        tracemalloc.start()
        heap0, rss0 = tracemalloc.get_traced_memory()[0], rss_mib()
        t1 = time.perf_counter()
        checkpoints: list[tuple[int, float]] = []
        while not backend.done.is_set():
            await pilot.pause(0.5)
            checkpoints.append((backend.fed, rss_mib()))
        await pilot.pause(0.5)
        flood_s = time.perf_counter() - t1
        heap1 = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        log = app.query_one(LogView)
        print(f"flood: {total:,} more lines in {flood_s:.1f} s ({total / flood_s:,.0f} lines/s end to end)")
        print(
            f"memory after {burst + total:,} lines: Python heap +{(heap1 - heap0) / 2**20:.1f} MiB "
            f"(tracemalloc), RSS {rss0:.0f} -> {rss_mib():.0f} MiB; "
            f"log widget holds {log.line_count:,} lines "
            f"(max_lines {log.store.max_lines:,}), {log.total_lines:,} seen"
        )
        log.set_following(True)  # an odd number of `f` presses left it paused
        if log.following:  # the view follows past max_lines: the last line fed is the last row drawn
            await pilot.pause(0.2)
            height = log.scrollable_content_region.height
            rows = [log.render_line(y).text.rstrip() for y in range(height)]
            shown = [r for r in rows if r]
            last = bool(shown) and flood_line(backend.fed - 1).startswith(shown[-1])
            print(f"last row drawn is the last line fed: {last}")
        for query in ("token usage: 0\\.4", "deadline", "[/opt/x"):  # regex, literal, not a regex
            t2 = time.perf_counter()
            found = log.set_search(query)
            took = (time.perf_counter() - t2) * 1000
            print(
                f"search {query!r} over {len(log.store.lines):,} kept lines: {log.store.match_count:,} "
                f"matches in {took:.1f} ms{' (literal)' if found and found.literal else ''}"
            )
        log.set_search("")
        marks = (
            [checkpoints[int(f * (len(checkpoints) - 1))] for f in (0.25, 0.5, 0.75, 1.0)]
            if checkpoints
            else []
        )
        print("RSS along the flood: " + ", ".join(f"{fed:,} lines {rss:.0f} MiB" for fed, rss in marks))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--total", type=int, default=1_000_000)
    ns = parser.parse_args()
    asyncio.run(main(ns.rate, ns.seconds, ns.total))
