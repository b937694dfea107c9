"""`sgtui explain`: the JSON contract, the human report, stdin, and one-line errors for bad input."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sgtui.cli import main
from tests.cases import LOGS

FAILED = LOGS / "v059_tp2_nextn_not_enough_memory.log"


def test_json_has_the_contract_keys_and_milestones_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(FAILED), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"outcome", "error_class", "error_line", "milestones", "facts", "diagnosis"} <= set(report)
    assert (report["outcome"], report["error_class"], report["error_line"]) == (
        "failed",
        "not_enough_memory",
        24,
    )
    assert [m["kind"] for m in report["milestones"]] == [
        "server_args",
        "init_torch_distributed",
        "load_weight_begin",
        "load_weight_end",
    ]
    assert set(report["milestones"][1]) == {"kind", "line", "time", "rank", "values"}
    assert report["milestones"][1]["rank"] == "TP0"
    assert report["facts"]["weight_mem_gib"] == 25.52
    assert report["diagnosis"][0]["suggestions"][0] == {
        "flag": "--max-running-requests",
        "value": "8",
        "why": report["diagnosis"][0]["suggestions"][0]["why"],
    }


def test_the_human_report_shows_timeline_error_line_and_diagnosis(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(FAILED)]) == 0
    out = capsys.readouterr().out
    assert "Outcome: FAILED (not_enough_memory) at line 24, while allocating pools" in out
    assert "Startup timeline" in out and "load_weight_end" in out and "+45.0" in out
    assert "Error (line 24): RuntimeError: Not enough memory" in out
    assert "-> --max-running-requests 8:" in out


def test_a_dash_reads_the_log_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = b"[2026-01-01 10:00:00] The server is fired up and ready to roll!\n\xff\xfe binary tail\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["explain", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outcome"] == "ready"


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda tmp: tmp / "missing.log", "no such file"),
        (lambda tmp: tmp, "is a directory"),
    ],
)
def test_a_missing_or_unreadable_log_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make, needle: str
) -> None:
    assert main(["explain", str(make(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_fit_report_that_is_not_json_names_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "fit.json"
    bad.write_text("{\n  oops\n}")
    assert main(["explain", str(FAILED), "--fit-json", str(bad)]) == 2
    assert f"{bad}, line 2: not JSON" in capsys.readouterr().err


def test_explain_imports_neither_textual_nor_asyncssh() -> None:
    code = (
        "import sys; from sgtui.cli import main; main(['explain', '-', '--json']); "
        "assert 'textual' not in sys.modules and 'asyncssh' not in sys.modules, sorted(sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], input="", capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
