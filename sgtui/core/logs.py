"""Streaming SGLang log classifier: log text in, milestones / progress / failure events out.

`LogClassifier.feed(chunk)` takes text as it arrives (partial lines buffered, tqdm `\\r` rewrites and ANSI
colours handled, collector prefixes such as docker compose's or journald's removed) and keeps a
`StartupState`; `classify_text(text)` does a whole file, including cloud-logging exports written newest
first and pasted logs that end inside the traceback that killed the launch (`end_of_log`). Work per line
is bounded: lines are capped before any regex sees them, and the lines a running server prints most
("Decode batch", HTTP access) are skipped after a few substring tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sgtui.core import log_rules as rules
from sgtui.core.log_prefix import (
    LINE_CAP,
    SERVER_ARGS_CAP,
    cloud_prefix,
    collector_prefix,
    last_segment,
    split_prefix,
    strip_ansi,
)
from sgtui.core.log_state import (
    ERROR_CLASSES,
    MILESTONE_KINDS,
    MILESTONE_PHASE,
    PHASE_LABELS,
    PHASES,
    STOPPED,
    ErrorInfo,
    LogEvent,
    Milestone,
    Signal,
    StartupState,
    parse_seconds,
)

__all__ = [
    "ERROR_CLASSES",
    "MILESTONE_KINDS",
    "PHASES",
    "PHASE_LABELS",
    "ErrorInfo",
    "LogAnalysis",
    "LogClassifier",
    "LogEvent",
    "Milestone",
    "StartupState",
    "classify_text",
]

# Fact sources, weakest first: a pasted command line, an error message quoting a value, the server_args dump,
# what the runtime measured, and the scheduler's final summary.
_FROM_COMMAND, _FROM_ERROR, _FROM_ARGS, _FROM_RUNTIME, _FROM_SUMMARY = range(5)

ANSWERED = "answered_after_uvicorn"  # a note: a POST got 200 after Uvicorn started (ready without the line)
TRACE_CUT = "traceback_cut"  # a note: the log ends inside a traceback, before its exception line
NEW_STYLE = "sglang_0_5_23_style"  # a note: the log uses 0.5.23-era wordings (flag names differ there)
_PARTIAL_CAP = 1 << 20  # an unterminated line longer than this is cut (binary blobs, runaway progress bars)
_MAX_SIGNALS = 400
_MAX_WARNINGS = 50
_DRAFT_TYPES = ("NextN", "Eagle", "EAGLE", "MTP", "Draft", "draft")
_PROGRESS_NEEDLES = ("checkpoint shards", "Capturing batches", "%|")


class LogClassifier:
    """Feed it log text chunk by chunk; read `state` (or the events `feed` returns) for what it means."""

    def __init__(self) -> None:
        self.state = StartupState()
        self.line_count = 0
        self._buf = ""
        self._buf_overflow = False
        self._order = 0
        self._hint: str | None = None
        self._fact_source: dict[str, tuple[int, bool]] = {}
        self._ranks: tuple[str, ...] = ()
        self._open_trace: tuple[int, str | None] | None = None  # a traceback no later milestone outlived
        self._last_milestone_line = 0
        self._last_generic: tuple[int, str | None] | None = None
        self._batches_seen = False
        self._last_message_line = 0  # the last line that said what went wrong (not just that something died)
        self._last_record_line = 0
        self._after_frame = False  # the line after `File "..."` is that frame's source code, not a message
        self._last_frame = ""
        self._last_source = ""
        self._trace_frames = 0  # frames of the open traceback, and whether one is SGLang's own code
        self._trace_in_sglang = False
        self._load_ends: dict[str, int] = {}
        self._last_progress: tuple[Any, ...] | None = None
        self._awaiting_first_answer = False

    # ---- input -------------------------------------------------------------------------------------------

    def feed(self, text: str) -> list[LogEvent]:
        """Classify the complete lines in `text` (plus what was buffered); keep the unterminated tail."""
        events: list[LogEvent] = []
        if not text:
            return events
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

    def finish(self) -> list[LogEvent]:
        """Classify the last line when the log ends without a newline."""
        events: list[LogEvent] = []
        if self._buf:
            self.line_count += 1
            raw, self._buf = self._buf, ""
            self._handle(raw, self.line_count, events)
        return events

    def process_exited(self, returncode: int | None) -> list[LogEvent]:
        """The runner saw the process end: a non-zero code with no error in the log is still a failure."""
        events = self.finish()
        self.state.exited = True
        self.state.exit_code = returncode
        previous = self.state.phase
        stopped = STOPPED in self.state.notes
        if self.state.error is not None or (returncode not in (None, 0) and not stopped):
            self.state.phase = "failed"
        else:
            self.state.phase = "exited"
        if self.state.phase != previous:
            events.append(LogEvent(self.line_count, None, (), "phase", {"phase": self.state.phase}))
        return events

    def end_of_log(self, events: list[LogEvent] | None = None) -> list[LogEvent]:
        """A whole file ends here: a traceback or exception that nothing outlived (no later milestone, no
        ready) is how a pasted or cut log shows that the launch died, even with no death line after it."""
        out: list[LogEvent] = [] if events is None else events
        state = self.state
        trace = self._open_trace
        if (
            trace is not None
            and self._last_frame
            and self._last_message_line < trace[0]
            and trace[0] >= self._last_record_line
        ):
            state.notes.add(TRACE_CUT)  # "the child's traceback is right there, cut before its last line"
            state.facts.setdefault("last_traceback_frame", self._last_frame)
        if state.error is not None or "ready" in state.milestones or ANSWERED in state.notes:
            return out
        generic = self._last_generic
        if trace is not None and self._trace_frames and not self._trace_in_sglang:
            return out  # a library's own traceback (multiprocessing's resource tracker at exit, say)
        if trace is not None and trace[0] < self._last_record_line:
            return out  # SGLang went on logging after the traceback: it survived it
        if trace is not None:
            if self._last_message_line < trace[0]:
                text = "Traceback (most recent call last): the log ends before the exception's own line"
                values = {"cut": True, "last_frame": self._last_frame or None}
                self._signal((None, "generic", values), trace[0], trace[1], (), text, out)
            self._signal((None, "death", {"trailing": True}), trace[0], trace[1], (), "(end of log)", out)
        elif (
            generic is not None
            and generic[0] > self._last_milestone_line
            and generic[0] >= self._last_record_line
        ):
            self._signal((None, "death", {"trailing": True}), generic[0], generic[1], (), "(end of log)", out)
        return out

    def analysis(self, events: list[LogEvent] | None = None, reversed_order: bool = False) -> LogAnalysis:
        return LogAnalysis(self.state, self.line_count, events or [], reversed_order)

    def _keep_partial(self, data: str, events: list[LogEvent]) -> None:
        """Buffer an unterminated line; show tqdm progress from its last complete `\\r` segment right away."""
        if "\r" in data:
            head, _, tail = data.rpartition("\r")
            segment = last_segment(head)
            if segment and any(n in segment for n in _PROGRESS_NEEDLES):
                self._progress(strip_ansi(segment[:LINE_CAP]), self.line_count + 1, None, (), events)
            data = segment + "\r" + tail if segment else tail
        if len(data) > _PARTIAL_CAP:
            data = data[:_PARTIAL_CAP]
            self._buf_overflow = True
        self._buf = data

    # ---- one line ----------------------------------------------------------------------------------------

    def _handle(self, raw: str, n: int, events: list[LogEvent]) -> None:
        if len(raw) > LINE_CAP:
            raw = _cap(raw)
        if "Decode batch" in raw or "Prefill batch" in raw:
            # Per-step batch stats: the bulk of a serving log, never a milestone; the first one still says
            # the server runs batches (warm-up or requests), which a pasted tail may show nothing else of.
            if not self._batches_seen:
                self._batches_seen = True
                time = split_prefix(raw)[0]
                self._advance("serving", n, time, parse_seconds(time), events)
            return
        if "HTTP/1." in raw:
            if self._awaiting_first_answer and '" 200' in raw and "POST " in raw:
                self._first_answer(raw, n, events)
            return  # the access log: only its first answered POST after Uvicorn starts means anything
        if raw.endswith("\r"):
            raw = raw.rstrip("\r")
        if "\r" in raw:
            raw = last_segment(raw)
        if "\x1b" in raw:
            raw = strip_ansi(raw)
        if "][" in raw and ("it/s][" in raw or "s/it][" in raw):
            # a tqdm bar left unterminated, then a log record written onto the same line
            cut = max(raw.find("it/s]["), raw.find("s/it][")) + 5
            self._record(raw[:cut], n, events)
            raw = raw[cut:]
        self._record(raw, n, events)

    def _first_answer(self, raw: str, n: int, events: list[LogEvent]) -> None:
        """The server answered a request (the warm-up's or a client's): it serves, even in versions that
        never print "fired up and ready to roll"."""
        self._awaiting_first_answer = False
        if "ready" not in self.state.milestones:
            self.state.notes.add(ANSWERED)
            time, _, _ = split_prefix(raw)
            self._advance("ready", n, time, parse_seconds(time), events)

    def _record(self, line: str, n: int, events: list[LogEvent]) -> None:
        cloud_time = None
        for _ in range(3):  # collectors nest: compose's "name  | " around docker's RFC 3339 stamp, say
            first = line[:1]
            outer = None
            if first.isupper() or first.isdigit() or (first == "[" and line[11:12] == "T"):
                outer = cloud_prefix(line)
            if outer is None and first and (first.isalnum() or first in "([>"):
                outer = collector_prefix(line)
            if outer is None:
                break
            cloud_time, line = outer[0] or cloud_time, outer[1]
        time, ranks, body = split_prefix(line)
        body = body.rstrip()
        if not body:
            return
        if time is not None:
            self._last_record_line = n  # SGLang's own logger wrote this line: the process was alive
        if time is None:
            time = cloud_time
        if time is not None:
            self.state.last_time = time
        if ranks:
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
            self._comment(body)
            return
        if (first == " " or first == "F") and body.lstrip().startswith('File "'):
            hint = rules.frame_hint(body)
            if hint is not None:
                self._hint = hint
            self._after_frame = True
            self._last_frame = rules.frame_file(body)
            self._trace_frames += 1
            if "sglang/" in body and _SGLANG_FRAME.search(body):
                self._trace_in_sglang = True
            return
        if self._after_frame:
            self._after_frame = False
            if first == " ":
                self._last_source = body.strip()[:200]  # says what a bare `AssertionError` asserted
                return  # `raise RuntimeError(f"NCCL error: {e}")` quoted from the source is no NCCL error
        if first == " " and body.lstrip(" ^~") == "":
            return  # Python 3.11's ^^^^ markers under that source line
        if "SIGTERM received" in body or body.startswith("KeyboardInterrupt"):
            # "SIGTERM received. signum=15 ... Draining requests and shutting down..." (sgtui's own stop, a
            # container stop) or Ctrl+C: the tracebacks and deaths of the shutdown that follows are expected.
            self.state.notes.add(STOPPED)
            return
        if "Traceback (most recent call last)" in body:
            self._hint = None
            self._open_trace = (n, time)
            self._trace_frames = 0
            self._trace_in_sglang = False
        if self._milestone_line(body, n, time, ranks, events):
            return
        if any(needle in body for needle in _PROGRESS_NEEDLES):
            self._progress(body, n, time, ranks, events)
            return
        self._info_line(body, n, time, ranks, events)
        if "--" in body and rules.looks_like_command(body) and "usage:" not in body and "[--" not in body:
            self._facts(rules.parse_command_flags(body), _FROM_COMMAND)
        found = rules.failure(body)
        if found is not None:
            self._signal(found, n, time, ranks, body, events)

    def _comment(self, body: str) -> None:
        """`# ...` lines: a pasted command or a note; only flags and a draft's weight size are read."""
        if "--" in body:
            self._facts(rules.parse_command_flags(body), _FROM_COMMAND)
        if "draft" in body and "mem usage=" in body:
            m = rules.DRAFT_MEM.search(body)
            if m:
                self._fact("draft_weight_mem_gib", rules.num(m.group(1)), _FROM_ARGS)

    # ---- milestones --------------------------------------------------------------------------------------

    def _milestone_line(
        self, body: str, n: int, time: str | None, ranks: tuple[str, ...], events: list[LogEvent]
    ) -> bool:
        if "server_args=" in body[:200] or "=ServerArgs(" in body[:200]:
            facts = rules.parse_server_args(body)
            self._facts(facts, _FROM_ARGS)
            self._milestone("server_args", n, time, ranks, {}, body, events)
            return True
        if "Init torch distributed" in body or "Memory baseline taken" in body or "Init nccl begin" in body:
            if body.startswith("Memory baseline taken"):
                self.state.notes.add(NEW_STYLE)
            values: dict[str, Any] = {}
            m = rules.MEM_USAGE.search(body)
            if m:
                values["mem_usage_gib"] = rules.num(m.group(1))
                self._fact("distributed_init_mem_gib", values["mem_usage_gib"], _FROM_RUNTIME)
            self._milestone("init_torch_distributed", n, time, ranks, values, body, events)
            return True
        if "oad weight begin" in body:  # "Load weight begin. avail mem=..."; 0.1.x "load weight begin."
            m = rules.LOAD_BEGIN.search(body)
            values = {"avail_gib": rules.num(m.group(1))} if m else {}
            if m and not self._is_draft_load(ranks, peek=True):
                self._fact("load_weight_begin_avail_gib", values["avail_gib"], _FROM_RUNTIME)
            self._milestone("load_weight_begin", n, time, ranks, values, body, events)
            return True
        if "oad weight end" in body:
            values = rules.parse_load_end(body)
            if not values and not body.lower().startswith("load weight end"):  # 0.1.x: "Load weight ends."
                return False
            if self._is_draft_load(ranks, model_type=values.get("type")):
                self._fact("draft_weight_mem_gib", values.get("mem_usage_gib"), _FROM_RUNTIME)
                self._fact("draft_model_class", values.get("type"), _FROM_RUNTIME)
            else:
                self._fact("weight_mem_gib", values.get("mem_usage_gib"), _FROM_RUNTIME)
                self._fact("avail_mem_after_weights_gib", values.get("avail_gib"), _FROM_RUNTIME)
                self._fact("model_class", values.get("type"), _FROM_RUNTIME)
                self._fact("dtype", values.get("dtype"), _FROM_RUNTIME)
                self._fact("quantization_loaded", values.get("quant"), _FROM_RUNTIME)
                self._fact("weight_load_s", values.get("elapsed_s"), _FROM_RUNTIME)
            self._milestone("load_weight_end", n, time, ranks, values, body, events)
            return True
        if "KV Cache" in body:
            m = rules.KV_CACHE.search(body)
            if m is None:
                return False
            label, dtype, tokens, k_size, v_size, kv_size = m.groups()
            values: dict[str, Any] = {"tokens": int(tokens)} if tokens else {}
            if label:
                values["label"] = label
            if dtype:
                values["dtype"] = dtype
            if k_size is not None:
                values["k_size_gib"] = rules.num(k_size)
                values["v_size_gib"] = rules.num(v_size)
            else:
                values["kv_size_gib"] = rules.num(kv_size)
            if label == "SWA":
                self._fact("swa_kv_tokens", values.get("tokens"), _FROM_RUNTIME)
            else:
                self._fact("kv_tokens", values.get("tokens"), _FROM_RUNTIME)
                self._fact("k_size_gib", values.get("k_size_gib"), _FROM_RUNTIME)
                self._fact("v_size_gib", values.get("v_size_gib"), _FROM_RUNTIME)
                self._fact("kv_size_gib", values.get("kv_size_gib"), _FROM_RUNTIME)
                self._fact("kv_cache_dtype", dtype, _FROM_RUNTIME)
            self._milestone("kv_cache_allocated", n, time, ranks, values, body, events)
            return True
        if body.startswith("SWAKVPool "):
            # "SWAKVPool mem usage: 79.94 GB, swa size: 798276, full size: 997846" (0.5.9+): both pools at
            # once; kv_tokens stays what the first KV line said (0.5.9 logs the sliding-window pool first).
            m = rules.SWA_KV_POOL.search(body)
            if m is not None:
                self._fact("kv_pool_gib", rules.num(m.group(1)), _FROM_RUNTIME)
                self._fact("swa_kv_tokens", int(m.group(2)), _FROM_RUNTIME)
                self._fact("full_kv_tokens", int(m.group(3)), _FROM_RUNTIME)
            return True
        if "Post-capture KV sizing: KV cache allocated" in body:
            m = rules.POST_CAPTURE_KV.search(body)
            if m is not None:  # the real pool, replacing the upper bound the KV line gave
                self._fact("kv_tokens", int(m.group(2)), _FROM_SUMMARY)
                self._fact("kv_size_gib", rules.num(m.group(3)), _FROM_SUMMARY)
                for upper_bound in ("k_size_gib", "v_size_gib"):
                    self.state.facts.pop(upper_bound, None)
            return True
        if "Mamba Cache is allocated" in body:
            m = rules.MAMBA.search(body)
            if m is None:
                return False
            size, conv, ssm, inter_ssm, inter_conv = m.groups()
            values = {
                "max_mamba_cache_size": int(size),
                "conv_state_gib": rules.num(conv),
                "ssm_state_gib": rules.num(ssm),
            }
            self._fact("mamba_cache_size", int(size), _FROM_RUNTIME)
            self._fact("mamba_conv_state_gib", values["conv_state_gib"], _FROM_RUNTIME)
            self._fact("mamba_ssm_state_gib", values["ssm_state_gib"], _FROM_RUNTIME)
            if inter_ssm is not None:
                values["intermediate_ssm_gib"] = rules.num(inter_ssm)
                values["intermediate_conv_gib"] = rules.num(inter_conv)
                self._fact("mamba_intermediate_ssm_gib", values["intermediate_ssm_gib"], _FROM_RUNTIME)
                self._fact("mamba_intermediate_conv_gib", values["intermediate_conv_gib"], _FROM_RUNTIME)
            self._milestone("mamba_cache_allocated", n, time, ranks, values, body, events)
            return True
        if "sliding window memory pool" in body:
            m = rules.SWA_POOL.search(body)
            if m is None:
                return False
            all_swa, full, swa = m.groups()
            values = {"swa_layer_tokens": int(swa), "all_swa": bool(all_swa)}
            if full:
                values["full_layer_tokens"] = int(full)
                self._fact("swa_full_layer_tokens", int(full), _FROM_RUNTIME)
            self._fact("swa_layer_tokens", int(swa), _FROM_RUNTIME)
            self._milestone("swa_pool", n, time, ranks, values, body, events)
            return True
        if "Memory pool end" in body:
            m = rules.AVAIL.search(body)
            values = {"avail_gib": rules.num(m.group(1))} if m else {}
            if m:
                self._fact("memory_pool_end_avail_gib", values["avail_gib"], _FROM_RUNTIME)
            self._milestone("memory_pool_end", n, time, ranks, values, body, events)
            return True
        if "graph begin" in body and "Capture" in body:
            if "Capture target " in body:  # 0.5.23 names each capture target/draft; 0.5.9 does not
                self.state.notes.add(NEW_STYLE)
            values = rules.parse_graph_line(body)
            self._fact("cuda_graph_begin_avail_gib", values.get("avail_gib"), _FROM_RUNTIME)
            self._milestone("cuda_graph_begin", n, time, ranks, values, body, events)
            return True
        if "graph end" in body and "Capture" in body:
            values = rules.parse_graph_line(body)
            self._fact("cuda_graph_mem_gib", values.get("mem_usage_gib"), _FROM_RUNTIME)
            self._fact("cuda_graph_end_avail_gib", values.get("avail_gib"), _FROM_RUNTIME)
            self._milestone("cuda_graph_end", n, time, ranks, values, body, events)
            return True
        if "Capture cuda graph bs" in body:
            m = rules.GRAPH_BS.search(body)
            if m:
                sizes = [int(x) for x in m.group(1).replace(",", " ").split()]
                self._fact("cuda_graph_batch_sizes", len(sizes), _FROM_RUNTIME)
                self._fact("cuda_graph_max_bs_captured", max(sizes, default=None), _FROM_RUNTIME)
            return True
        if body.startswith(("max_total_num_token", "Max_total_num_token")):  # 0.1.x: "Max_total_num_token="
            values = rules.parse_summary(body)
            if "max_total_num_tokens" not in values:
                return False
            self._facts(values, _FROM_SUMMARY)
            self._milestone("max_total_num_tokens", n, time, ranks, values, body, events)
            return True
        if "Uvicorn running on" in body:
            m = rules.UVICORN.search(body)
            values = (
                {"scheme": m.group(1) or "http", "host": m.group(2), "port": int(m.group(3))} if m else {}
            )
            if m:
                self._fact("uvicorn_address", f"{values['host']}:{values['port']}", _FROM_RUNTIME)
            self._milestone("uvicorn_running", n, time, ranks, values, body, events)
            self._awaiting_first_answer = "ready" not in self.state.milestones
            return True
        if "fired up and ready to roll" in body:
            self._milestone("ready", n, time, ranks, {}, body, events)
            return True
        return False

    def _is_draft_load(
        self, ranks: tuple[str, ...], model_type: str | None = None, peek: bool = False
    ) -> bool:
        """The second weight load on a rank (or a NextN/EAGLE/MTP class) is the speculative draft model."""
        key = " ".join(ranks)
        count = self._load_ends.get(key, 0)
        if peek:
            return count >= 1
        self._load_ends[key] = count + 1
        return count >= 1 or (model_type is not None and any(t in model_type for t in _DRAFT_TYPES))

    def _milestone(
        self,
        kind: str,
        n: int,
        time: str | None,
        ranks: tuple[str, ...],
        values: dict[str, Any],
        body: str,
        events: list[LogEvent],
    ) -> None:
        rank = " ".join(ranks) or None
        self._open_trace = None
        self._last_milestone_line = n
        milestone = self.state.milestones.get(kind)
        if milestone is None:
            seconds = parse_seconds(time)
            milestone = Milestone(kind, n, time, seconds, rank, values)
            self.state.milestones[kind] = milestone
            events.append(LogEvent(n, time, ranks, kind, values, body[:300]))
            self._advance(MILESTONE_PHASE[kind], n, time, seconds, events)
        if rank:
            milestone.ranks.add(rank)

    def _advance(
        self, phase: str, n: int, time: str | None, seconds: float | None, events: list[LogEvent]
    ) -> None:
        state = self.state
        index, current = PHASES.index(phase), PHASES.index(state.reached)
        if index >= current and seconds is not None and phase not in state.phase_start:
            state.phase_start[phase] = seconds
        if index <= current:
            return
        state.reached = phase
        if state.phase not in ("failed", "exited"):
            state.phase = phase
            events.append(LogEvent(n, time, (), "phase", {"phase": phase}))

    # ---- progress and facts ------------------------------------------------------------------------------

    def _progress(
        self, body: str, n: int, time: str | None, ranks: tuple[str, ...], events: list[LogEvent]
    ) -> None:
        if "checkpoint shards" in body or "loading shards" in body:
            what, phase = "weights", "loading_weights"
        elif "Capturing batches" in body or self.state.reached == "capturing_graphs":
            what, phase = "graphs", "capturing_graphs"
        else:
            return
        parsed = rules.parse_progress(body)
        values: dict[str, Any] = {"what": what}
        if parsed is not None:
            values["percent"], values["done"], values["total"] = parsed
        if what == "graphs":
            m = rules.CAPTURING.search(body)
            if m and m.group(1):
                values["bs"] = int(m.group(1))
            if m and m.group(2):
                values["avail_gib"] = rules.num(m.group(2))
        if len(values) == 1:
            return
        key = tuple(values.items())
        if key == self._last_progress:
            return
        self._last_progress = key
        self.state.progress[phase] = values
        events.append(LogEvent(n, time, ranks, "progress", values, body[:200]))

    def _info_line(
        self, body: str, n: int, time: str | None, ranks: tuple[str, ...], events: list[LogEvent]
    ) -> None:
        """Lines that carry a number or a note but mark no milestone."""
        if "minimum viable" in body:
            m = rules.MIN_VIABLE.search(body)
            if m:
                value = rules.num(m.group(1))
                known = self.state.facts.get("min_viable_mem_fraction_static")
                if known is None:
                    self._fact("min_viable_mem_fraction_static", value, _FROM_RUNTIME)
                elif known != value:
                    self._fact("min_viable_mem_fraction_static_mtp", value, _FROM_RUNTIME)
        if "Raise --mem-fraction-static above" in body:
            m = rules.RAISE_ABOVE.search(body)
            if m:
                self._fact("raise_mem_fraction_static_above", rules.num(m.group(1)), _FROM_RUNTIME)
        if "/dev/shm" in body or "shared memory segment" in body:
            self.state.notes.add("nccl_shm")
        if "Using KV cache dtype" in body:
            m = rules.KV_CACHE_DTYPE.search(body)
            if m:
                self._fact("kv_cache_dtype", m.group(1), _FROM_RUNTIME)
        elif "Max running requests is reset to" in body:
            m = rules.MRR_RESET.search(body)
            if m:
                self._fact("max_running_requests", int(m.group(1)), _FROM_RUNTIME)
                self.state.notes.add("speculative_mrr_reset")
        elif "is capped to" in body and "mamba" in body:
            m = rules.MRR_CAPPED.search(body)
            if m:
                self._fact("max_running_requests_capped_by_mamba", int(m.group(1)), _FROM_RUNTIME)
        elif "reduce --mem-fraction-static to" in body:
            m = rules.MFS_REDUCED.search(body)
            if m:
                self._fact("mem_fraction_static_effective", rules.num(m.group(1)), _FROM_RUNTIME)
        elif "Disabling radix cache since speculative" in body:
            self.state.notes.add("radix_disabled_for_speculative")
        elif "fewer than --context-length" in body or "is larger than the profiled value" in body:
            self._warn(n, body)
            m = rules.PROFILED.search(body)
            if m:
                # "max_total_tokens=131072 is larger than the profiled value -561981": a negative profile
                # means the weights left the pools nothing; the launch dies of it unless it still comes up.
                self._fact("profiled_max_total_num_tokens", int(m.group(1)), _FROM_RUNTIME)
                if int(m.group(1)) <= 0:
                    found = ("not_enough_memory", "weak", {"profiled": int(m.group(1))})
                    self._signal(found, n, time, ranks, body, events)

    def _warn(self, n: int, body: str) -> None:
        """Keep a warning once: every rank prints the same one."""
        text = body[:300]
        warnings = self.state.warnings
        if len(warnings) < _MAX_WARNINGS and all(text != known for _, known in warnings[-8:]):
            warnings.append((n, text))

    def _fact(self, name: str, value: Any, source: int) -> None:
        if value is None:
            return
        # Rank 0's figure wins over another rank's from the same kind of line: SGLang sizes from it and its
        # summary comes from it, whatever order the ranks' lines interleave in.
        rank = (source, _is_rank_zero(self._ranks))
        known = self._fact_source.get(name)
        if known is None or rank > known:
            self.state.facts[name] = value
            self._fact_source[name] = rank

    def _facts(self, facts: dict[str, Any], source: int) -> None:
        for name, value in facts.items():
            self._fact(name, value, source)

    # ---- failures ----------------------------------------------------------------------------------------

    def _signal(
        self,
        found: tuple[str | None, str, dict[str, Any]],
        n: int,
        time: str | None,
        ranks: tuple[str, ...],
        body: str,
        events: list[LogEvent],
    ) -> None:
        error_class, strength, values = found
        state = self.state
        if STOPPED in state.notes and strength in ("death", "generic", "weak"):
            return  # the shutdown someone asked for
        if strength == "generic":
            self._last_generic = (n, time)
            if not values.get("message") and self._last_source:  # a bare "AssertionError"
                values = {**values, "source": self._last_source, "frame": self._last_frame or None}
        if strength != "death":
            self._last_message_line = n
        phase = self._hint if self._hint in PHASES else state.reached
        if strength == "generic":
            if phase == "capturing_graphs":
                error_class = "cuda_graph_failed"
            elif self._hint == "arguments" or _names_a_flag_conflict(values.get("message", "")):
                error_class = "incompatible_flags"
        if error_class == "not_enough_memory" and "mem_fraction_static" in values:
            self._fact("mem_fraction_static", values["mem_fraction_static"], _FROM_ERROR)
        if len(state.signals) >= _MAX_SIGNALS and (
            strength in ("generic", "death", "weak")
            or any(s.error_class == error_class for s in state.signals)
        ):
            return
        self._order += 1
        text = body[:1000]
        state.signals.append(Signal(error_class, strength, n, self._order, text, phase, time, values))
        events.append(
            LogEvent(
                n, time, ranks, "error", {"error_class": error_class, "strength": strength, **values}, text
            )
        )
        if state.phase != "failed" and state.error is not None:
            state.phase = "failed"
            events.append(LogEvent(n, time, ranks, "phase", {"phase": "failed"}))


