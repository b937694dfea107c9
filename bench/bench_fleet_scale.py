"""`sgtui fleet` at 10 ... 500 simulated hosts x 8 GPUs (run by hand; issue 21).

For each fleet size N: `sgtui sim-host --hosts N --scenario h100x8` in its own process (its SSH servers and
nvidia-smi loops are the hosts' cost, not the jump box's), then

1. single connect: `--singles` hosts connected alone, one after the other (fresh connection each), in this
   process: median and slowest.
2. connect-all: a fresh `Fleet(pool).connect_all()` over all N at the default concurrency, in this
   process: wall time, the ratio to the median single connect (the issue's target: <= 4x), and this
   process's CPU a host during it (the handshakes' client side: the floor of connect-all on any network).
3. `sgtui fleet --once --json` as its own process: wall time, exit code, hosts reported with 8 GPUs, and
   that process's CPU (rusage of the child).
4. `sgtui fleet --json --interval 1 [--runs-every S]` as its own process: seconds to the first host's line and
   to every host's first line (connect + first sample, hosts streaming while others connect), then that
   process's CPU alone (utime + stime from /proc/PID/stat) over `--seconds`, as % of one core; lines/s.

The load average (1 min) is printed before and after each size: this box has 2 cores shared with other
engineers, so every figure is read next to it. The sim-host process's RSS is printed per size (what one
simulated host costs).

    .venv/bin/python bench/bench_fleet_scale.py --hosts 10 50 100 250 500 [--seconds 60] [--latency-ms 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
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

TICK = os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def start_sims(config: Path, hosts: int, latency_ms: float) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "sgtui", "sim-host", "--hosts", str(hosts), "--scenario", "h100x8"]
    argv += ["--config-dir", str(config), "--latency-ms", str(latency_ms)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert proc.stdout is not None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"sim-host ended early (rc {proc.poll()})")
        if "config:" in line:
            return proc
    raise SystemExit("sim-host did not come up in 300 s")


async def singles(names: list[str], count: int) -> list[float]:
    configs = load_hosts(ssh_config=False)
    took = []
    step = max(len(names) // count, 1)
    for name in names[::step][:count]:
        pool = ConnectionPool(configs, user_known_hosts=None)
        t0 = time.perf_counter()
        await pool.get(name).connect()
        took.append(time.perf_counter() - t0)
        await pool.close()
    return sorted(took)


async def connect_all(names: list[str], concurrency: int | None = None) -> tuple[float, int, float]:
    """Wall time, hosts up, and this process's CPU seconds over the connects alone."""
    configs = load_hosts(ssh_config=False)
    pool = ConnectionPool(configs, user_known_hosts=None)
    fleet = Fleet(pool, names) if concurrency is None else Fleet(pool, names, concurrency=concurrency)
    t0, cpu0 = time.perf_counter(), own_cpu()
    views = await fleet.connect_all()
    wall, cpu = time.perf_counter() - t0, own_cpu() - cpu0
    await fleet.close()
    await pool.close()
    return wall, sum(1 for v in views if v.state.value == "up"), cpu


