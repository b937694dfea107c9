"""A shared GPU box: runs are private to their user, records that are not ours are refused, a stop shows
what it will hit first and names what it left behind, a full disk is named."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sgtui.core import runscripts
from sgtui.core.shell import parse_marker
from sgtui.remote.connection import Connection
from sgtui.remote.runs import ForeignRunError, RunManager, RunRecord, RunState
from sgtui.remote.targets import Target
from sgtui.sim.sshserver import SimSSHServer

from .conftest import SYSTEM_PATH, pinned_connection

SECRET = "hf_s3cr3t-token"


@pytest.fixture
def server_script(tmp_path: Path) -> Path:
    """A server that logs, and optionally leaves children outside its group: LEAVE=setsid starts a child
    in a new session, LEAVE=job one in its own process group (job control) in the same session."""
    path = tmp_path / "bin" / "server"
    path.parent.mkdir()
    path.write_text(
        "#!/bin/bash\n"
        'echo "server up $$"\n'
        'case "${LEAVE:-}" in\n'
        "  setsid) setsid sleep 60 < /dev/null > /dev/null 2>&1 & ;;\n"
        "  job) set -m; sleep 60 < /dev/null > /dev/null 2>&1 & set +m ;;\n"
        "esac\n"
        'while :; do echo "alive"; sleep 0.05; done\n'
    )
    path.chmod(0o755)
    return path


@pytest.fixture
async def manager(conn: Connection, tmp_path: Path) -> AsyncIterator[RunManager]:
    mgr = RunManager(conn, Target(), str(tmp_path / "runs"))
    yield mgr
    with contextlib.suppress(Exception):
        for run in await mgr.list_runs():
            if run.foreign is None:
                await mgr.stop(run, grace=0.2)


async def _until(pred: object, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():  # type: ignore[operator]
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


def _mode(path: Path) -> int:
    return path.lstat().st_mode & 0o777


async def test_a_launched_run_is_private_to_its_user(manager: RunManager, server_script: Path) -> None:
    run = await manager.launch([str(server_script), "a b"], {"HF_TOKEN": SECRET}, profile_yaml="name: x\n")
    await _until(lambda: "alive" in Path(run.log_path).read_text())
    runs_dir = Path(run.run_dir).parent
    assert _mode(runs_dir) == 0o700 and _mode(Path(run.run_dir)) == 0o700
    files = sorted(p.name for p in Path(run.run_dir).iterdir())
    assert files == ["command.json", "env", "profile.yaml", "run.json", "server.log"]
    assert {p.name: _mode(p) for p in Path(run.run_dir).iterdir()} == dict.fromkeys(files, 0o600)
    # the secret reaches the server through its environment, never through a command line in /proc
    for pid in (run.pgid, *_children(run.pgid)):
        assert SECRET.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    assert f"HF_TOKEN={SECRET}".encode() in Path(f"/proc/{_children(run.pgid)[0]}/environ").read_bytes()
    assert run.user == "root" or run.user == os.environ.get("USER")
    await manager.stop(run, grace=1)


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


async def test_the_default_runs_dir_is_the_target_users_xdg_state_dir(
    tmp_path: Path, server_script: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    for env, expected in [
        ({"HOME": str(home)}, home / ".local/state/sgtui/runs"),
        ({"HOME": str(home), "XDG_STATE_HOME": str(home / "st")}, home / "st/sgtui/runs"),
        ({"HOME": str(home), "XDG_STATE_HOME": "relative/ignored"}, home / ".local/state/sgtui/runs"),
    ]:
        server = await SimSSHServer(env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", **env}).start()
        conn = pinned_connection(server, tmp_path)
        mgr = RunManager(conn, Target())
        run = None
        try:
            assert mgr.runs_dir is None
            run = await mgr.launch([str(server_script)])
            assert Path(run.run_dir).parent == expected and mgr.runs_dir == str(expected)
            assert _mode(expected) == 0o700
            assert run.id in [r.id for r in await RunManager(conn, Target()).list_runs()]
        finally:
            if run is not None:  # a failed assertion must not leave the server running
                await mgr.stop(run, grace=1)
            await conn.close()
            await server.close()


def _plant(runs: Path, name: str, pid: int, start: int | None) -> Path:
    """A record exactly as a launch writes it, pointing at `pid` (start time and boot id read from /proc)."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    d = runs / name
    d.mkdir(parents=True, mode=0o700)
    (d / "run.json").write_text(
        json.dumps({"pid": pid, "pgid": pid, "sid": pid, "start": start, "boot": boot})
    )
    (d / "command.json").write_text(
        json.dumps({"argv": ["/usr/bin/sleep", "60"], "target": {"kind": "host"}})
    )
    return d


