"""Targets: the bare host, Proxmox containers, Docker containers; discovery and SGLang versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgtui.core.shell import ShellError
from sgtui.remote.connection import Connection
from sgtui.remote.targets import (
    Target,
    discover,
    parse_docker_gpus,
    parse_docker_ps,
    parse_pct_config_gpus,
    parse_pct_list,
    sglang_version,
)
from sgtui.sim.sshserver import SimSSHServer

from .conftest import SYSTEM_PATH, host_env, pinned_connection
from .fakes import install_fake_docker, install_fake_pct

PCT_LIST = """\
VMID       Status     Lock         Name
129        running                 sglang-a6000
130        stopped    backup       spare
"""

PCT_CONFIG_129 = """\
arch: amd64
cores: 16
dev0: /dev/nvidia0,gid=44
dev1: /dev/nvidia1
dev2: /dev/nvidiactl
lxc.cgroup2.devices.allow: c 195:255 rwm
lxc.cgroup2.devices.allow: c 195:0 rwm
lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file
"""


def test_pct_list_rows_survive_an_empty_lock_column() -> None:
    assert parse_pct_list(PCT_LIST) == [("129", "running", "sglang-a6000"), ("130", "stopped", "spare")]


def test_gpus_come_from_devices_cgroup_rules_and_mounts_but_not_control_nodes() -> None:
    assert parse_pct_config_gpus(PCT_CONFIG_129) == ((0, 1), False)
    assert parse_pct_config_gpus("lxc.mount.entry: /dev/nvidia3 dev/nvidia3 none bind\n") == ((3,), False)
    assert parse_pct_config_gpus("lxc.cgroup2.devices.allow: c 195:* rwm\n") == ((), True)


# Real `pct list` columns ("%-10s %-10s %-12s %-20s"): locks without names, names without locks, both.
PCT_LIST_ODD = (
    "VMID       Status     Lock         Name                \n"
    "100        running                 web                 \n"
    "101        stopped    backup                           \n"
    "102        stopped    snapshot-delete batch            \n"
    "103        running    migrate      gpu-box             \n"
    "104        stopped                                     \n"
)


def test_odd_pct_list_rows_never_take_a_lock_for_a_name() -> None:
    assert parse_pct_list(PCT_LIST_ODD) == [
        ("100", "running", "web"),
        ("101", "stopped", ""),
        ("102", "stopped", "batch"),
        ("103", "running", "gpu-box"),
        ("104", "stopped", ""),
    ]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("dev0: path=/dev/nvidia2,mode=0666\ndev1: /dev/nvidia-uvm\n", ((2,), False)),
        ("lxc.cgroup.devices.allow: c 195:1 rwm\n", ((1,), False)),
        ("lxc.cgroup2.devices.allow = c 195:* rwm\n", ((), True)),
        ("lxc.cgroup2.devices.allow: a\n", ((), True)),
        ("lxc.cgroup2.devices.allow: c *:* rwm\n", ((), True)),
        ("lxc.cgroup2.devices.allow: c 195:254 rwm\nlxc.cgroup2.devices.allow: c 509:* rwm\n", ((), False)),
        (
            "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file\n"
            "lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file\n",
            ((0,), False),
        ),
    ],
)
def test_pct_config_gpu_variants(config: str, expected: tuple[tuple[int, ...], bool]) -> None:
    assert parse_pct_config_gpus(config) == expected


def test_docker_gpu_requests_name_the_gpus_each_container_gets() -> None:
    gpu = '"Capabilities":[["gpu"]]'
    text = (
        f'/all\t[{{"Driver":"","Count":-1,"DeviceIDs":null,{gpu},"Options":{{}}}}]\n'
        f'/two\t[{{"Driver":"","Count":2,"DeviceIDs":null,{gpu}}}]\n'
        f'/picked\t[{{"Driver":"nvidia","Count":0,"DeviceIDs":["1","3","GPU-5e1b"]}}]\n'
        "/cpu\tnull\n"
        "garbage line\n"
    )
    assert parse_docker_gpus(text) == {"all": ((), True), "two": ((0, 1), False), "picked": ((1, 3), False)}


def test_docker_ps_rows() -> None:
    assert parse_docker_ps("sgl\tUp 2 hours\tlmsysorg/sglang:latest\n\n") == [
        ("sgl", "Up 2 hours", "lmsysorg/sglang:latest")
    ]


def test_bad_target_ids_are_refused_with_a_clear_message() -> None:
    with pytest.raises(ShellError, match="numeric VMID"):
        Target("pct", "12; rm -rf /")
    with pytest.raises(ShellError, match="container name"):
        Target("docker", "-it")
    with pytest.raises(ShellError, match="unknown target kind"):
        Target("lxd", "x")  # type: ignore[arg-type]


def test_targets_come_from_profile_mappings() -> None:
    assert Target.from_mapping({"kind": "pct", "id": 129}) == Target("pct", "129")
    assert Target.from_mapping(None) == Target()
    assert Target("pct", "129").label == "pct 129"


def test_wrap_is_one_command_line_that_reads_no_rc_files() -> None:
    line = Target("pct", "129").wrap(["/venv/bin/python", "-V"], {"A": "1"})
    assert line.startswith("pct exec 129 -- bash --norc --noprofile -c ")
    assert line.isascii()


async def test_discovery_finds_pct_and_docker_containers_with_their_gpus(
    fake_bin: Path, tmp_path: Path
) -> None:
    install_fake_pct(fake_bin, SYSTEM_PATH)
    install_fake_docker(fake_bin)
    state = tmp_path / "pct"
    state.mkdir()
    (state / "list").write_text(PCT_LIST)
    (state / "129.conf").write_text(PCT_CONFIG_129)
    (state / "130.conf").write_text("arch: amd64\n")
    env = host_env(fake_bin) | {
        "FAKE_PCT_DIR": str(state),
        "FAKE_DOCKER_PS": "sgl\tUp 1 hour\timg:1\n",
        "FAKE_DOCKER_IDS": "3f2a9c\n",
        "FAKE_DOCKER_INSPECT": '/sgl\t[{"Driver":"","Count":-1,"Capabilities":[["gpu"]]}]\n',
    }
    server = await SimSSHServer(env=env).start()
    conn = pinned_connection(server, tmp_path)
    try:
        found = await discover(conn)
    finally:
        await conn.close()
        await server.close()
    assert [(c.target, c.name, c.status, c.gpus) for c in found] == [
        (Target("pct", "129"), "sglang-a6000", "running", (0, 1)),
        (Target("pct", "130"), "spare", "stopped", ()),
        (Target("docker", "sgl"), "sgl", "Up 1 hour", ()),
    ]
    assert found[2].image == "img:1" and found[2].all_gpus


async def test_a_host_without_pct_or_docker_has_no_containers(
    conn: Connection, sim_server: SimSSHServer, tmp_path: Path
) -> None:
    """This machine may have a docker CLI (and no daemon): the host here gets every system tool but those."""
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        for tool in sorted(Path(folder).iterdir()) if Path(folder).is_dir() else ():
            if not tool.name.startswith(("docker", "pct")) and not (bare / tool.name).exists():
                (bare / tool.name).symlink_to(tool)
    sim_server.env["PATH"] = str(bare)
    assert await discover(conn) == []


async def test_the_sglang_version_is_asked_of_the_given_interpreter(conn: Connection, tmp_path: Path) -> None:
    site = tmp_path / "site" / "sglang-0.5.11.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.11\n")
    py = tmp_path / "py"
    py.write_text(f'#!/bin/bash\nPYTHONPATH={tmp_path / "site"} exec {__import__("sys").executable} "$@"\n')
    py.chmod(0o755)
    assert await sglang_version(conn, Target(), str(py)) == "0.5.11"
    plain = tmp_path / "plain"
    plain.write_text(f'#!/bin/bash\nexec {__import__("sys").executable} -I "$@"\n')
    plain.chmod(0o755)
    assert await sglang_version(conn, Target(), str(plain)) is None
    with pytest.raises(ShellError, match="absolute path"):
        await sglang_version(conn, Target(), "python3")
