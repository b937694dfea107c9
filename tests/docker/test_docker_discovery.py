"""Discovery on a real dockerd (`docker ps` + `inspect`), and SGLang's log read through `docker logs`."""

from __future__ import annotations

import os
import re
import time

import pytest

from sgtui.core.logs import classify_text
from sgtui.remote.connection import LocalTransport
from sgtui.remote.targets import Target, discover

from .conftest import DockerRig
from .dockerd import REQUIRE_ENV, docker

pytestmark = pytest.mark.docker


def start_with_gpus(rig: DockerRig, spec: str) -> str:
    try:
        return rig.start(docker_args=("--gpus", spec))
    except AssertionError as exc:
        if "could not select device driver" not in str(exc) or os.environ.get(REQUIRE_ENV) == "1":
            raise
        pytest.skip(
            "docker --gpus needs dockerd started with nvidia-container-runtime-hook on its PATH "
            "(.ci/run starts it with tests/docker/bin first)"
        )


async def test_running_containers_are_found_with_name_image_status_and_their_gpus(
    rig: DockerRig, local: LocalTransport
) -> None:
    every = start_with_gpus(rig, "all")
    two = start_with_gpus(rig, "2")
    picked = start_with_gpus(rig, '"device=0,2"')
    plain = rig.start()
    stopped = rig.start()
    docker("stop", "-t", "0", stopped)
    found = {c.name: c for c in await discover(local)}
    assert stopped not in found  # `docker ps` lists running containers only
    for name in (every, two, picked, plain):
        assert found[name].target == Target("docker", name)
        assert found[name].image == rig.images.bash
        assert found[name].status.startswith("Up ")
    assert (found[every].gpus, found[every].all_gpus) == ((), True)
    assert (found[two].gpus, found[two].all_gpus) == ((0, 1), False)
    assert (found[picked].gpus, found[picked].all_gpus) == ((0, 2), False)
    assert (found[plain].gpus, found[plain].all_gpus) == ((), False)


async def test_a_server_log_read_through_docker_logs_with_timestamps_is_classified_as_today(
    rig: DockerRig,
) -> None:
    """The stand-in as the container's main process (the way the official image runs SGLang); `docker
    logs --timestamps` adds docker's own RFC 3339 prefix to every line."""
    name = rig.start(docker_args=("-e", "CUDA_VISIBLE_DEVICES=0,1"), command=tuple(rig.launch_argv()))
    text = ""
    for _ in range(300):
        text = docker("logs", "--timestamps", name)
        if "The server is fired up" in text:
            break
        time.sleep(0.1)
    first = text.splitlines()[0]
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z ", first), first
    analysis = classify_text(text)
    assert analysis.state.phase == "ready", analysis.state.phase
    # compose prints `service-N  | ` before each line (no compose here: the same prefix, added the same way)
    composed = "\n".join(f"sglang-1  | {line}" for line in docker("logs", name).splitlines())
    assert classify_text(composed).state.phase == "ready"
