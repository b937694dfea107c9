"""`sgtui demo`: the app against the built-in simulated Proxmox host (LXC 129, 2x A6000, SGLang 0.5.9).

The simulated host runs in-process on 127.0.0.1 and sgtui's config dir points at a temporary folder, so
the user's own hosts, keys and profiles are neither read nor touched.
"""

from __future__ import annotations

import argparse

HELP = "open the app against a built-in simulated GPU host (no GPU or SSH host needed)"
DEMO_PROFILE = "qwen36-27b-2xa6000"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="time factor for the simulated server (2 = twice as fast; default 1, about 20 s to ready)",
    )
    parser.add_argument(
        "--hosts",
        type=int,
        default=1,
        help="simulate this many hosts (sim, sim-2, ...); two or more add the multinode-demo profile",
    )


def run(args: argparse.Namespace) -> int:
    import asyncio
    import os
    import shutil
    import tempfile

    from sgtui.core.errors import UserError

    if not args.speed > 0:
        raise UserError(f"--speed {args.speed:g}: the time factor must be positive (1 = real pace)")
    from sgtui.sim.fleet import MAX_HOSTS

    if not 1 <= args.hosts <= MAX_HOSTS:
        raise UserError(f"--hosts {args.hosts}: simulate 1 to {MAX_HOSTS} hosts")
    config = tempfile.mkdtemp(prefix="sgtui-demo-")
    os.environ["SGTUI_CONFIG_DIR"] = config
    try:
        if args.hosts > 1:
            return asyncio.run(_demo_fleet(config, args.speed, args.hosts))
        return asyncio.run(_demo(config, args.speed))
    finally:
        shutil.rmtree(config, ignore_errors=True)


async def _demo(config: str, speed: float) -> int:
    from pathlib import Path

    from sgtui.core.profiles import load_profile
    from sgtui.remote.hosts import load_hosts
    from sgtui.sim.host import SimHost
    from sgtui.ui.app import SgtuiApp
    from sgtui.ui.remote_backend import RemoteBackend

    async with SimHost(speed=speed) as host:
        written = host.write_config(Path(config))
        path = next((p for p in written.profiles if p.stem == DEMO_PROFILE), written.profiles[0])
        # the simulated containers share this machine: keep the demo's runs apart from anyone else's
        runs_dir = str(host.state_dir / "runs")
        backend = RemoteBackend(load_hosts(ssh_config=False), runs_dir=runs_dir, user_known_hosts=None)
        app = SgtuiApp(backend, load_profile(path), path, profile_dirs=(path.parent,), demo=True)
        await app.run_async()
        return app.return_code or 0


async def _demo_fleet(config: str, speed: float, count: int) -> int:
    """The app on K simulated hosts; each keeps its runs in its own (simulated) home directory."""
    from pathlib import Path

    from sgtui.core.profiles import load_profile
    from sgtui.remote.hosts import load_hosts
    from sgtui.sim.fleet import SimFleet
    from sgtui.ui.app import SgtuiApp
    from sgtui.ui.remote_backend import RemoteBackend

    async with SimFleet(count, speed=speed) as fleet:
        written = fleet.write_config(Path(config))
        path = next((p for p in written.profiles if p.stem == DEMO_PROFILE), written.profiles[0])
        backend = RemoteBackend(load_hosts(ssh_config=False), runs_dir=None, user_known_hosts=None)  # type: ignore[arg-type]
        app = SgtuiApp(backend, load_profile(path), path, profile_dirs=(path.parent,))
        await app.run_async()
        return app.return_code or 0