# A frame in SGLang's own code (not merely under a conda env that happens to be called "sglang").
_SGLANG_FRAME = re.compile(r"(?:-packages|python|\.\.\.)/sglang/|sglang/srt/")

_CONFLICT_WORDS = (
    "incompatible with",
    "not compatible with",
    "cannot be used with",
    "cannot be used together",
    "not supported with",
    "cannot be enabled together",
    "mutually exclusive",
)


def _names_a_flag_conflict(message: str) -> bool:
    """SGLang's argument checks raise plain ValueErrors ("--x is incompatible with speculative decoding
    (--speculative-algorithm EAGLE)"); a frameless paste of one still names a flag and a conflict."""
    return "--" in message and any(word in message for word in _CONFLICT_WORDS)


def _is_rank_zero(ranks: tuple[str, ...]) -> bool:
    """True for a line of rank 0 in every dimension ("TP0", "DP0 TP0 EP0", "gpu=0") or of no rank at all."""
    for tag in ranks:
        digits = tag[len(tag.rstrip("0123456789")) :]
        if digits and int(digits) != 0:
            return False
    return True


def _cap(raw: str) -> str:
    """Bound a long line: keep the last `\\r` segment of a progress bar, a server_args dump's useful part."""
    if "\r" in raw[-LINE_CAP:]:
        raw = last_segment(raw)
    if raw.find("server_args=", 0, 256) >= 0 or raw.find("ServerArgs(", 0, 256) >= 0:
        return raw[:SERVER_ARGS_CAP]
    return raw[:LINE_CAP]


