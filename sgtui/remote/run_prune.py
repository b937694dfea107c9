"""Pruning: a target keeps the newest N of its ended runs (exited, stopped, dead); older ones' run dirs
are removed. A running run is never pruned, nor a foreign one (not ours, or a record that fails a check),
nor another target's sharing the runs dir. N comes from `--keep`, else the profile's `keep_runs`, else
hosts.yaml's, else `runscripts.KEEP_RUNS_DEFAULT`. Every launch prunes its target once it has more."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sgtui.core import runscripts
from sgtui.remote.run_errors import RunError
from sgtui.remote.run_records import RunRecord, RunState, RunStatus

if TYPE_CHECKING:
    from sgtui.remote.runs import RunManager

ENDED = (RunState.EXITED, RunState.STOPPED, RunState.DEAD, RunState.PID_REUSED)


@dataclass(frozen=True)
class PruneResult:
    removed: tuple[str, ...]  # run dir names (RunRecord.key), newest first
    kept: int  # ended runs of ours left in place
    refused: tuple[tuple[str, str], ...] = ()  # (name, why) the target would not remove


def to_prune(rows: Sequence[tuple[RunRecord, RunStatus]], keep: int) -> list[RunRecord]:
    """The ended runs of ours beyond the newest `keep` (run ids sort by their launch time)."""
    ended = [r for r, s in rows if r.foreign is None and r.start is not None and s.state in ENDED]
    ended.sort(key=lambda r: r.key, reverse=True)
    return ended[keep:]


async def prune(
    manager: RunManager, keep: int, rows: Sequence[tuple[RunRecord, RunStatus]] | None = None
) -> PruneResult:
    """Remove this target's ended runs beyond the newest `keep` (`rows`: records with their status,
    when the caller has them already)."""
    keep = runscripts.check_keep_runs(keep, "--keep")
    if rows is None:
        records = await manager.list_runs()
        statuses = await asyncio.gather(*(manager.status(r) for r in records))
        rows = list(zip(records, statuses, strict=True))
    drop = to_prune(rows, keep)
    ended = len(to_prune(rows, 0))
    if not drop or manager.runs_dir is None:
        return PruneResult((), ended)
    marker, _ = await manager._script(
        runscripts.prune_script(manager.runs_dir, [r.key for r in drop]), "prune the runs"
    )
    removed = tuple(str(n) for n in marker.get("removed") or [])
    refused = tuple((str(item[0]), str(item[1])) for item in marker.get("refused") or [] if len(item) == 2)
    if not removed and refused:
        raise RunError(f"{manager.where}: could not prune {refused[0][0]}: {refused[0][1]}")
    return PruneResult(removed, ended - len(removed), refused)
