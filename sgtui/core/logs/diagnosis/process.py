"""Process diagnoses: killed by the OOM killer, a child that died without its error, a stalled phase."""

from __future__ import annotations

from sgtui.core.logs.diagnosis.common import (
    Context,
    Diagnosis,
    Suggestion,
    phase_words,
)
from sgtui.core.logs.state import TRACE_CUT


def oom_killed(ctx: Context) -> Diagnosis:
    detail = (
        f"A process was killed with SIGKILL while {phase_words(ctx.phase)}, and no Python error explains "
        "it: this is the host's OOM killer (host RAM, not GPU memory), or someone ran kill -9."
    )
    suggestions = [
        Suggestion(None, None, "Confirm on the host: `dmesg -T | grep -i -E 'oom|killed process'`."),
        Suggestion(
            None,
            None,
            "Give the host (or the LXC/Docker container) more RAM or swap, or stop other "
            "memory-hungry processes; weight loading peaks in host RAM.",
        ),
    ]
    if ctx.facts.get("enable_hierarchical_cache") is True:
        suggestions.append(
            Suggestion(
                "--enable-hierarchical-cache",
                "false",
                "Drop the hierarchical cache: its host-memory KV pool takes RAM; fewer prefixes stay cached.",
            )
        )
    return Diagnosis("Killed by the host's OOM killer", detail, suggestions, "oom_killed")


def child_failed(ctx: Context) -> Diagnosis:
    values = ctx.error.values
    if values.get("peer_failed"):
        detail = (
            f"This rank waited for its peers while {phase_words(ctx.phase)}, and another rank never "
            f"finished (line {ctx.error.line}). That rank's own error is not in this log: with several nodes "
            "it is in the other node's log, otherwise further up (an OOM, a missing file, a slow disk)."
        )
        suggestions = [
            Suggestion(None, None, "Read the other ranks' logs (every node's) for the first traceback."),
            Suggestion(None, None, "Check each host for OOM kills: `dmesg -T | grep -i oom`."),
        ]
        return Diagnosis("Another rank failed", detail, suggestions, "child_failed")
    detail = (
        f"A child process died while {phase_words(ctx.phase)} (line {ctx.error.line}: "
        f"{ctx.error.text.strip()[:160]}), but its error is not in this log."
    )
    if TRACE_CUT in ctx.analysis.state.notes:
        frame = ctx.facts.get("last_traceback_frame")
        where = f" (the last frame shown is in {frame})" if frame else ""
        detail += (
            f" Its traceback is here but the log ends inside it{where}, before the line that names the error."
        )
    suggestions = [
        Suggestion(None, None, "Read the whole log, not its tail: the child's traceback may be far above."),
        Suggestion("--log-level", "debug", "More detail from each rank on the next launch."),
        Suggestion(None, None, "Check the host for OOM kills: `dmesg -T | grep -i oom`."),
    ]
    return Diagnosis("A child process failed", detail, suggestions, "child_failed")


def stalled(ctx: Context) -> Diagnosis:
    return Diagnosis("stalled", ctx.error.text, [], "stalled")
