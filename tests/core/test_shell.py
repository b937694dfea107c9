"""Quoting through every layer, and the run scripts' result lines."""

from __future__ import annotations

import base64
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sgtui.core.runscripts import detach_script, parse_progress, status_script, stop_script
from sgtui.core.shell import (
    ARG_BUDGET,
    MAX_ARG_STRLEN,
    ShellError,
    b64_eval,
    check_env,
    inner_command,
    parse_marker,
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
        detach_script("/tmp", "x", ["/bin/true"], files={"../evil": "x"})


def _start_time(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[19])


def test_stop_refuses_a_pid_whose_start_time_differs(session_leader: subprocess.Popen[bytes]) -> None:
    wrong = _start_time(session_leader.pid) + 1
    out = subprocess.run(
        ["bash", "-c", stop_script(session_leader.pid, wrong, None, 0.1)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 3
    assert parse_marker(out.stdout) == {"result": "pid-reused", "reused": "1"}
    assert session_leader.poll() is None


def test_stop_refuses_a_pid_that_does_not_lead_its_own_group_even_with_the_right_start_time() -> None:
    child = subprocess.Popen(["sleep", "30"])  # shares pytest's process group: not a run we started
    try:
        script = stop_script(child.pid, _start_time(child.pid), None, 0.1)
        out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
        assert out.returncode == 3 and parse_marker(out.stdout) == {"result": "pid-reused", "reused": "1"}
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("pgid", [0, 1, -1, -4242, True, "123; reboot", 12.0, None, 2**22 + 1])
def test_process_groups_that_would_reach_other_processes_are_never_signalled(pgid: object) -> None:
    with pytest.raises(ShellError, match="refusing to signal process group"):
        stop_script(pgid, None, None, 0.1)  # type: ignore[arg-type]
    with pytest.raises(ShellError, match="refusing to signal process group"):
        status_script(pgid, None, None, "/tmp/x.log")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("start", "boot"), [("1; reboot", None), (-5, None), (1, "x'; reboot; '"), (1, "a b")]
)
def test_tampered_start_times_and_boot_ids_are_refused(start: object, boot: object) -> None:
    with pytest.raises(ShellError, match=r"start time|boot id"):
        stop_script(4242, start, boot, 0.1)  # type: ignore[arg-type]


def test_after_a_reboot_a_stop_signals_nothing_and_says_not_running(
    session_leader: subprocess.Popen[bytes],
) -> None:
    pid = session_leader.pid
    script = stop_script(pid, _start_time(pid), "00000000-0000-0000-0000-000000000000", 0.1)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert parse_marker(out.stdout) == {"result": "not-running", "signal": None, "members": 0}
    assert session_leader.poll() is None


@pytest.mark.parametrize("content", ["-", "1-2", "7 && reboot", "", "99999999999"])
def test_a_garbled_exit_code_file_reads_as_unknown(tmp_path: Path, content: str) -> None:
    log = tmp_path / "server.log"
    Path(f"{log}.rc").write_text(content)
    out = subprocess.run(
        ["bash", "-c", status_script(4_000_000, None, None, str(log))], capture_output=True, text=True
    )
    marker = parse_marker(out.stdout) or {}
    assert {k: marker[k] for k in ("reused", "members", "rc")} == {"reused": "0", "members": 0, "rc": None}


def test_a_launch_names_what_failed_on_the_host(tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the runs dir should be")
    cases = {
        "not-executable": detach_script(str(tmp_path), "r1", ["/opt/none/bin/python", "-V"]),
        "run-dir": detach_script(str(blocked), "r2", ["/bin/true"]),
    }
    for error, script in cases.items():
        out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
        assert (parse_marker(out.stdout) or {}).get("error") == error
    assert not (tmp_path / "r1").exists()  # a launch that cannot start leaves no run dir behind


def test_a_launch_reports_whether_its_record_was_saved(tmp_path: Path) -> None:
    out = subprocess.run(
        ["bash", "-c", detach_script(str(tmp_path), "r", ["/bin/true"])], capture_output=True, text=True
    )
    marker = parse_marker(out.stdout)
    assert marker is not None and marker["saved"] is True and marker["pid"] == marker["pgid"]
    saved = json.loads((tmp_path / "r" / "run.json").read_text())
    assert "saved" not in saved and saved["pid"] == marker["pid"]


def test_a_record_that_cannot_be_put_in_place_whole_is_not_left_half_written(tmp_path: Path) -> None:
    """run.json appears by a rename, so a listing never reads it half-written (it would call the run being
    launched damaged); a rename that fails says so and leaves no record and no temp file behind."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "mv").write_text("#!/bin/sh\nexit 1\n")
    (fake / "mv").chmod(0o755)
    runs = tmp_path / "runs"
    script = f"PATH={shlex.quote(str(fake))}:$PATH\n" + detach_script(str(runs), "r", ["/bin/true"])
    marker = parse_marker(subprocess.run(["bash", "-c", script], capture_output=True, text=True).stdout)
    assert marker is not None and marker["saved"] is False
    left = [p.name for p in (runs / "r").iterdir()]
    assert "run.json" not in left and not [name for name in left if name.startswith(".run.json")]


def test_one_argument_over_the_kernel_limit_is_refused_by_name() -> None:
    with pytest.raises(ShellError, match=r"argument 1 'xxx.*131072 bytes.*through a file"):
        inner_command(["/bin/echo", "x" * MAX_ARG_STRLEN])
    with pytest.raises(ShellError, match="environment 'BIG=yyy"):
        inner_command(["/bin/true"], {"BIG": "y" * MAX_ARG_STRLEN})
