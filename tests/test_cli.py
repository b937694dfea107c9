"""The `sgtui` dispatcher: bad input is one line and exit 2; a closed pipe is not a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "models" / "llama3_1_8b"


def sgtui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sgtui", *args], capture_output=True, text=True, timeout=60)


def test_sglang_flags_without_the_separator_get_a_one_line_hint() -> None:
    result = sgtui("fit", "--gpu", "A6000", "--tp", "2")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("sgtui: unrecognised arguments: --tp")
    assert "SGLang's own flags go after `--`" in lines[0]


def test_an_unknown_command_is_an_argparse_error_not_a_traceback() -> None:
    result = sgtui("frobnicate")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_a_reader_that_closes_the_pipe_early_gets_no_traceback() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sgtui",
            "fit",
            "--gpu",
            "A6000",
            "--config",
            str(FIXTURE),
            "--",
            "--tp-size",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the table is printed
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in stderr


def test_the_runs_table_lines_up_whatever_the_state_says() -> None:
    """`{state:<10}` let "exited rc=143" push its row's pgid, user and log out of line."""
    from sgtui.commands.runs import aligned

    lines = aligned(
        [
            ["RUN", "STATE", "PGID", "USER", "LOG"],
            ["20260101-000000-aaaaaa", "running", "4242", "root", "/r/a/server.log"],
            ["20260101-000001-bbbbbb", "exited rc=143", "77", "someone-long", "/r/b/server.log"],
        ]
    )
    assert len({line.index("/r/") if "/r/" in line else line.index("LOG") for line in lines}) == 1
    starts = {line.find(word) for line, word in zip(lines, ["PGID", "4242", "77"], strict=True)}
    assert len(starts) == 1


def test_the_runs_table_shows_no_control_character_from_a_record() -> None:
    """A record on a shared box is another user's text: an escape in its profile name must not reach the
    terminal, a newline must not split the row."""
    from sgtui.commands.runs import aligned

    lines = aligned([["RUN", "PROFILE", "LOG"], ["r1", "x\x1b[31mRED\nline2\x9b2J", "/r/a/server.log"]])
    assert len(lines) == 2 and "xREDline2" in lines[1]
    assert not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in "".join(lines))


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["flags", "--profile", "{tmp}"], "is a directory; give a YAML file in it, or a profile's name"),
        (
            ["flags", "--profile", "nothing.yaml"],
            "no such file, and no nothing.yaml in",
        ),  # not nothing.yaml.yaml
        (
            ["explain", "--fit-json", "{tmp}", "{tmp}/x.log"],
            "give a file holding `sgtui fit --json`'s output",
        ),
        (["explain", "--fit-json", "-", "-"], "both read standard input"),
        (["runs", "--profile", "p", "--host", "h"], "--profile and --host both name the place: give one"),
    ],
)
def test_bad_input_names_what_is_wrong_with_it(
    argv: list[str],
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sgtui.cli import main

    monkeypatch.setenv("SGTUI_CONFIG_DIR", str(tmp_path / "config"))
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1
