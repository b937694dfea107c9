"""The runs of one host as `sgtui fleet` reports them: `{id, state, health, gen_tokens_per_s}`.

Which runs: every target's runs as `Fleet.refresh` listed them (the host and each running container);
of those, the newest `CHECKED_PER_TARGET` per target are checked on the target (`RunManager.status`, one
command each), and a run is reported when it is alive, or when it is its target's newest (a run that just
failed is news until another is launched there; older history is `sgtui runs`' job). A foreign record is
reported as `foreign` without a look at its processes.

Health and serving numbers come through `ServingHook`, one awaitable per live run: `Fleet(...,
serving=hook)`. `probe_serving(runs_dir)` is the one `sgtui fleet` uses: the health probe `sgtui status`
uses (`remote/health.probe`, HTTP through the SSH connection, no request sent to the model) and the
generation rate of the run's last batch lines (`remote/serving.log_snapshot`, `ServingSnapshot
.gen_tokens_per_s`); no smoke request and no two-scrape window, which a fleet view polling every minute
should not cost each server. Without a hook (or when it returns None or fails) `health` and
`gen_tokens_per_s` are null: unknown, never 0.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sgtui.remote.connection import RemoteError, Transport
from sgtui.remote.runs import RunManager, RunRecord, RunState

CHECKED_PER_TARGET = 4


@dataclass(frozen=True)
class RunServing:
    """What a serving reader knows of one live run: its health word and generation throughput."""

    health: str | None = None  # "ready", "starting", "unhealthy", ... as `sgtui status` says it
    gen_tokens_per_s: float | None = None


ServingHook = Callable[[Transport, RunRecord], Awaitable[RunServing | None]]


@dataclass(frozen=True)
class RunRow:
    id: str
    state: str  # running | exited | dead | pid-reused | foreign | unknown (the check failed)
    health: str | None = None
    gen_tokens_per_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "state": self.state,
            "health": self.health,
            "gen_tokens_per_s": self.gen_tokens_per_s,
        }


async def run_rows(
    conn: Transport,
    runs: Sequence[RunRecord],
    runs_dir: str | None,
    serving: ServingHook | None = None,
) -> tuple[RunRow, ...]:
    """The reported runs among `runs` (any targets, any order), newest first."""
    by_target: dict[str, list[RunRecord]] = {}
    for run in sorted(runs, key=lambda r: r.id, reverse=True):
        by_target.setdefault(run.target.label, []).append(run)
    checked = [
        (i == 0, run) for group in by_target.values() for i, run in enumerate(group[:CHECKED_PER_TARGET])
    ]
    rows = await asyncio.gather(*(_row(conn, run, newest, runs_dir, serving) for newest, run in checked))
    return tuple(sorted((r for r in rows if r is not None), key=lambda r: r.id, reverse=True))


async def _row(
    conn: Transport, run: RunRecord, newest: bool, runs_dir: str | None, serving: ServingHook | None
) -> RunRow | None:
    if run.foreign is not None:
        return RunRow(run.key, RunState.FOREIGN.value) if newest else None
    try:
        status = await RunManager(conn, run.target, runs_dir).status(run)
        state = status.state.value
    except RemoteError:
        state = "unknown"
    if state != RunState.RUNNING.value:
        return RunRow(run.key, state) if newest else None
    got: RunServing | None = None
    if serving is not None:
        with contextlib.suppress(Exception):  # a reader's failure is an unknown value, not a lost row
            got = await serving(conn, run)
    if got is None:
        return RunRow(run.key, state)
    return RunRow(run.key, state, got.health, got.gen_tokens_per_s)


def probe_serving(runs_dir: str | None = None) -> ServingHook:
    """A live run's health word (`sgtui status`'s verdict names) and its log's latest generation rate."""

    async def hook(conn: Transport, run: RunRecord) -> RunServing | None:
        from sgtui.remote.health import Verdict, probe, service_address
        from sgtui.remote.serving import log_snapshot, run_port

        address = await service_address(conn, run.target)
        health = await probe(conn, run_port(run.argv), host=address)
        rate = None
        if health.verdict in (Verdict.READY, Verdict.UNHEALTHY):
            snap = await log_snapshot(conn, RunManager(conn, run.target, runs_dir), run)
            rate = snap.gen_tokens_per_s if snap is not None else None
        return RunServing(health.verdict.value, rate)

    return hook
