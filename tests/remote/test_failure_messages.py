"""What a user reads when a remote step fails: one sentence naming the place, the cause and what to do."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sgtui.remote.connection import Connection, RemoteError, Result
from sgtui.remote.runs import ForeignRunError, RunError, RunManager
from sgtui.remote.targets import Target, explain_failure, sglang_version
from sgtui.sim.sshserver import SimSSHServer

from .conftest import SYSTEM_PATH, host_env, pinned_connection
from .fakes import install_fake_pct

STOPPED_PCT = """#!/bin/bash
# pct on a Proxmox host whose container is stopped (the wording of pve-container's own check)
echo "CT $2 not running" >&2
exit 255
"""


def _one_sentence(message: str) -> None:
    assert "\n" not in message and "Traceback" not in message


async def test_a_pct_target_on_a_host_without_pct_says_it_is_not_proxmox(
    conn: Connection, tmp_path: Path
) -> None:
    manager = RunManager(conn, Target("pct", "129"), str(tmp_path / "runs"))
    with pytest.raises(RunError, match=r"sim has no `pct` command, so it is not a Proxmox VE host") as err:
        await manager.launch(["/usr/bin/python3", "-V"])
    _one_sentence(str(err.value))


async def test_a_stopped_container_says_how_to_start_it(fake_bin: Path, tmp_path: Path) -> None:
    (fake_bin / "pct").write_text(STOPPED_PCT)
    (fake_bin / "pct").chmod(0o755)
    async with SimSSHServer(env=host_env(fake_bin)) as server:
        conn = pinned_connection(server, tmp_path)
        try:
            manager = RunManager(conn, Target("pct", "129"), "/var/tmp/sgtui-runs")
            with pytest.raises(
                RunError, match=r"container 129 on sim is stopped; start it \(pct start 129\)"
            ):
                await manager.launch(["/opt/venv/bin/python", "-V"])
            with pytest.raises(RunError, match="is stopped"):
                await manager.list_runs()
        finally:
            await conn.close()


async def test_a_missing_interpreter_in_the_container_is_named_before_anything_starts(
    fake_bin: Path, tmp_path: Path
) -> None:
    install_fake_pct(fake_bin, SYSTEM_PATH)
    async with SimSSHServer(env=host_env(fake_bin)) as server:
        conn = pinned_connection(server, tmp_path)
        try:
            manager = RunManager(conn, Target("pct", "129"), str(tmp_path / "runs"))
            with pytest.raises(
                RunError, match=r"interpreter /opt/none/bin/python does not exist .* on sim pct 129"
            ):
                await manager.launch(["/opt/none/bin/python", "-m", "sglang.launch_server"])
            assert await manager.list_runs() == []
            with pytest.raises(RemoteError, match=r"/opt/none/bin/python does not exist on sim pct 129: set"):
                await sglang_version(conn, Target("pct", "129"), "/opt/none/bin/python")
        finally:
            await conn.close()


async def test_a_run_dir_that_cannot_be_created_is_named(conn: Connection, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    manager = RunManager(conn, Target(), str(blocker))
    with pytest.raises(
        RunError, match=rf"cannot create the run directory {blocker}/.*: .*{blocker} is not a directory"
    ) as err:
        await manager.launch(["/bin/sleep", "1"])
    _one_sentence(str(err.value))


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [
        (
            "mkdir: cannot create directory '/var/tmp/sgtui-runs/x': Permission denied",
            "permission denied (mkdir: cannot create directory '/var/tmp/sgtui-runs/x': Permission denied); "
            "log in as a user allowed to do this, or choose a runs dir that user can write",
        ),
        (
            "bash: line 9: /var/tmp/sgtui-runs/x/command.json: No space left on device",
            "its disk is full (bash: line 9: /var/tmp/sgtui-runs/x/command.json: No space left on device); "
            "free some space and try again",
        ),
        ("Configuration file 'nodes/pve/lxc/129.conf' does not exist", "gpu1 has no container 129"),
        ("lxc-attach: 129: attach.c: bash: No such file or directory", "bash is not installed there"),
        ("Permission check failed (/vms/129, VM.Console)", "this login may not use pct"),
    ],
)
def test_common_remote_failures_read_as_one_sentence_with_a_remedy(stderr: str, expected: str) -> None:
    message = explain_failure("gpu1", Target("pct", "129"), Result("", stderr, 1), "launch the server")
    assert expected in message
    _one_sentence(message)


def test_docker_failures_say_what_to_do() -> None:
    gone = Result("", "Error response from daemon: No such container: sgl", 1)
    stopped = Result("", "Error response from daemon: Container 3f2a is not running", 1)
    missing = Result("", "bash: line 1: docker: command not found", 127)
    target = Target("docker", "sgl")
    assert "has no Docker container sgl" in explain_failure("gpu1", target, gone, "x")
    assert "is stopped; start it (docker start sgl)" in explain_failure("gpu1", target, stopped, "x")
    assert "has no `docker` command" in explain_failure("gpu1", target, missing, "x")
    no_bash = Result(
        "",
        'OCI runtime exec failed: exec failed: unable to start container process: exec: "bash": '
        "executable file not found in $PATH: unknown",
        126,
    )
    assert "bash is not installed there" in explain_failure("gpu1", target, no_bash, "x")


async def test_damaged_or_tampered_run_records_are_listed_as_foreign_never_acted_on(
    conn: Connection, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    records = {
        "20260101-000000-aaaaaa": {"pid": 1, "pgid": 1, "sid": 1, "start": 5, "boot": "b"},
        "20260101-000001-bbbbbb": {"pid": 4242, "pgid": 0, "start": 5, "boot": "b"},
        "20260101-000002-cccccc": {"pid": 4242, "pgid": 4343, "start": 5, "boot": "b"},
        "20260101-000003-dddddd": {"pid": -7, "pgid": -7, "start": 5, "boot": "b"},
        "20260101-000004-eeeeee": {"pid": 4242, "pgid": 4242, "start": "5; reboot", "boot": "b"},
        "20260101-000005-ffffff": {"pid": 4242, "pgid": 4242, "start": 5, "boot": "x'; reboot #"},
        "20260101-000006-good00": {"pid": 4242, "pgid": 4242, "start": 5, "boot": "1f0e-22"},
    }
    for name, meta in records.items():
        (runs / name).mkdir(parents=True)
        (runs / name / "run.json").write_text(json.dumps(meta))
    manager = RunManager(conn, Target(), str(runs))
    listed = await manager.list_runs()
    assert [(r.id, r.pgid, r.start, r.boot) for r in listed if r.foreign is None] == [
        ("20260101-000006-good00", 4242, 5, "1f0e-22")
    ]
    damaged = [r for r in listed if r.foreign is not None]
    assert len(damaged) == 6 and all("run.json" in r.foreign for r in damaged if r.foreign)
    for record in damaged:
        with pytest.raises(ForeignRunError, match="nothing was done"):
            await manager.stop(record, grace=0.1)


async def test_a_run_record_claiming_another_target_is_skipped_and_odd_gpus_are_foreign(
    conn: Connection, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    meta = {"pid": 4242, "pgid": 4242, "start": 5, "boot": "b"}
    commands = {
        "20260101-000000-aaaaaa": {"target": {"kind": "pct", "id": "131"}, "argv": ["/x"], "gpus": [0]},
        "20260101-000001-bbbbbb": {"target": {"kind": "host"}, "argv": ["/x"], "gpus": ["0; reboot"]},
        "20260101-000002-cccccc": {"target": {"kind": "host"}, "argv": ["/x"], "gpus": [-1]},
        "20260101-000003-dddddd": {"target": {"kind": "host"}, "argv": ["/x"], "gpus": [0, 1]},
    }
    for name, command in commands.items():
        (runs / name).mkdir(parents=True)
        (runs / name / "run.json").write_text(json.dumps(meta))
        (runs / name / "command.json").write_text(json.dumps(command))
    listed = await RunManager(conn, Target(), str(runs)).list_runs()
    assert [(r.id, r.target, r.gpus) for r in listed if r.foreign is None] == [
        ("20260101-000003-dddddd", Target(), [0, 1])
    ]
    assert [r.id for r in listed if r.foreign] == ["20260101-000001-bbbbbb", "20260101-000002-cccccc"]


async def test_an_environment_without_sglang_is_named_before_anything_starts(
    conn: Connection, tmp_path: Path
) -> None:
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/bash\nexec {sys.executable} -I "$@"\n')  # isolated: sees no sglang
    python.chmod(0o755)
    manager = RunManager(conn, Target(), str(tmp_path / "runs"))
    with pytest.raises(RunError, match=rf"{python} on sim has no sglang module: install SGLang"):
        await manager.launch([str(python), "-m", "sglang.launch_server", "--port", "30000"])
    assert await manager.list_runs() == []
    run = await manager.launch([str(python), "-m", "json.tool", "--help"])  # a module it has: starts
    assert run.pid == run.pgid
