"""`sgtui fleet`'s runs per host: the live ones and each target's newest, with health and throughput only
from the serving hook (null without it, never 0)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from sgtui.remote.fleet_runs import RunServing, run_rows
from sgtui.remote.hosts import HostConfig
from sgtui.remote.runs import RunManager, RunRecord, RunState, RunStatus
from sgtui.remote.targets import HOST, Target

PCT = Target("pct", "129")
CONN: Any = SimpleNamespace(host=HostConfig("h", "h"))  # the checks are answered by `states`


def record(run_id: str, target: Target = HOST, foreign: str | None = None) -> RunRecord:
    return RunRecord(
        run_id, "h", target, f"/runs/{run_id}", ["python"], {}, [0], 1, 1, 1, "boot", foreign=foreign
    )


@pytest.fixture
def states(monkeypatch: pytest.MonkeyPatch) -> dict[str, RunState]:
    """What the target says of each run (RunManager.status), by id."""
    said: dict[str, RunState] = {}

    async def status(self: RunManager, run: RunRecord) -> RunStatus:
        return RunStatus(said[run.id])

    monkeypatch.setattr(RunManager, "status", status)
    return said


async def test_live_runs_and_each_targets_newest_are_reported_with_the_hooks_numbers(
    states: dict[str, RunState],
) -> None:
    states.update(a1=RunState.EXITED, a2=RunState.RUNNING, a3=RunState.DEAD, b1=RunState.EXITED)
    runs = [
        record("a1"),
        record("a2"),
        record("a3"),
        record("b1", PCT),
        record("b0", PCT, foreign="not ours"),
    ]
    asked: list[str] = []

    async def hook(conn: Any, run: RunRecord) -> RunServing | None:
        asked.append(run.id)
        return RunServing("ready", 812.5)

    rows = await run_rows(CONN, runs, None, hook)
    got = [r.to_json() for r in rows]
    assert got == [
        {"id": "b1", "state": "exited", "health": None, "gen_tokens_per_s": None},  # pct 129's newest
        {"id": "a3", "state": "dead", "health": None, "gen_tokens_per_s": None},  # the host's newest
        {"id": "a2", "state": "running", "health": "ready", "gen_tokens_per_s": 812.5},  # alive
    ]  # a1: ended and not the newest; b0: foreign and not the newest
    assert asked == ["a2"]  # only live runs are asked


async def test_without_a_hook_or_when_it_fails_a_live_runs_numbers_are_null(
    states: dict[str, RunState],
) -> None:
    states.update(a1=RunState.RUNNING)

    async def broken(conn: Any, run: RunRecord) -> RunServing | None:
        raise OSError("the tunnel closed")

    for hook in (None, broken):
        (row,) = await run_rows(CONN, [record("a1")], None, hook)
        assert (row.state, row.health, row.gen_tokens_per_s) == ("running", None, None)
