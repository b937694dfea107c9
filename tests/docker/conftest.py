"""Fixtures of the real-Docker tier: a locally built image, containers that run the sim's SGLang
stand-in and fake nvidia-smi, and a host whose PATH has the sim's host-side nvidia-smi first.

The sim's state dir, the stand-in's venv (/opt) and sgtui's source are mounted into each container, and
the host's /proc at /hostproc, so the stand-in records the host pids of the processes holding "GPU
memory" (what a real nvidia-smi on the host reports) while sgtui works inside the container's own PID
namespace through `docker exec`, as it would with a real server in a real container.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sgtui.remote.connection import LocalTransport
from sgtui.sim.install import SGTUI_ROOT, install, install_venv
from sgtui.sim.scenarios import SCENARIOS, SimVenv
from sgtui.sim.state import HOST_PROC_ENV, StateStore
from tests.docker.dockerd import LABEL, SESSION, docker, remove_ours, require_docker, run_container
from tests.docker.image import build_rootfs, import_image

PYTHON = "/opt/sglang/venv/bin/python"
SGLANG_VERSION = "0.5.9"
CONTAINER_PATH = "/opt/sim-bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SPEED = 25.0


@dataclass(frozen=True)
class Images:
    bash: str
    no_bash: str


@pytest.fixture(scope="session")
def rootfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The image's tree, built once per run from this machine's files (Docker and LXC both use it)."""
    return build_rootfs(tmp_path_factory.mktemp("rootfs") / "root")


@pytest.fixture(scope="session")
def images(rootfs: Path) -> Iterator[Images]:
    """Two images from this machine's files, imported once per run and removed at its end."""
    require_docker()
    root = rootfs
    label = f"{LABEL}={SESSION}"
    built = Images(f"sgtui-test:{SESSION}", f"sgtui-test-nobash:{SESSION}")
    try:
        import_image(root, built.bash, label=label)
        import_image(root, built.no_bash, label=label, leave_out=["usr/bin/bash"])
        yield built
    finally:
        remove_ours()


@dataclass
class DockerRig:
    """One simulated GPU host (this machine) with Docker containers running the stand-in."""

    tmp: Path
    images: Images
    state_dir: Path
    host_bin: Path
    containers: list[str] = field(default_factory=list)

    @property
    def store(self) -> StateStore:
        return StateStore(self.state_dir)

    def opt_dir(self) -> Path:
        """The containers' /opt: an SGLang venv whose python is the image's python3 + the stand-in,
        and the sim's nvidia-smi (it shows the GPUs the container was given)."""
        root = self.tmp / "ctroot"
        if not (root / "opt").is_dir():
            install_venv(root, SimVenv("/opt/sglang/venv", SGLANG_VERSION), self.state_dir)
            wrapper = root / "opt/sglang/venv/bin/python"
            wrapper.write_text(
                '#!/bin/sh\nv="${0%/bin/*}"\n'
                'SGTUI_SIM_VENV="$v" PYTHONPATH="$v/lib/python3.12/site-packages" '
                'exec /usr/bin/python3 "$@"\n'
            )
            smi = root / "opt/sim-bin/nvidia-smi"
            smi.parent.mkdir(parents=True)
            smi.write_text(
                "#!/usr/bin/python3 -S\nimport sys\n"
                f"sys.path.insert(0, {SGTUI_ROOT!r})\n"
                "from sgtui.sim.nvidia_smi import run\n"
                f"sys.exit(run({str(self.state_dir)!r}, sys.argv[1:]))\n"
            )
            smi.chmod(0o755)
        return root / "opt"

    def start(
        self,
        *,
        gpus: tuple[int, ...] = (0, 1),
        docker_args: tuple[str, ...] = (),
        image: str | None = None,
        name: str | None = None,
        command: tuple[str, ...] = ("sleep", "infinity"),
    ) -> str:
        """Start a container (`command` under docker's init) given `gpus`; returns its name."""
        name = name or f"sgtui-t-{uuid.uuid4().hex[:8]}"
        with self.store.update() as state:
            state["containers"][name] = {"name": name, "running": True, "gpus": list(gpus), "venvs": []}
        state_path = str(self.state_dir)
        args = [
            "--init",
            "--network",
            "none",
            "-v",
            "/proc:/hostproc:ro",
            "-v",
            f"{state_path}:{state_path}",
            "-v",
            f"{self.opt_dir()}:/opt",
            "-v",
            f"{SGTUI_ROOT}:{SGTUI_ROOT}:ro",
            "-e",
            f"PATH={CONTAINER_PATH}",
            "-e",
            f"{HOST_PROC_ENV}=/hostproc",
            "-e",
            f"SGTUI_SIM_CONTAINER={name}",
            "-e",
            f"SGTUI_SIM_SPEED={SPEED:g}",
            "-e",
            "PYTHONDONTWRITEBYTECODE=1",
            *docker_args,
        ]
        run_container(image or self.images.bash, name, args, list(command))
        self.containers.append(name)
        return name

    def exec(self, name: str, script: str, check: bool = True) -> str:
        return docker("exec", name, "bash", "--norc", "--noprofile", "-c", script, check=check)

    def launch_argv(self, port: int = 30000) -> list[str]:
        from tests.cases import QWEN_ARGS

        return [
            PYTHON,
            "-m",
            "sglang.launch_server",
            *QWEN_ARGS,
            "--max-running-requests",
            "8",
            "--port",
            str(port),
        ]


@pytest.fixture
def rig(images: Images, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DockerRig]:
    """The sim's state and host-side nvidia-smi first on PATH (LocalTransport inherits it); the
    containers it started are removed afterwards."""
    state_dir = tmp_path / "state"
    install(SCENARIOS["proxmox-a6000"], state_dir, speed=SPEED)
    host_bin = state_dir / "bin"
    (host_bin / "pct").unlink()  # a Docker host, not a Proxmox one
    (host_bin / "docker").unlink()  # and its docker is the real one, not the sim's container-less stand-in
    monkeypatch.setenv("PATH", f"{host_bin}:{os.environ['PATH']}")
    monkeypatch.setenv("SGTUI_CONFIG_DIR", str(tmp_path / "config"))
    r = DockerRig(tmp_path, images, state_dir, host_bin)
    try:
        yield r
    finally:
        if r.containers:
            docker("rm", "-f", "-v", *r.containers, check=False)


@pytest.fixture
def local() -> LocalTransport:
    return LocalTransport("dockerhost")