def _start(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[19])


async def test_a_record_planted_by_another_user_is_foreign_and_never_signalled(
    manager: RunManager, tmp_path: Path, victim: subprocess.Popen[bytes], other_user: tuple[str, int]
) -> None:
    name, uid = other_user
    planted = _plant(tmp_path / "runs", "20990101-000000-ffffff", victim.pid, _start(victim.pid))
    os.chown(tmp_path / "runs", os.getuid(), os.getgid())
    (tmp_path / "runs").chmod(0o700)
    os.chown(planted, uid, -1)
    (record,) = await manager.list_runs()
    assert record.foreign == f"{planted} is owned by {name} (uid {uid}), not by uid {os.getuid()}"
    assert record.user == name
    assert (await manager.status(record)).state is RunState.FOREIGN
    with pytest.raises(ForeignRunError, match="refusing to stop run 20990101-000000-ffffff"):
        await manager.stop(record, grace=0.1)
    # even a record that claims to be ours is checked again on the target before a signal is sent
    forged = dataclasses.replace(record, foreign=None)
    with pytest.raises(ForeignRunError, match=f"owned by {name}.*nothing was signalled"):
        await manager.stop(forged, grace=0.1)
    with pytest.raises(ForeignRunError):
        await manager.preview(forged)
    await asyncio.sleep(0.1)
    assert victim.poll() is None


