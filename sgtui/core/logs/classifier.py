"""Streaming SGLang log classifier: log text in, milestones / progress / failure / stall events out.

The one analysis path (the TUI, `sgtui explain` and `sgtui launch --watch` all use exactly this):

    c = LogClassifier(clock=time.monotonic)   # clock only where stalls are watched live
    c.feed(chunk)            # per chunk, as it arrives (partial lines buffered)
    c.process_exited(rc)     # when the process ended (a runner saw it)
    c.finish()               # at the end of the log: the end-of-log rules (a trailing traceback is a death)
    c.check_stall(now)       # periodically: a `stalled` event, or None
    a = c.analysis(); diagnose(a, fit)

Work per line is bounded: lines are capped before any regex sees them, and the lines a running server prints
most ("Decode batch", HTTP access) are skipped after a few substring tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from sgtui.core.logs.facts import FROM_COMMAND, FactStore
from sgtui.core.logs.failures import failure, termed_child
from sgtui.core.logs.gaps import GapWatch
from sgtui.core.logs.info import comment, info_line, progress
from sgtui.core.logs.milestones import milestone_line
from sgtui.core.logs.phases import PhaseLog
from sgtui.core.logs.prefilter import may_matter
from sgtui.core.logs.prefix import (
    LINE_CAP,
    cap_line,
    indented_prefix,
    last_segment,
    peel_collectors,
    split_prefix,
    strip_ansi,
)
from sgtui.core.logs.server_args import ArgsDump, looks_like_command, parse_command_flags
from sgtui.core.logs.signals import CHAIN_MARKERS, FailureLog
from sgtui.core.logs.stall import StallWatch
from sgtui.core.logs.state import STOPPED, LogEvent, StartupState
from sgtui.core.logs.traceback import TraceTracker, exception_line
from sgtui.core.logs.traffic import busy_batch, first_answer, first_batch, first_decode, served_request

if TYPE_CHECKING:
    from sgtui.core.logs.analysis import LogAnalysis

_PARTIAL_CAP = 1 << 20  # an unterminated line longer than this is cut (binary blobs, runaway progress bars)
PROGRESS_NEEDLES = ("checkpoint shards", "loading shards", "Capturing batches", "%|")


class LogClassifier:
    """Feed it log text chunk by chunk; read `state` (or the events `feed` returns) for what it means."""

    def __init__(self, clock: Callable[[], float] | None = None, stall_after: float | None = None) -> None:
        self.state = StartupState()
        self.line_count = 0
        self.store = FactStore(self.state.facts, self.state.facts_per_rank)
        self.trace = TraceTracker()
        self.failures = FailureLog(self.state, self.trace, self.store, lambda: self.last_prefill)
        self.last_prefill: tuple[int, str] | None = None  # the last "Prefill batch" line (number, text)
        self.last_activity = 0  # the last batch or answered request: the server was doing work there
        self.stall = StallWatch(clock, stall_after)
        self.gaps = GapWatch(self.stall)
        self.phases = PhaseLog(self.state, self.stall, self.trace)  # milestones, phases, progress, warnings
        self.awaiting_first_answer = False
        self.load_ends: dict[str, int] = {}
        self.args: ArgsDump | None = None  # a server_args dump hard-wrapped over lines, still open
        self._buf = ""
        self._buf_overflow = False
        self._ranks: tuple[str, ...] = ()
        self._ranks_kept: tuple[str, ...] = ()
        self._in_message = False
        self.batches_seen = False
        self.decoding = False
        self._last_record_line = 0
        self._exception_ignored = False
        self._finished = False

    # ---- input -------------------------------------------------------------------------------------------

    def feed(self, text: str) -> list[LogEvent]:
        """Classify the complete lines in `text` (plus what was buffered); keep the unterminated tail."""
        events: list[LogEvent] = []
        if not text:
            return events
        if self.line_count == 0 and not self._buf and text.startswith("\ufeff"):
            text = text[1:]  # a byte-order mark from an editor that saved the paste
        data = self._buf + text if self._buf else text
        if "\n" not in data:
            self._keep_partial(data, events)
            return events
        lines = data.split("\n")
        tail = lines.pop()
        if self._buf_overflow:
            lines[0] = lines[0][:_PARTIAL_CAP]
            self._buf_overflow = False
        for raw in lines:
            self.line_count += 1
            self._handle(raw, self.line_count, events)
        self._buf = ""
        if tail:
            self._keep_partial(tail, events)
        return events

    def feed_numbered(self, lines: Iterable[tuple[int, str]], line_count: int) -> list[LogEvent]:
        """Whole lines with their numbers in the file, in the order to classify them (oldest first): how a
        newest-first export is read backwards while keeping its own line numbers."""
        events: list[LogEvent] = []
        for n, raw in lines:
            self._handle(raw, n, events)
        self.line_count = max(self.line_count, line_count)
        return events

    def finish(self) -> list[LogEvent]:
        """The log ends here: classify an unterminated last line, then the end-of-log rules (a traceback or
        exception that nothing outlived is how a cut or pasted log shows that the launch died)."""
        events: list[LogEvent] = []
        self._flush(events)
        if not self._finished:
            self._finished = True
            # an SGLang record after a failed health check says the server went on (a busy one misses a probe)
            activity = max(self.last_activity, self._last_record_line)
            self.failures.at_end(self._last_record_line, self.phases.last_milestone_line, events, activity)
            if not self.batches_seen:  # a server running batches is past its startup
                self.gaps.at_end(self.state, self.line_count)
        return events

    def process_exited(self, returncode: int | None) -> list[LogEvent]:
        """The runner saw the process end: a non-zero code with no error in the log is still a failure."""
        events: list[LogEvent] = []
        self._flush(events)
        state = self.state
        state.exited = True
        state.exit_code = returncode
        previous = state.phase
        stopped = STOPPED in state.notes
        if state.error is not None or (returncode not in (None, 0) and not stopped):
            state.phase = "failed"
        else:
            state.phase = "exited"
        if state.phase != previous:
            events.append(LogEvent(self.line_count, None, (), "phase", {"phase": state.phase}))
        return events

    def check_stall(self, now: float | None = None) -> LogEvent | None:
        """A `stalled` event the first time the current phase has made no progress for far longer than
        expected (see stall.py); None otherwise. Progress afterwards clears it."""
        return self.stall.check(self.state, self.line_count, now)

    def analysis(self, reversed_order: bool = False) -> LogAnalysis:
        from sgtui.core.logs.analysis import LogAnalysis

        return LogAnalysis(self.state, self.line_count, reversed_order)

    def _flush(self, events: list[LogEvent]) -> None:
        if self._buf:
            self.line_count += 1
            raw, self._buf = self._buf, ""
            self._handle(raw, self.line_count, events)
        if self.args is not None:
            self._close_args(events)

    def _keep_partial(self, data: str, events: list[LogEvent]) -> None:
        """Buffer an unterminated line; show tqdm progress from its last complete `\\r` segment right away."""
        if "\r" in data:
            head, _, tail = data.rpartition("\r")
            segment = last_segment(head)
            if segment and any(n in segment for n in PROGRESS_NEEDLES):
                progress(self, strip_ansi(segment[:LINE_CAP]), self.line_count + 1, None, (), events)
            data = segment + "\r" + tail if segment else tail
        if len(data) > _PARTIAL_CAP:
            data = data[:_PARTIAL_CAP]
            self._buf_overflow = True
        self._buf = data

    # ---- one line ----------------------------------------------------------------------------------------

    def _handle(self, raw: str, n: int, events: list[LogEvent]) -> None:
        if len(raw) > LINE_CAP:
            raw = cap_line(raw)
        # Per-step batch stats: the bulk of a serving log, never a milestone; the first one still says the
        # server runs batches (warm-up or requests), which a pasted tail may show nothing else of. The last
        # prefill is kept unparsed: it names the request a serving-time OOM hit.
        if "Decode batch" in raw:
            self.last_activity = n
            if not self.decoding:
                first_decode(self, raw, n, events)
            return
        if "Prefill batch" in raw:
            self.last_prefill = (n, raw)
            self.last_activity = n
            if not self.decoding and busy_batch(raw):
                first_decode(self, raw, n, events)
            elif not self.batches_seen:
                first_batch(self, raw, n, events)
            return
        if "#retracted_reqs" in raw and not self.decoding:
            # "KV cache pool is full. Retract requests. #retracted_reqs: N" (0.4.5+), "Decode out of memory
            # happened. #retracted_reqs" (to 0.4.x): printed only while requests decode
            first_decode(self, raw, n, events)
        if "HTTP/1." in raw:
            if '" 200' in raw:  # an answered request: only its first (POST) after Uvicorn starts means more
                self.last_activity = n
                if self.awaiting_first_answer and "POST " in raw:
                    first_answer(self, raw, n, events)
                elif not self.decoding and served_request(raw, self.state):
                    first_decode(self, raw, n, events)
            return  # the access log: only its first answered POST after Uvicorn starts means anything
        if raw.endswith("\r"):
            raw = raw.rstrip("\r")
        if "\r" in raw:
            raw = last_segment(raw)
        if "\x1b" in raw:
            raw = strip_ansi(raw)
        if "|" in raw and ("it/s]" in raw or "s/it]" in raw):
            # a tqdm bar left unterminated, then a log record written onto the same line ("...it/s][2025-...
            # TP0] Load weight end", "...it/s]Fatal Python error: Segmentation fault")
            cut = max(raw.rfind("it/s]"), raw.rfind("s/it]")) + 5
            if raw[cut:].strip():
                self._record(raw[:cut], n, events)
                raw = raw[cut:]
        self._record(raw, n, events)

    def _record(self, line: str, n: int, events: list[LogEvent]) -> None:
        first = line[:1]
        if first == " " or not first:
            # a traceback's frame or source line, an indented continuation: neither a collector's prefix
            # nor SGLang's (what peel_collectors and split_prefix return for it, without the two calls)
            cloud_time, time, ranks, body = None, None, (), line
            if first and line.find("[", 0, 12) >= 0:
                time, ranks, body = indented_prefix(line)  # a paste indented in a list item or a quote
        else:
            if first == "[" and line[11:12] != "T" and line[1:5] != "pod/":
                cloud_time = None  # SGLang's own `[date time TPn]` prefix: no collector in front of it
            else:
                cloud_time, line = peel_collectors(line)
            time, ranks, body = split_prefix(line)
        if self.args is not None and not self.args.add(body, time, ranks, cloud_time):
            self._close_args(events)
        elif self.args is not None:
            if self.args.closed:
                self._close_args(events)
            return
        body = body.rstrip()
        # a line of an exception's message: its words (a flag quoted in a sentence) are no command
        self._in_message = self.failures.message_of is not None and self.failures.continue_message(
            body, time, ranks, n
        )
        if not body:
            return
        if time is not None:
            self._last_record_line = n  # SGLang's own logger wrote this line: the process was alive
        if time is None:
            time = cloud_time
        if time is not None:
            if time != self.state.last_time and not time.startswith(self.gaps.minute):
                self.gaps.stamp(self.state, time, n, body)  # a new minute: a gap may have passed
            self.gaps.previous_line = n
            self.state.last_time = time
        if ranks and ranks is not self._ranks_kept:
            self._ranks_kept = ranks
            self.state.ranks_seen.add(" ".join(ranks))
        self._dispatch(body, n, time, ranks, events)

    def _dispatch(
        self, body: str, n: int, time: str | None, ranks: tuple[str, ...], events: list[LogEvent]
    ) -> None:
        self._ranks = ranks
        first = body[0]
        if (first == "R" or first == "F") and body.startswith(("Receive: obj=", "Finish: obj=")):
            return  # --log-requests: a client's prompt and output, which may say anything at all
        if first == "#":
            comment(self, body)
            return
        if (first in " FrTC" or self.trace.after_frame) and self._traceback_line(body, first, time):
            return
        tail, self.trace.tail = self.trace.tail, False
        if (first == "D" or first == "T") and body.startswith(CHAIN_MARKERS):
            self.failures.chain_marker(body)
            return
        if (
            "SIGTERM received" in body
            or body.startswith("KeyboardInterrupt")
            or "Gracefully exiting" in body
            or termed_child(body)
        ):
            # "SIGTERM received. signum=15 ... Draining requests and shutting down..." (sgtui's own stop, a
            # container stop), Ctrl+C, or a TERM sent to the whole process group ("Subprocess scheduler_0
            # (pid=N) crashed with exit code -15", sglang/srt/utils/watchdog.py), or the drain of a stop
            # ("Gracefully exiting... Remaining number of requests 0.", tokenizer_manager.sigterm_watchdog):
            # the tracebacks and deaths of the shutdown that follows are expected.
            self.state.notes.add(STOPPED)
            return
        if not tail and not may_matter(body, first):
            self._exception_ignored = False
            return  # no rule reads it (prefilter.py)
        if "Traceback (most recent call last)" in body:
            self.failures.crash = None  # a new traceback: an earlier signal's frames have ended
            self.trace.start(n, time, ignored=self._exception_ignored)
            self.trace.rank = " ".join(ranks) or None
        self._exception_ignored = body.startswith("Exception ignored")
        if milestone_line(self, body, n, time, ranks, events):
            return
        if any(needle in body for needle in PROGRESS_NEEDLES):
            progress(self, body, n, time, ranks, events)
            return
        info_line(self, body, n, time, ranks, events)
        # a pasted command, never an SGLang record: DeepGEMM's pre-compile warning quotes an example command
        # (`sglang.compile_deep_gemm --model deepseek-ai/DeepSeek-V3 --tp 8`) on every FP8 run
        if "--" in body and not self._in_message and self._last_record_line != n and _command(body):
            self.facts(parse_command_flags(body), FROM_COMMAND)
        found = failure(body)
        if found is None and tail:
            named = exception_line(body, in_traceback=True)  # any name that ends a traceback
            if named is not None:
                found = (None, "generic", {"exception": named[0], "message": named[1]})
        if found is not None:
            self.failures.signal(found, n, time, ranks, body, events, ends_trace=tail)

    def _traceback_line(self, body: str, first: str, time: str | None) -> bool:
        """Frames, their source lines and markers: where a traceback was, never what went wrong."""
        kind = self.trace.line(body, first, time)
        if (kind == "frame" or kind == "code") and self.failures.crash is not None:
            self.failures.update_crash_phase()
        elif kind == "current" and self.failures.crash is None:
            self.failures.crash = self.failures.paused_crash  # the crashing thread's stack follows
            return True
        elif kind == "thread":  # faulthandler's other threads: only the current thread's stack says where
            if self.failures.crash is not None:
                self.failures.paused_crash = self.failures.crash
            self.failures.crash = None
            return False
        return kind is not None

    def _close_args(self, events: list[LogEvent]) -> None:
        dump, self.args = self.args, None
        if dump is not None:
            self.facts(dump.facts(), dump.source)

    # ---- facts and the server_args dump (also used by milestones.py and info.py) ---------------------------

    def fact(self, name: str, value: Any, source: int) -> None:
        self.store.set(name, value, source, self._ranks)

    def facts(self, facts: dict[str, Any], source: int) -> None:
        self.store.update(facts, source, self._ranks)

    def open_args(self, dump: ArgsDump) -> None:
        self.args = dump


def _command(body: str) -> bool:
    """A launch command echoed or pasted into the log (not argparse's usage text, whose `[--flag X]` are
    placeholders)."""
    return looks_like_command(body) and "usage:" not in body and "[--" not in body
