"""`SimHost`: a whole simulated GPU host on 127.0.0.1, for `sgtui demo`, `sgtui sim-host` and the tests.

It is an in-process SSH server (sgtui.sim.sshserver) whose commands run with real bash in an environment
where the fake `nvidia-smi` and `pct` come first on PATH, and where each Proxmox container has SGLang
venvs whose `python -m sglang.launch_server` is sgtui's stand-in (sgtui.sim.install lays this out).
Closing the host kills whatever servers were launched on it, by their recorded process groups.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import asyncssh
import yaml

from sgtui.sim.install import host_env, install
from sgtui.sim.ports import PortMap
from sgtui.sim.scenarios import DEFAULT_SCENARIO, Scenario, get_scenario
from sgtui.sim.smi_stream import SmiStreams
from sgtui.sim.sshserver import SimSSHServer
from sgtui.sim.state import StateStore, proc_start_time

HOST_NAME = "sim"
KEY_FILE = "sim_ed25519"


@dataclass(frozen=True)
class WrittenConfig:
    """What `SimHost.write_config` put into a config dir."""

    hosts_file: Path
    known_hosts: Path
    key_file: Path
    profiles: list[Path]


class SimHost:
    """A simulated GPU host: `async with SimHost("proxmox-a6000", speed=50) as host: ... host.port`."""

    def __init__(
        self,
        scenario: str | Scenario = DEFAULT_SCENARIO,
        *,
        speed: float = 1.0,
        host: str = "127.0.0.1",
        port: int = 0,
        state_dir: str | Path | None = None,
        max_sessions: int | None = None,
        name: str = HOST_NAME,
        client_key: asyncssh.SSHKey | None = None,
    ) -> None:
        self.scenario = get_scenario(scenario) if isinstance(scenario, str) else scenario
        if name != self.scenario.hostname:
            self.scenario = replace(self.scenario, hostname=name)
        self.name = name
        self.speed = speed
        self._own_dir = state_dir is None
        self.state_dir = Path(tempfile.mkdtemp(prefix="sgtui-sim-")) if state_dir is None else Path(state_dir)
        self.store: StateStore = install(self.scenario, self.state_dir, speed, address=host)
        self.server = SimSSHServer(
            host,
            port,
            env=host_env(self.state_dir, speed, address=host),
            cwd=self.state_dir / "root",
            max_sessions=max_sessions,
            client_key=client_key,
            port_map=PortMap(self.state_dir).lookup,
        )
        if host != "127.0.0.1":
            self.server.loopback_alias = host
        self.server.exec_hook = SmiStreams(self.state_dir).handler
        self._busy: list[socket.socket] = []

    @property
    def host(self) -> str:
        return self.server.host

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def env(self) -> dict[str, str]:
        return dict(self.server.env)

    def known_hosts_line(self) -> str:
        return self.server.known_hosts_line()

    async def start(self) -> SimHost:
        for port in self.scenario.busy_ports:  # held on the sim's own port for it: a clash only in here
            sock = _hold_port(PortMap(self.state_dir).resolve(port), self.host)
            if sock is not None:
                self._busy.append(sock)
        await self.server.start()
        return self

    async def close(self) -> None:
        """Stop the SSH server, kill every server launched on this host, free busy ports, remove state."""
        await self.server.close()
        self.kill_servers()
        for sock in self._busy:
            sock.close()
        self._busy.clear()
        if self._own_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    async def __aenter__(self) -> SimHost:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def kill_servers(self) -> int:
        """SIGKILL the process groups of the servers launched here (only while their leader is ours)."""
        killed = 0
        try:
            servers = self.store.read().get("servers", [])
        except (OSError, ValueError):
            return 0
        for server in servers:
            pgid, start = int(server["pgid"]), server.get("pgid_start")
            if start is not None and proc_start_time(pgid) == start:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
                    killed += 1
            for pid, pid_start in server.get("pids", []):
                if proc_start_time(int(pid)) == pid_start:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(pid), signal.SIGKILL)
        return killed

    def gpu_memory(self) -> dict[int, int]:
        """Used MiB per GPU right now, as nvidia-smi would report it (settles released memory first)."""
        from sgtui.sim.state import gpu_rows

        return {row.index: row.used_mib for row in gpu_rows(self.store.refresh())}

    def write_config(self, config_dir: str | Path, name: str = HOST_NAME) -> WrittenConfig:
        """Make `name` reachable from sgtui: a hosts.yaml entry, the known_hosts line, the client key,
        and the scenario's profiles (existing profiles with the same file name are left alone)."""
        return write_configs(config_dir, [(name, self)])[0]

    def _write_profiles(
        self, config_dir: Path, name: str, hosts_file: Path, known: Path, key_file: Path
    ) -> WrittenConfig:
        profiles_dir = config_dir / "profiles"
        profiles_dir.mkdir(exist_ok=True)
        written = []
        for file_name, text in self.scenario.profiles.items():
            path = profiles_dir / file_name
            if not path.exists():
                path.write_text(text.replace("host: sim\n", f"host: {name}\n", 1), encoding="utf-8")
            written.append(path)
        return WrittenConfig(hosts_file, known, key_file, written)


def write_configs(config_dir: str | Path, named: Sequence[tuple[str, SimHost]]) -> list[WrittenConfig]:
    """Register many hosts at once: hosts.yaml and known_hosts are read and written once for all of them
    (500 simulated hosts one by one re-read a growing file 500 times), then each host's profiles."""
    config_dir = Path(config_dir)
    config_dir.mkdir(parents=True, exist_ok=True)
    key_file = config_dir / KEY_FILE
    for _name, host in named[:1]:  # a fleet shares one client key
        host.server.write_client_key(key_file)
    known = config_dir / "known_hosts"
    prefixes = tuple(f"[{host.host}]:{host.port} " for _name, host in named)
    kept = []
    if known.is_file():
        kept = [line for line in known.read_text().splitlines() if line and not line.startswith(prefixes)]
    known.write_text("\n".join([*kept, *(host.known_hosts_line() for _n, host in named)]) + "\n")
    hosts_file = config_dir / "hosts.yaml"
    hosts: dict[str, Any] = {}
    if hosts_file.is_file():
        loaded = yaml.safe_load(hosts_file.read_text(encoding="utf-8"))
        hosts = loaded if isinstance(loaded, dict) else {}
    for name, host in named:
        hosts[name] = {
            "hostname": host.host,
            "port": host.port,
            "user": "root",
            "identity_file": str(key_file),
            "known_hosts": str(known),
        }
    hosts_file.write_text(yaml.safe_dump(hosts, sort_keys=False), encoding="utf-8")
    return [host._write_profiles(config_dir, name, hosts_file, known, key_file) for name, host in named]


def _hold_port(port: int, address: str = "127.0.0.1") -> socket.socket | None:
    """Listen on address:port like a leftover server would; None when something already does."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
        sock.listen(8)
    except OSError:
        sock.close()
        return None
    return sock
