"""When the TUI lists a host's GPU holders again (issue 21: the fleet at 500 hosts).

A listing (`GpuSampler.processes`) is one command on the host (bash, two nvidia-smi calls, /proc per holder)
and an SSH channel from the jump box. Every 2 s on every host was 250 listings a second at 500 hosts
(bench/bench_gpu_holders.py). The holders are read in two places: the GPU panel's holders line, for one host
(the run in view's, else the deployment's: `show_holders`), and the hosts tab's busy count, where a GPU with
a holder counts busy even under `BUSY_MIB`. So the host on screen is listed every `PROCESS_REFRESH_S`; any
other host when its memory moved since its last listing (a process that starts or ends moves it: a CUDA
context alone is ~500 MiB), at most that often, and every `PROCESS_IDLE_S` in any case (a holder that
replaced another with the same memory)."""

from __future__ import annotations

from dataclasses import dataclass

PROCESS_REFRESH_S = 2.0  # the host whose holders are on screen; a host whose memory moved, at most this often
PROCESS_IDLE_S = 60.0  # any other host, its memory unmoved
PROCESS_MOVE_MIB = 256  # a GPU's memory in use moved this much since the last listing: list again


def moved(before: tuple[int, ...], now: tuple[int, ...]) -> bool:
    """Another GPU count, or a GPU's memory in use `PROCESS_MOVE_MIB` or more away from before."""
    if len(before) != len(now):
        return True
    return any(abs(a - b) >= PROCESS_MOVE_MIB for a, b in zip(before, now, strict=True))


@dataclass
class HolderRefresh:
    """One host's listing schedule: `due(...)` at each GPU sample, `listed(...)` when a listing starts."""

    last_at: float | None = None
    last_used: tuple[int, ...] = ()
    last_shown: bool = False

    def due(self, now: float, shown: bool, used: tuple[int, ...]) -> bool:
        """`shown`: the host's holders are on screen; `used`: its GPUs' MiB in use in this sample."""
        if self.last_at is None or (shown and not self.last_shown):
            return True  # the first listing, or the host just came on screen: its holders now
        since = now - self.last_at
        if since >= (PROCESS_REFRESH_S if shown else PROCESS_IDLE_S):
            return True
        return since >= PROCESS_REFRESH_S and moved(self.last_used, used)

    def listed(self, now: float, shown: bool, used: tuple[int, ...]) -> None:
        self.last_at, self.last_shown, self.last_used = now, shown, used
