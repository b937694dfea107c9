"""The recent serving snapshots of one run and the warnings they carry.

Two situations deserve a word: the KV pool stays near full while the queue grows (requests wait for
room), and SGLang retracts running requests ("KV cache pool is full. Retract requests", scheduler.py:
it frees their KV and re-queues them, redoing their prefill later). Both mean the KV pool is too small
for the load; `--mem-fraction-static` is the flag that gives it more room (the static budget the KV pool
is carved from; see the fit panel for how much is left), or fewer concurrent requests with
`--max-running-requests`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from sgtui.core.serving.state import ServingSnapshot

KV_NEAR_FULL = 0.95
SUSTAINED_S = 5.0
ROOM_FLAG = "--mem-fraction-static"


@dataclass(frozen=True)
class ServingWarning:
    code: str  # "kv-full-queue-growing" | "retracting"
    message: str
    flag: str = ROOM_FLAG


class ServingHistory:
    """The last `size` snapshots (bounded memory) and the warnings over them."""

    def __init__(self, size: int = 240) -> None:
        self.snapshots: deque[ServingSnapshot] = deque(maxlen=size)

    def add(self, snap: ServingSnapshot) -> None:
        self.snapshots.append(snap)

    @property
    def latest(self) -> ServingSnapshot | None:
        return self.snapshots[-1] if self.snapshots else None

    def series(self, attr: str, n: int) -> list[float]:
        """The last n values of a field (None as 0), oldest first, for a fixed-scale sparkline."""
        return [float(getattr(s, attr) or 0.0) for s in list(self.snapshots)[-n:]]

    def warnings(self) -> list[ServingWarning]:
        out: list[ServingWarning] = []
        snaps = list(self.snapshots)
        if len(snaps) >= 2:
            last = snaps[-1]
            recent = [s for s in snaps if last.at - s.at <= SUSTAINED_S * 2]
            full = [s for s in recent if s.kv_usage is not None and s.kv_usage >= KV_NEAR_FULL]
            queues = [s.queued for s in recent if s.queued is not None]
            if (
                len(full) == len(recent)
                and last.at - recent[0].at >= SUSTAINED_S
                and len(queues) >= 2
                and queues[-1] > queues[0]
            ):
                out.append(
                    ServingWarning(
                        "kv-full-queue-growing",
                        f"KV cache {100 * (last.kv_usage or 0):.0f}% full for "
                        f"{last.at - recent[0].at:.0f}s while the queue grew {queues[0]} -> {queues[-1]}: "
                        f"raise {ROOM_FLAG} (a bigger KV pool) or lower --max-running-requests",
                    )
                )
        last_r = snaps[-1].retracted if snaps else None
        if last_r:
            out.append(
                ServingWarning(
                    "retracting",
                    f"SGLang retracted {last_r} request(s) since it started: the KV cache pool was full. "
                    f"Raise {ROOM_FLAG} for more KV room, or lower --max-running-requests",
                )
            )
        return out
