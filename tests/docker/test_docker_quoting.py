"""Arbitrary argv and env reach a process inside a real container exactly: ssh (real sshd) -> root's login
shell (its ~/.bashrc runs) -> docker exec -> bash --norc -> argv; and on stdin (`docker exec -i`) when the
command is too large for one argument."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from hypothesis import given, settings

from sgtui.remote.connection import Connection
from sgtui.remote.targets import Target
from tests.remote.conftest import SYSTEM_PATH, sshd_connection
from tests.remote.quoting import argvs, envs, parse_argv_line
from tests.sshd import start_sshd

from .conftest import Images
from .dockerd import SESSION, docker, run_container

pytestmark = pytest.mark.docker
PRINTER = """#!/usr/bin/python3
import json, os, sys
env = {k: v for k, v in os.environ.items() if k.startswith("SGT_")}
print("ARGV " + json.dumps({"argv": sys.argv[1:], "env": env, "path": os.environ.get("PATH")}))
"""


class _DockerRig:
    def __init__(self, conn: Connection, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.conn = conn
        self.target = Target("docker", name)

    def roundtrip(self, argv: list[str], env: dict[str, str]) -> dict[str, object]:
        cmd = self.target.command(["/opt/printer/python", *argv], env)
        result = self.loop.run_until_complete(self.conn.run(cmd, timeout=30))
        return parse_argv_line(result.stdout)


@pytest.fixture(scope="module")
def rig(images: Images, tmp_path_factory: pytest.TempPathFactory) -> Iterator[_DockerRig]:
    tmp = tmp_path_factory.mktemp("docker-quoting")
    printer = tmp / "printer" / "python"
    printer.parent.mkdir()
    printer.write_text(PRINTER)
    printer.chmod(0o755)
    name = f"sgtui-q-{SESSION}"
    run_container(
        images.bash,
        name,
        ["--network", "none", "-v", f"{printer.parent}:/opt/printer:ro"],
        ["sleep", "infinity"],
    )
    try:
        with start_sshd(tmp / "sshd", env_path=SYSTEM_PATH) as server:
            r = _DockerRig(sshd_connection(server, tmp), name)
            yield r
            r.loop.run_until_complete(r.conn.close())
            r.loop.close()
    finally:
        docker("rm", "-f", name, check=False)


@settings(max_examples=25, deadline=None)
@given(argv=argvs, env=envs)
def test_argv_and_env_arrive_exactly_through_openssh_and_docker_exec(
    rig: _DockerRig, argv: list[str], env: dict[str, str]
) -> None:
    got = rig.roundtrip(argv, env)
    assert got["argv"] == argv
    assert got["env"] == env


def test_a_command_too_large_for_one_argument_goes_on_stdin_to_docker_exec_i(rig: _DockerRig) -> None:
    big = "x'\"$(touch PWNED)\n" * 6000  # ~110 kB: over the argv budget, under MAX_ARG_STRLEN
    cmd = rig.target.command(["/opt/printer/python", big, "--tail"], {"SGT_A": "é ✓"})
    assert cmd.stdin is not None and "docker exec -i" in cmd.command
    assert rig.roundtrip([big, "--tail"], {"SGT_A": "é ✓"}) == {
        "argv": [big, "--tail"],
        "env": {"SGT_A": "é ✓"},
        "path": rig.roundtrip([], {})["path"],
    }


def test_the_container_path_is_the_images_own_not_the_hosts(rig: _DockerRig) -> None:
    path = str(rig.roundtrip([], {})["path"])
    assert path == docker("exec", rig.target.id or "", "sh", "-c", 'echo "$PATH"') != SYSTEM_PATH
