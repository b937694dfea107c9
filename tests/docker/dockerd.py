"""The real-Docker tier's access to dockerd: is it usable here, and the containers and images it makes.

Like the sshd tier, it skips (saying why) where Docker cannot run, and fails instead under
SGTUI_REQUIRE_DOCKER=1, which `.ci/run` sets after installing Debian's docker.io and starting dockerd.
Everything it creates carries the label `sgtui-test=<session>` and is removed at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Sequence

import pytest

REQUIRE_ENV = "SGTUI_REQUIRE_DOCKER"
LABEL = "sgtui-test"
SESSION = uuid.uuid4().hex[:10]


def docker_bin() -> str | None:
    return shutil.which("docker")


def docker_unavailable_reason() -> str | None:
    exe = docker_bin()
    if exe is None:
        return "docker not installed (apt-get install docker.io; .ci/run does it and starts dockerd)"
    try:
        info = subprocess.run(
            [exe, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "docker info timed out: dockerd is not answering"
    if info.returncode != 0 or not info.stdout.strip():
        return f"dockerd is not running or not reachable ({info.stderr.strip()[:200]}); start it: dockerd &"
    if os.geteuid() != 0:
        return "the docker tier needs root (it mounts the host's /proc and creates a local user)"
    return None


def require_docker() -> None:
    reason = docker_unavailable_reason()
    if reason is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but the docker tier cannot run: {reason}")
    pytest.skip(reason)


def docker(*args: str, check: bool = True, timeout: float = 60, input: bytes | None = None) -> str:
    """Run the docker CLI; raises with its stderr when `check` and it fails."""
    exe = docker_bin() or "docker"
    proc = subprocess.run([exe, *args], capture_output=True, timeout=timeout, check=False, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode(errors="replace").strip()


def run_container(image: str, name: str, args: Sequence[str], command: Sequence[str]) -> str:
    """`docker run -d` a labelled container; returns its full id."""
    return docker("run", "-d", "--name", name, "--label", f"{LABEL}={SESSION}", *args, image, *command)


def remove_ours() -> None:
    """Every container and image this session labelled."""
    ids = docker("ps", "-aq", "--filter", f"label={LABEL}={SESSION}", check=False).split()
    if ids:
        docker("rm", "-f", "-v", *ids, check=False)
    images = docker("images", "-q", "--filter", f"label={LABEL}={SESSION}", check=False).split()
    if images:
        docker("rmi", "-f", *set(images), check=False)
