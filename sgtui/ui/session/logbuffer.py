"""A followed run's log lines in memory: the last `max_lines` of every node, in arrival order."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable


class LogBuffer:
    """Bounded: past `max_lines` the oldest go, and `dropped` says how many are no longer kept."""

    def __init__(self, max_lines: int = 20_000) -> None:
        self.max_lines = max_lines
        self.entries: deque[tuple[int, str]] = deque(maxlen=max_lines)
        self.total = 0  # every line received, kept or not
        self.skipped = 0  # never kept: a flood outran the view (counted in `dropped` too)
        self.ranks: set[int] = set()

    def add(self, rank: int, lines: Iterable[str]) -> int:
        before = len(self.entries)
        n = 0
        for line in lines:
            self.entries.append((rank, line))
            n += 1
        self.total += n
        self.ranks.add(rank)
        return n - (len(self.entries) - before)  # evicted by this batch

    def skip(self, count: int) -> None:
        self.total += count
        self.skipped += count

    @property
    def dropped(self) -> int:
        return self.total - len(self.entries)

    @property
    def multi_node(self) -> bool:
        return len(self.ranks) > 1

    def lines(self, rank: int | None = None) -> list[str]:
        """One node's lines, or (rank None) every node's interleaved, with a node column when there are
        several nodes."""
        if rank is not None:
            return [line for r, line in self.entries if r == rank]
        if not self.multi_node:
            return [line for _, line in self.entries]
        return [node_line(r, line) for r, line in self.entries]


def node_line(rank: int, line: str) -> str:
    return f"n{rank} │ {line}"
