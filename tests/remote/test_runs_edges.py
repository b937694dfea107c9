"""Runs at the edges of a shared box: a marker process planted by another user, a run dir removed while
its server runs, a record in hand whose dir is gone but whose pid is someone else's."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sgtui.remote.connection import Connection
from sgtui.remote.runs import ForeignRunError, RunManager, RunRecord, RunState
from sgtui.remote.targets import Target
from sgtui.sim.sshserver import SimSSHServer

from .conftest import host_env, pinned_connection, sshd_connection


@pytest.fixture
def server_script(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "server"
    path.parent.mkdir()
    path.write_text('#!/bin/bash\nwhile :; do echo "alive"; sleep 0.05; done\n')
    path.chmod(0o755)
    return path


@pytest.fixture(params=["sim", pytest.param("sshd", marks=pytest.mark.sshd)])
async def manager(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunManager]:
    """The in-process SSH server and a real OpenSSH sshd on 127.0.0.1, each running real bash as root."""
    server = None
    if request.param == "sim":
        server = SimSSHServer(env=host_env(request.getfixturevalue("fake_bin")))
        await server.start()
        conn = pinned_connection(server, tmp_path)
    else:
        conn = sshd_connection(request.getfixturevalue("sshd"), tmp_path)
    mgr = RunManager(conn, Target(), str(tmp_path / "runs"))
    yield mgr
    for run in await mgr.list_runs():
        if run.foreign is None:
            await mgr.stop(run, grace=0.2)
    await conn.close()
    if server is not None:
        await server.close()


async def _until_logged(run: RunRecord) -> None:
    for _ in range(100):
        if Path(run.log_path).exists() and "alive" in Path(run.log_path).read_text():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the server never logged")


def _start(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[19])


async def test_another_users_process_carrying_the_runs_marker_is_not_the_runs(
    manager: RunManager, server_script: Path, other_user: tuple[str, int]
) -> None:
    """Anyone can start a process with SGTUI_RUN_ID=<id>: only the run's own uid counts as left behind,
    so another user cannot make `sgtui stop` report a leftover (and exit 1)."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is needed to start a process as the second user")
    _, uid = other_user
    run = await manager.launch([str(server_script)])
    await _until_logged(run)
    planted = subprocess.Popen(
        ["setpriv", f"--reuid={uid}", "--regid=65534", "--clear-groups", "sleep", "60"],
        env={"SGTUI_RUN_ID": run.key, "PATH": "/usr/bin:/bin"},
        start_new_session=True,
    )
    try:
        await asyncio.sleep(0.2)
        assert (await manager.preview(run)).outside == 0
        result = await manager.stop(run, grace=2)
        assert result.clean and result.left == ()
        assert planted.poll() is None  # and it was not signalled either
    finally:
        planted.kill()
        planted.wait()


async def test_a_run_whose_dir_was_removed_stays_stoppable_from_the_record_in_hand(
    manager: RunManager, server_script: Path
) -> None:
    run = await manager.launch([str(server_script)])
    await _until_logged(run)
    shutil.rmtree(run.run_dir)
    status = await manager.status(run)
    assert status.state is RunState.RUNNING and status.note == f"its run dir {run.run_dir} was removed"
    result = await manager.stop(run, grace=2)
    assert result.result == "stopped" and result.clean
    assert (await manager.status(run)).state is RunState.DEAD
    stat = Path(f"/proc/{run.pid}/stat")
    assert not stat.exists() or stat.read_text().rsplit(") ", 1)[1].split()[0] == "Z"  # gone (or unreaped)


async def test_a_record_whose_dir_is_gone_is_refused_when_its_pid_is_not_sgtuis_runner(
    manager: RunManager, tmp_path: Path, victim: subprocess.Popen[bytes]
) -> None:
    """Without its dir, the record's pid, start time and boot id must still match, and the process must
    be ours and be sgtui's runner for that run's log: a session leader that is not is never signalled."""
    (tmp_path / "runs").mkdir(mode=0o700)
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    record = RunRecord(
        "20990101-000000-abcdef",
        "sim",
        Target(),
        str(tmp_path / "runs" / "20990101-000000-abcdef"),
        ["/usr/bin/sleep", "60"],
        {},
        [],
        victim.pid,
        victim.pid,
        _start(victim.pid),
        boot,
    )
    with pytest.raises(ForeignRunError, match=r"was removed, and process group .* is not sgtui's runner"):
        await manager.stop(record, grace=0.2)
    await asyncio.sleep(0.1)
    assert victim.poll() is None
    os.kill(victim.pid, 0)


