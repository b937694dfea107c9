"""Stalls: a startup phase that makes no progress for far longer than it should take.

Each phase has an expected duration, scaled by what the log has said so far: the model's size (its weights
or the size in its name) and TP for weight loading, the measured time per checkpoint shard or per captured
batch size once those bars move, the number of CUDA graph batch sizes, torch.compile, several nodes. "No
progress" means no milestone, no rank reaching one, and no progress bar moving. A stall is reported once (a
`stalled` event and `state.stall`), and any progress clears it: it is not a failure until someone decides.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sgtui.core.logs.ranks import lag_words, lagging_ranks, node_of, progress_by_rank
from sgtui.core.logs.state import ANSWERED, MILESTONE_KINDS, PHASE_LABELS, ErrorInfo, LogEvent, StartupState

# A healthy launch's time in each phase before scaling, in seconds. Where each comes from:
# - starting: imports, tokenizer and config take 10-60 s in the real logs (../shared/logs, the real CPU
#   server's 0.5.23 logs: 21-45 s to ready); a model download prints a moving bar (progress).
# - distributed_init: NCCL/Gloo rendezvous and communicator setup, seconds on one node; PyTorch's own
#   process-group timeout is 600 s for NCCL (torch.distributed's default_pg_nccl_timeout).
# - loading_weights: 120 s plus the model's bytes at DISK_GB_S ("Load weight end. elapsed=..." in the real
#   logs: 1-120 s for 1-140 GB from local disks).
# - capturing_graphs: 30 s plus GRAPH_S_PER_BS per batch size SGLang captures ("Capture cuda graph bs [...]";
#   "Capture cuda graph end. Time elapsed: 7.2 s" for 23 sizes in ../shared/logs; 1-7 min for large MoE
#   models with 160+ sizes); speculative decoding captures the draft's graphs too; torch.compile compiles
#   each size first (SGLang warns that it "can take up to several minutes").
BASE_S = {
    "starting": 120.0,
    "distributed_init": 60.0,
    "loading_weights": 120.0,
    "allocating_pools": 60.0,
    "capturing_graphs": 30.0,
    "serving": 120.0,  # the HTTP server is up; the warm-up request is on its way
}
STALL_FACTOR = 4.0  # "far past": this many times the expected time without any progress
MIN_LIMIT_S = 120.0
DISK_GB_S = 0.5  # weights read at 500 MB/s: a slow network disk is slower, a local NVMe much faster
GRAPH_S_PER_BS = 0.5
COMPILE_FACTOR = 4.0  # torch.compile before each captured size
_PARAMS_IN_NAME = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)[bB](?![a-zA-Z])")


def expected_seconds(phase: str, state: StartupState) -> tuple[float, str]:
    """(seconds a healthy launch would spend in `phase` with no progress, what that figure rests on)."""
    facts = state.facts
    tp = _int(facts.get("tp_size")) or 1
    nodes = _int(facts.get("nnodes")) or 1
    base = BASE_S.get(phase, 120.0)
    if phase == "distributed_init":
        return base * (1 + tp / 8) * (2 if nodes > 1 else 1), f"TP {tp}, {nodes} node(s)"
    if phase == "starting":
        return base * (2 if nodes > 1 else 1), f"{nodes} node(s)"
    if phase == "allocating_pools":
        return base * (1 + tp / 8), f"TP {tp}"
    if phase == "loading_weights":
        return _loading(state, base, tp)
    if phase == "capturing_graphs":
        return _capturing(state, base)
    return base, "the usual time"


def _loading(state: StartupState, base: float, tp: int) -> tuple[float, str]:
    bar = state.progress.get("loading_weights") or {}
    per_shard = _per_step(state, "loading_weights", bar)
    if per_shard is not None:
        return max(30.0, per_shard), f"{per_shard:.0f} s per checkpoint shard so far"
    facts = state.facts
    per_gpu = facts.get("weight_mem_gib")
    if isinstance(per_gpu, int | float):
        total_gb = float(per_gpu) * tp
        basis = f"{total_gb:.0f} GB of weights"
    else:
        m = _PARAMS_IN_NAME.search(str(facts.get("model_path") or ""))
        total_gb = float(m.group(1)) * 2 if m else 0.0
        basis = (
            f"about {total_gb:.0f} GB of weights (from the model's name)" if m else "an unknown model size"
        )
    seconds = base + total_gb / DISK_GB_S
    if isinstance(facts.get("cpu_offload_gb"), int | float) and facts["cpu_offload_gb"]:
        seconds *= 2
        basis += ", CPU offload"
    return seconds, basis


def _capturing(state: StartupState, base: float) -> tuple[float, str]:
    """The whole capture's time from the batch sizes it captures; once the bar moves, twice the time per size
    so far, never more than the whole capture (the first size also pays for kernel JIT and autotuning)."""
    bar = state.progress.get("capturing_graphs") or {}
    factor = COMPILE_FACTOR if state.facts.get("enable_torch_compile") is True else 1.0
    count = _int(state.facts.get("cuda_graph_batch_sizes")) or _int(bar.get("total")) or 36
    speculative = state.facts.get("speculative_algorithm") not in (None, "None", "")
    whole = (base + count * GRAPH_S_PER_BS * (2 if speculative else 1)) * factor
    basis = (
        f"{count} batch sizes"
        + (", speculative" if speculative else "")
        + (", torch.compile" if factor > 1 else "")
    )
    per_bs = _per_step(state, "capturing_graphs", bar)
    if per_bs is not None:
        return max(30.0, min(per_bs * 2, whole)), f"{per_bs:.1f} s per batch size so far ({basis})"
    return whole, basis


def _per_step(state: StartupState, phase: str, bar: dict[str, Any]) -> float | None:
    """Seconds per bar step so far, from the log's own times (None before the bar has moved, and once it is
    full: what follows a full bar has no steps to time; after the checkpoint shards SGLang still runs each
    module's `quant_method.process_weights_after_loading`, sglang/srt/model_loader/loader.py
    `load_weights_and_postprocess`, minutes for a large FP8 model on ROCm, with no bar)."""
    done = bar.get("done")
    start = state.phase_start.get(phase)
    now = state.last_seconds
    if not isinstance(done, int) or done <= 0 or start is None or now is None or now <= start:
        return None
    total = bar.get("total")
    if isinstance(total, int) and done >= total:
        return None
    return (now - start) / done


class StallWatch:
    """Keeps the clock time of the last progress; `check(state, ...)` says when the wait is far too long."""

    def __init__(self, clock: Callable[[], float] | None, stall_after: float | None = None) -> None:
        self.clock = clock
        self.stall_after = stall_after
        self.last = clock() if clock is not None else None
        self.log_progress: str | None = None  # the log's own time of the last progress (for gaps.py)

    def progressed(self, state: StartupState, values: dict[str, Any] | None = None) -> None:
        self.log_progress = state.last_time
        if self.clock is None:
            return
        self.last = self.clock()
        if state.stall is not None:
            state.stall = None  # it moves again

    def entered(self, phase: str, state: StartupState) -> None:
        self.progressed(state)

    def limit(self, phase: str, state: StartupState) -> tuple[float, float, str]:
        """(seconds without progress that make a stall, the expected time, its basis)."""
        expected, basis = expected_seconds(phase, state)
        if self.stall_after is not None:
            return self.stall_after, expected, "--stall-after"
        return max(MIN_LIMIT_S, expected * STALL_FACTOR), expected, basis

    def check(self, state: StartupState, line: int, now: float | None) -> LogEvent | None:
        if self.last is None or state.stall is not None:
            return None
        if now is None:
            now = self.clock() if self.clock is not None else None
            if now is None:
                return None
        if state.reached == "ready" or ANSWERED in state.notes or state.exited or state.error is not None:
            return None
        phase = state.slowest  # the slowest rank's phase: the others wait on it (phases.py)
        idle = now - self.last
        limit, expected, basis = self.limit(phase, state)
        if idle <= limit:
            return None
        values = stall_values(state, phase, idle, expected, limit, basis)
        words = phase_words(state, phase)
        text = f"no progress for {idle:.0f} s while {words} (expected about {expected:.0f} s: {basis})"
        state.stall = ErrorInfo("stalled", line, text, phase, state.last_time, values)
        return LogEvent(line, state.last_time, (), "stalled", values, text)


def stall_values(
    state: StartupState, phase: str, idle: float, expected: float, limit: float, basis: str
) -> dict[str, Any]:
    last = max(state.milestones, key=MILESTONE_KINDS.index, default=None)
    reached, behind = progress_by_rank(state, (last,) if last else ())
    values: dict[str, Any] = {
        "phase": phase,
        "idle_s": round(idle, 1),
        "expected_s": round(expected, 1),
        "limit_s": round(limit, 1),
        "basis": basis,
        "last_milestone": last,
        "ranks_reached": reached,
        "ranks_behind": behind,
    }
    nodes_reached = sorted({n for n in (node_of(r, state.facts) for r in reached) if n is not None})
    nodes_behind = sorted({n for n in (node_of(r, state.facts) for r in behind) if n is not None})
    if nodes_reached or nodes_behind:
        values["nodes_reached"] = nodes_reached
        values["nodes_behind"] = nodes_behind
    lagging = lagging_ranks(state)
    if lagging:
        values["lagging_ranks"] = lagging  # still in `phase` while the others are in `reached`
        values["reached"] = state.reached
    return values


def phase_words(state: StartupState, phase: str) -> str:
    """The phase in words: "loading weights", or with ranks lagging "loading weights (TP0, TP7 still loading
    weights, the others allocating pools)"."""
    label = PHASE_LABELS.get(phase, phase)
    lag = lag_words(state) if phase == state.slowest else ""
    return f"{label} ({lag})" if lag else label


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
