"""Detached runs over real OpenSSH: they outlive the session, and stop is TERM then KILL by group."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from sgtui.remote.runs import ForeignRunError, LaunchUnknownError, RunError, RunManager, RunState
from sgtui.remote.targets import Target
from tests.sshd import SshdServer

from .conftest import SYSTEM_PATH, sshd_connection
from .test_runs import SERVER
from .test_runs_safety import instant_exit_is_ours, missing_interpreter, slow_to_look

pytestmark = pytest.mark.sshd


def _fake_server(tmp_path: Path) -> Path:
    path = tmp_path / "fake-server"
    path.write_text(SERVER)
    path.chmod(0o755)
    return path


async def test_a_run_outlives_its_session_and_stops_with_kill_when_term_is_ignored(
    sshd: SshdServer, tmp_path: Path
) -> None:
    server_script = _fake_server(tmp_path)
    conn = sshd_connection(sshd, tmp_path)
    mgr = RunManager(conn, Target(), str(tmp_path / "runs"))
    try:
        run = await mgr.launch([str(server_script)], {"IGNORE_TERM": "1"})
        log = Path(run.log_path)
        for _ in range(100):
            if log.exists() and "child 2 alive" in log.read_text():
                break
            await asyncio.sleep(0.05)
        for pid in sshd.connection_pids():  # the SSH session dies abruptly
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        size = log.stat().st_size
        await asyncio.sleep(0.3)
        assert log.stat().st_size > size
        assert (await mgr.status(run)).state is RunState.RUNNING  # reconnects by itself
        result = await mgr.stop(run, grace=0.5)
        assert result.signal == "KILL" and result.members == 0
        second = await mgr.launch([str(server_script)])
        assert second.log_path != run.log_path
        assert (await mgr.stop(second, grace=2)).signal == "TERM"
    finally:
        await conn.close()


async def test_a_run_that_exits_before_the_launch_looks_is_ours_over_openssh(
    sshd: SshdServer, fake_bin: Path, tmp_path: Path, victim: subprocess.Popen[bytes]
) -> None:
    touched = slow_to_look(fake_bin)
    conn = sshd_connection(sshd, tmp_path)
    try:
        await instant_exit_is_ours(
            RunManager(conn, Target(), str(tmp_path / "runs")), missing_interpreter(tmp_path), victim
        )
        assert touched.exists()
    finally:
        await conn.close()


async def test_a_launch_cut_by_a_lost_connection_says_the_server_may_be_running_never_failed(
    sshd: SshdServer, fake_bin: Path, tmp_path: Path
) -> None:
    """The detach script is cut after its server started (a `seq` that takes 4 s holds it there): the
    launch cannot know, so it says the server may be running and how to check, and it is running."""
    real = shutil.which("seq", path=SYSTEM_PATH)
    (fake_bin / "seq").write_text(f'#!/bin/sh\nsleep 4\nexec {real} "$@"\n')
    (fake_bin / "seq").chmod(0o755)
    server_script = _fake_server(tmp_path)
    conn = sshd_connection(sshd, tmp_path)
    mgr = RunManager(conn, Target(), str(tmp_path / "runs"))
    try:
        launching = asyncio.ensure_future(mgr.launch([str(server_script)]))
        log = None
        for _ in range(200):
            log = next((tmp_path / "runs").glob("*/server.log"), None)
            if log is not None and "child 1 alive" in log.read_text():
                break
            await asyncio.sleep(0.05)
        assert log is not None
        for pid in sshd.connection_pids():  # the SSH session dies abruptly
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with pytest.raises(LaunchUnknownError) as cut:
            await launching
        text = str(cut.value)
        assert "may have started anyway" in text and "failed" not in text and "exit status None" not in text
        assert f"sgtui runs --host {conn.host.name}" in text and f"sgtui stop {cut.value.run_id}" in text
        size = log.stat().st_size
        await asyncio.sleep(0.3)
        assert log.stat().st_size > size  # and it was right: the server runs
        for _ in range(200):  # the cut script still records it: it lists, and stops
            runs = await mgr.list_runs()
            if runs:
                break
            await asyncio.sleep(0.05)
        [run] = runs
        assert run.id == cut.value.run_id and (await mgr.status(run)).state is RunState.RUNNING
        assert (await mgr.stop(run, grace=2)).clean
    finally:
        await conn.close()


async def test_a_runs_dir_through_another_users_symlink_is_refused_and_a_safe_one_resolved_once(
    sshd: SshdServer, tmp_path: Path, other_user: tuple[str, int]
) -> None:
    """Every component of the runs dir is looked at with lstat before it is used: a symbolic link owned by
    someone else, or sitting in a directory others can write, is refused and nothing is created where it
    points; a safe one is followed once, and the run lives at the resolved path."""
    name, uid = other_user
    server_script = _fake_server(tmp_path)
    team = tmp_path / "team"
    team.mkdir()
    team.chmod(0o1777)  # others can write here (sticky, like /tmp with fs.protected_symlinks=0)
    system = tmp_path / "etc"  # a root-owned place the other user wants root to write into
    system.mkdir(mode=0o755)
    link = team / "x"
    link.symlink_to(system)
    os.lchown(link, uid, -1)
    conn = sshd_connection(sshd, tmp_path)
    try:
        mgr = RunManager(conn, Target(), str(link / "sgtui-runs"))
        with pytest.raises(RunError, match=f"{link} .*is a symbolic link owned by {name}"):
            await mgr.launch([str(server_script)])
        with pytest.raises(ForeignRunError, match="symbolic link owned by"):
            await mgr.list_runs()
        os.lchown(link, 0, -1)  # our own link, but in a directory others can write: swappable
        with pytest.raises(RunError, match="which others can write"):
            await mgr.launch([str(server_script)])
        assert list(system.iterdir()) == []

        safe = tmp_path / "safe"
        safe.mkdir(mode=0o755)
        (safe / "x").symlink_to(system)
        mgr = RunManager(conn, Target(), str(safe / "x" / "sgtui-runs"))
        run = await mgr.launch([str(server_script)])
        assert run.run_dir == f"{system}/sgtui-runs/{run.id}" and mgr.runs_dir == f"{system}/sgtui-runs"
        assert [r.id for r in await mgr.list_runs()] == [run.id]
        assert (await mgr.stop(run, grace=2)).clean
    finally:
        await conn.close()
