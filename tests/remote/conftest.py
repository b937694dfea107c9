"""Fixtures for the remote tier: an in-process SSH server with a fake PATH, and connections pinned to it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from sgtui.remote.connection import Connection
from sgtui.remote.hosts import HostConfig
from sgtui.sim.sshserver import SimSSHServer
from tests.sshd import SshdServer, start_sshd

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture(autouse=True)
def _config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every remote test gets its own sgtui config dir (hosts.yaml, known_hosts)."""
    cfg = tmp_path / "sgtui-config"
    cfg.mkdir()
    monkeypatch.setenv("SGTUI_CONFIG_DIR", str(cfg))
    return cfg


@pytest.fixture
def fake_bin(tmp_path: Path) -> Path:
    """A directory put first on the simulated host's PATH, for fake nvidia-smi, pct and docker."""
    path = tmp_path / "hostbin"
    path.mkdir()
    return path


def host_env(fake_bin: Path) -> dict[str, str]:
    return {"PATH": f"{fake_bin}:{SYSTEM_PATH}", "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}


def pinned_host(server: SimSSHServer, tmp_path: Path, name: str = "sim") -> HostConfig:
    known = tmp_path / f"known_hosts-{name}-{server.port}"
    known.write_text(server.known_hosts_line() + "\n")
    return HostConfig(name=name, hostname=server.host, port=server.port, known_hosts=(str(known),))


def pinned_connection(server: SimSSHServer, tmp_path: Path, name: str = "sim", **kw: object) -> Connection:
    return Connection(
        pinned_host(server, tmp_path, name),
        client_keys=[server.client_key],
        agent_path=None,
        user_known_hosts=None,
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
async def sim_server(fake_bin: Path) -> AsyncIterator[SimSSHServer]:
    server = SimSSHServer(env=host_env(fake_bin))
    await server.start()
    yield server
    await server.close()


@pytest.fixture
async def conn(sim_server: SimSSHServer, tmp_path: Path) -> AsyncIterator[Connection]:
    c = pinned_connection(sim_server, tmp_path)
    yield c
    await c.close()


ConnFactory = Callable[..., Awaitable[Connection]]


@pytest.fixture
async def connect_to(tmp_path: Path) -> AsyncIterator[ConnFactory]:
    """Open pinned connections to any SimSSHServer; all are closed at teardown."""
    opened: list[Connection] = []

    async def factory(server: SimSSHServer, name: str = "sim", **kw: object) -> Connection:
        c = pinned_connection(server, tmp_path, name, **kw)
        opened.append(c)
        return c

    yield factory
    for c in opened:
        await c.close()


@pytest.fixture
def sshd(tmp_path: Path, fake_bin: Path) -> Iterator[SshdServer]:
    """A real OpenSSH sshd on 127.0.0.1 with fake_bin first on PATH (skips, or fails under
    SGTUI_REQUIRE_SSHD=1, when sshd cannot run here)."""
    with start_sshd(tmp_path / "sshd", env_path=f"{fake_bin}:{SYSTEM_PATH}") as server:
        yield server


def sshd_connection(server: SshdServer, tmp_path: Path, **kw: object) -> Connection:
    known = tmp_path / f"known_hosts-sshd-{server.host}-{server.port}"
    known.write_text(server.known_hosts_line() + "\n")
    host = HostConfig(
        name=f"sshd-{server.host}",
        hostname=server.host,
        port=server.port,
        user="root",
        known_hosts=(str(known),),
    )
    return Connection(host, client_keys=[server.client_key], agent_path=None, user_known_hosts=None, **kw)  # type: ignore[arg-type]


@pytest.fixture
async def sshd_conn(sshd: SshdServer, tmp_path: Path) -> AsyncIterator[Connection]:
    """A connection to the real sshd; closed before sshd stops (its per-connection processes outlive it)."""
    c = sshd_connection(sshd, tmp_path)
    yield c
    await c.close()


@pytest.fixture
def victim(session_leader: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    """Someone else's session leader: the process a planted record points at."""
    return session_leader
