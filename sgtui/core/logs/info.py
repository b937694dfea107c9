"""Lines that carry a number or a note but mark no milestone: progress bars, `# ...` comments, warnings that
quote the memory SGLang profiled, the fraction it would need, the request limits it reset."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sgtui.core.logs import rules
from sgtui.core.logs.facts import FROM_ARGS, FROM_COMMAND, FROM_RUNTIME
from sgtui.core.logs.server_args import parse_command_flags
from sgtui.core.logs.state import PHASES, LogEvent, parse_seconds

if TYPE_CHECKING:
    from sgtui.core.logs.classifier import LogClassifier


def comment(c: LogClassifier, body: str) -> None:
    """`# ...` lines: a pasted command or a note; only flags and a draft's weight size are read."""
    if "--" in body:
        c.facts(parse_command_flags(body), FROM_COMMAND)
    if "draft" in body and "mem usage=" in body:
        m = rules.DRAFT_MEM.search(body)
        if m:
            c.fact("draft_weight_mem_gib", rules.num(m.group(1)), FROM_ARGS)


def progress(
    c: LogClassifier, body: str, n: int, time: str | None, ranks: tuple[str, ...], events: list[LogEvent]
) -> None:
    if "checkpoint shards" in body or "loading shards" in body:
        what, phase = "weights", "loading_weights"
    elif "Capturing batches" in body or c.state.reached == "capturing_graphs":
        what, phase = "graphs", "capturing_graphs"
    else:
        c.stall.progressed(c.state)  # another bar (a download, say) moved: the launch is not stuck
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
    phases = c.phases
    if PHASES.index(c.state.reached) < PHASES.index(phase):
        # a bar of weights or graphs moving: that step has begun, whatever milestone the log left out
        phases.advance(phase, n, time, parse_seconds(time), events, everyone=not ranks)
    if key == phases.last_progress:
        return
    phases.last_progress = key
    phases.progress(phase, values, LogEvent(n, time, ranks, "progress", values, body[:200]), events)


def info_line(
    c: LogClassifier, body: str, n: int, time: str | None, ranks: tuple[str, ...], events: list[LogEvent]
) -> None:
    """Lines that carry a number or a note but mark no milestone."""
    if "minimum viable" in body:
        m = rules.MIN_VIABLE.search(body)
        if m:
            value = rules.num(m.group(1))
            known = c.state.facts.get("min_viable_mem_fraction_static")
            if known is None:
                c.fact("min_viable_mem_fraction_static", value, FROM_RUNTIME)
            elif known != value:
                c.fact("min_viable_mem_fraction_static_mtp", value, FROM_RUNTIME)
    if "Raise --mem-fraction-static above" in body:
        m = rules.RAISE_ABOVE.search(body)
        if m:
            c.fact("raise_mem_fraction_static_above", rules.num(m.group(1)), FROM_RUNTIME)
    if "falling back to Transformers" in body:
        m = rules.TRANSFORMERS_FALLBACK.search(body)
        if m:  # the model runs through SGLang's generic Transformers backend, not its own implementation
            c.fact("transformers_fallback", m.group(1), FROM_RUNTIME)
    if "/dev/shm" in body or "shared memory segment" in body:
        c.state.notes.add("nccl_shm")
    if "Using KV cache dtype" in body:
        m = rules.KV_CACHE_DTYPE.search(body)
        if m:
            c.fact("kv_cache_dtype", m.group(1), FROM_RUNTIME)
    elif "Max running requests is reset to" in body:
        m = rules.MRR_RESET.search(body)
        if m:
            c.fact("max_running_requests", int(m.group(1)), FROM_RUNTIME)
            c.state.notes.add("speculative_mrr_reset")
    elif "is capped to" in body and "mamba" in body:
        m = rules.MRR_CAPPED.search(body)
        if m:
            c.fact("max_running_requests_capped_by_mamba", int(m.group(1)), FROM_RUNTIME)
    elif "reduce --mem-fraction-static to" in body:
        m = rules.MFS_REDUCED.search(body)
        if m:
            c.fact("mem_fraction_static_effective", rules.num(m.group(1)), FROM_RUNTIME)
    elif "Disabling radix cache since speculative" in body:
        c.state.notes.add("radix_disabled_for_speculative")
    elif "fewer than --context-length" in body or "is larger than the profiled value" in body:
        c.phases.warn(n, body)
        m = rules.PROFILED.search(body)
        if m:
            # "max_total_tokens=131072 is larger than the profiled value -561981": a negative profile
            # means the weights left the pools nothing; the launch dies of it unless it still comes up.
            c.fact("profiled_max_total_num_tokens", int(m.group(1)), FROM_RUNTIME)
            asked = rules.MAX_TOTAL_ASKED.search(body)
            if asked:  # the run's --max-total-tokens, when no server_args dump said it
                c.fact("max_total_tokens_arg", int(asked.group(1)), FROM_RUNTIME)
            if int(m.group(1)) <= 0:
                found = ("not_enough_memory", "weak", {"profiled": int(m.group(1))})
                c.failures.signal(found, n, time, ranks, body, events)
