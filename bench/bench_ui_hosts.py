"""The TUI's hosts tab with N hosts x 8 GPUs all streaming at 1 Hz: key -> action latency (run by hand).

    .venv/bin/python bench/bench_ui_hosts.py [--hosts 500] [--seconds 20] [--login-ms 100 --login-cpu-ms 3]

First the connect: from the app's start to every host connected (each login waits `--login-ms`
after `--login-cpu-ms` of CPU in the app's loop), with `down` keys on the host tree meanwhile.

A scripted backend (`tests/ui/fakes.py`'s FakeBackend) offers N hosts; every host connects, and streams a
GPU sample a second (8 GPUs, memory moving), each host on its own phase, as `GpuSampled` messages through
the app's real routing. With the hosts tab shown and the tree focused, a thread injects `down` every 50
ms through the driver (the path a terminal's keys take); the latency is from injection to the tree's
cursor action running. Then `o` (sort by free GPU memory: a rebuild of the whole tree) and `/`-filter
typing are timed the same way, a few times each. This process's CPU share over the streaming window is
printed too (the app's own cost of N hosts' samples), with the runs and containers listings the app asked
for per second and whose GPU holders it asked the backend to list every 2 s (`show_holders`).
`BENCH_PROFILE=file` writes a cProfile of the window.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import statistics
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from textual import events
from textual.widgets import Tree

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sgtui.core.profiles import load_profile
from sgtui.ui.app import SgtuiApp
from sgtui.ui.views import ContainerView, GpuView, HostView, RunView
from sgtui.ui.workers import controller
from tests.ui.fakes import FakeBackend


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


PROFILE = Path(__file__).resolve().parents[1] / "profiles" / "qwen36-27b-2xa6000.yaml"
H100_MIB = 81559


class FleetBackend(FakeBackend):
    """N hosts, all reachable, each streaming 8 GPUs at 1 Hz; no containers, no runs. A login takes
    `login_s` (round trips: waiting) after `login_cpu_s` of CPU in the event loop (the client's side of the
    key exchange, as asyncssh does it in the app's loop). Every runs/containers listing is counted."""

    def __init__(self, count: int, login_s: float = 0.0, login_cpu_s: float = 0.0) -> None:
        super().__init__()
        self.count = count
        self.samples = 0
        self.login_s, self.login_cpu_s = login_s, login_cpu_s
        self.listings = {"runs": 0, "containers": 0}
        self.connected_at: list[float] = []  # when each login ended
        self.asked_at: list[float] = []  # when the app asked for each host's connection

    def hosts(self) -> tuple[list[HostView], list[str]]:
        return [
            HostView(f"gpu{i:03d}", f"10.0.{i // 250}.{i % 250 + 1}", "hosts.yaml") for i in range(self.count)
        ], []

    async def connection_states(self, host: str) -> AsyncIterator[tuple[str, str]]:
        self.asked_at.append(time.perf_counter())
        yield ("connecting", "")
        if self.login_cpu_s:
            end = time.process_time() + self.login_cpu_s
            while time.process_time() < end:
                pass
        if self.login_s:
            await asyncio.sleep(self.login_s)
        self.connected_at.append(time.perf_counter())
        yield ("connected", "")
        await asyncio.Event().wait()

    async def containers(self, host: str) -> list[ContainerView]:
        self.listings["containers"] += 1
        return []

    async def runs(
        self, host: str, target: ContainerView | None, runs_dir: str | None = None
    ) -> list[RunView]:
        self.listings["runs"] += 1
        return []

    async def gpu_samples(self, host: str) -> AsyncIterator[list[GpuView]]:
        n = int(host[3:])
        await asyncio.sleep((n % 100) / 100)  # each host on its own phase
        tick = 0
        while True:
            busy = (n + tick // 10) % 9  # GPUs in use move every 10 s
            yield [
                GpuView(i, "NVIDIA H100 80GB HBM3", 70_000 + tick % 7 if i < busy else 3, H100_MIB, 0)
                for i in range(8)
            ]
            self.samples += 1
            tick += 1
            await asyncio.sleep(1.0)


def timed_keys(
    driver: Any, handled: list[float], key: str, count: int, gap: float, character: str | None = None
) -> tuple[threading.Thread, list[float]]:
    sent: list[float] = []

    def inject() -> None:
        for _ in range(count):
            sent.append(time.perf_counter())
            driver.send_message(events.Key(key, character))
            time.sleep(gap)

    thread = threading.Thread(target=inject, daemon=True)
    thread.start()
    return thread, sent


def summary(label: str, sent: list[float], handled: list[float]) -> None:
    lat = sorted((h - s) * 1000 for s, h in zip(sent, handled, strict=False)) or [0.0]
    p95 = lat[int(0.95 * (len(lat) - 1))]
    print(
        f"{label}: {len(handled)}/{len(sent)} handled, median {statistics.median(lat):.1f} ms, "
        f"p95 {p95:.1f} ms, max {lat[-1]:.1f} ms ({'PASS' if p95 < 50 else 'FAIL'} p95 < 50 ms)",
        flush=True,
    )


def hook(cls: type, name: str, handled: list[float]) -> Callable[[], None]:
    original = getattr(cls, name)

    def wrapped(self: Any, *args: Any) -> Any:
        handled.append(time.perf_counter())
        return original(self, *args)

    setattr(cls, name, wrapped)
    return lambda: setattr(cls, name, original)


def holders(backend: FakeBackend) -> str:
    """The hosts whose GPU holders the app last asked to list every 2 s (a tree before `show_holders`:
    every host's were)."""
    asked = getattr(backend, "holders_shown", None)
    return "every host (no show_holders)" if asked is None else str(sorted(asked[-1]) if asked else "-")


def keys_until(driver: Any, stop: threading.Event, gap: float) -> tuple[threading.Thread, list[float]]:
    """`down` every `gap` s until `stop` is set."""
    sent: list[float] = []

    def inject() -> None:
        while not stop.is_set():
            sent.append(time.perf_counter())
            driver.send_message(events.Key("down", None))
            time.sleep(gap)

    thread = threading.Thread(target=inject, daemon=True)
    thread.start()
    return thread, sent


async def connecting(app: SgtuiApp, count: int, t0: float) -> None:
    """From the app's start (`t0`) to every host connected: the first and the last host's time, and the
    `down` key's latency on the host tree meanwhile (the app's connect pacing, `CONNECT_PARALLEL`)."""
    driver = app._driver
    assert driver is not None
    app.fleet_pane.tree.focus()
    handled: list[float] = []
    unhook = hook(Tree, "action_cursor_down", handled)
    stop = threading.Event()
    thread, sent = keys_until(driver, stop, 0.05)
    while time.perf_counter() - t0 < 300:
        if sum(1 for h in app.fleet.hosts.values() if h.state == "connected") >= count:
            break
        await asyncio.sleep(0.02)
    shown = time.perf_counter() - t0
    stop.set()
    while thread.is_alive():
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    unhook()
    backend = app.backend
    assert isinstance(backend, FleetBackend)
    start, ends = min(backend.asked_at), sorted(backend.connected_at)
    print(
        f"connect: app start to the first connect asked {start - t0:.2f} s; from there the first host "
        f"connected {ends[0] - start:.2f} s, every host {ends[-1] - start:.2f} s (every row says connected "
        f"{shown:.2f} s after the start); load {load()}",
        flush=True,
    )
    summary("down while the hosts connect", sent, handled)


async def main(count: int, seconds: float, login_ms: float, login_cpu_ms: float) -> None:
    backend = FleetBackend(count, login_ms / 1000, login_cpu_ms / 1000)
    app = SgtuiApp(backend, load_profile(PROFILE), theme="textual-dark")
    print(f"load {load()} before; {count} hosts, login {login_ms:g} ms + {login_cpu_ms:g} ms CPU", flush=True)
    t0 = time.perf_counter()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")
        await connecting(app, count, t0)
        t0 = time.perf_counter()
        while sum(1 for h in app.fleet.hosts.values() if h.gpus) < count and time.perf_counter() - t0 < 120:
            await asyncio.sleep(0.2)
        print(f"{count} hosts streaming after {time.perf_counter() - t0:.1f} s more", flush=True)
        app.fleet_pane.tree.focus()
        driver = app._driver
        assert driver is not None
        listed = dict(backend.listings)

        handled: list[float] = []
        unhook = hook(Tree, "action_cursor_down", handled)
        s0, c0, w0 = backend.samples, time.process_time(), time.perf_counter()
        profile = cProfile.Profile() if os.environ.get("BENCH_PROFILE") else None
        if profile is not None:
            profile.enable()
        thread, sent = timed_keys(driver, handled, "down", int(seconds / 0.05), 0.05)
        while thread.is_alive():
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)
        if profile is not None:
            profile.disable()
            profile.dump_stats(os.environ["BENCH_PROFILE"])
        wall = time.perf_counter() - w0
        cpu = time.process_time() - c0
        unhook()
        summary(f"down x {len(sent)} while {count} hosts stream", sent, handled)
        with open("/proc/self/status") as fh:
            rss = next((int(line.split()[1]) / 1024 for line in fh if line.startswith("VmRSS:")), 0.0)
        series = sum(len(s) for h in app.fleet.hosts.values() for s in h.history.series.values())
        print(f"RSS {rss:.0f} MiB; {series:,} sparkline samples held over all hosts", flush=True)
        print(
            f"samples {(backend.samples - s0) / wall:.0f}/s; this process "
            f"{100 * cpu / wall:.0f} % of one core; listings asked: "
            + ", ".join(f"{k} {(backend.listings[k] - listed[k]) / wall:.1f}/s" for k in listed)
            + f"; holders shown for {holders(backend)}",
            flush=True,
        )

        handled = []
        unhook = hook(type(app), "action_sort_hosts", handled)
        thread, sent = timed_keys(driver, handled, "o", 6, 1.0, "o")
        while thread.is_alive():
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        unhook()
        summary("o (sort: the tree rebuilt)", sent, handled)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--login-ms", type=float, default=0.0, help="each host's login wait (round trips)")
    parser.add_argument("--login-cpu-ms", type=float, default=0.0, help="each login's CPU in the app's loop")
    parser.add_argument("--connect-parallel", type=int, help="the app's CONNECT_PARALLEL (default: its own)")
    ns = parser.parse_args()
    if ns.connect_parallel:
        controller.CONNECT_PARALLEL = ns.connect_parallel
    print(f"CONNECT_PARALLEL {controller.CONNECT_PARALLEL}", flush=True)
    asyncio.run(main(ns.hosts, ns.seconds, ns.login_ms, ns.login_cpu_ms))
