"""Waiting for a stopped run's GPUs to be free before a relaunch, and naming who still holds them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from sgtui.core.nvsmi import GpuProcess, Value, advice
from sgtui.remote.gpu import GpuSampler, GpuSnapshot
from sgtui.remote.run_errors import GpusBusyError


async def wait_gpus_free(
    host: str,
    gpus: Sequence[int],
    timeout: float,
    sampler: GpuSampler,
    *,
    idle_mib: float = 1024.0,
    poll: float = 0.5,
) -> GpuSnapshot:
    """Wait until no process holds memory on `gpus` (empty: all) and their used memory is at most
    `idle_mib`; on timeout raise GpusBusyError naming the holders (pid, name, container, MiB)."""
    wanted = set(gpus)
    deadline = time.monotonic() + timeout
    while True:
        snap = await sampler.query()
        procs = await sampler.processes()
        holders, busy = gpus_in_use(snap, procs, wanted, idle_mib)
        if snap.problem is None and not holders and not busy:
            return snap
        if time.monotonic() >= deadline:
            raise GpusBusyError(_busy_message(host, wanted, holders, busy, snap, timeout), holders)
        await asyncio.sleep(poll)


def gpus_in_use(
    snap: GpuSnapshot, procs: Sequence[GpuProcess], wanted: set[int], idle_mib: float = 1024.0
) -> tuple[list[GpuProcess], list[Any]]:
    """(processes holding memory on `wanted` (empty: all), readings of those GPUs using more than
    `idle_mib`). A holder whose GPU cannot be told (a MIG instance, a GPU missing from the index list)
    counts. The restart's wait and the preflight's GPU check both ask this."""
    holders = [p for p in procs if not wanted or p.gpu_index is None or p.gpu_index in wanted]
    busy = [
        g
        for g in snap.gpus
        if (not wanted or g.index in wanted)
        and (g.memory_used_mib.value is None or g.memory_used_mib.value > idle_mib)
    ]
    return holders, busy


def holder_parts(holders: Sequence[GpuProcess], busy: Sequence[Any]) -> list[str]:
    """One phrase per holder (pid, user, process, container, memory, GPU), or per busy GPU when no
    process is listed for it (a process in another PID namespace)."""
    parts = [
        f"pid {p.pid}" + (f" ({p.user})" if p.user else "") + f" {p.name} ({p.container or 'host'}) "
        f"{_mib(p.used_mib)} on "
        + (f"GPU {p.gpu_index}" if p.gpu_index is not None else p.gpu_uuid or "an unknown GPU")
        for p in holders
    ]
    if not parts:
        parts = [f"GPU {g.index}: {_mib(g.memory_used_mib)} used by no listed process" for g in busy]
    return parts


def _busy_message(
    host: str, wanted: set[int], holders: list[GpuProcess], busy: list[Any], snap: GpuSnapshot, timeout: float
) -> str:
    which = ", ".join(map(str, sorted(wanted))) if wanted else "all"
    if snap.problem is not None:
        problem = snap.problem
        return (
            f"{host}: cannot tell whether GPUs {which} are free: {problem.state.value} ({problem.detail}); "
            f"{advice(problem)}"
        )
    parts = holder_parts(holders, busy)
    return f"{host}: GPUs {which} still busy after {timeout:.0f} s: " + "; ".join(parts)


def _mib(value: Value) -> str:
    """Memory as nvidia-smi gave it: a number, or the reason there is none (never a made-up 0)."""
    return f"{value.value:.0f} MiB" if value.value is not None else f"unknown MiB ({value.reason})"
