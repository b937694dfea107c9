"""The fleet view's back end at scale (run by hand): 50 simulated hosts x 8 GPUs sampled at 1 Hz.

The hosts are `sgtui sim-host --hosts N --scenario h100x8` in another process (their SSH servers and fake
nvidia-smi cost that process, as real hosts would pay their own), so what is measured is this process: the
jump box running `sgtui.remote.fleet.Fleet`.

1. Single connects: each host connected alone, one after the other (fresh connection each); the slowest.
2. Connect-all: a fresh `Fleet(...).connect_all()` over every host at once; wall time.
3. Sampling: `Fleet.sample(1.0)` for `--seconds`: this process's CPU time / wall time, readings received,
   and the resident memory (ru_maxrss and current RSS) before and after, to show it stays bounded.

    .venv/bin/python bench/bench_fleet.py [--hosts 50] [--seconds 60] [--latency-ms 0]

On loopback an SSH handshake is pure CPU (both ends in this machine), so 50 at once queue for the two cores;
`--latency-ms` makes each simulated login wait like a host across a network, which is what connecting in
parallel is for.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgtui.remote.connection import ConnectionPool  # noqa: E402
from sgtui.remote.fleet import Fleet  # noqa: E402
from sgtui.remote.hosts import load_hosts  # noqa: E402


def rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def start_sims(config: Path, hosts: int, latency_ms: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sgtui",
            "sim-host",
            "--hosts",
            str(hosts),
            "--scenario",
            "h100x8",
            "--config-dir",
            str(config),
            "--latency-ms",
            str(latency_ms),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    seen = 0
    deadline = time.monotonic() + 120
    while seen < hosts and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"sim-host ended early (rc {proc.poll()})")
        seen += "listening on" in line
    return proc


async def main(hosts: int, seconds: float, latency_ms: float) -> None:
    config = Path(tempfile.mkdtemp(prefix="sgtui-bench-fleet-"))
    os.environ["SGTUI_CONFIG_DIR"] = str(config)
    sims = start_sims(config, hosts, latency_ms)
    try:
        configs = load_hosts(ssh_config=False)
        names = sorted(configs, key=lambda n: (len(n), n))

        singles = []
        for name in names:
            pool = ConnectionPool(configs, user_known_hosts=None)
            t0 = time.perf_counter()
            await pool.get(name).connect()
            singles.append(time.perf_counter() - t0)
            await pool.close()
        singles.sort()
        print(
            f"single connect: median {singles[len(singles) // 2] * 1000:.0f} ms, "
            f"slowest {singles[-1] * 1000:.0f} ms ({len(singles)} hosts, one at a time)"
        )

        pool = ConnectionPool(configs, user_known_hosts=None)
        changes = 0

        def changed(_view: object) -> None:
            nonlocal changes
            changes += 1

        fleet = Fleet(pool, names, on_change=changed)
        t0, c0 = time.perf_counter(), time.process_time()
        views = await fleet.connect_all()
        wall, client_cpu = time.perf_counter() - t0, time.process_time() - c0
        up = sum(1 for v in views if v.state.value == "up")
        print(
            f"connect-all: {wall * 1000:.0f} ms for {up}/{len(views)} hosts up "
            f"= {wall / singles[-1]:.2f} x the slowest single connect (target <= 2); this process's CPU "
            f"{client_cpu * 1000:.0f} ms ({client_cpu / up * 1000:.1f} ms per handshake)"
        )

        rss0 = rss_mib()
        task = asyncio.ensure_future(fleet.sample(1.0))
        await asyncio.sleep(5.0)  # every stream up and steady
        got0 = sum(1 for v in fleet.views() if v.gpus is not None and v.gpus.count == 8)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        rss_mid = rss_mib()
        await asyncio.sleep(seconds)
        cpu, elapsed = time.process_time() - cpu0, time.perf_counter() - wall0
        rss1 = rss_mib()
        ages = [v.gpu_age() for v in fleet.views()]
        stale = sum(1 for a in ages if a is None or a > 3.0)
        task.cancel()
        print(
            f"sampling {hosts} hosts x 8 GPUs at 1 Hz for {elapsed:.0f} s: "
            f"CPU {100 * cpu / elapsed:.1f} % of one core (target <= 5 %); "
            f"{got0}/{hosts} hosts reporting 8 GPUs; {stale} stale rows at the end"
        )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"memory: RSS {rss0:.0f} MiB before sampling, {rss_mid:.0f} MiB after 5 s, {rss1:.0f} MiB "
            f"after {elapsed:.0f} s more (ru_maxrss {peak:.0f} MiB)"
        )
        await fleet.close()
        await pool.close()
    finally:
        sims.terminate()
        sims.wait(30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--latency-ms", type=float, default=0.0, help="each simulated login waits this long (network RTTs)"
    )
    args = parser.parse_args()
    print(f"{args.hosts} hosts, login latency {args.latency_ms:g} ms")
    asyncio.run(main(args.hosts, args.seconds, args.latency_ms))
