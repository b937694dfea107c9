"""CPU cost on the jump box of sampling 8 GPUs on 10 hosts at 2 Hz (one nvidia-smi -lms stream each).

The hosts are real OpenSSH sshd instances on 127.0.0.2 ... 127.0.0.11 when sshd can run here (their
work happens in other processes, as on real hosts), else in-process servers (then this process also
pays the server side of SSH, an upper bound). A fake nvidia-smi prints 8 rows every 500 ms. The cost is
this process's CPU time (time.process_time) over the wall time of the sampling window.

Run by hand from the repository root:
    .venv/bin/python bench/bench_gpu_sampling.py [--hosts 10] [--gpus 8] [--seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import sys
import tempfile
import time
from pathlib import Path

import asyncssh

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sgtui.remote.connection import Connection
from sgtui.remote.gpu import GpuSampler
from sgtui.remote.hosts import HostConfig
from sgtui.sim.sshserver import SimSSHServer

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def fake_nvidia_smi(bin_dir: Path, gpus: int) -> None:
    rows = "".join(f"{i}, GPU-{i:04d}, NVIDIA RTX A6000, {1000 + i}, 49140, {i}\n" for i in range(gpus))
    (bin_dir / "rows.csv").write_text(rows)
    script = bin_dir / "nvidia-smi"
    script.write_text(f"#!/bin/bash\nwhile :; do cat {bin_dir}/rows.csv || exit 1; sleep 0.5; done\n")
    script.chmod(0o755)


async def sample(conns: list[Connection], seconds: float) -> tuple[int, float, float, int]:
    counts = [0] * len(conns)

    async def one(i: int, conn: Connection) -> None:
        async for snap in GpuSampler(conn, interval_ms=500).stream():
            if snap.problem is not None:
                raise SystemExit(f"host {i}: {snap.problem}")
            counts[i] += 1

    for c in conns:  # connect first: the steady state is what is measured
        await c.connect()
    tasks = [asyncio.ensure_future(one(i, c)) for i, c in enumerate(conns)]
    await asyncio.sleep(2.0)  # streams up
    start_counts = sum(counts)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(seconds)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    snaps = sum(counts) - start_counts
    for t in tasks:
        t.cancel()
    for t in tasks:
        with contextlib.suppress(asyncio.CancelledError, SystemExit):
            await t
    return snaps, cpu, wall, len(conns)


def show(kind: str, snaps: int, cpu: float, wall: float, hosts: int, gpus: int) -> None:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n## {kind}")
    print(
        f"{hosts} hosts x {gpus} GPUs at 2 Hz for {wall:.1f} s: {snaps} snapshots "
        f"({snaps / wall:.1f}/s, expected {hosts * 2}/s), "
        f"CPU {cpu:.2f} s = {100 * cpu / wall:.2f} % of one core, "
        f"{1000 * cpu / max(snaps, 1):.2f} ms CPU per snapshot, max RSS {rss:.0f} MiB"
    )


def pinned(
    tmp: Path, name: str, addr: str, port: int, known_line: str, key: asyncssh.SSHKey, user: str | None
) -> Connection:
    """A connection that trusts exactly this server's host key (written to its own known_hosts file)."""
    known = tmp / f"kh-{name}"
    known.write_text(known_line + "\n")
    host = HostConfig(name, addr, port, user=user, known_hosts=(str(known),))
    return Connection(host, client_keys=[key], agent_path=None, user_known_hosts=None)


async def close_all(conns: list[Connection]) -> None:
    for c in conns:
        await c.close()


async def with_sshd(tmp: Path, hosts: int, gpus: int, seconds: float) -> bool:
    from tests.sshd import sshd_unavailable_reason, start_sshd

    if sshd_unavailable_reason():
        return False
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    fake_nvidia_smi(bin_dir, gpus)
    with contextlib.ExitStack() as stack:
        conns = []
        for i in range(hosts):
            addr = f"127.0.0.{i + 2}"
            server = stack.enter_context(
                start_sshd(tmp / f"sshd{i}", env_path=f"{bin_dir}:{SYSTEM_PATH}", host=addr)
            )
            conns.append(
                pinned(tmp, f"h{i}", addr, server.port, server.known_hosts_line(), server.client_key, "root")
            )
        try:
            result = await sample(conns, seconds)
        finally:
            await close_all(conns)
    show("OpenSSH sshd per host on 127.0.0.x (server work in other processes)", *result, gpus)
    return True


async def in_process(tmp: Path, hosts: int, gpus: int, seconds: float) -> None:
    bin_dir = tmp / "bin-inproc"
    bin_dir.mkdir()
    fake_nvidia_smi(bin_dir, gpus)
    servers, conns = [], []
    for i in range(hosts):
        server = await SimSSHServer(f"127.0.0.{i + 2}", env={"PATH": f"{bin_dir}:{SYSTEM_PATH}"}).start()
        servers.append(server)
        conns.append(
            pinned(
                tmp, f"in{i}", server.host, server.port, server.known_hosts_line(), server.client_key, None
            )
        )
    try:
        result = await sample(conns, seconds)
    finally:
        await close_all(conns)
        for s in servers:
            await s.close()
    show("in-process servers (this process also runs the server side: an upper bound)", *result, gpus)


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        if not await with_sshd(Path(d), args.hosts, args.gpus, args.seconds):
            print("sshd cannot run here; only the in-process variant is measured")
        await in_process(Path(d), args.hosts, args.gpus, args.seconds)


if __name__ == "__main__":
    asyncio.run(main())
