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


_STALL_CAUSES: dict[str, list[Suggestion]] = {
    "starting": [
        Suggestion(
            None, None, "Check that every node's process started: a multi-node launch waits for all of them."
        ),
        Suggestion(
            "HF_HUB_OFFLINE",
            "1",
            "An environment variable, with the model downloaded beforehand: a hub lookup that hangs (proxy, "
            "firewall) stops the launch before anything is printed.",
        ),
    ],
    "distributed_init": [
        Suggestion(
            "NCCL_SOCKET_IFNAME",
            None,
            "An environment variable (set GLOO_SOCKET_IFNAME too): the network interface the nodes reach "
            "each "
            "other on; a wrong default (docker0, a VPN) hangs the rendezvous.",
        ),
        Suggestion(
            None,
            None,
            "Open the --dist-init-addr port (and NCCL's ports) in the firewall between the nodes; check "
            "every "
            "node can reach the first one.",
        ),
        Suggestion(
            "NCCL_P2P_DISABLE",
            "1",
            "An environment variable (NCCL_IB_DISABLE=1 for InfiniBand): broken peer-to-peer or IB settings "
            "hang NCCL's first collective; slower all-reduce.",
        ),
        Suggestion(None, None, "Run the same SGLang (and PyTorch/NCCL) version on every node."),
    ],
    "loading_weights": [
        Suggestion(
            None,
            None,
            "Slow or network storage: copy the model to a local NVMe disk and pass that folder as "
            "--model-path.",
        ),
        Suggestion(
            "--cpu-offload-gb", "0", "CPU offload reads and pins weights in host RAM: much slower loading."
        ),
        Suggestion(
            None, None, "Check host RAM and swap: weight loading that swaps crawls (`free -g`, `vmstat 1`)."
        ),
    ],
    "allocating_pools": [
        Suggestion(
            None,
            None,
            "Another process on the same GPUs, or one rank hung: every rank must finish its memory profile.",
        ),
    ],
    "capturing_graphs": [
        Suggestion(
            "--cuda-graph-max-bs",
            "16",
            "Capture fewer batch sizes: if capture then finishes, it was slow rather than hung.",
        ),
        Suggestion(
            "--disable-cuda-graph",
            None,
            "Start once without CUDA graphs to confirm the capture is what hangs; decoding is slower "
            "without them.",
        ),
    ],
    "serving": [
        Suggestion(
            "no_proxy",
            "localhost,127.0.0.1",
            "An environment variable: an HTTP proxy that catches the warm-up request to the server's own "
            "port "
            "leaves the launch waiting.",
        ),
    ],
}


def stalled(ctx: Context) -> Diagnosis:
    values = ctx.error.values
    phase = ctx.phase
    if "watchdog_timeout" in values:
        return _watchdog(ctx, values.get("watchdog_timeout"))
    if values.get("unhealthy"):
        return _unhealthy(ctx)
    lines = [
        f"The launch has made no progress for {values.get('idle_s', 0):.0f} s while {phase_words(phase)}."
    ]
    lines.append(
        f"A healthy launch takes about {values.get('expected_s', 0):.0f} s there ({values.get('basis')}); "
        f"sgtui "
        f"calls it stalled after {values.get('limit_s', 0):.0f} s. It is not dead: it may still finish."
    )
    last = values.get("last_milestone")
    reached, behind = values.get("ranks_reached") or [], values.get("ranks_behind") or []
    if last and behind:
        lines.append(f"Ranks past {last}: {', '.join(reached) or 'none'}; not past it: {', '.join(behind)}.")
    elif last and reached:
        lines.append(f"Every rank seen ({', '.join(reached)}) reached {last} and none went further.")
    if values.get("nodes_behind"):
        lines.append(f"Nodes behind: {', '.join(str(n) for n in values['nodes_behind'])}.")
    suggestions = list(_STALL_CAUSES.get(phase, []))
    return Diagnosis(f"Stalled while {phase_words(phase)}", " ".join(lines), suggestions, "stalled")


def _unhealthy(ctx: Context) -> Diagnosis:
    detail = (
        f"A health request got no token back for 20 s (line {ctx.error.line}: "
        f"{ctx.error.text.strip()[:200]}) and nothing ran after it: the scheduler or the detokenizer "
        f"stopped making progress while {phase_words(ctx.phase)} (SGLang marks itself unhealthy and "
        "answers 503). Usually a collective waits for a rank that hung, or a batch never finishes."
    )
    suggestions = [
        Suggestion(None, None, "Read every rank's (and node's) log for what it did last before this line."),
        Suggestion(
            None,
            None,
            "py-spy dump --pid <scheduler pid> shows where each rank's scheduler waits (sgtui's process list "
            "names the pids).",
        ),
        Suggestion("NCCL_DEBUG", "INFO", "An environment variable: NCCL says which collective it waits in."),
    ]
    return Diagnosis("The server stopped answering (health check failed)", detail, suggestions, "stalled")


def _watchdog(ctx: Context, timeout: float | None) -> Diagnosis:
    seconds = f"{timeout:g} s" if isinstance(timeout, int | float) else "--watchdog-timeout"
    detail = (
        f"SGLang's scheduler watchdog shut the server down (line {ctx.error.line}): one forward batch made "
        f"no "
        f"progress for {seconds} while {phase_words(ctx.phase)}. Usually a collective waits for a rank that "
        "died or hung (look for another rank's error above, or in another node's log), or a kernel "
        "deadlocked."
    )
    suggestions = [
        Suggestion(None, None, "Read every rank's (and node's) log for the first error before this line."),
        Suggestion("NCCL_DEBUG", "INFO", "An environment variable: NCCL says which collective it waits in."),
        Suggestion(
            "--watchdog-timeout",
            str(int(timeout * 2)) if isinstance(timeout, int | float) else None,
            "Only if single batches are legitimately this slow (a huge prefill on a slow GPU): a real hang "
            "then "
            "takes longer to be noticed.",
        ),
    ]
    return Diagnosis("The server hung and its watchdog stopped it", detail, suggestions, "stalled")
