"""Helpers for driving a SimHost over SSH the way sgtui does: commands through the login shell, servers
started detached inside the container, logs and GPU memory read back."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import socket
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import asyncssh
import pytest

from sgtui.sim.host import SimHost
from sgtui.sim.scenarios import Scenario
from sgtui.sim.state import proc_start_time

SPEED = 40.0  # the simulated launch takes about half a second


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """A server launched detached in the sim: its process group and its log file."""

    pgid: int
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def alive(self) -> bool:
        """Any non-zombie member left in the group (zombies wait for a slow reaper and hold nothing)."""
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rpartition(") ")[2].split()
            except OSError:
                continue
            if fields and int(fields[2]) == self.pgid and fields[0] not in ("Z", "X"):
                return True
        return False


class Sim:
    """A running SimHost plus one SSH connection to it."""

    def __init__(self, host: SimHost, conn: asyncssh.SSHClientConnection) -> None:
        self.host = host
        self.conn = conn
        self.logs = host.state_dir / "test-logs"
        self.logs.mkdir(exist_ok=True)
        self._n = 0

    async def run(self, command: str) -> asyncssh.SSHCompletedProcess:
        return await self.conn.run(command, check=False)

    async def launch(
        self,
        args: list[str],
        *,
        python: str = "/opt/sglang/venv/bin/python",
        vmid: int = 129,
        env: dict[str, str] | None = None,
    ) -> Server:
        """Start `python -m sglang.launch_server args` in the container, detached like sgtui does."""
        self._n += 1
        log = self.logs / f"server-{self._n}.log"
        words = [
            "env",
            *(f"{k}={v}" for k, v in (env or {}).items()),
            python,
            "-m",
            "sglang.launch_server",
            *args,
        ]
        inner = f"{shlex.join(words)} > {shlex.quote(str(log))} 2>&1 < /dev/null"
        script = (
            f"setsid bash --norc --noprofile -c {shlex.quote(inner)} > /dev/null 2>&1 < /dev/null & echo $!"
        )
        cmd = shlex.join(["pct", "exec", str(vmid), "--", "bash", "--norc", "--noprofile", "-c", script])
        result = await self.run(cmd)
        assert result.exit_status == 0, result.stderr
        return Server(int(str(result.stdout).strip()), log)

    def kill(self, server: Server, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pgid, sig)

    def used_mib(self) -> dict[int, int]:
        return self.host.gpu_memory()


async def wait_for(
    predicate: Callable[[], bool],
    timeout: float = 15.0,
    what: str = "condition",
    detail: Callable[[], str] | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            extra = f"\n{detail()[-3000:]}" if detail is not None else ""
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{extra}")
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def open_sim(scenario: str | Scenario = "proxmox-a6000", speed: float = SPEED) -> AsyncIterator[Sim]:
    async with SimHost(scenario, speed=speed) as host:
        known = asyncssh.import_known_hosts(host.known_hosts_line())
        async with asyncssh.connect(
            host.host,
            port=host.port,
            known_hosts=known,
            client_keys=[host.server.client_key],
            username="root",
            config=None,
            agent_path=None,
        ) as conn:
            yield Sim(host, conn)


@pytest.fixture
async def sim() -> AsyncIterator[Sim]:
    async with open_sim() as s:
        yield s


def start_time(pid: int) -> int | None:
    return proc_start_time(pid)


def fit_weights_gib(args: list[str], version: str, gpu_mib: int = 49140, gpus: int = 2) -> float:
    """What sgtui's fit engine says the weights take per GPU: the figure the stand-in must print."""
    from sgtui.core.fit import fit
    from sgtui.core.gpus import GpuSpec
    from sgtui.core.model import load_model_facts
    from sgtui.core.sglang.flags import parse_argv
    from sgtui.sim.plan import model_folder

    spec = parse_argv(args, version).spec
    folder = model_folder(spec.model_path)
    assert folder is not None
    report = fit(spec, load_model_facts(folder), GpuSpec("GPU", gpu_mib), n_gpus=gpus, version=version)
    return float(report.to_json()["weights_gib"])
