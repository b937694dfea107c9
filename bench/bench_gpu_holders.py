"""What the TUI's GPU-holder listing costs per host (run by hand; issue 21).

    .venv/bin/python bench/bench_gpu_holders.py [--hosts 20] [--seconds 20] [--shown all|one]

The TUI's `RemoteBackend.gpu_samples(host)` streams each host's GPUs (`nvidia-smi -lms 500`) and, beside the
stream, lists the processes holding GPU memory (`GpuSampler.processes`: one command on the host: bash,
`nvidia-smi --query-compute-apps`, `nvidia-smi --query-gpu=index,uuid`, /proc per holder). This runs
`gpu_samples` for every host of `sgtui sim-host --hosts N --scenario h100x8` (its own process, as the hosts
would be) for `--seconds` once every host streams, and reports:
- listings a second (every `GpuSampler.processes` call, counted) and GPU samples a second;
- this process's CPU (the jump box's side: the SSH channel per listing and the parsing), % of one core;
- the sim-host process's CPU and its children's (bash and the fake nvidia-smi: the hosts' side).
`--shown all` tells the backend every host's holders are on screen (`show_holders(every host)`: what every
host got before, a listing every 2 s); `--shown one` only the first host's (what the app asks now: the GPU
panel's host). On a backend without `show_holders` (the code before) both are the old behaviour.
The load average (1 min) is printed before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_fleet_scale import cpu_s, load, start_sims  # noqa: E402

from sgtui.remote.gpu import GpuSampler  # noqa: E402
from sgtui.remote.hosts import load_hosts  # noqa: E402
from sgtui.ui.remote_backend import RemoteBackend  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def children_cpu_s(pid: int) -> float:
    """CPU of `pid`'s children that ended and were waited for (cutime + cstime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / TICK


async def run(hosts: int, seconds: float, shown: str, sim_pid: int) -> None:
    names = sorted(load_hosts(ssh_config=False), key=lambda s: (len(s), s))[:hosts]
    backend = RemoteBackend(load_hosts(ssh_config=False), user_known_hosts=None)
    if hasattr(backend, "show_holders"):
        backend.show_holders(set(names) if shown == "all" else {names[0]})
    else:
        print("(this backend has no show_holders: every host's holders are listed, the code before)")
    listings = [0]
    original = GpuSampler.processes

    async def counted(self: GpuSampler) -> object:
        listings[0] += 1
        return await original(self)

    GpuSampler.processes = counted  # type: ignore[method-assign]
    samples = [0]
    seen: set[str] = set()

    async def consume(name: str) -> None:
        async for gpus in backend.gpu_samples(name):
            if gpus and gpus[0].index >= 0:
                seen.add(name)
            samples[0] += 1

    tasks = [asyncio.create_task(consume(n)) for n in names]
    t0 = time.perf_counter()
    while len(seen) < len(names) and time.perf_counter() - t0 < 120:
        await asyncio.sleep(0.2)
    print(f"{len(seen)}/{len(names)} hosts streaming after {time.perf_counter() - t0:.1f} s", flush=True)
    await asyncio.sleep(3.0)  # past the first listing of every host
    l0, s0, c0 = listings[0], samples[0], time.process_time()
    h0 = cpu_s(sim_pid) + children_cpu_s(sim_pid)
    w0 = time.perf_counter()
    await asyncio.sleep(seconds)
    wall = time.perf_counter() - w0
    cpu = time.process_time() - c0
    host_cpu = cpu_s(sim_pid) + children_cpu_s(sim_pid) - h0
    n_list = listings[0] - l0
    print(
        f"shown {shown}: {n_list / wall:.1f} listings/s, {(samples[0] - s0) / wall:.0f} samples/s; "
        f"this process {100 * cpu / wall:.1f} % of one core; sim-host + its children "
        f"{100 * host_cpu / wall:.1f} %; load {load()}",
        flush=True,
    )
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(BaseException):
            await task
    await backend.pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--shown", choices=("all", "one"), nargs="+", default=["all", "one"])
    args = parser.parse_args()
    config = Path(tempfile.mkdtemp(prefix="sgtui-bench-holders-"))
    os.environ["SGTUI_CONFIG_DIR"] = str(config)
    print(f"load {load()} before; {args.hosts} simulated hosts x 8 H100", flush=True)
    sims = start_sims(config, args.hosts, 0.0)
    try:
        for shown in args.shown:
            asyncio.run(run(args.hosts, args.seconds, shown, sims.pid))
    finally:
        sims.terminate()
        sims.wait(60)


if __name__ == "__main__":
    main()
