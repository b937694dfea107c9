"""Key latency while many followed runs stream at once, and each run's memory (run by hand).

    .venv/bin/python bench/bench_ui_many_runs.py [--runs 10] [--rate 2000] [--seconds 10]

`--runs` alive runs are listed on the profile's host; the app reattaches to all of them (one RunSession
each, one tail worker each) and shows the newest. Every run's log is a generated flood at --rate lines/s
in 10 ms chunks. A thread injects `f` (an app action) every 20 ms through the driver; the latency is the
time from injection to the action running. Then `]` switches the view through every run (the log view
is refilled from the run's bounded buffer), timed the same way. At the end each session's buffer must
hold at most max_lines (memory bounded per followed run).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from textual import events

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_ui_keys import CHUNK_S, PROFILE, flood_line, rss_mib
from sgtui.core.profiles import load_profile
from sgtui.ui.app import SgtuiApp
from sgtui.ui.views import RunView
from sgtui.ui.widgets.log_view import LogView
from tests.ui.fakes import FakeBackend


class ManyFloods(FakeBackend):
    def __init__(self, runs: int, lines: int, rate: float) -> None:
        alive = [
            RunView(f"flood-{i:02d}", "pve", "lxc 129", "bench", "running", f"/flood-{i}.log")
            for i in range(runs)
        ]
        super().__init__(existing_runs=alive)
        self.lines, self.rate = lines, rate
        self.fed: dict[str, int] = {}

    async def tail(self, run: RunView, offset: int) -> AsyncIterator[tuple[int, list[str]]]:
        per_chunk = max(1, int(self.rate * CHUNK_S))
        start = time.perf_counter()
        sent = 0
        while sent < self.lines:
            n = min(per_chunk, self.lines - sent)
            yield sent + n, [flood_line(k) for k in range(sent, sent + n)]
            sent += n
            self.fed[run.run_id] = sent
            await asyncio.sleep(max(0.0, start + sent / self.rate - time.perf_counter()))
        await asyncio.Event().wait()

    def total_fed(self) -> int:
        return sum(self.fed.values())


class MeasuredApp(SgtuiApp):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.handled: list[float] = []
        self.switched: list[float] = []

    def action_follow(self) -> None:
        self.handled.append(time.perf_counter())
        super().action_follow()

    def action_switch_run(self, step: int) -> None:
        super().action_switch_run(step)
        self.switched.append(time.perf_counter())


def p95(values: list[float]) -> float:
    ordered = sorted(values) or [0.0]
    return ordered[int(0.95 * (len(ordered) - 1))]


def inject(driver: Any, key: str, sent: list[float], until: Any, every: float) -> None:
    while not until():
        sent.append(time.perf_counter())
        driver.send_message(events.Key(key, key if len(key) == 1 else None))
        time.sleep(every)


async def main(runs: int, rate: int, seconds: float) -> None:
    lines = int(rate * seconds)
    backend = ManyFloods(runs, lines, float(rate))
    app = MeasuredApp(backend, load_profile(PROFILE), theme="textual-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        while len(app.followed) < runs or len(backend.fed) < runs:
            await pilot.pause(0.01)
        app.query_one(LogView).focus()
        driver = app._driver
        assert driver is not None
        rss0 = rss_mib()
        sent: list[float] = []
        t0 = time.perf_counter()
        thread = threading.Thread(
            target=inject,
            args=(driver, "f", sent, lambda: backend.total_fed() >= runs * lines, 0.02),
            daemon=True,
        )
        thread.start()
        while backend.total_fed() < runs * lines:
            await pilot.pause(0.05)
        thread.join()
        wall = time.perf_counter() - t0
        await pilot.pause(0.3)
        lat = [(h - s) * 1000 for s, h in zip(sent, app.handled, strict=False)]
        fed = backend.total_fed()
        print(
            f"{runs} followed runs x {rate:,} lines/s for {seconds:g} s: {fed:,} lines in {wall:.1f} s "
            f"({fed / wall:,.0f} lines/s in all)"
        )
        print(
            f"key->action while they stream: {len(app.handled)}/{len(sent)} keys, median "
            f"{statistics.median(lat or [0]):.1f} ms, p95 {p95(lat):.1f} ms, max {max(lat or [0]):.1f} ms "
            f"({'PASS' if p95(lat) < 50 else 'FAIL'} p95 < 50 ms)"
        )
        # switching the view through every run: each refills the log view from that run's buffer
        switch_sent: list[float] = []
        for _ in range(runs):
            switch_sent.append(time.perf_counter())
            driver.send_message(events.Key("right_square_bracket", "]"))
            await pilot.pause(0.15)
        await pilot.pause(0.3)
        sw = [(h - s) * 1000 for s, h in zip(switch_sent, app.switched, strict=False)]
        print(
            f"] (switch the run in view, refill its log): median {statistics.median(sw or [0]):.1f} ms, "
            f"max {max(sw or [0]):.1f} ms"
        )
        kept = [len(s.log.entries) for s in app.followed]
        history = [sum(len(v) for v in s.history.series.values()) for s in app.followed]
        print(
            f"memory: each run keeps {max(kept):,} lines at most (max_lines {app.max_log_lines:,}; "
            f"{min(s.log.total for s in app.followed):,}+ seen each), GPU history <= {max(history)} points; "
            f"RSS {rss0:.0f} -> {rss_mib():.0f} MiB"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=10.0)
    ns = parser.parse_args()
    asyncio.run(main(ns.runs, ns.rate, ns.seconds))
