"""Benchmark the simulated GPU host (run by hand): what one fake command costs, and launch-to-ready time.

    .venv/bin/python bench/sim_host.py [--speed 1] [--runs 20]

Prints: SimHost start time; median/p95 of `nvidia-smi --query-gpu` and `pct exec 129 -- true` over SSH;
seconds from launching the Qwen3.6-27B (max-running-requests 8) profile's command to "ready" at the speed
given, and to the sigquit line for the failing 0.5.9 profile.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import statistics
import time
from pathlib import Path

import asyncssh

from sgtui.sim.host import SimHost

ARGS = (
    "--model-path /models/Qwen3.6-27B --tp-size 2 --mem-fraction-static 0.85 --context-length 32768 "
    "--speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 4 --port {port}"
)


async def timed(conn: asyncssh.SSHClientConnection, command: str, runs: int) -> tuple[float, float]:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        await conn.run(command, check=True)
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


async def until(log: Path, needle: str, timeout: float = 120) -> float:
    t0 = time.perf_counter()
    while needle not in (log.read_text(errors="replace") if log.exists() else ""):
        if time.perf_counter() - t0 > timeout:
            raise SystemExit(f"no {needle!r} in {log} after {timeout} s")
        await asyncio.sleep(0.02)
    return time.perf_counter() - t0


async def main(speed: float, runs: int) -> None:
    t0 = time.perf_counter()
    async with SimHost(speed=speed) as host:
        print(f"SimHost start: {(time.perf_counter() - t0) * 1000:.0f} ms")
        async with asyncssh.connect(
            host.host,
            port=host.port,
            known_hosts=asyncssh.import_known_hosts(host.known_hosts_line()),
            client_keys=[host.server.client_key],
            username="root",
            config=None,
            agent_path=None,
        ) as conn:
            smi = "nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader,nounits"
            for label, command in (
                ("nvidia-smi --query-gpu", smi),
                ("pct exec 129 -- true", "pct exec 129 -- true"),
            ):
                med, p95 = await timed(conn, command, runs)
                print(f"{label}: median {med:.1f} ms, p95 {p95:.1f} ms over {runs} runs")
            for label, extra, needle in (
                ("ready (max-running-requests 8)", " --max-running-requests 8", "ready to roll"),
                ("sigquit (0.5.9 default)", "", "Received sigquit"),
            ):
                log = host.state_dir / f"bench-{len(extra)}.log"
                cmd = (
                    "/opt/sglang/venv/bin/python -m sglang.launch_server "
                    + ARGS.format(port=31000 + len(extra))
                    + extra
                    + f" > {shlex.quote(str(log))} 2>&1 < /dev/null"
                )
                launch = (
                    f"setsid bash --norc --noprofile -c {shlex.quote(cmd)} > /dev/null 2>&1 < /dev/null &"
                )
                await conn.run(
                    shlex.join(["pct", "exec", "129", "--", "bash", "--norc", "--noprofile", "-c", launch])
                )
                print(f"launch to {label} at speed {speed:g}: {await until(log, needle):.2f} s")
                host.kill_servers()
                await asyncio.sleep(host.scenario.release_delay_s / speed + 0.3)  # memory released


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=20)
    opts = parser.parse_args()
    asyncio.run(main(opts.speed, opts.runs))
