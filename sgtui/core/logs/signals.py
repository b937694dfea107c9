"""The failure signals a log shows, in order, and what the end-of-log rules need: the last line that said
what went wrong, the last exception of no known class, a fatal signal whose stack dump may follow."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sgtui.core.logs.chains import merge_chain
from sgtui.core.logs.facts import FROM_ERROR, FactStore
from sgtui.core.logs.failures import failure, names_a_flag_conflict
from sgtui.core.logs.prefix import LINE_CAP
from sgtui.core.logs.state import ANSWERED, PHASES, STOPPED, TRACE_CUT, LogEvent, Signal, StartupState
from sgtui.core.logs.traceback import TraceTracker, exception_line

MAX_SIGNALS = 400
_TRACE_REACH = 400  # lines after a traceback's start in which its frames still say where a failure was
# Python's words between the tracebacks of one exception chain (traceback.py's _CONTEXT_MESSAGE and
# _CAUSE_MESSAGE): the exception printed after them is the one that propagated, those before are context.
CHAIN_MARKERS = (
    "During handling of the above exception, another exception occurred",
    "The above exception was the direct cause of the following exception",
)
# The step a class's own message names, whatever the log showed before it (a pasted tail has no milestone and
# no frame): SGLang raises "Not enough memory" while sizing the memory pools (model_runner's
# profile_max_num_token / init_memory_pool) and "Capture cuda graph failed" from a graph runner's __init__.
_STEP_OF_CLASS = {
    "not_enough_memory": "allocating_pools",
    "cuda_graph_failed": "capturing_graphs",
    "memory_unbalanced": "distributed_init",  # the last check of ModelRunner.init_torch_distributed
}
# A record of another logger with no SGLang prefix: Python's bare `logging` format ("INFO: ...", uvicorn's
# "INFO:     ...") or vLLM-style "INFO 02-17 02:35:21 ...": never the text of an exception's message.
_LEVEL_RECORD = re.compile(r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)(?::| +\d\d-\d\d )")
_NOT_ARGUMENT_CHECKS = (
    "KeyError",
    "IndexError",
    "TypeError",
    "AttributeError",
    "OSError",
    "FileNotFoundError",
    "ImportError",
    "ModuleNotFoundError",
)
# a startup record printed bare after a message (a graph runner's next capture, a progress bar): not its text
_NEXT_STEP = ("Capture ", "Capturing batches", "Load weight", "KV Cache", "Memory pool", "Init torch")
_MESSAGE_LINES = 16  # lines of an exception's message printed after its first line that are joined to it
_MESSAGE_CHARS = 2000


class FailureLog:
    """Records `Signal`s into the state with the phase they happened in (frames first, then milestones)."""

    def __init__(
        self,
        state: StartupState,
        trace: TraceTracker,
        store: FactStore,
        last_batch: Callable[[], tuple[int, str] | None] = lambda: None,
    ) -> None:
        self.state = state
        self.trace = trace
        self.store = store
        self.order = 0
        self.last_generic: tuple[int, str | None] | None = None
        self.last_message_line = 0  # the last line that said what went wrong (not just that something died)
        self.last_batch = last_batch  # the last "Prefill batch" line seen (number, text), if any
        self.crash: int | None = None  # index of a signal whose stack dump or traceback follows it
        self.paused_crash: int | None = None  # that signal while faulthandler prints other threads' stacks
        self.trace_end: int | None = None  # index of the signal an exception line ending a traceback gave
        self.chained: int | None = None  # that signal, once Python said another exception follows from it
        self.while_handling = False  # Python's words were "During handling ...", not "... the direct cause"
        self.message_of: int | None = None  # the signal whose message may go on over the next lines
        # the last failed health check (line, time, ranks, text): a hang if nothing ran after it
        self.unhealthy: tuple[int, str | None, tuple[str, ...], str] | None = None
        # NCCL's first init error chain (line, time, ranks, text, values): fatal if nothing came after it
        self.comm_failed: tuple[int, str | None, tuple[str, ...], str, dict[str, Any]] | None = None
        self._message_lines = 0
        self._blank_lines = 0
        self.absorbed_line = 0  # a line continue_message joined that is a signal of the same class itself
        self.warmup_trace: int | None = None  # the line of a failed warm-up's header whose traceback follows

    def signal(
        self,
        found: tuple[str | None, str, dict[str, Any]],
        n: int,
        time: str | None,
        ranks: tuple[str, ...],
        body: str,
        events: list[LogEvent],
        ends_trace: bool = False,
    ) -> None:
        """Record one signal; `ends_trace`: the line ends a traceback (it names the exception raised)."""
        error_class, strength, values = found
        state, trace = self.state, self.trace
        if values.get("health_check"):
            self.unhealthy = (n, time, ranks, body)  # a hang only if nothing ran after it (at_end)
            return
        if values.get("init_chain") and self.comm_failed is None:
            self.comm_failed = (n, time, ranks, body, values)  # fatal if the launch went no further (at_end)
        if n == self.absorbed_line:
            return  # joined to the message it continues (continue_message)
        if STOPPED in state.notes and (
            strength in ("death", "generic", "weak") or values.get("crash") or error_class == "nccl"
        ):
            return  # the shutdown someone asked for (its peers and store go away with it)
        if strength == "generic":
            self.last_generic = (n, time)
            if not values.get("message") and trace.last_source:  # a bare "AssertionError"
                values = {**values, "source": trace.last_source, "frame": trace.last_frame or None}
            if trace.frames and self._in_trace(n):
                values = {**values, "at_import": trace.importing}
        if (
            "Assertion `" in body
            and values.get("cuda_fault") == "device_assert"
            and any(s.values.get("cuda_fault") == "device_assert" for s in state.signals[-1:])
        ):
            return  # ATen prints the failed assertion once per GPU thread: the first line says it
        if strength != "death" or values.get("cuda_fault"):
            self.last_message_line = n  # a CUDA fault's own line says what went wrong, as an exception does
        phase = _at_least(self.phase_now(n, ranks), _step_of(error_class, values))
        if "ready" not in state.milestones and (values.get("warmup") or self._in_warmup(n)):
            phase = "serving"  # the warm-up request: before the server says ready, whatever traffic showed
            if values.get("warmup") and trace.started == n:
                self.warmup_trace = n  # "Initialization failed. warmup error: Traceback ...": its frames
        if values.get("during_batch") and phase == "starting" and not state.milestones:
            phase = "running"  # a batch in flight, in a tail that shows no startup step

        if strength == "generic":
            if phase == "capturing_graphs" and not self._beside_capture(n):
                error_class = "cuda_graph_failed"
            elif self._argument_check(values) or names_a_flag_conflict(values.get("message", "")):
                error_class = "incompatible_flags"
        batch = self.last_batch() if error_class == "cuda_oom" and phase in ("running", "serving") else None
        if batch is not None:
            values = {**values, "last_batch": batch_values(*batch)}
        if error_class == "not_enough_memory" and "mem_fraction_static" in values:
            self.store.set("mem_fraction_static", values["mem_fraction_static"], FROM_ERROR)
        if len(state.signals) >= MAX_SIGNALS and (
            strength in ("generic", "death", "weak")
            or any(s.error_class == error_class for s in state.signals)
        ):
            return
        self.order += 1
        text = body[:1000]
        if time is None and self._in_trace(n):
            time = trace.started_time  # an exception line has no prefix: its record's time
        rank = " ".join(ranks) or None
        if rank is None and self._in_trace(n):
            rank = trace.rank  # the record the traceback is part of ("[... TP3] Scheduler hit an exception")
        if rank is None and isinstance(values.get("failed_rank"), int):
            rank = f"rank{values['failed_rank']}"  # torch's "[Rank 4] Watchdog caught ..."
        state.signals.append(Signal(error_class, strength, n, self.order, text, phase, time, values, rank))
        index = len(state.signals) - 1
        # an exception's own line: it ends a traceback, or Python printed it with no traceback of its own (a
        # chain's earlier exceptions raised outside any frame: "httpcore.ConnectError: ..." then "The above
        # exception was the direct cause ...")
        named = ends_trace or "exception" in values or exception_line(body, in_traceback=False) is not None
        if named and self.chained is not None and self.chained < index:
            index = self._merge_chain(self.chained, index)
        self.chained = None
        self.trace_end = index if named else None
        self.message_of = index if named and strength != "death" else None
        self._message_lines = self._blank_lines = 0
        if values.get("crash"):
            self.crash = index
            trace.start(n, time, ignored=False)  # faulthandler's stack dump follows: its frames say where
            trace.rank = rank
        elif trace.started == n and not trace.frames:
            # "Scheduler hit an exception: Traceback (most recent call last):" (scheduler.py logs the
            # traceback after its header): the frames below say where it was, as a stack dump's do
            self.crash = index
        events.append(
            LogEvent(
                n, time, ranks, "error", {"error_class": error_class, "strength": strength, **values}, text
            )
        )
        if state.phase != "failed" and state.error is not None:
            state.phase = "failed"
            events.append(LogEvent(n, time, ranks, "phase", {"phase": "failed"}))

    def chain_marker(self, marker: str = "") -> None:
        """ "During handling of the above exception, ..." / "The above exception was the direct cause ...":
        the exception of the traceback that follows replaces the one just seen as the event to quote."""
        self.chained = self.trace_end
        self.while_handling = marker.startswith(CHAIN_MARKERS[0])
        self.trace_end = None
        self.message_of = None

    def _merge_chain(self, first: int, last: int) -> int:
        merge_chain(self.state, first, last, self.while_handling)
        if self.crash == last:
            self.crash = first
        return first

    def continue_message(self, body: str, time: str | None, ranks: tuple[str, ...], n: int = 0) -> bool:
        """A line after an exception's own line that carries on its message (`ImportError:` then the text on
        the next lines, a message with line breaks): joined to the quoted text (True). A logged record, a
        traceback, a line that is a signal of its own, two blank lines or the cap end the message."""
        index = self.message_of
        if index is None or index >= len(self.state.signals):
            self.message_of = None
            return False
        stripped = body.strip()
        if not stripped:
            self._blank_lines += 1
            if self._blank_lines >= 2:
                self.message_of = None
            return False
        self._blank_lines = 0
        if (
            time is not None
            or ranks
            or self._message_lines >= _MESSAGE_LINES
            or stripped.startswith(('File "', "Traceback (most recent call last)", "# ", *CHAIN_MARKERS))
            or _LEVEL_RECORD.match(stripped) is not None
            or stripped.startswith(_NEXT_STEP)
        ):
            self.message_of = None
            return False
        signal = self.state.signals[index]
        found = failure(stripped)
        absorbed = found is not None and found[0] is not None and found[0] == signal.error_class
        if found is not None and (found[0] is not None or found[1] == "death") and not absorbed:
            self.message_of = None  # a failure of its own, not this message's text
            return False
        if len(signal.text) >= _MESSAGE_CHARS:
            self.message_of = None
            return False
        self._message_lines += 1
        sep = "" if signal.text.endswith(" ") else " "
        text = (signal.text + sep + stripped)[:_MESSAGE_CHARS]
        values = signal.values
        if absorbed and found is not None:
            # the same error's message wrapped over lines ("... under\n--mem-fraction-static=0.94. Raise
            # ..."): one error, its values from every line; the line's own signal is not recorded again
            self.absorbed_line = n
            values = {**found[2], **values}
            if "mem_fraction_static" in found[2]:
                self.store.set("mem_fraction_static", found[2]["mem_fraction_static"], FROM_ERROR)
        if "message" in values:
            message = values["message"]
            values = {**values, "message": (message + " " + stripped if message else stripped)[:300]}
        self.state.signals[index] = replace(signal, text=text, values=values)
        self.state.invalidate()
        return True

    def _in_warmup(self, n: int) -> bool:
        return self.warmup_trace is not None and self.trace.started == self.warmup_trace and self._in_trace(n)

    def _argument_check(self, values: dict[str, Any]) -> bool:
        """SGLang's argument code raised it: a check of the flags (ValueError, an assert). Not a traceback cut
        before its exception line (its last frame is not where it was raised), nor a lookup error: the
        argument code also reads the model's config (server_args._handle_gpu_memory_settings ->
        get_model_config), where a KeyError or an IndexError is about the checkpoint."""
        return (
            self.trace.raised_in_args
            and not values.get("cut")
            and values.get("exception") not in _NOT_ARGUMENT_CHECKS
        )

    def _beside_capture(self, n: int) -> bool:
        """The traceback shows the graph-capture step (`init_cuda_graphs`) but no graph runner's frame: the
        eager runner or an all-reduce workspace set up there failed (a feature the GPU lacks), no capture."""
        return self._in_trace(n) and self.trace.hint == "capturing_graphs" and not self.trace.graph_runner

    def _in_trace(self, n: int) -> bool:
        """The traceback read last still speaks for line `n`: it is near, or nothing marked progress since it
        began (a torch.compile or Triton traceback runs to hundreds of frames)."""
        trace = self.trace
        return bool(trace.frames) and (n - trace.started <= _TRACE_REACH or trace.open is not None)

    def phase_now(self, n: int, ranks: tuple[str, ...] = ()) -> str:
        """The phase a failure seen at line `n` happened in: the frames of the traceback just before it first
        (other ranks' milestones may interleave with its lines), then the milestones of its own rank, or, for
        a line of no known rank, of the slowest rank (the others wait on it: a launch fails where its last
        rank is); after ready, the server was serving requests."""
        state = self.state
        if self._in_trace(n):
            from_frames = self.trace.phase()
            weak = self.trace.hint_weak and from_frames == self.trace.hint
            if from_frames is not None and not (
                weak and PHASES.index(from_frames) < PHASES.index(state.reached)
            ):
                return from_frames  # (a helper's or a layer's frame never takes the phase back)
        reached = state.slowest
        own = state.rank_phase.get(" ".join(ranks)) if ranks else None
        if own is not None and own > PHASES.index(reached):
            reached = PHASES[own]
        return "running" if reached == "ready" else reached

    def update_crash_phase(self) -> None:
        """faulthandler's stack dump or a logged traceback came after the signal line: its frames say which
        phase it was."""
        index = self.crash
        phase = self.trace.phase()
        if index is None or phase is None or index >= len(self.state.signals):
            return
        signal = self.state.signals[index]
        if signal.phase != phase:
            self.state.signals[index] = replace(signal, phase=phase)
            self.state.invalidate()

    def at_end(
        self, last_record_line: int, last_milestone_line: int, out: list[LogEvent], last_activity: int = 0
    ) -> None:
        """The end-of-log rules: a traceback or exception that nothing outlived (no later milestone, no
        ready, no later SGLang record) is how a cut or pasted log shows that the launch died; a failed health
        check that no batch or answered request followed (`last_activity`) is a server that hung."""
        state, trace = self.state, self.trace
        hung = self.unhealthy
        if (
            hung is not None
            and hung[0] >= last_activity
            and hung[0] > last_milestone_line
            and state.error is None
        ):
            self.unhealthy = None
            n, time, ranks, body = hung
            self.signal(("stalled", "fatal", {"unhealthy": True}), n, time, ranks, body, out)
        failed = self.comm_failed
        if failed is not None and failed[0] > last_milestone_line and state.error is None:
            # NCCL's error chain out of ncclCommInitRank and nothing after it: the communicator was not made
            self.comm_failed = None
            n, time, ranks, body, values = failed
            self.signal(("nccl", "fatal", {**values, "init_chain": False}), n, time, ranks, body, out)
        opened = trace.open
        if (
            opened is not None
            and trace.last_frame
            and self.last_message_line < opened[0]
            and opened[0] >= last_record_line
        ):
            state.notes.add(TRACE_CUT)  # "the child's traceback is right there, cut before its last line"
            state.facts.setdefault("last_traceback_frame", trace.last_frame)
        if state.error is not None or "ready" in state.milestones or ANSWERED in state.notes:
            return
        if opened is not None and (trace.ignored or trace.exit_noise):
            return  # "Exception ignored in ..." or multiprocessing's resource tracker at exit
        if opened is not None and opened[0] < last_record_line:
            return  # SGLang went on logging after the traceback: it survived it
        generic = self.last_generic
        if opened is not None:
            if self.last_message_line < opened[0]:
                text = "Traceback (most recent call last): the log ends before the exception's own line"
                values = {"cut": True, "last_frame": trace.last_frame or None}
                self.signal((None, "generic", values), opened[0], opened[1], (), text, out)
            self.signal((None, "death", {"trailing": True}), opened[0], opened[1], (), "(end of log)", out)
        elif generic is not None and generic[0] > last_milestone_line and generic[0] >= last_record_line:
            self.signal((None, "death", {"trailing": True}), generic[0], generic[1], (), "(end of log)", out)


def _step_of(error_class: str | None, values: dict[str, Any]) -> str | None:
    """The startup step a failure's own words place it in (None: they do not say)."""
    if values.get("comm_init"):
        return "distributed_init"  # NCCL connecting its communicators' peers
    if values.get("warmup"):
        return "serving"  # the warm-up request goes out once the HTTP server is up
    if values.get("after_weights"):
        return "loading_weights"  # load_model's barrier once this rank's weights were in: a peer was not
    if error_class == "nccl" and not values.get("watchdog"):
        return "distributed_init"  # no NCCL before its communicators (a collective's timeout: any time)
    return _STEP_OF_CLASS.get(error_class or "")


def _at_least(phase: str, step: str | None) -> str:
    """`phase`, moved forward to `step` when the failure's own words place it later (never backwards)."""
    if step is None or phase not in PHASES or PHASES.index(phase) >= PHASES.index(step):
        return phase
    return step


_BATCH_NUMBERS = re.compile(r"#(new-token|cached-token|running-req|queue-req|new-seq): (\d+)")


def batch_values(line: int, raw: str) -> dict[str, Any]:
    """`Prefill batch, #new-seq: 1, #new-token: 8192, ...` -> {"line", "new_tokens", "cached_tokens", ...}."""
    names = {
        "new-token": "new_tokens",
        "cached-token": "cached_tokens",
        "running-req": "running_requests",
        "queue-req": "queued_requests",
        "new-seq": "new_sequences",
    }
    values: dict[str, Any] = {"line": line, "kind": "prefill" if "Prefill batch" in raw else "decode"}
    for key, number in _BATCH_NUMBERS.findall(raw[:LINE_CAP]):
        values[names[key]] = int(number)
    return values
