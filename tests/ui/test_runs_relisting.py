"""The runs relisting at 500 hosts (issue 21): every host's runs are listed again every 30 s, and each
listed run was asked about on its host (a command each, up to 20 a host). A run that exited by itself or
was stopped by sgtui has that on disk and stays so: it is asked about once."""

from __future__ import annotations

from sgtui.remote.run_records import RunRecord, RunState, RunStatus
from sgtui.remote.targets import Target
from sgtui.ui.remote_backend import RemoteBackend


def record(n: int) -> RunRecord:
    return RunRecord(f"r{n}", "gpu0", Target(), f"/runs/r{n}", ["python3"], {}, [0], 100 + n, 100 + n, 9, "b")


class Manager:
    """A target with four recorded runs: one exited, one stopped, one dead, one running."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.states = {
            "r1": RunStatus(RunState.EXITED, 0),
            "r2": RunStatus(RunState.STOPPED, None),
            "r3": RunStatus(RunState.DEAD),
            "r4": RunStatus(RunState.RUNNING, None, 3),
        }

    async def list_runs(self) -> list[RunRecord]:
        return [record(n) for n in (1, 2, 3, 4)]

    async def status(self, run: RunRecord) -> RunStatus:
        self.asked.append(run.id)
        return self.states[run.id]


async def test_a_run_that_exited_or_was_stopped_is_asked_about_once_and_keeps_its_state() -> None:
    manager = Manager()
    backend = RemoteBackend({}, user_known_hosts=None)
    backend._manager = lambda *a, **k: manager  # type: ignore[assignment,method-assign,return-value]
    first = await backend.runs("gpu0", None)
    manager.asked.clear()
    manager.states["r4"] = RunStatus(RunState.EXITED, 1)  # the running one ended meanwhile
    again = await backend.runs("gpu0", None)
    assert sorted(manager.asked) == ["r3", "r4"]  # was all four: a command each, every 30 s
    assert [r.state for r in first] == ["exited", "stopped", "dead", "running"]
    assert [r.state for r in again] == ["exited", "stopped", "dead", "failed"]
    manager.asked.clear()
    await backend.runs("gpu0", None)
    assert manager.asked == ["r3"]  # dead may yet turn out stopped or exited: asked every time


async def test_two_runs_dirs_on_one_target_keep_their_own_ended_runs_and_a_quiet_place_keeps_none() -> None:
    """The memo is per host, target and runs dir: listing another runs dir of the same target does not
    throw away the first one's (each would be asked about again), and a place whose listing has no ended
    run holds no entry (the memo stays as small as what is listed)."""
    manager = Manager()
    backend = RemoteBackend({}, user_known_hosts=None)
    backend._manager = lambda *a, **k: manager  # type: ignore[assignment,method-assign,return-value]
    await backend.runs("gpu0", None)
    await backend.runs("gpu0", None, "/scratch/runs")
    manager.asked.clear()
    await backend.runs("gpu0", None)
    assert sorted(manager.asked) == ["r3", "r4"]  # the default dir's exited and stopped runs: not asked
    manager.states = {k: RunStatus(RunState.RUNNING, None, 3) for k in manager.states}
    backend._ended.clear()
    await backend.runs("gpu0", None)
    assert backend._ended == {}