async def test_pruning_keeps_the_newest_ended_runs_and_never_a_running_or_a_foreign_one(
    conn: Connection, tmp_path: Path, server_script: Path, victim: subprocess.Popen[bytes]
) -> None:
    """Run dirs are not left to pile up: a launch prunes its target down to `keep_runs` ended runs, and
    `prune` does it on demand; a running run and a record that is not ours are never touched."""
    quick = tmp_path / "bin" / "quick"
    quick.write_text("#!/bin/sh\necho done\nexit 3\n")
    quick.chmod(0o755)
    mgr = RunManager(conn, Target(), str(tmp_path / "runs"), keep_runs=2)
    live = await mgr.launch([str(server_script)])
    try:
        await _prune_around(mgr, live, quick, tmp_path, victim)
    finally:
        await mgr.stop(live, grace=0.2)  # the running run is the test's own: never left behind


async def _prune_around(
    mgr: RunManager, live: RunRecord, quick: Path, tmp_path: Path, victim: subprocess.Popen[bytes]
) -> None:
    ended = []
    for _ in range(3):
        ended.append(await mgr.launch([str(quick)]))
        await asyncio.sleep(1.05)  # run ids carry the launch second: each its own
    planted = tmp_path / "runs" / "20000101-000000-0ld000"  # older than all, but not ours to judge
    planted.mkdir(mode=0o770)
    meta = {"pid": victim.pid, "pgid": victim.pid, "start": _start(victim.pid)}
    (planted / "run.json").write_text(json.dumps(meta))
    names = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert live.key in names and planted.name in names and ended[0].key not in names  # pruned at launch
    assert {ended[1].key, ended[2].key} <= set(names)
    result = await mgr.prune(keep=1)
    assert result.removed == (ended[1].key,) and result.kept == 1
    names = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert names == sorted([planted.name, ended[2].key, live.key])
    assert (await mgr.status(live)).state is RunState.RUNNING and victim.poll() is None


async def test_a_launch_with_long_arguments_stays_the_users_own_run(
    manager: RunManager, server_script: Path
) -> None:
    """sgtui allows arguments up to 128 KiB each: a command.json over 64 KiB is still read back whole
    (not "damaged", not foreign); one over the record limit is refused before anything starts."""
    from sgtui.core import runscripts
    from sgtui.core.shell import ShellError

    long = "x" * 120_000
    run = await manager.launch([str(server_script), "--chat-template", long])
    assert Path(run.run_dir, "command.json").stat().st_size > 65536
    [listed] = await manager.list_runs()
    assert listed.foreign is None and listed.argv[-1] == long
    assert (await manager.status(listed)).state is RunState.RUNNING
    too_much = [str(server_script)] + [long] * (runscripts.RECORD_MAX_BYTES // len(long) + 1)
    with pytest.raises(ShellError, match="keeps at most 1048576 bytes per run"):
        await manager.launch(too_much)
    assert [r.id for r in await manager.list_runs()] == [run.id]


@pytest.mark.parametrize(
    ("marker", "state", "rc"),
    [
        ({"reused": "0", "members": 0, "rc": 0, "stopped": True}, RunState.STOPPED, 0),
        (
            {"reused": "1", "members": 0, "rc": None, "stopped": True},
            RunState.STOPPED,
            None,
        ),  # pid reused since
        (
            {"reused": "boot", "members": 0, "rc": None, "stopped": True},
            RunState.STOPPED,
            None,
        ),  # rebooted since
        (
            {"reused": "0", "members": 2, "rc": None, "stopped": True},
            RunState.RUNNING,
            None,
        ),  # the stop failed
        ({"reused": "0", "members": 0, "rc": 7, "stopped": False}, RunState.EXITED, 7),  # ended by itself
        ({"reused": "0", "members": 0, "rc": None, "stopped": False}, RunState.DEAD, None),
    ],
)
def test_a_recorded_stop_names_how_the_run_ended(
    marker: dict[str, object], state: RunState, rc: int | None
) -> None:
    """DESIGN.md: stopped (by sgtui, recorded) is distinct from exited (by itself, with rc) and dead."""
    from sgtui.remote.run_records import status_from_marker

    status = status_from_marker(marker, "/runs/r/server.log")
    assert (status.state, status.rc) == (state, rc)
