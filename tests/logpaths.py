"""One log through each consumer of the one analysis path (core.logs), fed the way each really feeds it:

- `via_explain`: `sgtui explain FILE --json`, the real command (streamed file reading, end-of-log rules);
- `via_watch`: `sgtui launch --watch`'s `Watch`, following a fake run whose tail delivers the log in chunks
  and whose status reports the exit code (`None`: still running);
- `via_tui`: a classifier fed batches of lines as the TUI's follower delivers them, then the process exit
  and the end of the log when the run has ended.

Each returns a `Verdict`: outcome, error class, phase and line, and the diagnoses' titles and flags. A
cloud-logging export written newest first is a file only explain reads; a live run wrote those lines oldest
first, so the live paths get them in that order (`live_lines`), and `as_file_line` maps their line numbers
back onto the file's.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sgtui.core.logs import LogClassifier, diagnose


@dataclass(frozen=True)
class Verdict:
    outcome: str
    error_class: str | None
    error_phase: str | None
    error_line: int | None
    diagnoses: tuple[tuple[str, tuple[str | None, ...]], ...]


def verdict_of(analysis: Any) -> Verdict:
    error = analysis.error
    diagnoses = tuple((d.title, tuple(s.flag for s in d.suggestions)) for d in diagnose(analysis))
    return Verdict(
        analysis.outcome,
        error.error_class if error else None,
        error.phase if error else None,
        error.line if error else None,
        diagnoses,
    )


def via_explain(path: Path) -> Verdict:
    from sgtui.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["explain", str(path), "--json"]) == 0
    report = json.loads(out.getvalue())
    error = report["error"]
    return Verdict(
        report["outcome"],
        report["error_class"],
        error["phase"] if error else None,
        report["error_line"],
        tuple((d["title"], tuple(s["flag"] for s in d["suggestions"])) for d in report["diagnosis"]),
    )


def live_lines(path: Path) -> tuple[list[str], bool]:
    """The log's lines in the order a live run wrote them, and whether the file holds them newest first."""
    from sgtui.core.logs import classify_file

    with path.open("rb") as stream:
        newest_first = classify_file(stream).reversed_order
    lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
    return (lines[::-1], True) if newest_first else (lines, False)


def as_file_line(verdict: Verdict, count: int, reversed_order: bool) -> Verdict:
    if not reversed_order or verdict.error_line in (None, 0):
        return verdict
    return Verdict(
        verdict.outcome,
        verdict.error_class,
        verdict.error_phase,
        count - verdict.error_line + 1,
        verdict.diagnoses,
    )


def via_tui(path: Path, rc: int | None, batch: int = 37) -> Verdict:
    lines, reversed_order = live_lines(path)
    classifier = LogClassifier(clock=lambda: 0.0)
    for i in range(0, len(lines), batch):
        classifier.feed("\n".join(lines[i : i + batch]) + "\n")
    if rc is not None:
        classifier.process_exited(rc)
        classifier.finish()
    return as_file_line(verdict_of(classifier.analysis()), len(lines), reversed_order)


@dataclass
class _Chunk:
    lines: list[str]
    start: int
    end: int


@dataclass
class _Record:
    log_path: str
    id: str = "fake-run"
    pid: int = 4242


class FakeRun:
    """What `Watch` needs of a RunManager: a tail in chunks, the rest of the file, and the run's status."""

    def __init__(self, lines: list[str], rc: int | None, chunk_lines: int = 50) -> None:
        self.lines = lines
        self.rc = rc
        self.chunk_lines = chunk_lines
        self.delivered = 0

    async def tail(self, record: Any) -> AsyncIterator[_Chunk]:
        for i in range(0, len(self.lines), self.chunk_lines):
            part = self.lines[i : i + self.chunk_lines]
            self.delivered = i + len(part)
            yield _Chunk(part, i, i + len(part))
            await asyncio.sleep(0)
        await asyncio.Event().wait()  # a live tail never ends by itself

    async def read_rest(self, record: Any, offset: int) -> _Chunk:
        return _Chunk(self.lines[offset:], offset, len(self.lines))

    async def stop(self, record: Any, grace: float) -> Any:
        """A failed run still running is stopped by the watch (launch_leftover.py): it ends here."""
        from sgtui.remote.runs import StopResult

        self.rc = self.rc if self.rc is not None else -15
        self.delivered = len(self.lines)
        return StopResult("stopped", "TERM", 0, 0.0)

    async def status(self, record: Any) -> Any:
        from sgtui.remote.runs import RunState, RunStatus

        if self.rc is None or self.delivered < len(self.lines):
            return RunStatus(RunState.RUNNING)
        return RunStatus(RunState.EXITED, self.rc)


def run_watch(run: Any, record: Any, printer: Any, **options: Any) -> tuple[int, Any]:
    """`Watch(...).run()` on a fake run, its polls and waits shortened: (exit code, the watch)."""
    from sgtui.commands import launch_leftover
    from sgtui.commands import watch as follow

    watch = follow.Watch(run, record, printer, **options)
    saved = follow.STATUS_POLL_S, follow.ERROR_SETTLE_S, launch_leftover.EXIT_WAIT_S
    follow.STATUS_POLL_S, follow.ERROR_SETTLE_S, launch_leftover.EXIT_WAIT_S = 0.01, 0.05, 0.04
    try:
        return asyncio.run(watch.run()), watch
    finally:
        follow.STATUS_POLL_S, follow.ERROR_SETTLE_S, launch_leftover.EXIT_WAIT_S = saved


def via_watch(path: Path, rc: int | None) -> tuple[Verdict, list[dict[str, Any]]]:
    """The verdict of `launch --watch` on a fake run of this log, and the JSON events it printed."""
    from sgtui.commands import launch

    lines, reversed_order = live_lines(path)
    out = io.StringIO()
    printer = launch.Printer(json_events=True, out=out)
    _, watch = run_watch(FakeRun(lines, rc), _Record(str(path)), printer, timeout=0.3)
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    for event in events:
        if event["event"] == "error" and reversed_order:
            event["line"] = len(lines) - event["line"] + 1
    return as_file_line(verdict_of(watch.classifier.analysis()), len(lines), reversed_order), events
