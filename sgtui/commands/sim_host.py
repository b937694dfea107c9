"""`sgtui sim-host`: the simulated GPU host as a standalone SSH server on 127.0.0.1, until interrupted."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgtui.sim.fleet import SimFleet
    from sgtui.sim.host import SimHost, WrittenConfig

HELP = "run the simulated GPU host as a standalone SSH server on 127.0.0.1"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sgtui.sim.scenarios import DEFAULT_SCENARIO, SCENARIOS

    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any free port)")
    parser.add_argument(
        "--config-dir",
        help="sgtui config dir to write the `sim` host entry, its key, known_hosts line and demo profiles "
        "into (default: sgtui's own config dir, or $SGTUI_CONFIG_DIR)",
    )
    parser.add_argument(
        "--scenario",
        default=DEFAULT_SCENARIO,
        help=f"which simulated host: {', '.join(SCENARIOS)} (default {DEFAULT_SCENARIO}; "
        "--list-scenarios describes them)",
    )
    parser.add_argument("--list-scenarios", action="store_true", help="describe the scenarios and exit")
    parser.add_argument(
        "--speed",
        type=float,
        default=None,
        help="time factor for the simulated SGLang (2 = twice as fast; default $SGTUI_SIM_SPEED or 1)",
    )
    parser.add_argument("--name", default="sim", help="host name to register (default: sim)")
    parser.add_argument(
        "--hosts",
        type=int,
        default=1,
        help="serve this many simulated hosts (up to 1000), named sim, sim-2, ..., each on its own address "
        "127.0.0.N (127.0.1.1 ... past 254) "
        "(each listening on --port there); two or more also write the multinode-demo profile",
    )
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="delay each SSH login by this much, like hosts across a network (benchmarks)",
    )


def run(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from sgtui.core.errors import UserError
    from sgtui.core.paths import config_dir
    from sgtui.sim.scenarios import get_scenario

    if args.list_scenarios:
        from sgtui.sim.scenarios import SCENARIOS

        for name, described in SCENARIOS.items():
            print(f"{name}\n  {described.description}")
        return 0
    scenario = get_scenario(args.scenario)
    if not 0 <= args.port < 65536:
        raise UserError(f"--port {args.port}: use a port number from 1 to 65535 (or 0 for any free port)")
    speed = args.speed if args.speed is not None else float(os.environ.get("SGTUI_SIM_SPEED") or 1.0)
    if not speed > 0:
        raise UserError(f"--speed {speed:g}: the time factor must be positive (1 = real pace)")
    target_dir = Path(args.config_dir).expanduser() if args.config_dir else config_dir()
    from sgtui.sim.fleet import MAX_HOSTS

    if not 1 <= args.hosts <= MAX_HOSTS:
        raise UserError(f"--hosts {args.hosts}: serve 1 to {MAX_HOSTS} simulated hosts")
    if not args.latency_ms >= 0:
        raise UserError(f"--latency-ms {args.latency_ms:g}: give 0 or more milliseconds")
    if args.hosts > 1:
        if args.name != "sim":
            raise UserError("--name: a simulated fleet (--hosts 2 or more) is always named sim, sim-2, ...")
        return asyncio.run(
            _serve_fleet(scenario, args.hosts, args.port, target_dir, speed, args.latency_ms / 1000)
        )
    return asyncio.run(_serve(scenario, args.port, target_dir, speed, args.name, args.latency_ms / 1000))


async def _serve(
    scenario: object, port: int, config_dir: object, speed: float, name: str, latency_s: float = 0.0
) -> int:
    from pathlib import Path

    from sgtui.core.errors import UserError
    from sgtui.sim.host import SimHost
    from sgtui.sim.scenarios import Scenario

    assert isinstance(scenario, Scenario) and isinstance(config_dir, Path)
    host = SimHost(scenario, speed=speed, port=port)
    host.server.login_delay = latency_s
    try:
        await host.start()
    except OSError as exc:
        await host.close()
        raise UserError(
            f"--port {port}: cannot listen on 127.0.0.1:{port} ({exc.strerror}); pick another port"
        ) from None

    def announce() -> None:
        written = host.write_config(config_dir, name)
        print(f"sgtui sim-host: {name} ({scenario.name}) listening on {host.host}:{host.port}", flush=True)
        _print_written(written)
        if written.profiles:
            print(
                f"  try: SGTUI_CONFIG_DIR={config_dir} sgtui launch {written.profiles[0]} --watch",
                flush=True,
            )

    return await _until_stopped(host, announce)


async def _serve_fleet(
    scenario: object, count: int, port: int, config_dir: object, speed: float, latency_s: float = 0.0
) -> int:
    from pathlib import Path

    from sgtui.core.errors import UserError
    from sgtui.sim.fleet import SimFleet
    from sgtui.sim.scenarios import Scenario

    assert isinstance(scenario, Scenario) and isinstance(config_dir, Path)
    fleet = SimFleet(count, scenario, speed=speed, base_port=port, latency_s=latency_s)
    try:
        await fleet.start()
    except OSError as exc:
        raise UserError(
            f"--port {port}: cannot listen for {count} simulated hosts ({exc.strerror}); pick other ports"
        ) from None

    def announce() -> None:
        written = fleet.write_config(config_dir)
        for host in fleet:
            print(
                f"sgtui sim-host: {host.name} ({host.scenario.name}) listening on {host.host}:{host.port}",
                flush=True,
            )
        _print_written(written)
        if count >= 2:
            print(f"  try: SGTUI_CONFIG_DIR={config_dir} sgtui launch multinode-demo --watch", flush=True)

    return await _until_stopped(fleet, announce)


async def _until_stopped(sim: SimHost | SimFleet, announce: Callable[[], None]) -> int:
    """Announce, then serve until SIGINT or SIGTERM; either way the sim closes (its servers killed by
    their recorded pgid). The handlers are set before anything is printed: a signal sent as soon as the
    first line is read still stops the sim cleanly."""
    import asyncio
    import signal

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        announce()
        await stop.wait()
    finally:
        await sim.close()
        print("sgtui sim-host: stopped", file=sys.stderr, flush=True)
    return 0


def _print_written(written: WrittenConfig) -> None:
    print(f"  config: {written.hosts_file}", flush=True)
    for profile in written.profiles:
        print(f"  profile: {profile}", flush=True)
