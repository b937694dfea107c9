"""sgtui's own run lifecycle against the simulated host: launch inside LXC 129, follow, stop, wait for the
GPUs. The scenario decides what the run does; RunManager has to cope with it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sgtui.remote.connection import Connection
from sgtui.remote.gpu import GpuSampler
from sgtui.remote.hosts import HostConfig
from sgtui.remote.runs import RunManager, RunRecord
from sgtui.remote.targets import Target
from sgtui.sim.host import SimHost
from tests.cases import QWEN_ARGS
from tests.sim.conftest import free_port

PYTHON = "/opt/sglang/venv/bin/python"


async def connect(host: SimHost, tmp_path: Path) -> Connection:
    known = tmp_path / "known_hosts"
    known.write_text(host.known_hosts_line() + "\n")
    config = HostConfig(
        name="sim", hostname=host.host, port=host.port, user="root", known_hosts=(str(known),)
    )
    return await Connection(
        config, client_keys=[host.server.client_key], agent_path=None, user_known_hosts=None
    ).connect()


@pytest.fixture
async def sim_conn(
    tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[SimHost, Connection]]:
    async with SimHost(request.param, speed=40) as host:
        conn = await connect(host, tmp_path)
        try:
            yield host, conn
        finally:
            await conn.close()


async def follow_until(manager: RunManager, run: RunRecord, needle: str, timeout: float = 20) -> str:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    async for chunk in manager.tail(run):
        seen += chunk.lines
        if any(needle in line for line in chunk.lines):
            return "\n".join(seen)
        assert time.monotonic() < deadline, "\n".join(seen[-20:])
    raise AssertionError("the tail ended")


@pytest.mark.parametrize(
    ("sim_conn", "signal"), [("proxmox-a6000", "TERM"), ("ignore-term", "KILL")], indirect=["sim_conn"]
)
async def test_stop_ends_the_run_with_term_or_escalates_to_kill_and_then_the_gpus_come_free(
    sim_conn: tuple[SimHost, Connection], signal: str
) -> None:
    host, conn = sim_conn
    manager = RunManager(conn, Target("pct", "129"), runs_dir=str(host.state_dir / "runs"))
    argv = [
        PYTHON,
        "-m",
        "sglang.launch_server",
        *QWEN_ARGS,
        "--max-running-requests",
        "8",
        "--port",
        str(free_port()),
    ]
    run = await manager.launch(argv, {"CUDA_VISIBLE_DEVICES": "0,1"}, gpus=[0, 1])
    await follow_until(manager, run, "The server is fired up and ready to roll!")

    result = await manager.stop(run, grace=0.5)
    assert (result.result, result.signal) == ("stopped", signal)
    snapshot = await manager.wait_gpus_free(run, None, timeout=10, sampler=GpuSampler(conn), poll=0.1)
    assert all((g.memory_used_mib.value or 0) < 100 for g in snapshot.gpus)
