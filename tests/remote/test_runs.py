"""Detached runs: fresh logs, exit codes, TERM then KILL by process group, PID-reuse refusal, GPU wait."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import pwd
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sgtui.core.shell import ShellError
from sgtui.remote.connection import Connection
from sgtui.remote.gpu import GpuSampler
from sgtui.remote.runs import GpusBusyError, PidReusedError, RunError, RunManager, RunRecord, RunState
from sgtui.remote.targets import Target
from sgtui.sim.sshserver import SimSSHServer

from .conftest import SYSTEM_PATH, host_env, pinned_connection
from .fakes import fake_gpu_host, gpu_rows, install_fake_pct

SERVER = """\
#!/bin/bash
# A stand-in server: a parent and two children that log; IGNORE_TERM=1 makes one child ignore TERM.
echo "server starting pid $$ args: $*"
child() {
  [ "$IGNORE_TERM" = 1 ] && [ "$1" = 2 ] && trap '' TERM
  while :; do echo "child $1 alive"; sleep 0.05; done
}
child 1 & child 2 &
trap 'echo shutting down; kill $(jobs -p) 2>/dev/null; sleep 0.1; exit 143' TERM
[ -n "$EXIT_AFTER" ] && { sleep "$EXIT_AFTER"; kill $(jobs -p); exit 7; }
wait
"""


@pytest.fixture
def fake_server(tmp_path: Path) -> Path:
    path = tmp_path / "ctbin" / "fake-server"
    path.parent.mkdir(exist_ok=True)
    path.write_text(SERVER)
    path.chmod(0o755)
    return path


@pytest.fixture
async def manager(conn: Connection, tmp_path: Path) -> AsyncIterator[RunManager]:
    mgr = RunManager(conn, Target(), str(tmp_path / "runs"))
    yield mgr
    for run in await mgr.list_runs():  # never leave a detached test process behind
        await mgr.stop(run, grace=0.2)


async def _wait_for(pred: object, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await pred():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def test_launch_records_a_session_leader_and_a_fresh_log(
    manager: RunManager, fake_server: Path
) -> None:
    run = await manager.launch(
        [str(fake_server), "--model-path", "a b"], {"IGNORE_TERM": "0"}, "name: x\n", [0, 1]
    )
    assert run.pid == run.pgid and run.start is not None and run.boot
    stat = Path(f"/proc/{run.pid}/stat").read_text().rsplit(") ", 1)[1].split()
    assert int(stat[2]) == run.pid and int(stat[3]) == run.pid  # pgrp and sid
    assert int(stat[19]) == run.start
    await _wait_for(lambda: _has_text(Path(run.log_path), "child 2 alive"))
    assert "args: --model-path a b" in Path(run.log_path).read_text()
    assert Path(run.run_dir, "profile.yaml").read_text() == "name: x\n"
    status = await manager.status(run)
    assert status.state is RunState.RUNNING and status.members >= 3


async def _has_text(path: Path, text: str) -> bool:
    return path.exists() and text in path.read_text()


async def test_a_run_that_ends_by_itself_reports_its_exit_code(
    manager: RunManager, fake_server: Path
) -> None:
    run = await manager.launch([str(fake_server)], {"EXIT_AFTER": "0.2"})

    async def exited() -> bool:
        return (await manager.status(run)).state is RunState.EXITED

    await _wait_for(exited)
    assert (await manager.status(run)).rc == 7


async def test_stop_sends_term_and_the_group_goes_away(manager: RunManager, fake_server: Path) -> None:
    run = await manager.launch([str(fake_server)])
    await _wait_for(lambda: _has_text(Path(run.log_path), "child 2 alive"))
    result = await manager.stop(run, grace=3)
    assert result.result == "stopped" and result.signal == "TERM" and result.members == 0
    assert "shutting down" in Path(run.log_path).read_text()
    status = await manager.status(run)
    assert status.state is RunState.STOPPED and status.rc == 143  # the runner still wrote its exit code
    assert oct(Path(run.run_dir, "stopped").stat().st_mode & 0o777) == "0o600"
    assert [s.what for s in result.steps] == ["term-main", "main-exited", "gone"] and result.graceful


DRAINING = """\
#!/bin/bash
# Like SGLang: on TERM the main process drains, then stops its children itself (here with USR1). A child
# that gets a TERM of its own logs it, as SGLang logs a scheduler killed under it as a crash.
child() {
  trap 'echo "child $1 got TERM"; exit 143' TERM
  trap 'echo "child $1 told to stop"; exit 0' USR1
  while :; do echo "child $1 alive"; sleep 0.05; done
}
child 1 & child 2 &
trap 'trap : TERM; echo "Gracefully exiting... Remaining number of requests 0"; sleep "${DRAIN:-0.2}";
      kill -USR1 $(jobs -p); wait; exit 0' TERM
