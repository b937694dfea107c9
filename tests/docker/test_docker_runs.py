"""A server's whole life inside a real Docker container: launch, follow, stop, GPUs freed, reattach."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sgtui.remote.connection import LocalTransport
from sgtui.remote.gpu import GpuSampler
from sgtui.remote.runs import RunManager, RunRecord, RunState
from sgtui.remote.targets import Target

from .conftest import DockerRig
from .dockerd import docker

pytestmark = pytest.mark.docker
READY = "The server is fired up and ready to roll!"


async def follow_until(manager: RunManager, run: RunRecord, needle: str, timeout: float = 30) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    async for chunk in manager.tail(run):
        seen += chunk.lines
        if any(needle in line for line in chunk.lines):
            return seen
        assert time.monotonic() < deadline, "\n".join(seen[-20:])
    raise AssertionError("the tail ended")


async def test_a_launch_runs_detached_inside_the_container_and_becomes_ready(
    rig: DockerRig, local: LocalTransport
) -> None:
    name = rig.start()
    manager = RunManager(local, Target("docker", name))
    run = await manager.launch(rig.launch_argv(), {"CUDA_VISIBLE_DEVICES": "0,1"}, gpus=[0, 1])
    lines = await follow_until(manager, run, READY)
    assert any("Load weight end" in ln for ln in lines)
    # the run dir and log live in the container, not on the host
    inside = rig.exec(
        name, f"stat -c '%a %n' {run.run_dir} {run.run_dir}/*; cat /proc/{run.pgid}/stat"
    ).splitlines()
    modes = {line.split()[1].rsplit("/", 1)[-1]: line.split()[0] for line in inside[:-1]}
    assert modes.pop(run.id) == "700" and modes and set(modes.values()) == {"600"}, modes
    assert "server.log" in modes and "command.json" in modes
    assert run.run_dir.startswith("/root/.local/state/sgtui/runs/")  # the per-user default, in the container
    assert not Path(run.run_dir).exists()
    stat = inside[-1].rpartition(") ")[2].split()
    assert stat[2] == stat[3] == str(run.pgid)  # pgid and sid: setsid made it a session leader
    status = await manager.status(run)
    assert status.state is RunState.RUNNING


async def test_the_host_sees_the_servers_gpu_memory_held_by_the_container_then_a_stop_frees_it(
    rig: DockerRig, local: LocalTransport
) -> None:
    """nvidia-smi on the host lists host pids; /proc/PID/cgroup maps them to this container; a stop by
    process group inside the container ends them; wait-for-GPUs sees the memory go."""
    name = rig.start()
    cid = docker("inspect", "--format", "{{.Id}}", name)
    manager = RunManager(local, Target("docker", name))
    run = await manager.launch(rig.launch_argv(), {"CUDA_VISIBLE_DEVICES": "0,1"}, gpus=[0, 1])
    await follow_until(manager, run, READY)
    sampler = GpuSampler(local)
    holders = await sampler.processes()
    assert holders and {p.container for p in holders} == {f"docker {cid[:12]}"}
    assert {p.gpu_index for p in holders} == {0, 1}
    for p in holders:  # host pids, not the container's own
        assert cid in Path(f"/proc/{p.pid}/cgroup").read_text()

    result = await manager.stop(run, grace=5)
    assert (result.result, result.signal, result.members) == ("stopped", "TERM", 0)
    assert (await manager.status(run)).state is RunState.STOPPED  # recorded by the stop
    snapshot = await manager.wait_gpus_free(run, None, timeout=15, sampler=sampler, poll=0.1)
    assert all((g.memory_used_mib.value or 0) < 100 for g in snapshot.gpus)


async def test_a_restarted_sgtui_finds_the_run_again_and_follows_it_from_the_start(
    rig: DockerRig, local: LocalTransport
) -> None:
    name = rig.start()
    first = RunManager(local, Target("docker", name))
    run = await first.launch(rig.launch_argv(), {"CUDA_VISIBLE_DEVICES": "0,1"}, gpus=[0, 1])
    await follow_until(first, run, "Load weight begin")
    await local.close()

    again = LocalTransport("dockerhost")
    manager = RunManager(again, Target("docker", name))
    found = [r for r in await manager.list_runs() if r.id == run.id]
    assert len(found) == 1 and (found[0].pgid, found[0].start, found[0].argv) == (
        run.pgid,
        run.start,
        run.argv,
    )
    assert (await manager.status(found[0])).state is RunState.RUNNING
    lines = await follow_until(manager, found[0], READY)
    assert any("Load weight begin" in ln for ln in lines)  # from byte 0, nothing lost
    assert (await manager.stop(found[0], grace=5)).result == "stopped"
