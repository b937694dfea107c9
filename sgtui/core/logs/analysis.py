"""A log's verdict (`LogAnalysis`), and whole logs read through the classifier in bounded memory.

`classify_file` streams a file (or a pipe) in blocks: memory does not grow with the log's size. A
cloud-logging export written newest first is read backwards in blocks, so the classifier still sees it oldest
first, with the file's own line numbers. A pipe is spooled to a temporary file first (on disk, not in memory)
because the order of an export shows only at its end.
"""

from __future__ import annotations

import codecs
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from sgtui.core.logs.classifier import LogClassifier
from sgtui.core.logs.prefix import cloud_prefix
from sgtui.core.logs.state import ANSWERED, SERVED, STOPPED, ErrorInfo, Milestone, StartupState, parse_seconds

BLOCK = 1 << 20
_PROBE = 1 << 16  # bytes read at each end to tell a newest-first export


@dataclass
class LogAnalysis:
    """A whole log's verdict: state, line count, and whether it was written newest-first."""

    state: StartupState
    line_count: int
    reversed_order: bool = False

    @property
    def error(self) -> ErrorInfo | None:
        """The failure's root cause; else a stall (class `stalled`); else None."""
        return self.state.error or self.state.stall

    @property
    def facts(self) -> dict[str, Any]:
        return self.state.facts

    @property
    def milestones(self) -> list[Milestone]:
        return self.state.milestone_list()

    @property
    def stalled(self) -> bool:
        """No progress far past the phase's expected time, and no failure (yet)."""
        return self.state.error is None and self.state.stall is not None

    @property
    def outcome(self) -> str:
        """DESIGN.md's four: ready | failed | starting (a launch is visible, not finished; a stall is still
        `starting`, told by `error_class` "stalled" and `stalled`) | unknown (no launch start seen)."""
        state = self.state
        if state.error is not None:
            return "failed"
        if state.exited and state.exit_code not in (None, 0) and STOPPED not in state.notes:
            return "failed"
        if "ready" in state.milestones or ANSWERED in state.notes or SERVED in state.notes:
            return "ready"
        if state.stall is not None and not state.exited:
            return "starting"
        if "server_args" in state.milestones and not state.exited:
            return "starting"
        return "unknown"

    def to_json(self) -> dict[str, Any]:
        """The `sgtui explain --json` keys except `diagnosis` (see DESIGN.md)."""
        error = self.error
        state = self.state
        return {
            "outcome": self.outcome,
            "error_class": error.error_class if error else None,
            "error_line": error.line if error else None,
            "error": error.to_json() if error else None,
            "phase": state.phase,
            "reached": state.reached,
            "milestones": [m.to_json() for m in self.milestones],
            "ranks_reached": {m.kind: sorted(m.ranks) for m in self.milestones},
            "durations": state.durations(),
            "progress": state.progress,
            "facts": dict(state.facts),
            "facts_per_rank": {k: v for k, v in state.facts_per_rank.items() if len(v) > 1},
            "stall": state.stall.values if state.stall else None,
            "gaps": list(state.gaps),
            "phase_at_end": state.phase_at_end,
            "warnings": [{"line": line, "text": text} for line, text in state.warnings],
            "line_count": self.line_count,
            "reversed_order": self.reversed_order,
        }


def _newest_first(head: list[str], tail: list[str]) -> bool:
    """A cloud-logging export (every line `SEVERITY RFC3339 ...`) whose first stamp is later than its last."""
    first = next((c for c in map(cloud_prefix, head[:50]) if c is not None), None)
    last = next((c for c in map(cloud_prefix, reversed(tail[-50:])) if c is not None), None)
    if first is None or last is None:
        return False
    a, b = parse_seconds(first[0]), parse_seconds(last[0])
    return a is not None and b is not None and a > b


def classify_text(text: str) -> LogAnalysis:
    """Classify a whole log held in memory (tests, pasted text): the same path as a streamed file."""
    lines = text.split("\n", 60)[:50]
    tail = text[-_PROBE:].split("\n")
    if tail and tail[-1] == "":
        tail.pop()
    classifier = LogClassifier()
    if _newest_first(lines, tail):
        body = text[1:] if text.startswith("\ufeff") else text
        all_lines = body.split("\n")
        if all_lines and all_lines[-1] == "":
            all_lines.pop()
        count = len(all_lines)
        classifier.feed_numbered(((i + 1, all_lines[i]) for i in range(count - 1, -1, -1)), count)
        classifier.finish()
        return classifier.analysis(reversed_order=True)
    classifier.feed(text)
    classifier.finish()
    return classifier.analysis()


def classify_file(stream: IO[bytes]) -> LogAnalysis:
    """Classify a log from a binary stream in bounded memory (undecodable bytes replaced)."""
    if not _seekable(stream):
        with tempfile.TemporaryFile() as spool:
            while block := stream.read(BLOCK):
                spool.write(block)
            spool.seek(0)
            return classify_file(spool)
    size = stream.seek(0, os.SEEK_END)
    stream.seek(0)
    head = stream.read(_PROBE).decode("utf-8", errors="replace").split("\n")[:50]
    stream.seek(max(0, size - _PROBE))
    tail = stream.read(_PROBE).decode("utf-8", errors="replace").split("\n")
    if tail and tail[-1] == "":
        tail.pop()
    stream.seek(0)
    classifier = LogClassifier()
    if _newest_first(head, tail):
        count = _count_lines(stream, size)
        classifier.feed_numbered(_backwards(stream, size, count), count)
        classifier.finish()
        return classifier.analysis(reversed_order=True)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while block := stream.read(BLOCK):
        classifier.feed(decoder.decode(block))
    classifier.feed(decoder.decode(b"", final=True))
    classifier.finish()
    return classifier.analysis()


def _seekable(stream: IO[bytes]) -> bool:
    try:
        return stream.seekable()
    except (AttributeError, OSError, ValueError):
        return False


def _count_lines(stream: IO[bytes], size: int) -> int:
    stream.seek(0)
    count = 0
    last = b""
    while block := stream.read(BLOCK):
        count += block.count(b"\n")
        last = block[-1:]
    return count + (1 if size and last != b"\n" else 0)


def _backwards(stream: IO[bytes], size: int, count: int) -> Iterator[tuple[int, str]]:
    """(line number, line) from the last line to the first, reading blocks from the end of the file."""
    pos = size
    rest = b""
    n = count
    first = True
    while pos > 0:
        step = min(BLOCK, pos)
        pos -= step
        stream.seek(pos)
        data = stream.read(step) + rest
        parts = data.split(b"\n")
        rest = parts[0]
        lines = parts[1:]
        if first:
            first = False
            if lines and lines[-1] == b"":
                lines.pop()  # the file's final newline
            elif not lines and rest == b"":
                continue
        for raw in reversed(lines):
            yield n, raw.decode("utf-8", errors="replace")
            n -= 1
    if first and rest.endswith(b"\n"):
        rest = rest[:-1]
    if rest or n >= 1:
        text = rest.decode("utf-8", errors="replace")
        yield n, text[1:] if text.startswith("\ufeff") else text
