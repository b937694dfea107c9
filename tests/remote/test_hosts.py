"""Hosts come from ~/.ssh/config (as ssh resolves them) and sgtui's hosts.yaml, with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgtui.remote.hosts import HostsFileError, load_hosts, parse_jump, ssh_config_aliases


@pytest.fixture
def ssh_config(tmp_path: Path) -> Path:
    cfg = tmp_path / "ssh_config"
    (tmp_path / "more.conf").write_text("Host extra\n  HostName 10.0.0.9\n")
    cfg.write_text(
        f"Include {tmp_path}/more.conf\n"
        "Host bastion\n  HostName jump.example.org\n  User ops\n  Port 2200\n"
        "Host gpu1 gpu2\n  User root\n  ProxyJump bastion\n  IdentityFile ~/.ssh/lab_key\n"
        "Host gpu1\n  HostName 10.0.0.5\n"
        "Host *.lab !secret\n  User nobody\n"
        "Host *\n  ServerAliveInterval 30\n"
    )
    return cfg


def test_concrete_aliases_are_listed_and_patterns_are_not(ssh_config: Path) -> None:
    assert ssh_config_aliases(ssh_config) == ["extra", "bastion", "gpu1", "gpu2"]


def test_aliases_resolve_like_ssh_does_including_proxy_jump(ssh_config: Path) -> None:
    hosts = load_hosts(ssh_config, False)
    gpu1 = hosts["gpu1"]
    assert (gpu1.hostname, gpu1.port, gpu1.user, gpu1.proxy_jump) == ("10.0.0.5", 22, "root", "bastion")
    assert gpu1.identity_files[0].endswith("/.ssh/lab_key") and not gpu1.identity_files[0].startswith("~")
    assert hosts["gpu2"].hostname == "gpu2"
    assert (hosts["bastion"].hostname, hosts["bastion"].port, hosts["bastion"].user) == (
        "jump.example.org",
        2200,
        "ops",
    )
    assert hosts["extra"].hostname == "10.0.0.9"


def test_hosts_yaml_adds_and_overrides(ssh_config: Path, tmp_path: Path) -> None:
    yml = tmp_path / "hosts.yaml"
    yml.write_text(
        "gpu1:\n  port: 2222\n  known_hosts: /etc/lab_known_hosts\n"
        "sim:\n  hostname: 127.0.0.1\n  port: 40000\n  user: root\n  identity_file: /k/client\n"
        "here:\n  local: true\n"
    )
    hosts = load_hosts(ssh_config, yml)
    assert hosts["gpu1"].hostname == "10.0.0.5" and hosts["gpu1"].port == 2222
    assert hosts["gpu1"].proxy_jump == "bastion" and hosts["gpu1"].known_hosts == ("/etc/lab_known_hosts",)
    assert hosts["sim"].identity_files == ("/k/client",)
    assert hosts["here"].local


def test_the_default_hosts_file_lives_in_the_config_dir(_config_dir: Path) -> None:
    (_config_dir / "hosts.yaml").write_text("box:\n  hostname: 10.1.1.1\n")
    assert load_hosts(False)["box"].hostname == "10.1.1.1"


def test_every_problem_in_hosts_yaml_is_reported_with_its_line(tmp_path: Path) -> None:
    yml = tmp_path / "hosts.yaml"
    yml.write_text("ok:\n  hostname: a\nbad:\n  prot: 22\nworse:\n  port: ninety\n")
    with pytest.raises(HostsFileError) as err:
        load_hosts(False, yml)
    msg = str(err.value)
    assert f"{yml}:3: host 'bad': unknown key(s) prot" in msg
    assert f"{yml}:5: host 'worse': port must be a number" in msg


def test_broken_yaml_names_the_file(tmp_path: Path) -> None:
    yml = tmp_path / "hosts.yaml"
    yml.write_text("a: [\n")
    with pytest.raises(HostsFileError, match=r"hosts\.yaml:2: YAML syntax error"):
        load_hosts(False, yml)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("gpu1:\n  port: " + "9" * 5000 + "\n", "hosts.yaml:2: an integer of 5,000 digits"),
        ("gpu1:\n  identity_file: " + "[" * 3000 + "]" * 3000 + "\n", "nested more than 64 levels deep"),
        ("gpu1:\n\thostname: x\n", "hosts.yaml:2: tabs are not allowed for indentation in YAML"),
    ],
)
def test_hostile_hosts_yaml_is_one_line_naming_the_line(tmp_path: Path, text: str, said: str) -> None:
    """A 5,000-digit number, 3,000 nested lists, a tab: one clear line, never a traceback."""
    yml = tmp_path / "hosts.yaml"
    yml.write_text(text)
    with pytest.raises(HostsFileError) as err:
        load_hosts(False, yml)
    assert said in str(err.value) and "\n" not in str(err.value)


def test_jump_specs_parse() -> None:
    assert parse_jump("ops@jump:2200") == ("ops", "jump", 2200)
    assert parse_jump("jump") == (None, "jump", None)
    assert parse_jump("[::1]:22") == (None, "::1", 22)


def test_a_bad_ssh_config_value_is_a_clear_error_naming_the_file(tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host gpu1\n  Port ninety\n")
    with pytest.raises(HostsFileError, match=r"ssh_config.*line 2"):
        load_hosts(cfg, False)


def test_a_host_may_name_its_own_runs_dir_and_a_bad_one_is_reported_with_the_others(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text("gpu1:\n  hostname: 10.0.0.5\n  runs_dir: /data/me/runs\ngpu2:\n  hostname: x\n")
    loaded = load_hosts(ssh_config=False, hosts_yaml=hosts)
    assert loaded["gpu1"].runs_dir == "/data/me/runs" and loaded["gpu2"].runs_dir is None
    hosts.write_text("gpu1:\n  runs_dir: runs\n  port: 0\n")
    with pytest.raises(HostsFileError) as err:
        load_hosts(ssh_config=False, hosts_yaml=hosts)
    assert "hosts.yaml:1: host 'gpu1': runs_dir must be an absolute path" in str(err.value)
    assert "port must be" in str(err.value)


def test_reading_the_ssh_config_never_runs_a_match_exec_command(tmp_path: Path) -> None:
    """OpenSSH runs `Match exec` only when connecting; reading the config (every sgtui command, the
    TUI's host list) must run nothing. The condition is taken as false and the host says so."""
    ran = tmp_path / "ran"
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        "Host gpu1\n  HostName 10.0.0.5\n"
        f'Match originalhost gpu1 exec "touch {ran}"\n  User fromexec\n'
        "Host plain\n  HostName 10.0.0.6\n"
    )
    hosts = load_hosts(cfg, hosts_yaml=False)
    assert not ran.exists()
    assert hosts["gpu1"].user is None and hosts["gpu1"].skipped_exec == (f"touch {ran}",)
    note = hosts["gpu1"].match_exec_note
    assert "does not run `Match exec`" in note and f"`touch {ran}`" in note and "hosts.yaml" in note
    assert hosts["plain"].skipped_exec == ()  # the Match is not for plain
