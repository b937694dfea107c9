"""Quoting through every layer, and the run scripts' result lines."""

from __future__ import annotations

import base64
import json
import shlex
import subprocess
import sys

import pytest

from sgtui.core.shell import (
    ARG_BUDGET,
    MAX_ARG_STRLEN,
    ShellError,
    b64_eval,
    check_env,
    detach_script,
    inner_command,
    parse_marker,
    parse_progress,
    stop_script,
    target_command,
    wrap_script,
)


def _sh(command: str, stdin: bytes | None = None) -> str:
    """Run a command line the way sshd does: through the login shell's -c."""
    return subprocess.run(
        ["/bin/sh", "-c", command], input=stdin, capture_output=True, check=True
    ).stdout.decode()


PRINT_ARGV = [sys.executable, "-c", "import json,sys; print(json.dumps(sys.argv[1:]))"]


def test_inner_command_execs_env_then_argv() -> None:
    assert inner_command(["/bin/echo", "a b"], {"X": "1"}) == "exec env X=1 /bin/echo 'a b'"
    assert inner_command(["/bin/true"]) == "exec /bin/true"


@pytest.mark.parametrize("name", ["1X", "A-B", "A B", "", "Ü"])
def test_bad_env_names_are_refused_by_name(name: str) -> None:
    with pytest.raises(ShellError, match="environment variable name"):
        check_env({name: "v"})


def test_nul_bytes_cannot_be_carried_and_say_where() -> None:
    with pytest.raises(ShellError, match="argument 1 contains a NUL"):
        inner_command(["/bin/echo", "a\x00b"])
    with pytest.raises(ShellError, match="environment variable X contains a NUL"):
        check_env({"X": "\x00"})


def test_an_empty_command_is_refused() -> None:
    with pytest.raises(ShellError, match="empty command"):
        inner_command([])


def test_the_pct_form_is_ascii_and_decodes_to_the_inner_script() -> None:
    script = "exec /bin/echo 'modèle ✓'"
    cmd = wrap_script(script, "pct", "129")
    assert cmd.stdin is None and cmd.command.isascii()
    words = shlex.split(cmd.command)
    assert words[:8] == ["pct", "exec", "129", "--", "bash", "--norc", "--noprofile", "-c"]
    encoded = words[8].split()[2]
    assert base64.b64decode(encoded).decode() == script
    assert words[8] == b64_eval(script)


def test_docker_and_host_forms() -> None:
    assert shlex.split(wrap_script("echo hi", "docker", "sgl").command) == [
        "docker",
        "exec",
        "sgl",
        "bash",
        "--norc",
        "--noprofile",
        "-c",
        "echo hi",
    ]
    assert shlex.split(wrap_script("echo hi").command) == ["bash", "--norc", "--noprofile", "-c", "echo hi"]


@pytest.mark.parametrize("value", ["$(touch PWNED)", "it's", 'a"b', "x\ny", "🚀", "`id`", "\\", "*"])
def test_values_come_out_exactly_through_the_login_shell(value: str) -> None:
    cmd = target_command([*PRINT_ARGV, value, "--flag", value], None)
    assert json.loads(_sh(cmd.command)) == [value, "--flag", value]


def test_a_script_too_big_for_argv_goes_to_stdin_and_still_runs() -> None:
    big = "a'b" * 40_000  # quoting would blow past MAX_ARG_STRLEN
    cmd = target_command([*PRINT_ARGV, big], None)
    assert cmd.stdin is not None and len(cmd.command) < ARG_BUDGET < MAX_ARG_STRLEN
    assert json.loads(_sh(cmd.command, cmd.stdin)) == [big]
    docker = wrap_script("x" * 200_000, "docker", "sgl")
    assert shlex.split(docker.command)[:3] == ["docker", "exec", "-i"]


def test_markers_are_found_among_stray_output() -> None:
    out = 'pyenv: noise\n@@sgtui {"a": 1}\nmore noise\n'
    assert parse_marker(out) == {"a": 1}
    assert parse_marker("no marker") is None
    assert parse_marker("@@sgtui not-json") is None


def test_progress_lines_parse() -> None:
    assert parse_progress("@@sgtui-progress 1.5 3") == (1.5, 3)
    assert parse_progress("@@sgtui {}") is None


def test_run_file_names_must_be_plain() -> None:
    with pytest.raises(ShellError, match="plain file name"):
        detach_script("/tmp/x", ["/bin/true"], files={"../evil": "x"})


def test_stop_refuses_a_pid_whose_start_time_differs() -> None:
    out = subprocess.run(
        ["bash", "-c", stop_script(1, 123456789, None, 0.1)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 3
    assert parse_marker(out.stdout) == {"result": "pid-reused", "reused": "1"}


def test_one_argument_over_the_kernel_limit_is_refused_by_name() -> None:
    with pytest.raises(ShellError, match=r"argument 1 'xxx.*131072 bytes.*through a file"):
        inner_command(["/bin/echo", "x" * MAX_ARG_STRLEN])
    with pytest.raises(ShellError, match="environment 'BIG=yyy"):
        inner_command(["/bin/true"], {"BIG": "y" * MAX_ARG_STRLEN})
