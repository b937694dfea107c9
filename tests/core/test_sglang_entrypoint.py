"""Each release is started the way it prefers: `sglang serve` from 0.5.10 (whose `python -m
sglang.launch_server` warns that `sglang serve` is the recommended entrypoint), the module form before."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgtui.core.profiles import parse_profile
from sgtui.core.sglang.entrypoint import serve_script, server_argv
from sgtui.core.sglang.windows import window_for


@pytest.mark.parametrize(
    ("version", "form"),
    [
        ("0.4.6", "module"),
        ("0.5.5", "module"),
        ("0.5.9", "module"),
        ("0.5.10", "serve"),
        ("0.5.23", "serve"),
        ("0.5.24.dev3+gabc", "serve"),
        ("0.0.0.dev0", "serve"),
    ],
)
def test_the_launch_form_is_the_release_window_s_rule(version: str, form: str) -> None:
    """0.5.10's launch_server.py is the first to warn; 0.5.9's runs silently."""
    assert window_for(version).rules.launch_form == form


@pytest.mark.parametrize(("version", "has"), [("0.5.4", False), ("0.5.5", True), ("0.5.9", True)])
def test_the_sglang_console_script_exists_from_0_5_5(version: str, has: bool) -> None:
    """0.5.5's wheel is the first with sglang/cli/main.py (`sglang = sglang.cli.main:main`)."""
    assert window_for(version).rules.serve_cli is has


def test_0_5_23_is_started_with_sglang_serve_beside_the_environment_s_python() -> None:
    argv = server_argv("/opt/sglang/venv/bin/python", "0.5.23", ["--model-path", "/m"])
    assert argv == ["/opt/sglang/venv/bin/sglang", "serve", "--model-path", "/m"]


def test_a_release_before_0_5_10_keeps_the_module_form() -> None:
    argv = server_argv("/opt/venv/bin/python3", "0.5.9", ["--model-path", "/m"])
    assert argv == ["/opt/venv/bin/python3", "-m", "sglang.launch_server", "--model-path", "/m"]


@pytest.mark.parametrize("version", [None, "not-a-version"])
def test_an_unknown_release_gets_the_form_every_release_accepts(version: str | None) -> None:
    assert server_argv("python3", version, [])[:3] == ["python3", "-m", "sglang.launch_server"]


def test_a_bare_interpreter_name_finds_sglang_on_path_too() -> None:
    assert serve_script("python3") == "sglang"
    assert serve_script("/usr/bin/python3") == "/usr/bin/sglang"


def test_a_profile_s_command_follows_its_sglang_version(tmp_path: Path) -> None:
    """The one place the launch paths (CLI, TUI, multi-node) take the command line from."""
    text = (
        "name: p\nhost: h\npython: /opt/venv/bin/python\nsglang_version: '{v}'\n"
        "sglang:\n  model-path: /models/tiny\n  port: 30001\n"
    )
    new = parse_profile(text.format(v="0.5.23"), tmp_path / "p.yaml")
    old = parse_profile(text.format(v="0.5.9"), tmp_path / "p.yaml")
    assert new.command[:2] == ["/opt/venv/bin/sglang", "serve"] and new.command[2:] == new.argv
    assert old.command[:3] == ["/opt/venv/bin/python", "-m", "sglang.launch_server"]
    assert new.node_command(0, "10.0.0.1:5000")[:2] == ["/opt/venv/bin/sglang", "serve"]
