"""Arbitrary flag and env values reach the launcher's argv exactly: ssh -> login shell -> pct -> bash."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings

from sgtui.remote.connection import Connection
from sgtui.remote.targets import Target
from sgtui.sim.sshserver import SimSSHServer

from .conftest import SYSTEM_PATH, host_env, pinned_connection
from .fakes import install_argv_printer, install_fake_docker, install_fake_pct
from .quoting import argvs, envs, parse_argv_line


class _Rig:
    def __init__(self, tmp: Path, c_locale: bool) -> None:
        self.loop = asyncio.new_event_loop()
        host_bin, self.ct_bin = tmp / "hostbin", tmp / "ctbin"
        host_bin.mkdir()
        self.ct_bin.mkdir()
        install_fake_pct(host_bin, f"{self.ct_bin}:{SYSTEM_PATH}")
        install_fake_docker(host_bin)
        install_argv_printer(self.ct_bin)
        env = host_env(host_bin)
        if c_locale:
            env["FAKE_PCT_C_LOCALE"] = "1"
        self.server = SimSSHServer(env=env)
        self.loop.run_until_complete(self.server.start())
        self.conn: Connection = pinned_connection(self.server, tmp)

    def roundtrip(self, target: Target, argv: list[str], env: dict[str, str]) -> dict[str, object]:
        cmd = target.command([str(self.ct_bin / "python"), *argv], env)
        result = self.loop.run_until_complete(self.conn.run(cmd, timeout=20))
        return parse_argv_line(result.stdout)

    def close(self) -> None:
        self.loop.run_until_complete(self.conn.close())
        self.loop.run_until_complete(self.server.close())
        self.loop.close()


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Rig]:
    r = _Rig(tmp_path_factory.mktemp("quoting"), c_locale=True)
    yield r
    r.close()


@settings(max_examples=40, deadline=None)
@given(argv=argvs, env=envs)
def test_argv_and_env_arrive_exactly_through_pct_even_under_a_c_locale(
    rig: _Rig, argv: list[str], env: dict[str, str]
) -> None:
    got = rig.roundtrip(Target("pct", "129"), argv, env)
    assert got["argv"] == argv
    assert got["env"] == env
    assert not (Path.cwd() / "PWNED").exists()


@settings(max_examples=15, deadline=None)
@given(argv=argvs, env=envs)
def test_argv_and_env_arrive_exactly_on_the_bare_host_and_in_docker(
    rig: _Rig, argv: list[str], env: dict[str, str]
) -> None:
    assert rig.roundtrip(Target(), argv, env)["argv"] == argv
    assert rig.roundtrip(Target("docker", "sglang-1"), argv, env)["env"] == env


def test_the_container_sees_pcts_reset_path_not_the_hosts(rig: _Rig) -> None:
    got = rig.roundtrip(Target("pct", "129"), ["x"], {})
    assert got["path"] == f"{rig.ct_bin}:{SYSTEM_PATH}"


def test_the_fake_pct_really_mangles_non_ascii_arguments_like_pct_under_lang_c(rig: _Rig) -> None:
    """Why the base64 transport matters: the same text as a plain pct argument comes out damaged."""
    cmd = f"pct exec 129 -- {rig.ct_bin}/python 'modèle ✓'"
    out = rig.loop.run_until_complete(rig.conn.run(cmd)).stdout
    assert parse_argv_line(out)["argv"] != ["modèle ✓"]


def test_an_argv_too_big_for_one_command_line_still_arrives_exactly_through_pct(rig: _Rig) -> None:
    huge = "'" * 60_000  # fits one argv element; quoted and base64'd it is far past MAX_ARG_STRLEN
    cmd = Target("pct", "129").command([str(rig.ct_bin / "python"), huge], {"SGT_X": "ü"})
    assert cmd.stdin is not None
    got = parse_argv_line(rig.loop.run_until_complete(rig.conn.run(cmd, timeout=20)).stdout)
    assert got["argv"] == [huge] and got["env"] == {"SGT_X": "ü"}