def once(env: dict[str, str]) -> tuple[float, int, int, float]:
    """Wall time, exit code, hosts reported with 8 GPUs, and the child's CPU seconds."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sgtui", "fleet", "--once", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = rc = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    rows = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    full = sum(1 for r in rows if r["state"] == "up" and len(r["gpus"]) == 8)
    return wall, rc, full, usage.ru_utime + usage.ru_stime


def stream(env: dict[str, str], hosts: int, seconds: float, runs_every: float) -> dict[str, float]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sgtui",
            "fleet",
            "--json",
            "--interval",
            "1",
            "--runs-every",
            str(runs_every),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    t0 = time.perf_counter()
    seen: set[str] = set()
    first = all_in = None
    while len(seen) < hosts:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit("sgtui fleet ended early")
        row = json.loads(line)
        if row["gpus"]:
            seen.add(row["host"])
            first = first or time.perf_counter() - t0
    all_in = time.perf_counter() - t0
    os.set_blocking(proc.stdout.fileno(), False)
    lines = 0
    c0, w0 = cpu_s(proc.pid), time.perf_counter()
    while time.perf_counter() - w0 < seconds:
        time.sleep(0.2)
        chunk = proc.stdout.read()
        lines += chunk.count(b"\n") if chunk else 0
    cpu, wall = cpu_s(proc.pid) - c0, time.perf_counter() - w0
    rss = rss_mib(proc.pid)
    proc.terminate()
    os.set_blocking(proc.stdout.fileno(), True)
    proc.stdout.read()  # drained to the end: a child blocked writing to a full pipe cannot stop
    proc.wait(60)
    return {
        "first": first or 0.0,
        "all": all_in,
        "cpu_pct": 100 * cpu / wall,
        "lines_s": lines / wall,
        "rss": rss,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[10, 50, 100, 250, 500])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--singles", type=int, default=10)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--skip-once", action="store_true")
    parser.add_argument("--connect-only", action="store_true", help="singles and connect-all only")
    parser.add_argument("--concurrency", type=int, nargs="*", help="connect-all at each of these")
    parser.add_argument(
        "--runs-every", type=float, default=60.0, help="`sgtui fleet --runs-every` (its default: 60)"
    )
    args = parser.parse_args()
    for n in args.hosts:
        config = Path(tempfile.mkdtemp(prefix="sgtui-bench-scale-"))
        os.environ["SGTUI_CONFIG_DIR"] = str(config)
        env = dict(os.environ)
        print(f"\n## {n} hosts x 8 GPUs (login latency {args.latency_ms:g} ms), load {load()}", flush=True)
        sims = start_sims(config, n, args.latency_ms)
        try:
            print(f"sim-host RSS {rss_mib(sims.pid):.0f} MiB idle", flush=True)
            names = sorted(load_hosts(ssh_config=False), key=lambda s: (len(s), s))
            took = asyncio.run(singles(names, args.singles))
            median = statistics.median(took)
            print(
                f"single connect: median {median * 1000:.0f} ms, slowest {took[-1] * 1000:.0f} ms "
                f"({len(took)} hosts, one at a time)",
                flush=True,
            )
            for concurrency in args.concurrency or [None]:
                wall, up, cpu = asyncio.run(connect_all(names, concurrency))
                per = cpu / n * 1000
                print(
                    f"connect-all (concurrency {concurrency or 'default'}): {wall:.2f} s for {up}/{n} up = "
                    f"{wall / median:.1f}x the median single ({wall / took[-1]:.1f}x the slowest); "
                    f"this process's CPU {per:.1f} ms a host, so >= {per * n / 1000:.2f} s for {n} whatever "
                    f"the concurrency; load {load()}",
                    flush=True,
                )
            if args.connect_only:
                continue
            if not args.skip_once:
                t, rc, full, cpu = once(env)
                print(
                    f"fleet --once --json: {t:.1f} s, exit {rc}, {full}/{n} hosts with 8 GPUs, its CPU "
                    f"{cpu:.1f} s; load {load()}",
                    flush=True,
                )
            got = stream(env, n, args.seconds, args.runs_every)
            print(
                f"fleet --json --interval 1: first host's line {got['first']:.2f} s, every host's first "
                f"{got['all']:.1f} s; then {args.seconds:g} s: sgtui CPU {got['cpu_pct']:.2f} % of one core, "
                f"{got['lines_s']:.0f} lines/s (so {got['cpu_pct'] * n / max(got['lines_s'], 1):.2f} % "
                f"at {n} lines/s), RSS {got['rss']:.0f} MiB; sim-host RSS "
                f"{rss_mib(sims.pid):.0f} MiB; load {load()}",
                flush=True,
            )
        finally:
            sims.terminate()
            sims.wait(60)


if __name__ == "__main__":
    main()
