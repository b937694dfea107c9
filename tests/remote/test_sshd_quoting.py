"""Arbitrary argv and env reach the launcher exactly over real OpenSSH -> root's login shell (whose
~/.bashrc runs) -> pct -> bash --norc."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings

from sgtui.remote.connection import Connection
from sgtui.remote.targets import Target
from tests.sshd import start_sshd

from .conftest import SYSTEM_PATH, sshd_connection
from .fakes import install_argv_printer, install_fake_pct
from .quoting import argvs, envs, parse_argv_line

pytestmark = pytest.mark.sshd


class _SshdRig:
    def __init__(self, conn: Connection, ct_bin: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.conn = conn
        self.ct_bin = ct_bin

    def roundtrip(self, argv: list[str], env: dict[str, str]) -> dict[str, object]:
        cmd = Target("pct", "129").command([str(self.ct_bin / "python"), *argv], env)
        return parse_argv_line(self.loop.run_until_complete(self.conn.run(cmd, timeout=30)).stdout)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_SshdRig]:
    tmp = tmp_path_factory.mktemp("sshd-quoting")
    host_bin, ct_bin = tmp / "hostbin", tmp / "ctbin"
    host_bin.mkdir()
    ct_bin.mkdir()
    install_fake_pct(host_bin, f"{ct_bin}:{SYSTEM_PATH}")
    install_argv_printer(ct_bin)
    with start_sshd(tmp / "sshd", env_path=f"{host_bin}:{SYSTEM_PATH}") as server:
        r = _SshdRig(sshd_connection(server, tmp), ct_bin)
        yield r
        r.loop.run_until_complete(r.conn.close())
        r.loop.close()


@settings(max_examples=15, deadline=None)
@given(argv=argvs, env=envs)
def test_argv_and_env_arrive_exactly_through_openssh_and_pct(
    rig: _SshdRig, argv: list[str], env: dict[str, str]
) -> None:
    got = rig.roundtrip(argv, env)
    assert got["argv"] == argv
    assert got["env"] == env


def test_the_container_path_is_not_touched_by_root_bashrc(rig: _SshdRig) -> None:
    assert rig.roundtrip([], {})["path"] == f"{rig.ct_bin}:{SYSTEM_PATH}"