@dataclass
class LogAnalysis:
    """A whole log's verdict: state, line count, events, and whether it was written newest-first."""

    state: StartupState
    line_count: int
    events: list[LogEvent] = field(default_factory=list)
    reversed_order: bool = False

    @property
    def error(self) -> ErrorInfo | None:
        return self.state.error

    @property
    def facts(self) -> dict[str, Any]:
        return self.state.facts

    @property
    def milestones(self) -> list[Milestone]:
        return self.state.milestone_list()

    @property
    def outcome(self) -> str:
        """ready | failed | starting (a launch is visible, not finished) | unknown (no launch start seen)."""
        if self.state.error is not None:
            return "failed"
        if self.state.exited and self.state.exit_code not in (None, 0) and STOPPED not in self.state.notes:
            return "failed"
        if "ready" in self.state.milestones or ANSWERED in self.state.notes:
            return "ready"
        if "server_args" in self.state.milestones and not self.state.exited:
            return "starting"
        return "unknown"

    def to_json(self) -> dict[str, Any]:
        """The `sgtui explain --json` keys except `diagnosis` (see DESIGN.md)."""
        error = self.state.error
        return {
            "outcome": self.outcome,
            "error_class": error.error_class if error else None,
            "error_line": error.line if error else None,
            "error": error.to_json() if error else None,
            "phase": self.state.phase,
            "reached": self.state.reached,
            "milestones": [m.to_json() for m in self.milestones],
            "ranks_reached": {m.kind: sorted(m.ranks) for m in self.milestones},
            "durations": self.state.durations(),
            "progress": self.state.progress,
            "facts": dict(self.state.facts),
            "warnings": [{"line": line, "text": text} for line, text in self.state.warnings],
            "line_count": self.line_count,
            "reversed_order": self.reversed_order,
        }


def _newest_first(lines: list[str]) -> bool:
    """A cloud-logging export (every line `SEVERITY RFC3339 ...`) whose first stamp is later than its last."""
    head = next((c for c in map(cloud_prefix, lines[:50]) if c is not None), None)
    tail = next((c for c in map(cloud_prefix, reversed(lines[-50:])) if c is not None), None)
    if head is None or tail is None:
        return False
    first, last = parse_seconds(head[0]), parse_seconds(tail[0])
    return first is not None and last is not None and first > last


def classify_text(text: str) -> LogAnalysis:
    """Classify a whole log. Newest-first exports are read oldest-first, keeping the file's line numbers."""
    classifier = LogClassifier()
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark from an editor that saved the paste
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    events: list[LogEvent] = []
    newest_first = _newest_first(lines)
    order = range(len(lines) - 1, -1, -1) if newest_first else range(len(lines))
    for index in order:
        classifier._handle(lines[index], index + 1, events)
    classifier.line_count = len(lines)
    classifier.end_of_log(events)
    return classifier.analysis(events, newest_first)
