"""`sgtui explain` on a log as logrotate leaves it (gzip, bzip2, xz: told by their magic bytes, not by the
name) reads it as the plain log; a file that is not text at all is refused, naming it, rather than read as
a log that says nothing; text with odd bytes in it (Latin-1, a run of zeros a crash left) is still a log."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import sys
from pathlib import Path

import pytest

from sgtui.cli import main
from tests.cases import LOGS

FAILED = LOGS / "v059_tp2_nextn_not_enough_memory.log"


def _report(capsys: pytest.CaptureFixture[str], path: str) -> tuple[int, dict[str, object] | None, str]:
    rc = main(["explain", path, "--json"])
    out = capsys.readouterr()
    return rc, json.loads(out.out) if out.out else None, out.err


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress], ids=["gz", "bz2", "xz"])
def test_a_compressed_log_reads_as_the_plain_one(
    compress: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packed = tmp_path / "server.log.1"  # logrotate's names say nothing: the bytes do
    packed.write_bytes(compress(FAILED.read_bytes()))  # type: ignore[operator]
    _, plain, _ = _report(capsys, str(FAILED))
    rc, report, err = _report(capsys, str(packed))
    assert rc == 0 and err == "" and report == plain


def test_a_compressed_log_on_stdin_reads_as_the_plain_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`zcat` is not needed: `ssh host cat server.log.2.gz | sgtui explain -`."""
    piped = io.BufferedReader(io.BytesIO(gzip.compress(FAILED.read_bytes())))  # type: ignore[arg-type]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(piped))
    rc, report, _ = _report(capsys, "-")
    assert rc == 0 and report is not None and report["error_class"] == "not_enough_memory"


def test_a_cut_compressed_copy_is_read_up_to_the_cut_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    noise = "".join(f"[2026-01-01 00:00:00] request {i} done {i * 7919 % 104729}\n" for i in range(40000))
    packed = gzip.compress((FAILED.read_text() + noise).encode())
    cut = tmp_path / "server.log.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    rc, report, err = _report(capsys, str(cut))
    assert rc == 0 and report is not None and report["error_class"] == "not_enough_memory"
    assert err.startswith(f"sgtui explain: {cut}: the gzip data ends early") and err.count("\n") == 1


def test_a_binary_file_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blob = tmp_path / "core.bin"
    blob.write_bytes(bytes(range(256)) * 400)
    rc, report, err = _report(capsys, str(blob))
    assert rc == 2 and report is None
    assert err.startswith(f"sgtui explain: {blob} is not a text log") and err.count("\n") == 1


def test_text_with_odd_bytes_is_still_a_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Latin-1 in a path, a run of zeros where a crash cut the file: the log is read, the error found."""
    log = tmp_path / "server.log"
    text = FAILED.read_bytes().replace(b"Load weight begin", b"Load weight begin caf\xe9", 1)
    log.write_bytes(b"\x00" * 2000 + text)
    rc, report, _ = _report(capsys, str(log))
    assert rc == 0 and report is not None and report["error_class"] == "not_enough_memory"


class Trickle(io.RawIOBase):
    """A pipe that hands over one byte per read, as a slow producer does."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self.at >= len(self.data) or not len(buffer):
            return 0
        buffer[0] = self.data[self.at]
        self.at += 1
        return 1


def test_a_pipe_that_trickles_is_read_whole_before_it_is_judged(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Peeking a pipe's buffer saw one byte of the gzip magic and called the log binary."""
    piped = io.BufferedReader(Trickle(gzip.compress(FAILED.read_bytes())))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(piped))
    rc, report, err = _report(capsys, "-")
    assert rc == 0 and report is not None and report["error_class"] == "not_enough_memory", err


def test_a_damaged_compressed_log_is_read_up_to_the_damage_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    noise = "".join(f"[2026-01-01 00:00:00] request {i} done {i * 7919 % 104729}\n" for i in range(40000))
    packed = bytearray(gzip.compress((FAILED.read_text() + noise).encode()))
    middle = len(packed) // 2
    packed[middle : middle + 64] = bytes(64)  # zeros in the middle of the deflate stream
    damaged = tmp_path / "server.log.gz"
    damaged.write_bytes(bytes(packed))
    rc, report, err = _report(capsys, str(damaged))
    assert rc == 0 and report is not None and report["error_class"] == "not_enough_memory"
    assert err.startswith(f"sgtui explain: {damaged}: the gzip data is damaged") and err.count("\n") == 1
