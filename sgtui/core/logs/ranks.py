"""Ranks in a log: SGLang's `TP1`/`DP0 TP1 EP1` tags, torch's `rank3`, and which got how far.

A multi-node launch prints its global TP ranks; with `nnodes` known, rank r runs on node r // (tp / nnodes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sgtui.core.logs.state import PHASE_LABELS, PHASES

if TYPE_CHECKING:
    from sgtui.core.logs.state import StartupState


def is_rank_zero(ranks: tuple[str, ...]) -> bool:
    """True for a line of rank 0 in every dimension ("TP0", "DP0 TP0 EP0", "gpu=0") or of no rank at all."""
    for tag in ranks:
        digits = tag[len(tag.rstrip("0123456789")) :]
        if digits and int(digits) != 0:
            return False
    return True


def tp_rank(rank: str) -> int | None:
    """The TP (or torch) rank number in a rank label such as "DP0 TP3" or "rank3"."""
    for tag in rank.split():
        if tag.startswith(("TP", "rank", "gpu")):
            digits = tag[len(tag.rstrip("0123456789")) :]
            if digits:
                return int(digits)
    return None


def node_of(rank: str, facts: dict[str, Any]) -> int | None:
    """The node a rank runs on, when the log says how many nodes and GPUs per node there are."""
    nnodes, tp = facts.get("nnodes"), facts.get("tp_size")
    number = tp_rank(rank)
    if not isinstance(nnodes, int) or not isinstance(tp, int) or nnodes < 2 or number is None:
        return None
    per_node = max(1, tp // nnodes)
    return number // per_node


def progress_by_rank(state: StartupState, later_kinds: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(ranks that reached one of `later_kinds`, ranks seen that did not), each sorted."""
    seen = set(state.ranks_seen)
    past: set[str] = set()
    for kind in later_kinds:
        milestone = state.milestones.get(kind)
        if milestone is not None:
            past |= milestone.ranks
    seen |= past
    return sorted(past, key=_order), sorted(seen - past, key=_order)


def lagging_ranks(state: StartupState) -> list[str]:
    """The ranks still in `state.slowest` while others are past it (phases.py), in rank order; [] when no
    rank lags."""
    if state.slowest == state.reached or len(state.rank_phase) < 2:
        return []
    index = PHASES.index(state.slowest)
    return sorted((r for r, p in state.rank_phase.items() if p <= index), key=_order)


def lag_words(state: StartupState, most: int = 8) -> str:
    """Who lags: "TP0, TP7 still loading weights, the others allocating pools", or "" when no rank does."""
    lagging = lagging_ranks(state)
    if not lagging:
        return ""
    names = ", ".join(lagging[:most]) + (f" and {len(lagging) - most} more" if len(lagging) > most else "")
    label = PHASE_LABELS.get(state.slowest, state.slowest)
    return f"{names} still {label}, the others {PHASE_LABELS.get(state.reached, state.reached)}"


def _order(rank: str) -> tuple[int, str]:
    number = tp_rank(rank)
    return (number if number is not None else 1 << 30, rank)
