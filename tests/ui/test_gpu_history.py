"""The per-GPU memory history every host keeps (the GPU panel's sparklines) and every followed run keeps (the
`g` chart): bounded, in order, and small enough for 500 hosts x 8 GPUs (issue 21)."""

from __future__ import annotations

import gc
import tracemalloc

from sgtui.ui.session.fleet import HOST_SAMPLES, FleetState
from sgtui.ui.session.gpu_history import GpuHistory, GpuSeries
from sgtui.ui.views import GpuView, HostView

H100_MIB = 81559


def gpus(*used: int, note_on: int | None = None) -> list[GpuView]:
    return [
        GpuView(i, "NVIDIA H100 80GB HBM3", mib, H100_MIB, 50, note="[N/A]" if i == note_on else "")
        for i, mib in enumerate(used)
    ]


def test_a_series_keeps_exactly_the_last_cap_samples_oldest_first_across_wraps() -> None:
    series = GpuSeries(5)
    for k in range(13):  # two and a half turns of the ring
        series.append(k * 0.5, 1024 * k)
        tail = list(range(max(0, k - 4), k + 1))
        assert series.times() == [j * 0.5 for j in tail]
        assert series.used_mib() == [1024 * j for j in tail]
        assert series.used_gib() == [float(j) for j in tail]
        assert list(series) == [(j * 0.5, float(j)) for j in tail]  # what the `g` chart plots
        assert series.last_time() == k * 0.5
        assert len(series) == len(tail)


def test_the_sparklines_get_each_gpus_own_memory_in_gib_oldest_first_and_a_gpu_with_a_note_is_skipped() -> (
    None
):
    history = GpuHistory(maxlen=3)
    history.add(100.0, gpus(1024, 2048))
    history.add(100.5, gpus(3072, 4096, note_on=1))  # GPU1 unreadable this time: no sample, not a zero
    history.add(101.0, gpus(512, 81559))
    history.add(101.5, gpus(0, 40_000))
    assert history.used_gib(0) == [3.0, 0.5, 0.0]
    assert history.used_gib(1) == [2.0, 81559 / 1024, 40_000 / 1024]
    assert history.used_gib(7) == []
    assert history.series[0].times() == [0.5, 1.0, 1.5]  # seconds since the history's first sample
    assert history.totals == {0: H100_MIB / 1024, 1: H100_MIB / 1024}
    assert history.last_time() == 1.5


def test_widening_keeps_the_samples_held_in_order_and_then_keeps_more() -> None:
    """The deployment host's history widens to the `g` chart's length after it has already wrapped."""
    history = GpuHistory(maxlen=4)
    for k in range(6):
        history.add(float(k), gpus(k))
    history.widen(6)
    assert history.series[0].times() == [2.0, 3.0, 4.0, 5.0]
    for k in range(6, 10):
        history.add(float(k), gpus(k))
    assert history.series[0].times() == [4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    assert history.used_gib(0) == [k / 1024 for k in range(4, 10)]
    history.widen(3)  # never narrower: samples already promised to the chart stay
    assert history.maxlen == 6 and len(history.series[0]) == 6


def test_every_host_keeps_its_last_host_samples_readings_per_gpu() -> None:
    fleet = FleetState(clock=lambda: 0.0)
    fleet.load([HostView("gpu000"), HostView("gpu001")])
    a, b = fleet.host("gpu000"), fleet.host("gpu001")
    for k in range(HOST_SAMPLES + 30):
        a.set_gpus(gpus(k, 2 * k), t=k * 0.5)
        if k % 2:
            b.set_gpus(gpus(7), t=k * 0.5)
    assert a.history.used_gib(1) == [2 * k / 1024 for k in range(30, HOST_SAMPLES + 30)]
    held = (HOST_SAMPLES + 30) // 2  # b's readings, fewer than the cap: all kept, none of a's
    assert b.history.used_gib(0) == [7 / 1024] * held
    assert b.history.series[0].times() == [k * 0.5 for k in range(0, HOST_SAMPLES + 30, 2)]


def held_bytes_per_sample(maxlen: int, n_gpus: int, samples: int) -> float:
    """tracemalloc's count of what a filled history still holds, per GPU sample it holds."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        history = GpuHistory(maxlen=maxlen)
        for k in range(samples):
            history.add(k * 0.5, gpus(*(70_000 + (k * 7 + i) % 4096 for i in range(n_gpus))))
        gc.collect()
        size = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    return size / sum(len(s) for s in history.series.values())


def test_a_full_hosts_history_holds_under_16_bytes_a_gpu_sample() -> None:
    """500 hosts x 8 GPUs x 240 samples: a tuple of two floats a sample (~97 B) was ~90 MiB; at under 16 B
    it is under 15 MiB (bench/bench_fleet_history.py measures the whole fleet)."""
    assert held_bytes_per_sample(HOST_SAMPLES, 8, 2 * HOST_SAMPLES) < 16
    assert held_bytes_per_sample(3600, 8, 3600) < 10  # a followed run's `g` chart history, full
