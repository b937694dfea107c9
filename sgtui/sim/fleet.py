"""`SimFleet`: K simulated GPU hosts at once (`sgtui sim-host --hosts K`, `sgtui demo --hosts K`, the tests).

Each host is a whole `SimHost` (its own GPUs, containers, state dir and SSH server) on its own loopback
address, 127.0.0.N for host N, so that a port one host listens on is reachable at that host's address only,
as between real machines (Linux routes all of 127/8 to the loopback device). Where those addresses cannot
be bound, every host shares 127.0.0.1 and differs by port only (multi-node launches then need distinct
ports per node). A `base_port` is every host's SSH port on its own address (or P, P+1, ... on a shared
one). They are named `sim`, `sim-2`, ..., `sim-K`, share one client key, and `write_config` registers all
of them and writes the `multinode-demo` profile spanning `sim` and `sim-2`.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import asyncssh

from sgtui.sim.host import HOST_NAME, SimHost, WrittenConfig, write_configs
from sgtui.sim.scenarios import DEFAULT_SCENARIO, MULTINODE_PROFILE, Scenario, get_scenario, multinode_profile

MAX_HOSTS = 1000  # 127.0.0.1 .. 127.0.0.254, then 127.0.1.1 ... (254 per /24 block)


def host_address(number: int) -> str:
    """Host N's own loopback address: 127.0.0.N up to 254, then on through 127.0.1.1, 127.0.2.1, ...
    (the .0 and .255 of each block are skipped: never a host's address on a real /24)."""
    block, offset = divmod(number - 1, 254)
    return f"127.0.{block}.{offset + 1}"


def host_name(number: int) -> str:
    """`sim` for host 1, `sim-N` for the others."""
    return HOST_NAME if number == 1 else f"{HOST_NAME}-{number}"


def loopback_aliases_work() -> bool:
    """Whether this machine lets a socket bind 127.0.0.2 (Linux does; macOS only with an alias)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.2", 0))
        return True
    except OSError:
        return False
    finally:
        sock.close()


class SimFleet:
    """K simulated hosts: `async with SimFleet(3, speed=20) as fleet: fleet.hosts[1].port`."""

    def __init__(
        self,
        count: int,
        scenario: str | Scenario = DEFAULT_SCENARIO,
        *,
        speed: float = 1.0,
        base_port: int = 0,
        max_sessions: int | None = None,
        latency_s: float = 0.0,
    ) -> None:
        """`latency_s` delays each SSH login on every host by that long: the round trips of a host across
        a network, for benchmarks (loopback handshakes are pure CPU)."""
        if not 1 <= count <= MAX_HOSTS:
            raise ValueError(f"a simulated fleet has 1 to {MAX_HOSTS} hosts, not {count}")
        self.scenario = get_scenario(scenario) if isinstance(scenario, str) else scenario
        key = asyncssh.generate_private_key("ssh-ed25519")
        own_addresses = count == 1 or loopback_aliases_work()
        self.hosts: list[SimHost] = []
        for number in range(1, count + 1):
            address = host_address(number) if own_addresses else "127.0.0.1"
            # own addresses: every host may listen on the same port; a shared address needs one port each
            port = base_port if own_addresses or not base_port else base_port + number - 1
            self.hosts.append(
                SimHost(
                    self.scenario.for_host(number),
                    speed=speed,
                    host=address,
                    port=port,
                    max_sessions=max_sessions,
                    name=host_name(number),
                    client_key=key,
                )
            )
            self.hosts[-1].server.login_delay = latency_s

    def __iter__(self) -> Iterator[SimHost]:
        return iter(self.hosts)

    def __len__(self) -> int:
        return len(self.hosts)

    def __getitem__(self, name: str) -> SimHost:
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(name)

    async def start(self) -> SimFleet:
        try:
            await asyncio.gather(*(host.start() for host in self.hosts))
        except BaseException:
            await self.close()
            raise
        return self

    async def close(self) -> None:
        await asyncio.gather(*(host.close() for host in self.hosts), return_exceptions=True)

    async def __aenter__(self) -> SimFleet:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def write_config(self, config_dir: str | Path) -> WrittenConfig:
        """Register every host (hosts.yaml entries, known_hosts lines, the shared key) and write the demo
        profiles: the first host's scenario profiles and, with two hosts or more, `multinode-demo`."""
        config_dir = Path(config_dir)
        written = write_configs(config_dir, [(host.name, host) for host in self.hosts])
        profiles = list(written[0].profiles)
        if len(self.hosts) >= 2:
            path = config_dir / "profiles" / f"{MULTINODE_PROFILE}.yaml"
            if not path.exists():
                path.write_text(multinode_profile((self.hosts[0].name, self.hosts[1].name)), encoding="utf-8")
            profiles.append(path)
        first = written[0]
        return WrittenConfig(first.hosts_file, first.known_hosts, first.key_file, profiles)