wait
"""


async def test_a_stop_terms_the_servers_main_process_and_lets_it_stop_its_children(
    manager: RunManager, tmp_path: Path
) -> None:
    """A TERM to the whole group would reach SGLang's schedulers under it, which it reports as a crash;
    the main process alone drains and stops them itself, and the stop says when each step happened."""
    server = tmp_path / "draining"
    server.write_text(DRAINING)
    server.chmod(0o755)
    run = await manager.launch([str(server)])
    await _wait_for(lambda: _has_text(Path(run.log_path), "child 2 alive"))
    result = await manager.stop(run, grace=5)
    log = Path(run.log_path).read_text()
    assert "Gracefully exiting" in log and "child 1 told to stop" in log and "got TERM" not in log
    assert result.graceful and result.signal == "TERM"
    main = result.steps[0]
    assert main.what == "term-main" and main.pid not in (None, run.pgid)
    assert 0.15 <= result.steps[1].seconds < 3  # main-exited, after its drain
    status = await manager.status(run)
    assert status.state is RunState.STOPPED and status.rc == 0


async def test_a_drain_longer_than_the_grace_gets_the_group_term_and_its_exit_code_is_still_written(
    manager: RunManager, tmp_path: Path
) -> None:
    """The runner shell is in the group: its TERM trap waits for the server, so the code is recorded."""
    server = tmp_path / "draining"
    server.write_text(DRAINING)
    server.chmod(0o755)
    run = await manager.launch([str(server)], {"DRAIN": "1.0"})
    await _wait_for(lambda: _has_text(Path(run.log_path), "child 2 alive"))
    result = await manager.stop(run, grace=0.3)
    assert [s.what for s in result.steps][:2] == ["term-main", "term-group"]
    assert result.steps[1].seconds >= 0.3 and result.signal == "TERM"
    await _wait_for(lambda: _exists(Path(run.log_path + ".rc")))
    status = await manager.status(run)
    assert status.state is RunState.STOPPED and status.rc is not None


async def _exists(path: Path) -> bool:
    return path.exists()


async def test_a_process_ignoring_term_gets_kill_after_the_grace(
    manager: RunManager, fake_server: Path
) -> None:
    run = await manager.launch([str(fake_server)], {"IGNORE_TERM": "1"})
    await _wait_for(lambda: _has_text(Path(run.log_path), "child 2 alive"))
    progress: list[tuple[float, int]] = []
    result = await manager.stop(run, grace=0.6, on_progress=lambda t, n: progress.append((t, n)))
    assert result.signal == "KILL" and result.result == "stopped"
    assert 0.6 <= result.seconds < 5
    assert progress and all(n >= 1 for _, n in progress)
    assert (await manager.status(run)).members == 0


async def test_stop_refuses_when_the_pid_belongs_to_another_process(
    manager: RunManager, tmp_path: Path
) -> None:
    other = await asyncio.create_subprocess_exec("sleep", "30", start_new_session=True)
    run_dir = tmp_path / "runs" / "x"  # our own run dir: only the pid's identity is wrong
    run_dir.mkdir(parents=True, mode=0o700)
    (tmp_path / "runs").chmod(0o700)
    try:
        start = int(Path(f"/proc/{other.pid}/stat").read_text().rsplit(") ", 1)[1].split()[19])
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        fake = RunRecord(
            "x", "sim", Target(), str(run_dir), [], {}, [], other.pid, other.pid, start - 1, boot
        )
        assert (await manager.status(fake)).state is RunState.PID_REUSED
        with pytest.raises(
            PidReusedError, match="another process, so the run itself has ended; nothing was signalled"
        ):
            await manager.stop(fake, grace=0.2)
        assert other.returncode is None
        await asyncio.sleep(0.1)
        assert Path(f"/proc/{other.pid}").exists()
    finally:
        other.kill()
        await other.wait()


async def test_a_detached_run_survives_the_connection_dropping(
    manager: RunManager, fake_server: Path, sim_server: SimSSHServer
) -> None:
    run = await manager.launch([str(fake_server)])
    await _wait_for(lambda: _has_text(Path(run.log_path), "child 1 alive"))
    await sim_server.abort_connections()
    size = Path(run.log_path).stat().st_size
    await asyncio.sleep(0.3)
    assert Path(run.log_path).stat().st_size > size, "the log keeps growing after the SSH session died"
    assert (await manager.status(run)).state is RunState.RUNNING


async def test_a_relaunch_gets_a_new_log_and_old_runs_are_listed(
    manager: RunManager, fake_server: Path
) -> None:
    first = await manager.launch([str(fake_server)])
    await manager.stop(first, grace=1)
    second = await manager.launch([str(fake_server)])
    assert second.log_path != first.log_path
    listed = await manager.list_runs()
    assert [r.id for r in listed] == sorted([first.id, second.id])
    again = next(r for r in listed if r.id == second.id)
    assert (again.pid, again.start, again.argv) == (second.pid, second.start, second.argv)


async def test_launch_refuses_to_reuse_an_existing_log(
    manager: RunManager, fake_server: Path, tmp_path: Path
) -> None:
    from sgtui.core import runscripts, shell

    run_dir = tmp_path / "runs" / "fixed"
    run_dir.mkdir(parents=True, mode=0o700)
    (tmp_path / "runs").chmod(0o700)
    (run_dir / "server.log").write_text("old\n")
    result = await manager.conn.run(
        manager.target.script(runscripts.detach_script(str(tmp_path / "runs"), "fixed", [str(fake_server)]))
    )
    assert result.rc == 2 and (shell.parse_marker(result.stdout) or {}).get("error") == "log-exists"
    assert (run_dir / "server.log").read_text() == "old\n"


async def test_launch_wants_an_absolute_interpreter(manager: RunManager) -> None:
    with pytest.raises(ShellError, match="absolute"):
        await manager.launch(["python3", "-m", "sglang.launch_server"])


async def test_runs_inside_a_pct_container_are_managed_through_pct(
    fake_bin: Path, tmp_path: Path, fake_server: Path
) -> None:
    install_fake_pct(fake_bin, f"{fake_server.parent}:{SYSTEM_PATH}")
    server = await SimSSHServer(env=host_env(fake_bin)).start()
    conn = pinned_connection(server, tmp_path)
    mgr = RunManager(conn, Target("pct", "129"), str(tmp_path / "ctruns"))
    try:
        run = await mgr.launch([str(fake_server), "ünï"], {"IGNORE_TERM": "1"})
        await _wait_for(lambda: _has_text(Path(run.log_path), "child 2 alive"))
        assert "args: ünï" in Path(run.log_path).read_text()
        assert (await mgr.stop(run, grace=0.3)).signal == "KILL"
        assert [r.target for r in await mgr.list_runs()] == [Target("pct", "129")]
    finally:
        await conn.close()
        await server.close()


def _run_on(gpus: list[int], pid: int) -> RunRecord:
    """A run record that owns `gpus` as process (and group) `pid`: all the GPU wait looks at."""
    return RunRecord("r", "sim", Target(), "/x", [], {}, gpus, pid, pid, 0, "")


async def test_wait_gpus_free_names_the_holders_on_timeout(
    conn: Connection, fake_bin: Path, tmp_path: Path
) -> None:
    holder = await asyncio.create_subprocess_exec("sleep", "30")
    holding = f"{holder.pid}, python3, 39000, GPU-0001\n"
    state = fake_gpu_host(fake_bin, tmp_path / "gpustate", gpus=gpu_rows(2, used=40000), apps=holding)
    mgr = RunManager(conn, Target(), str(tmp_path / "runs"))
    run = _run_on([1], pid=1)
    sampler = GpuSampler(conn)
    try:
        user = pwd.getpwuid(os.getuid()).pw_name  # the holder's owner is named too
        with pytest.raises(
            GpusBusyError, match=rf"pid {holder.pid} \({user}\) python3 \(host\) 39000 MiB on GPU 1"
        ) as err:
            await mgr.wait_gpus_free(run, None, timeout=0.3, sampler=sampler, poll=0.1)
        assert [h.pid for h in err.value.holders] == [holder.pid]
        (state / "apps.csv").write_text("")
        (state / "gpus.csv").write_text(gpu_rows(2, used=3))
        snap = await mgr.wait_gpus_free(run, [0, 1], timeout=2, sampler=sampler, poll=0.1)
        assert all(g.memory_used_mib.value == 3 for g in snap.gpus)
    finally:
        holder.kill()
        await holder.wait()


async def test_a_holder_whose_memory_nvidia_smi_cannot_tell_is_not_shown_as_zero(
    conn: Connection, fake_bin: Path, tmp_path: Path
) -> None:
    fake_gpu_host(
        fake_bin,
        tmp_path / "gpustate",
        gpus=gpu_rows(1, used=40000),
        apps="4242, /opt/venv/bin/python3, [N/A], GPU-0000\n",
    )
    mgr = RunManager(conn, Target(), str(tmp_path / "runs"))
    run = _run_on([0], pid=4242)
    with pytest.raises(GpusBusyError) as err:
        await mgr.wait_gpus_free(run, None, timeout=0, sampler=GpuSampler(conn))
    assert "pid 4242 /opt/venv/bin/python3 (host) unknown MiB (N/A) on GPU 0" in str(err.value)
    assert "0 MiB" not in str(err.value)


async def test_a_holder_on_a_gpu_that_cannot_be_placed_still_counts_as_busy(
    conn: Connection, fake_bin: Path, tmp_path: Path
) -> None:
    fake_gpu_host(
        fake_bin, tmp_path / "gpustate", gpus=gpu_rows(2, used=3), apps="4242, python3, 500, MIG-7f3a\n"
    )
    mgr = RunManager(conn, Target(), str(tmp_path / "runs"))
    run = _run_on([1], pid=4242)
    with pytest.raises(GpusBusyError, match=r"pid 4242 python3 \(host\) 500 MiB on MIG-7f3a"):
        await mgr.wait_gpus_free(run, None, timeout=0, sampler=GpuSampler(conn))


def test_a_run_record_round_trips_through_json() -> None:
    run = RunRecord("id", "h", Target("pct", "129"), "/r/id", ["/p", "x"], {"A": "1"}, [0], 5, 5, 99, "b")
    data = run.to_json()
    assert data["target"] == {"kind": "pct", "id": "129"}
    assert dataclasses.replace(run).log_path == "/r/id/server.log"


def test_relative_runs_dirs_are_refused(conn: Connection) -> None:
    with pytest.raises(ShellError, match="absolute"):
        RunManager(conn, Target(), "runs")


async def test_a_stop_cut_off_by_a_dropped_connection_still_finishes_on_the_host(
    manager: RunManager, fake_server: Path, sim_server: SimSSHServer
) -> None:
    run = await manager.launch([str(fake_server)], {"IGNORE_TERM": "1"})
    await _wait_for(lambda: _has_text(Path(run.log_path), "child 2 alive"))
    stopping = asyncio.ensure_future(manager.stop(run, grace=0.6))
    await asyncio.sleep(0.3)
    await sim_server.abort_connections()
    with pytest.raises(RunError, match="the stop goes on on the host"):
        await stopping

    async def gone() -> bool:
        return (await manager.status(run)).members == 0

    await _wait_for(gone, timeout=5)


async def test_listed_runs_know_when_they_were_launched(manager: RunManager, fake_server: Path) -> None:
    run = await manager.launch([str(fake_server)], {"EXIT_AFTER": "0"})
    (listed,) = await manager.list_runs()
    assert abs(listed.started_at - run.started_at) < 2


async def test_runs_work_the_same_on_the_local_transport(tmp_path: Path, fake_server: Path) -> None:
    from sgtui.remote.connection import LocalTransport

    mgr = RunManager(LocalTransport(), Target(), str(tmp_path / "local-runs"))
    run = await mgr.launch([str(fake_server)])
    await _wait_for(lambda: _has_text(Path(run.log_path), "child 1 alive"))
    assert (await mgr.status(run)).state is RunState.RUNNING
    assert (await mgr.stop(run, grace=2)).signal == "TERM"
    assert (await mgr.status(run)).state is RunState.STOPPED


async def test_a_launch_too_big_for_one_command_line_still_checks_and_starts(
    manager: RunManager, tmp_path: Path
) -> None:
    profile = "# notes\n" + "x" * 150_000 + "\n"  # pushes the launch script onto stdin (`bash -s`)
    run = await manager.launch([sys.executable, "-m", "json.tool", "--help"], None, profile)
    assert Path(run.run_dir, "profile.yaml").read_text() == profile
    assert [r.id for r in await manager.list_runs()] == [run.id]