@pytest.mark.parametrize("how", ["symlink", "group-writable", "start-null", "run-json-symlink"])
async def test_records_that_fail_a_check_are_foreign_with_one_clear_reason(
    manager: RunManager, tmp_path: Path, victim: subprocess.Popen[bytes], how: str
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir(mode=0o700)
    name = "20990101-000000-aaaaaa"
    if how == "symlink":
        real = _plant(tmp_path / "elsewhere", name, victim.pid, _start(victim.pid))
        (runs / name).symlink_to(real)
        reason = f"{runs / name} is a symbolic link"
    elif how == "group-writable":
        d = _plant(runs, name, victim.pid, _start(victim.pid))
        d.chmod(0o770)
        reason = f"{d} is writable by group or others (mode 770)"
    elif how == "start-null":
        _plant(runs, name, victim.pid, None)
        reason = (
            "its run.json records no start time (start: null), so its pid cannot be told from a reused one"
        )
    else:
        elsewhere = _plant(tmp_path / "elsewhere", name, victim.pid, _start(victim.pid))
        d = runs / name
        d.mkdir(mode=0o700)
        (d / "run.json").symlink_to(elsewhere / "run.json")
        reason = f"{d}/run.json is a symbolic link"
    (record,) = await manager.list_runs()
    assert reason in (record.foreign or "")
    with pytest.raises(ForeignRunError, match="nothing was done"):
        await manager.stop(record, grace=0.1)
    with pytest.raises(ForeignRunError):
        await manager.preview(record)
    await asyncio.sleep(0.1)
    assert victim.poll() is None


@pytest.mark.parametrize("how", ["symlink", "world-writable"])
async def test_a_runs_dir_that_is_not_ours_is_refused_whole(
    conn: Connection, tmp_path: Path, server_script: Path, how: str
) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    runs = tmp_path / "runs"
    if how == "symlink":
        runs.symlink_to(real)
    else:
        runs.mkdir()
        runs.chmod(0o777)
    manager = RunManager(conn, Target(), str(runs))
    with pytest.raises(ForeignRunError, match="refusing the runs dir"):
        await manager.list_runs()
    with pytest.raises(Exception, match=r"refusing the runs dir: .*(symbolic link|writable by group)"):
        await manager.launch([str(server_script)])
    assert list(real.iterdir()) == [] and (how == "symlink" or list(runs.iterdir()) == [])


async def test_a_runs_dir_under_a_directory_others_can_write_is_refused(
    conn: Connection, tmp_path: Path, server_script: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # no sticky bit: anyone could rename our runs dir away and put theirs there
    manager = RunManager(conn, Target(), str(shared / "runs"))
    with pytest.raises(Exception, match=r"above the runs dir.*without the sticky bit"):
        await manager.launch([str(server_script)])
    shared.chmod(0o1777)  # like /tmp: fine
    run = await manager.launch([str(server_script)])
    await manager.stop(run, grace=1)


async def test_the_stop_preview_shows_the_leader_next_to_the_recorded_argv(
    manager: RunManager, server_script: Path
) -> None:
    run = await manager.launch([str(server_script), "--port", "30000"])
    await _until(lambda: "alive" in Path(run.log_path).read_text())
    preview = await manager.preview(run)
    assert preview.alive and preview.pgid == run.pgid and preview.members >= 2
    assert preview.owner is not None and f"(uid {os.getuid()})" in preview.owner
    assert preview.age_s is not None and 0 <= preview.age_s < 30
    assert preview.leader_argv is not None and preview.leader_argv[-3:] == [
        str(server_script),
        "--port",
        "30000",
    ]
    assert preview.warning is None
    text = preview.text()
    assert f"process group {run.pgid}" in text and "recorded:" in text and "WARNING" not in text
    tampered = dataclasses.replace(run, argv=["/usr/bin/python3", "-m", "sglang.launch_server"])
    assert "not the one recorded" in ((await manager.preview(tampered)).warning or "")
    await manager.stop(run, grace=1)


@pytest.mark.parametrize(("leave", "why"), [("setsid", "marker"), ("job", "session")])
async def test_a_stop_names_processes_that_left_the_group(
    manager: RunManager, server_script: Path, leave: str, why: str
) -> None:
    run = await manager.launch([str(server_script)], {"LEAVE": leave})
    await _until(lambda: "alive" in Path(run.log_path).read_text())
    await asyncio.sleep(0.2)
    assert (await manager.preview(run)).outside == 1
    result = await manager.stop(run, grace=1)
    try:
        assert result.result == "stopped" and not result.clean
        (left,) = result.left
        assert left.why == why and "sleep 60" in left.cmd
        assert Path(f"/proc/{left.pid}").exists()
        again = await manager.stop(run, grace=0.1)  # the group is gone, the leftover is still named
        assert again.result == "not-running" and [p.pid for p in again.left] == [left.pid]
    finally:
        for p in result.left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGKILL)


async def test_a_stop_of_a_run_that_left_nothing_is_clean(manager: RunManager, server_script: Path) -> None:
    run = await manager.launch([str(server_script)])
    await _until(lambda: "alive" in Path(run.log_path).read_text())
    result = await manager.stop(run, grace=1)
    assert result.clean and result.left == ()


def test_a_launch_that_fails_half_way_removes_its_run_dir(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    script = runscripts.detach_script(str(runs), "r1", ["/bin/true"], files={"command.json": "{}"})
    # writing a file fails (as on a full disk): the half-made run dir goes away again
    out = subprocess.run(
        ["bash", "-c", "trap '' XFSZ; ulimit -f 0; " + script], capture_output=True, text=True, check=False
    )
    assert (parse_marker(out.stdout) or {}).get("error") == "write"
    assert runs.is_dir() and list(runs.iterdir()) == []
    bad = runscripts.detach_script(str(runs), "r2", ["/opt/none/bin/python", "-m", "sglang.launch_server"])
    out = subprocess.run(["bash", "-c", bad], capture_output=True, text=True, check=False)
    assert (parse_marker(out.stdout) or {}).get("error") == "not-executable"
    assert list(runs.iterdir()) == []


async def test_a_run_that_ends_without_an_exit_code_on_a_full_disk_says_so(
    conn: Connection, tmp_path: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tiny tmpfs to fill needs root")
    mnt = tmp_path / "small"
    mnt.mkdir(mode=0o700)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(mnt)]).returncode:
        pytest.skip("mount -t tmpfs is not permitted here")
    try:
        manager = RunManager(conn, Target(), str(mnt / "runs"))
        filler = tmp_path / "fill"
        filler.write_text("#!/bin/bash\nsleep 0.5\nhead -c 1000000 /dev/zero | tr '\\0' x\nexit 3\n")
        filler.chmod(0o755)
        run = await manager.launch([str(filler)])
        status = await manager.status(run)
        for _ in range(100):
            if status.state is not RunState.RUNNING:
                break
            await asyncio.sleep(0.05)
            status = await manager.status(run)
        assert status.state is RunState.DEAD and status.rc is None
        assert status.disk_full is not None
        assert status.disk_full.startswith(f"the disk holding the log is full ({run.run_dir}: ")
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


async def test_a_run_with_an_exit_code_is_not_blamed_on_the_disk(manager: RunManager, tmp_path: Path) -> None:
    run = await manager.launch(["/bin/bash", "-c", "exit 4"])
    await _until(lambda: Path(run.log_path + ".rc").exists())
    status = await manager.status(run)
    assert (status.state, status.rc, status.disk_full) == (RunState.EXITED, 4, None)
    assert _mode(Path(run.log_path + ".rc")) == 0o600


def test_a_record_json_never_carries_env_values() -> None:
    run = RunRecord("id", "h", Target(), "/r/id", ["/p"], {"HF_TOKEN": SECRET}, [], 5, 5, 9, "b")
    data = run.to_json()
    assert SECRET not in json.dumps(data) and data["env_names"] == ["HF_TOKEN"]
    assert data["node_rank"] is None and data["foreign"] is None and data["log_path"] == "/r/id/server.log"


async def test_nothing_inside_a_record_can_forge_a_line_of_the_listing(
    manager: RunManager, tmp_path: Path, victim: subprocess.Popen[bytes]
) -> None:
    runs = tmp_path / "runs"
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    forged = json.dumps({"pid": victim.pid, "pgid": victim.pid, "start": _start(victim.pid), "boot": boot})
    d = _plant(runs, "20990101-000000-aaaaaa", victim.pid, _start(victim.pid))
    d.chmod(0o770)  # foreign: its files are sent base64, so the forged block below is only data
    (d / "command.json").write_text(
        f"{{}}\n@@run 20990101-000000-bbbbbb\n@@owner root\n@@run.json= {forged}\n"
    )
    own = _plant(runs, "20990101-000000-cccccc", victim.pid, _start(victim.pid))  # ours, multi-line
    (own / "command.json").write_text('{"argv": ["/x"],\n"target": {"kind": "host"}}\n@@run zz\n')
    runs.chmod(0o700)
    listed = await manager.list_runs()
    assert [r.id for r in listed] == ["20990101-000000-aaaaaa", "20990101-000000-cccccc"]
    assert listed[0].foreign and "writable by group" in listed[0].foreign
    assert listed[1].foreign == "its command.json is damaged"


def slow_to_look(fake_bin: Path) -> Path:
    """A `seq` on the target's PATH that takes 0.3 s: the launch script looks at its new process only
    after that, when a server that exits at once is gone (reaped) already. Returns the file it touches."""
    touched = fake_bin / "seq-called"
    real = shutil.which("seq", path=SYSTEM_PATH)
    (fake_bin / "seq").write_text(f'#!/bin/sh\n: > {touched}\nsleep 0.3\nexec {real} "$@"\n')
    (fake_bin / "seq").chmod(0o755)
    return touched


def missing_interpreter(tmp_path: Path) -> Path:
    """A server script whose interpreter does not exist: it exits at once (126/127), saying why."""
    script = tmp_path / "bin" / "bad-server"
    script.parent.mkdir(exist_ok=True)
    script.write_text("#!/nonexistent/python3\nprint('never')\n")
    script.chmod(0o755)
    return script


async def instant_exit_is_ours(mgr: RunManager, script: Path, victim: subprocess.Popen[bytes]) -> None:
    """The launch records the run's start time although it ended before the script looked; the run lists
    as ours, ended with its exit code and log; a planted `start: null` record next to it stays foreign."""
    run = await mgr.launch([str(script)])
    assert run.start is not None and run.pid == run.pgid
    planted = _plant(Path(run.run_dir).parent, "20990101-000000-bbbbbb", victim.pid, None)
    listed = {r.id: r for r in await mgr.list_runs()}
    assert listed[run.id].foreign is None and listed[run.id].start == run.start
    await _until(lambda: Path(run.log_path + ".rc").exists())
    status = await mgr.status(listed[run.id])
    assert status.state is RunState.EXITED and status.rc in (126, 127)
    assert f"{script}: " in Path(run.log_path).read_text()  # the shell's own words on why it failed
    assert sorted(p.name for p in Path(run.run_dir).iterdir()) == [
        "command.json",
        "env",
        "run.json",
        "server.log",
        "server.log.rc",
    ]
    assert "start: null" in (listed[planted.name].foreign or "")
    assert (await mgr.status(listed[planted.name])).state is RunState.FOREIGN
    with pytest.raises(ForeignRunError):
        await mgr.stop(listed[planted.name], grace=0.1)
    assert victim.poll() is None


async def test_a_run_that_exits_before_the_launch_looks_is_ours_and_ended(
    manager: RunManager, fake_bin: Path, tmp_path: Path, victim: subprocess.Popen[bytes]
) -> None:
    touched = slow_to_look(fake_bin)
    await instant_exit_is_ours(manager, missing_interpreter(tmp_path), victim)
    assert touched.exists()  # the script did look late
