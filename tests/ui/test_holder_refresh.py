"""Whose GPU holders the TUI lists, and how often (issue 21): a listing is a command on the host and an SSH
channel from the jump box, so every host every 2 s was 250 listings a second at 500 hosts. The GPU panel's
host is listed every 2 s; another host when its memory moved, and once a minute in any case."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest

from sgtui.core.nvsmi import GpuProcess, GpuReading, Value
from sgtui.core.profiles import Profile
from sgtui.remote.gpu import GpuSnapshot
from sgtui.ui import remote_backend
from sgtui.ui.app import SgtuiApp
from sgtui.ui.holder_refresh import PROCESS_IDLE_S, PROCESS_REFRESH_S, HolderRefresh
from sgtui.ui.remote_backend import RemoteBackend
from sgtui.ui.views import RunView
from tests.ui.conftest import wait_for
from tests.ui.test_truth_leftovers import SIZE, Clock, TwoHosts

IDLE = (3, 3)


def test_the_host_on_screen_is_listed_every_refresh_period() -> None:
    s = HolderRefresh()
    assert s.due(0.0, True, IDLE)
    s.listed(0.0, True, IDLE)
    assert not s.due(PROCESS_REFRESH_S - 0.5, True, IDLE)
    assert s.due(PROCESS_REFRESH_S, True, IDLE)


def test_another_host_is_listed_again_only_when_its_memory_moved_or_a_minute_passed() -> None:
    s = HolderRefresh()
    assert s.due(0.0, False, IDLE)  # its first listing: the hosts tab's busy count needs its holders
    s.listed(0.0, False, IDLE)
    assert not s.due(30.0, False, (3, 200))  # a few MiB of drift is no new process
    assert not s.due(1.0, False, (3, 40_000))  # a move, but a listing is at most every 2 s
    assert s.due(PROCESS_REFRESH_S, False, (3, 40_000))  # a server started on GPU1
    assert s.due(10.0, False, (3,))  # a GPU fell off the bus: another count
    assert s.due(PROCESS_IDLE_S, False, IDLE)  # a holder may have replaced another with the same memory


def test_a_host_coming_on_screen_is_listed_at_once() -> None:
    s = HolderRefresh()
    s.listed(0.0, False, IDLE)
    assert s.due(0.5, True, IDLE)
    s.listed(0.5, True, IDLE)
    assert not s.due(1.0, True, IDLE)


def snapshot(used: int) -> GpuSnapshot:
    reading = GpuReading(0, "GPU-0", "NVIDIA H100", Value(used), Value(81559), Value(0))
    return GpuSnapshot("gpu0", [reading])


class FakeSampler:
    """A GPU stream of `frames` (one every 0.5 s of the patched clock); counts the holder listings."""

    frames: list[GpuSnapshot] = []
    listings = 0

    def __init__(self, conn: Any, interval_ms: int) -> None:
        pass

    async def stream(self) -> AsyncIterator[GpuSnapshot]:
        for snap in self.frames:
            await asyncio.sleep(0)  # a listing started at the sample before runs now, as on a real link
            yield snap

    async def processes(self) -> list[GpuProcess]:
        type(self).listings += 1
        return []


async def listings(monkeypatch: pytest.MonkeyPatch, frames: list[GpuSnapshot], shown: set[str]) -> int:
    clock = itertools.count(0.0, 0.5)  # each sample 0.5 s after the one before
    monkeypatch.setattr(remote_backend, "time", SimpleNamespace(monotonic=lambda: next(clock)))
    monkeypatch.setattr(remote_backend, "GpuSampler", FakeSampler)
    FakeSampler.frames, FakeSampler.listings = frames, 0
    backend = RemoteBackend({}, user_known_hosts=None)
    monkeypatch.setattr(backend, "_conn", lambda host: None)
    backend.show_holders(shown)
    async for _ in backend.gpu_samples("gpu0"):
        pass
    return FakeSampler.listings


async def test_the_backend_lists_a_still_host_off_screen_once_and_the_host_on_screen_every_2_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """40 samples (20 s) of unmoving memory: one listing off screen (the old code: one every 2 s, 9 here),
    ten on screen."""
    still = [snapshot(3)] * 40
    assert await listings(monkeypatch, still, set()) == 1
    assert await listings(monkeypatch, still, {"gpu0"}) == 10


async def test_the_backend_lists_a_host_off_screen_again_when_a_server_takes_its_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frames = [snapshot(3)] * 10 + [snapshot(70_000)] * 10  # a server took GPU0 5 s in
    assert await listings(monkeypatch, frames, set()) == 2


async def test_the_app_asks_for_the_gpu_panels_host_holders_only_and_follows_the_run_in_view(
    profile: Profile,
) -> None:
    on_pve = RunView("run-a", "pve", "lxc 129", "qwen", "running", "/l/a.log")
    on_gpu2 = RunView("run-b", "gpu2", "bare host", "qwen", "running", "/l/b.log")
    backend = TwoHosts(
        existing_runs=[on_pve, on_gpu2], existing_logs={"run-a": [], "run-b": []}, hold_tail=True
    )
    app = SgtuiApp(backend, profile, theme="textual-dark", clock=Clock())
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.session is not None and app.session.key == "run-a", what="reattach")
        await wait_for(pilot, lambda: backend.holders_shown[-1:] == [{"pve"}], what="pve's holders")
        app.follow(on_gpu2, None, fresh=False)
        await wait_for(pilot, lambda: backend.holders_shown[-1:] == [{"gpu2"}], what="gpu2's holders")
        assert all(len(shown) <= 1 for shown in backend.holders_shown)  # never every host's
