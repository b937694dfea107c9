"""Latency from a log line written on the host to sgtui's tail event, beside the old polling method.

sgtui follows a log over one long-lived SSH channel (`tail -c +N -F`). The old habit is a fresh
`ssh host tail -3 LOG` every 15-20 s: its expected latency is half the poll interval plus what one
connect+tail costs. Both are measured in the same run, over loopback, against the in-process server and
(when it can run here) a real OpenSSH sshd with the `ssh` client binary.

Run by hand from the repository root:
    .venv/bin/python bench/bench_remote_latency.py [--lines 300] [--polls 15]
    .venv/bin/python bench/bench_remote_latency.py --launches 20   # the launch pre-checks' cost
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sgtui.remote.connection import Connection
from sgtui.remote.hosts import HostConfig
from sgtui.remote.runs import RunManager
from sgtui.remote.tail import follow
from sgtui.remote.targets import Target
from sgtui.sim.sshserver import SimSSHServer


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def tail_latency(conn: Connection, log: Path, lines: int, gap_s: float) -> list[float]:
    """ms from the write of each line (its perf_counter is in the line) to its arrival in a chunk."""
    log.write_text("")
    latencies: list[float] = []

    async def reader() -> None:
        async for chunk in follow(conn, str(log)):
            now = time.perf_counter()
            for line in chunk.lines:
                latencies.append((now - float(line.split()[1])) * 1000)
            if len(latencies) >= lines:
                return

    task = asyncio.ensure_future(reader())
    await asyncio.sleep(0.3)  # the tail is up
    with log.open("a") as fh:
        for i in range(lines):
            fh.write(f"{i} {time.perf_counter():.9f} INFO some log text of a typical length for sglang\n")
            fh.flush()
            await asyncio.sleep(gap_s)
    await asyncio.wait_for(task, 30)
    return latencies


async def poll_cost(run_once: Callable[[], Awaitable[None]], polls: int) -> list[float]:
    costs = []
    for _ in range(polls):
        t0 = time.perf_counter()
        await run_once()
        costs.append((time.perf_counter() - t0) * 1000)
    return costs


def report(name: str, lat: list[float], costs: list[float]) -> None:
    print(f"\n## {name}")
    print(
        f"tail -F over one channel: {len(lat)} lines, median {statistics.median(lat):.2f} ms, "
        f"p99 {pct(lat, 0.99):.2f} ms, max {max(lat):.2f} ms"
    )
    c_med = statistics.median(costs)
    print(
        f"old poll (new connection + tail -3): {len(costs)} polls, cost median {c_med:.1f} ms, "
        f"p99 {pct(costs, 0.99):.1f} ms"
    )
    for interval in (15, 20):
        print(
            f"  poll every {interval} s: expected latency {interval / 2 + c_med / 1000:.2f} s "
            f"(interval/2 + cost), worst {interval + pct(costs, 0.99) / 1000:.2f} s"
        )


async def in_process(tmp: Path, lines: int, polls: int) -> None:
    server = await SimSSHServer().start()
    known = tmp / "kh"
    known.write_text(server.known_hosts_line() + "\n")
    host = HostConfig("sim", "127.0.0.1", server.port, known_hosts=(str(known),))

    def new_conn() -> Connection:
        return Connection(host, client_keys=[server.client_key], agent_path=None, user_known_hosts=None)

    conn = new_conn()
    log = tmp / "inproc.log"
    lat = await tail_latency(conn, log, lines, 0.01)

    async def once() -> None:
        c = new_conn()
        await c.run(f"tail -3 {log}")
        await c.close()

    costs = await poll_cost(once, polls)
    await conn.close()
    await server.close()
    report("in-process asyncssh server (client and server share this process)", lat, costs)


async def openssh(tmp: Path, lines: int, polls: int) -> None:
    from tests.sshd import sshd_unavailable_reason, start_sshd

    reason = sshd_unavailable_reason()
    if reason:
        print(f"\n## OpenSSH: skipped ({reason})")
        return
    with start_sshd(tmp / "sshd", env_path="/usr/local/bin:/usr/bin:/bin") as server:
        known = tmp / "kh-sshd"
        known.write_text(server.known_hosts_line() + "\n")
        key = tmp / "client_key"
        key.write_bytes(server.client_key.export_private_key())
        key.chmod(0o600)
        host = HostConfig("sshd", "127.0.0.1", server.port, user="root", known_hosts=(str(known),))
        conn = Connection(host, client_keys=[server.client_key], agent_path=None, user_known_hosts=None)
        log = tmp / "sshd.log"
        lat = await tail_latency(conn, log, lines, 0.01)
        await conn.close()
        ssh = [
            "ssh", "-p", str(server.port), "-i", str(key), "-o", f"UserKnownHostsFile={known}",
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-F", "/dev/null",
            "root@127.0.0.1", f"tail -3 {log}",
        ]  # fmt: skip

        async def once() -> None:
            proc = await asyncio.create_subprocess_exec(
                *ssh, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
            )
            rc = await proc.wait()
            if rc != 0:
                raise SystemExit(f"ssh poll failed with exit {rc}")

        costs = await poll_cost(once, polls)
        report(
            "OpenSSH sshd (root login, this image's ~/.bashrc runs per command); poll = `ssh` binary",
            lat,
            costs,
        )


async def launch_cost(tmp: Path, launches: int) -> None:
    """What the launch pre-checks cost: a detached start of a plain binary (interpreter check only) beside
    `python -m MODULE` (also asks that python whether the module exists, one interpreter start)."""
    server = await SimSSHServer().start()
    known = tmp / "kh-launch"
    known.write_text(server.known_hosts_line() + "\n")
    host = HostConfig("sim", "127.0.0.1", server.port, known_hosts=(str(known),))
    conn = Connection(host, client_keys=[server.client_key], agent_path=None, user_known_hosts=None)
    manager = RunManager(conn, Target(), str(tmp / "runs"))
    print("\n## launch round trip (in-process server)")
    try:
        for label, argv in (
            ("plain binary (/bin/true)", ["/bin/true"]),
            ("python -m json.tool (module probe)", [sys.executable, "-m", "json.tool", "--help"]),
        ):
            costs = []
            for _ in range(launches):
                t0 = time.perf_counter()
                await manager.launch(argv)
                costs.append((time.perf_counter() - t0) * 1000)
            median, p90 = statistics.median(costs), pct(costs, 0.9)
            print(f"{label}: {launches} launches, median {median:.1f} ms, p90 {p90:.1f} ms")
    finally:
        await conn.close()
        await server.close()


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--polls", type=int, default=15)
    parser.add_argument("--launches", type=int, default=0, help="also time N launches of each kind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        if args.launches:
            await launch_cost(Path(d), args.launches)
            return
        await in_process(Path(d), args.lines, args.polls)
        await openssh(Path(d), args.lines, args.polls)


if __name__ == "__main__":
    asyncio.run(main())
