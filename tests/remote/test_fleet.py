"""`Fleet`: every configured host at once; a dead or silent host says why without holding the others."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import pytest

from sgtui.remote.connection import ConnectionPool, ConnState
from sgtui.remote.fleet import Fleet, GpuSummary
from sgtui.remote.hosts import HostConfig, load_hosts
from sgtui.sim.fleet import SimFleet, loopback_aliases_work

pytestmark = pytest.mark.skipif(not loopback_aliases_work(), reason="needs 127.0.0.2 (Linux loopback)")


def silent_listener() -> socket.socket:
    """Accepts TCP connections and never says a word: a host whose sshd hangs."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


async def test_connect_all_opens_every_host_and_a_silent_one_fails_alone_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGTUI_CONFIG_DIR", str(tmp_path))
    silent = silent_listener()
    try:
        async with SimFleet(3, speed=40) as sims:
            sims.write_config(tmp_path)
            hosts = load_hosts(ssh_config=False)
            hosts["hung"] = HostConfig(name="hung", hostname="127.0.0.1", port=silent.getsockname()[1])
            pool = ConnectionPool(hosts, user_known_hosts=None)
            seen: list[str] = []
            fleet = Fleet(
                pool,
                ["sim", "sim-2", "sim-3", "hung"],
                connect_timeout=3,
                on_change=lambda v: seen.append(v.name),
            )
            t0 = time.monotonic()
            views = {v.name: v for v in await fleet.connect_all()}
            assert time.monotonic() - t0 < 10
            assert [views[n].state for n in ("sim", "sim-2", "sim-3")] == [ConnState.UP] * 3
            assert all(
                views[n].connect_s is not None and views[n].connect_s < 3 for n in ("sim", "sim-2", "sim-3")
            )
            hung = views["hung"]
            assert hung.state is not ConnState.UP and hung.reason and "\n" not in hung.reason
            assert {"sim", "sim-2", "sim-3", "hung"} <= set(seen)

            await fleet.refresh_all()
            sim2 = fleet.view("sim-2")
            assert [c.name for c in sim2.containers] == ["sglang", "scratch"]
            assert sim2.runs == () and sim2.runs_problem is None

            sampling = asyncio.ensure_future(fleet.sample(0.2))
            try:
                for _ in range(100):
                    if all(fleet.view(n).gpus is not None for n in ("sim", "sim-2", "sim-3")):
                        break
                    await asyncio.sleep(0.1)
            finally:
                sampling.cancel()
            gpus = fleet.view("sim-3").gpus
            assert gpus is not None and (gpus.count, gpus.total_mib, gpus.names) == (
                2,
                2 * 49140,
                ("NVIDIA RTX A6000",),
            )
            assert fleet.view("sim-3").gpu_age() is not None and fleet.view("hung").gpus is None
            await fleet.close()
            await pool.close()
    finally:
        silent.close()


def test_a_gpu_problem_is_one_line_in_the_summary() -> None:
    from sgtui.core.nvsmi import GpuProblem, GpuState
    from sgtui.remote.gpu import GpuSnapshot

    summary = GpuSummary.from_snapshot(
        GpuSnapshot(
            "h", [], GpuProblem(GpuState.NO_DRIVER, "NVIDIA-SMI has failed because it couldn't\nmore")
        )
    )
    assert summary.count == 0 and summary.problem is not None and "\n" not in summary.problem
    assert summary.problem.startswith(GpuState.NO_DRIVER.value)
