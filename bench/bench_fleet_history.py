"""The hosts tab's per-GPU sparkline histories once full: 500 hosts x 8 GPUs (run by hand; issue 21).

    .venv/bin/python bench/bench_fleet_history.py [--hosts 500] [--gpus 8] [--samples 240] [--repeat 3]

Every host of a `FleetState` gets `--samples` readings (default `HOST_SAMPLES`, its history's cap) through
`HostModel.set_gpus`, the call the app's `on_gpu_sampled` makes for each sample, with the clock passed in
(no 240 s wait). Each reading is a fresh list of `GpuView`s whose memory moves (every sample a new value, as
a loaded host's are). Then one more sweep, to show the history stays at its cap.

Two measurements, in this order in one process (the first fleet is kept while the second is measured):
- RSS: VmRSS before and after filling a fleet (what the app would grow by; the allocator's own slack
  included);
- tracemalloc: the bytes allocated and still held after filling a second fleet (deterministic: the
  Python objects the histories keep), per GPU sample and per host.
Also a followed run's history (`GpuHistory()`, 8 GPUs x its 3600-sample cap) and the CPU time to add one
host's sample (8 GPUs), from the RSS pass. The load average (1 min) is printed before and after.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sgtui.ui.session.fleet import HOST_SAMPLES, FleetState
from sgtui.ui.session.gpu_history import GpuHistory
from sgtui.ui.views import GpuView, HostView

H100_MIB = 81559


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def reading(n: int, tick: int, gpus: int) -> list[GpuView]:
    """Host `n`'s GPUs at `tick`: some in use, their memory moving every sample."""
    busy = (n + tick // 10) % (gpus + 1)
    return [
        GpuView(
            i,
            "NVIDIA H100 80GB HBM3",
            70_000 + (tick * 7 + i) % 4096 if i < busy else 3 + tick % 5,
            H100_MIB,
            (tick + i) % 101,
        )
        for i in range(gpus)
    ]


def fill(hosts: int, gpus: int, samples: int) -> tuple[FleetState, float]:
    """A fleet whose every host got `samples` readings; the CPU seconds spent in `set_gpus`."""
    fleet = FleetState(clock=lambda: 0.0)
    fleet.load(
        [HostView(f"gpu{i:03d}", f"10.0.{i // 250}.{i % 250 + 1}", "hosts.yaml") for i in range(hosts)]
    )
    models = list(fleet.hosts.values())
    spent = 0.0
    for tick in range(samples):
        t = tick * 0.5  # the GPU stream's 0.5 s interval
        batch = [reading(n, tick, gpus) for n in range(hosts)]
        c0 = time.process_time()
        for model, gpu_list in zip(models, batch, strict=True):
            model.set_gpus(gpu_list, t)
        spent += time.process_time() - c0
    return fleet, spent


def held(fleet: FleetState) -> int:
    return sum(len(h.history.used_gib(i)) for h in fleet.hosts.values() for i in h.history.names)


def traced(build: Callable[[], object]) -> tuple[int, object]:
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = build()
    gc.collect()
    now = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return now - base, kept


def followed_run(gpus: int) -> GpuHistory:
    history = GpuHistory()
    for tick in range(history.maxlen):
        history.add(tick * 0.5, reading(0, tick, gpus))
    return history


def main(hosts: int, gpus: int, samples: int) -> None:
    print(f"load {load()} before; {hosts} hosts x {gpus} GPUs x {samples} samples (cap {HOST_SAMPLES})")
    gc.collect()
    r0 = rss_bytes()
    fleet, spent = fill(hosts, gpus, samples)
    gc.collect()
    r1 = rss_bytes()
    n = held(fleet)
    grew = r1 - r0
    print(
        f"RSS +{grew / 2**20:.1f} MiB for {n:,} samples held ({grew / max(n, 1):.1f} B a GPU sample); "
        f"set_gpus {spent / (hosts * samples) * 1e6:.1f} us a host sample ({gpus} GPUs)",
        flush=True,
    )
    for model in fleet.hosts.values():  # one more sweep: still at the cap, oldest dropped
        model.set_gpus(reading(0, samples, gpus), samples * 0.5)
    assert held(fleet) == n, "the histories grew past their cap"

    size, kept = traced(lambda: fill(hosts, gpus, samples)[0])
    assert isinstance(kept, FleetState)
    n = held(kept)
    print(
        f"tracemalloc {size / 2**20:.2f} MiB held for {n:,} samples: {size / max(n, 1):.1f} B a GPU sample, "
        f"{size / hosts / 1024:.1f} KiB a host (its model and {gpus} GPUs' histories)",
        flush=True,
    )
    run_size, run = traced(lambda: followed_run(gpus))
    assert isinstance(run, GpuHistory)
    m = sum(len(run.used_gib(i)) for i in run.names)
    print(
        f"a followed run's history, {m:,} samples: {run_size / 2**20:.2f} MiB ({run_size / m:.1f} B a sample)"
    )
    print(f"load {load()} after", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--samples", type=int, default=HOST_SAMPLES)
    parser.add_argument("--repeat", type=int, default=1, help="run the whole measurement this many times")
    ns = parser.parse_args()
    for i in range(ns.repeat):
        if ns.repeat > 1:
            print(f"-- run {i + 1}/{ns.repeat}")
        main(ns.hosts, ns.gpus, ns.samples)
