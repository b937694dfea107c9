"""Numbers a log states, and which statement of each wins.

Sources, weakest first: a pasted command line, an error message quoting a value, the server_args dump, what
the runtime measured, and the scheduler's final summary. Within one source rank 0's figure wins (SGLang's
summary and its pool sizes come from it), except for free memory: SGLang sizes every rank's pools from the
poorest GPU, so those facts are the minimum over ranks, and each rank's own value is kept per rank.
"""

from __future__ import annotations

from typing import Any

from sgtui.core.logs.ranks import is_rank_zero

FROM_COMMAND, FROM_ERROR, FROM_ARGS, FROM_RUNTIME, FROM_SUMMARY = range(5)

# Free memory per GPU as each rank measured it: the pools are sized from the smallest (see DESIGN.md).
MIN_OVER_RANKS = frozenset(
    {
        "load_weight_begin_avail_gib",
        "avail_mem_after_weights_gib",
        "memory_pool_end_avail_gib",
        "cuda_graph_begin_avail_gib",
        "cuda_graph_end_avail_gib",
    }
)
_MAX_RANKS_KEPT = 1024


class FactStore:
    """`facts` (name -> value) plus `per_rank` (name -> {rank: value}) for the minimum-over-ranks facts."""

    def __init__(self, facts: dict[str, Any], per_rank: dict[str, dict[str, Any]]) -> None:
        self.facts = facts
        self.per_rank = per_rank
        self._source: dict[str, tuple[int, bool]] = {}

    def set(self, name: str, value: Any, source: int, ranks: tuple[str, ...] = ()) -> None:
        if value is None:
            return
        if name in MIN_OVER_RANKS and ranks and isinstance(value, int | float):
            self._set_min(name, value, source, " ".join(ranks))
            return
        rank = (source, is_rank_zero(ranks))
        known = self._source.get(name)
        if known is None or rank > known:
            self.facts[name] = value
            self._source[name] = rank

    def _set_min(self, name: str, value: float, source: int, rank: str) -> None:
        known = self._source.get(name)
        if known is not None and known[0] > source:
            return
        if known is not None and known[0] < source:
            self.per_rank.pop(name, None)  # a stronger kind of line restarts the comparison
        values = self.per_rank.setdefault(name, {})
        if rank in values or len(values) < _MAX_RANKS_KEPT:
            values[rank] = value
        self.facts[name] = min(values.values())
        self._source[name] = (source, True)

    def update(self, facts: dict[str, Any], source: int, ranks: tuple[str, ...] = ()) -> None:
        for name, value in facts.items():
            self.set(name, value, source, ranks)

    def drop(self, name: str) -> None:
        self.facts.pop(name, None)
        self._source.pop(name, None)
        self.per_rank.pop(name, None)

    def facts_per_rank(self) -> dict[str, dict[str, Any]]:
        """Per-rank values of the facts that differ by rank, only where more than one rank reported."""
        return {name: dict(sorted(v.items())) for name, v in self.per_rank.items() if len(v) > 1}
