"""Failures over real OpenSSH (root's ~/.bashrc included): named clearly, and nothing signalled by mistake."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sgtui.remote.health import HttpState, http_get
from sgtui.remote.runs import PidReusedError, RunError, RunManager, RunRecord
from sgtui.remote.targets import Target
from tests.sshd import SshdServer, start_sshd

from .conftest import SYSTEM_PATH, sshd_connection
from .fakes import install_fake_pct

pytestmark = pytest.mark.sshd


async def test_a_missing_interpreter_inside_pct_is_named_over_openssh(
    sshd: SshdServer, fake_bin: Path, tmp_path: Path
) -> None:
    install_fake_pct(fake_bin, SYSTEM_PATH)
    conn = sshd_connection(sshd, tmp_path)
    try:
        manager = RunManager(conn, Target("pct", "129"), str(tmp_path / "runs"))
        with pytest.raises(
            RunError, match=r"interpreter /opt/none/python does not exist .* on sshd-127\.0\.0\.1 pct 129"
        ):
            await manager.launch(["/opt/none/python", "-m", "sglang.launch_server"])
    finally:
        await conn.close()


async def test_a_pid_that_is_not_a_run_leader_is_never_signalled_over_openssh(
    sshd: SshdServer, tmp_path: Path
) -> None:
    bystander = subprocess.Popen(["sleep", "30"])  # in pytest's own process group, not a session leader
    try:
        stat = Path(f"/proc/{bystander.pid}/stat").read_text().rsplit(") ", 1)[1].split()
        record = RunRecord(
            "x", "sshd", Target(), str(tmp_path), [], {}, [], bystander.pid, bystander.pid, int(stat[19]), ""
        )
        conn = sshd_connection(sshd, tmp_path)
        try:
            with pytest.raises(PidReusedError):
                await RunManager(conn, Target(), str(tmp_path / "runs")).stop(record, grace=0.1)
        finally:
            await conn.close()
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


async def test_openssh_forbidding_port_forwarding_is_named_by_the_health_check(tmp_path: Path) -> None:
    with start_sshd(tmp_path / "sshd", extra_config="AllowTcpForwarding no\n") as server:
        conn = sshd_connection(server, tmp_path)
        try:
            probe = await http_get(conn, 30000, "/health")
        finally:
            await conn.close()
    assert probe.state is HttpState.UNREACHABLE and "AllowTcpForwarding" in probe.detail


async def test_openssh_with_nothing_listening_is_refused_not_unreachable(
    sshd: SshdServer, tmp_path: Path
) -> None:
    conn = sshd_connection(sshd, tmp_path)
    try:
        probe = await http_get(conn, 9, "/health")  # the discard port: nothing listens there
    finally:
        await conn.close()
    assert probe.state is HttpState.REFUSED
