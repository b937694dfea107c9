"""`sgtui explain` reads in bounded memory: files in blocks, newest-first exports backwards in blocks (same
line numbers as reading the whole text), a pipe on stdin the same way; its text output carries no control
characters from the log."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sgtui.cli import main
from sgtui.core.logs import analysis as streaming
from sgtui.core.logs import classify_file, classify_text

EXPORT = [
    "INFO 2025-04-05T00:00:50.1Z [2025-04-05 00:00:50] server_args=ServerArgs(model_path='m', tp_size=2)",
    "INFO 2025-04-05T00:00:55.1Z [2025-04-05 00:00:55 TP0] Load weight begin. avail mem=78.50 GB",
    "INFO 2025-04-05T00:00:55.2Z [2025-04-05 00:00:55 TP1] Load weight begin. avail mem=77.00 GB",
    "ERROR 2025-04-05T00:01:19.1Z Not enough memory. Please try to increase --mem-fraction-static. "
    "Current value: mem_fraction_static=0.7 ü",
    "INFO 2025-04-05T00:01:20.1Z [2025-04-05 00:01:20] Received sigquit from a child process.",
]


def _summary(analysis: object) -> tuple[object, ...]:
    report = analysis.to_json()  # type: ignore[attr-defined]
    kinds = [(m["kind"], m["line"]) for m in report["milestones"]]
    return report["outcome"], report["error_class"], report["error_line"], kinds, report["facts"]


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
def test_a_newest_first_export_read_backwards_in_blocks_matches_the_whole_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    text = "\n".join(reversed(EXPORT)) + "\n"
    path = tmp_path / "export.log"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(streaming, "BLOCK", block)
    with path.open("rb") as stream:
        streamed = classify_file(stream)
    whole = classify_text(text)
    assert streamed.reversed_order and whole.reversed_order
    assert _summary(streamed) == _summary(whole)
    assert streamed.error is not None and streamed.error.line == 2  # the file's own line number
    assert streamed.facts["load_weight_begin_avail_gib"] == 77.0


@pytest.mark.parametrize("block", [5, 1 << 20])
def test_a_file_read_in_blocks_splitting_lines_and_characters_matches_the_whole_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    lines = [line.split(" ", 2)[2] for line in EXPORT]  # the same log, oldest first, no export prefix
    text = "\n".join(lines)  # no final newline: the last line still counts
    path = tmp_path / "plain.log"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8") + b"\xff")
    monkeypatch.setattr(streaming, "BLOCK", block)
    with path.open("rb") as stream:
        streamed = classify_file(stream)
    assert _summary(streamed) == _summary(classify_text(text + "\ufffd"))
    assert streamed.line_count == 5


class _Pipe(io.BytesIO):
    def seekable(self) -> bool:
        return False

    def seek(self, *args: object) -> int:
        raise io.UnsupportedOperation("pipe")


def test_explain_dash_reads_a_pipe_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "\n".join(reversed(EXPORT)) + "\n"
    path = tmp_path / "export.log"
    path.write_text(text, encoding="utf-8")
    assert main(["explain", str(path), "--json"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(_Pipe(text.encode("utf-8"))))
    assert main(["explain", "-", "--json"]) == 0
    from_pipe = json.loads(capsys.readouterr().out)
    assert from_pipe == from_file
    assert from_pipe["reversed_order"] is True and from_pipe["error_class"] == "not_enough_memory"


def test_explain_text_output_carries_no_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "evil.log"
    path.write_text(
        "[2026-01-02 10:00:00] server_args=ServerArgs(model_path='m\x9b2J\x1b]0;pwned\x07', tp_size=1)\n"
        "ValueError: bad \x9d8;;http://x\x9c link \x07\x00\x85 here\n"
        "[2026-01-02 10:00:01] Received sigquit from a child process. It usually means the child failed.\n",
        encoding="utf-8",
    )
    assert main(["explain", str(path)]) == 0
    out = capsys.readouterr().out
    assert "ValueError: bad  link  here" in out
    assert not any((ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in out)
