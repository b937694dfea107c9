"""The sim's `pct` backed by real LXC containers (lxc-start / lxc-attach): a run's namespaces, its
process group and its cgroup (`/lxc.payload.VMID`) are real, where Proxmox's pct cannot run."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings

from sgtui.remote.connection import LocalTransport
from sgtui.remote.gpu import GpuSampler
from sgtui.remote.runs import RunManager, RunState
from sgtui.remote.targets import Target
from sgtui.sim.install import SGTUI_ROOT, install
from sgtui.sim.pct import LXC_PATH_ENV, REAL_LXC_ENV
from sgtui.sim.scenarios import SCENARIOS
from tests.remote.quoting import argvs, envs, parse_argv_line

from .conftest import SPEED, DockerRig, Images
from .lxc import destroy_all, init_pid, require_lxc, start_lxc
from .test_docker_quoting import PRINTER
from .test_docker_runs import READY, follow_until

pytestmark = pytest.mark.lxc
VMID = "129"


class LxcHost:
    def __init__(self, rig: DockerRig, lxcpath: Path) -> None:
        self.rig = rig
        self.lxcpath = lxcpath
        self.rootfs = lxcpath / VMID / "rootfs"


@pytest.fixture
def lxc_host(rootfs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LxcHost]:
    """A Proxmox-like host: the sim's state and fake pct + nvidia-smi on PATH, and a real LXC container
    129 (GPUs 0 and 1 in the sim's state) running the image tree."""
    require_lxc()
    state_dir = tmp_path / "state"
    install(SCENARIOS["proxmox-a6000"], state_dir, speed=SPEED)
    lxcpath = Path("/tmp") / f"sgtui-lxc-{uuid.uuid4().hex[:8]}"  # short: LXC puts sockets under it
    rig = DockerRig(tmp_path, Images("", ""), state_dir, state_dir / "bin")
    printer = rig.opt_dir() / "printer" / "python"
    printer.parent.mkdir(exist_ok=True)
    printer.write_text(PRINTER)
    printer.chmod(0o755)
    monkeypatch.setenv("PATH", f"{state_dir / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv(REAL_LXC_ENV, "1")
    monkeypatch.setenv(LXC_PATH_ENV, str(lxcpath))
    monkeypatch.setenv("SGTUI_SIM_SPEED", f"{SPEED:g}")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    try:
        binds = [
            (state_dir, str(state_dir), False),
            (Path(SGTUI_ROOT), SGTUI_ROOT, True),
            (rig.opt_dir(), "/opt", False),  # the stand-in's venv and the sim's nvidia-smi
        ]
        start_lxc(lxcpath, VMID, rootfs, binds)
        yield LxcHost(rig, lxcpath)
    finally:
        destroy_all(lxcpath)


async def test_a_run_in_a_real_lxc_container_is_private_becomes_ready_and_maps_to_pct_129(
    lxc_host: LxcHost,
) -> None:
    local = LocalTransport("pve")
    manager = RunManager(local, Target("pct", VMID))
    run = await manager.launch(lxc_host.rig.launch_argv(), {"CUDA_VISIBLE_DEVICES": "0,1"}, gpus=[0, 1])
    await follow_until(manager, run, READY)
    # the run dir is in the container's own root filesystem, not the host's
    inside = lxc_host.rootfs / run.run_dir.lstrip("/")
    assert inside.is_dir() and not Path(run.run_dir).exists()
    assert oct(inside.stat().st_mode & 0o777) == "0o700"
    assert {oct(p.stat().st_mode & 0o777) for p in inside.iterdir()} == {"0o600"}
    # the leader is pid-namespaced: its recorded pid is the container's, the cgroup the host's
    assert run.pgid < 100 and init_pid(lxc_host.lxcpath, VMID) > run.pgid
    holders = await GpuSampler(local).processes()
    assert holders and {p.container for p in holders} == {f"pct {VMID}"}
    assert all(f"lxc.payload.{VMID}" in Path(f"/proc/{p.pid}/cgroup").read_text() for p in holders)

    again = RunManager(LocalTransport("pve"), Target("pct", VMID))  # sgtui restarted
    found = [r for r in await again.list_runs() if r.id == run.id]
    assert len(found) == 1 and (await again.status(found[0])).state is RunState.RUNNING
    result = await again.stop(found[0], grace=5)
    assert (result.result, result.signal) == ("stopped", "TERM")
    snapshot = await again.wait_gpus_free(found[0], None, 15, GpuSampler(local), poll=0.1)
    assert all((g.memory_used_mib.value or 0) < 100 for g in snapshot.gpus)


def test_argv_and_env_arrive_exactly_through_pct_and_real_lxc_attach(lxc_host: LxcHost) -> None:
    loop = asyncio.new_event_loop()
    local = LocalTransport("pve")

    @settings(max_examples=20, deadline=None)
    @given(argv=argvs, env=envs)
    def roundtrip(argv: list[str], env: dict[str, str]) -> None:
        cmd = Target("pct", VMID).command(["/opt/printer/python", *argv], env)
        got = parse_argv_line(loop.run_until_complete(local.run(cmd, timeout=30)).stdout)
        assert (got["argv"], got["env"]) == (argv, env)

    try:
        roundtrip()
    finally:
        loop.close()
