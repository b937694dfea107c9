"""What goes wrong with Docker targets, each said in one clear line (real dockerd, real containers)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from sgtui.remote.connection import LocalTransport
from sgtui.remote.runs import RunError, RunManager, RunState
from sgtui.remote.targets import Target, discover

from .conftest import DockerRig
from .dockerd import docker, require_docker
from .test_docker_runs import follow_until

pytestmark = pytest.mark.docker


def one_line(text: str) -> bool:
    return "\n" not in text and "Traceback" not in text


async def test_a_host_without_docker_says_so(
    rig: DockerRig, local: LocalTransport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(RunError) as err:
        await RunManager(local, Target("docker", "sglang")).launch(rig.launch_argv())
    assert "dockerhost has no `docker` command" in str(err.value) and one_line(str(err.value))


async def test_an_image_without_bash_is_named_as_the_problem(rig: DockerRig, local: LocalTransport) -> None:
    name = rig.start(image=rig.images.no_bash)
    assert docker("exec", name, "sh", "-c", "command -v bash || echo none") == "none"
    with pytest.raises(RunError) as err:
        await RunManager(local, Target("docker", name)).launch(rig.launch_argv())
    message = str(err.value)
    assert f"docker {name}" in message and "bash is not installed there" in message and one_line(message)


async def test_a_container_that_does_not_exist_or_is_stopped_says_which(
    rig: DockerRig, local: LocalTransport
) -> None:
    with pytest.raises(RunError) as err:
        await RunManager(local, Target("docker", "no-such-ctr")).launch(rig.launch_argv())
    assert "has no Docker container no-such-ctr" in str(err.value)
    name = rig.start()
    docker("stop", "-t", "0", name)
    with pytest.raises(RunError) as err:
        await RunManager(local, Target("docker", name)).launch(rig.launch_argv())
    assert f"Docker container {name} on dockerhost is stopped; start it (docker start {name})" in str(
        err.value
    )


@pytest.mark.parametrize("fate", ["stop", "rm"])
async def test_a_run_whose_container_is_stopped_or_removed_reads_as_ended_with_why(
    rig: DockerRig, local: LocalTransport, fate: str
) -> None:
    name = rig.start()
    manager = RunManager(local, Target("docker", name))
    run = await manager.launch(rig.launch_argv(), {"CUDA_VISIBLE_DEVICES": "0,1"}, gpus=[0, 1])
    await follow_until(manager, run, "Load weight begin")
    docker(*(["stop", "-t", "1"] if fate == "stop" else ["rm", "-f"]), name)
    status = await manager.status(run)
    assert status.state is RunState.DEAD and status.why is not None
    assert ("was stopped" if fate == "stop" else "is gone from dockerhost (removed)") in status.why
    assert (await manager.stop(run, grace=1)).result == "not-running"


async def test_a_container_restarted_by_its_restart_policy_ends_the_run_and_says_so(
    rig: DockerRig, local: LocalTransport
) -> None:
    name = rig.start(docker_args=("--restart", "always"))
    manager = RunManager(local, Target("docker", name))
    run = await manager.launch(rig.launch_argv(), {"CUDA_VISIBLE_DEVICES": "0,1"}, gpus=[0, 1])
    await follow_until(manager, run, "Load weight begin")
    await asyncio.sleep(1.1)  # docker's StartedAt and run ids count whole seconds
    init_pid = int(docker("inspect", "--format", "{{.State.Pid}}", name))
    os.kill(init_pid, 9)  # the container's init dies: the container exits and docker restarts it
    status = await manager.status(run)  # while docker restarts it, or once it runs again
    assert status.state is RunState.DEAD and status.why and "restart" in status.why, status
    for _ in range(200):
        if subprocess.run(["docker", "exec", name, "true"], capture_output=True, check=False).returncode == 0:
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail("docker did not restart the container")
    status = await manager.status(run)
    assert status.state is RunState.DEAD
    assert status.why and re.search(r"by its restart policy \(always; restart count [1-9]\d*\)", status.why)
    # the run's record survived in the container's own filesystem, so a restarted sgtui still lists it
    assert [r.id for r in await manager.list_runs()] == [run.id]


async def test_a_user_outside_the_docker_group_is_told_the_socket_refused_them(tmp_path: Path) -> None:
    """Needs a running dockerd whose socket refuses that user (without one the refusal cannot happen)."""
    from sgtui.remote.connection import Connection
    from sgtui.remote.hosts import HostConfig
    from tests.remote.conftest import SYSTEM_PATH
    from tests.sshd import start_sshd

    require_docker()
    user = f"sgtnd{uuid.uuid4().hex[:6]}"
    made = subprocess.run(
        ["useradd", "-m", "-p", "*", "-s", "/bin/bash", user], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot create a local user to try the docker socket as ({made.stderr.strip()})")
    # sshd reads authorized_keys as that user, so its dir must be one the user can enter
    public = Path(tempfile.mkdtemp(prefix="sgtui-docker-sshd-"))
    public.chmod(0o755)
    try:
        with start_sshd(public, env_path=SYSTEM_PATH) as server:
            (public / "authorized_keys").chmod(0o644)
            known = tmp_path / "known"
            known.write_text(server.known_hosts_line() + "\n")
            host = HostConfig("box", server.host, server.port, user=user, known_hosts=(str(known),))
            conn = Connection(host, client_keys=[server.client_key], agent_path=None, user_known_hosts=None)
            try:
                with pytest.raises(RunError) as err:
                    await RunManager(conn, Target("docker", "sglang"), runs_dir="/tmp").launch(["/bin/true"])
                with pytest.raises(Exception) as err2:
                    await discover(conn)
            finally:
                await conn.close()
    finally:
        subprocess.run(["userdel", "-r", user], capture_output=True, check=False)
        shutil.rmtree(public, ignore_errors=True)
    message = str(err.value)
    assert "this login may not use Docker" in message and "`docker` group" in message and one_line(message)
    assert "may not use Docker" in str(err2.value)
