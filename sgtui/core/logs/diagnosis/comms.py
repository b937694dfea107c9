"""Communication diagnoses: NCCL failures and ports already in use."""

from __future__ import annotations

from sgtui.core.logs.diagnosis.common import (
    Context,
    Diagnosis,
    Suggestion,
    phase_words,
)


def nccl(ctx: Context) -> Diagnosis:
    text = ctx.error.text.strip()
    notes = ctx.analysis.state.notes
    lines = [
        f"NCCL (the GPU-to-GPU communication library) failed while {phase_words(ctx.phase)}: "
        f"{text[:240].rstrip('.')}."
    ]
    suggestions: list[Suggestion] = []
    if "nccl_shm" in notes or ctx.error.values.get("shm"):
        lines.append(
            "It could not create a shared-memory segment in /dev/shm: the container's /dev/shm is too small."
        )
        suggestions.append(
            Suggestion(
                "--shm-size",
                "32g",
                "A docker run flag (or use --ipc=host; for LXC, enlarge /dev/shm): Docker's default 64 MB is "
                "too small for NCCL's buffers.",
            )
        )
    if "Watchdog caught" in text:
        lines.append(
            "A collective timed out: usually another rank died or hung first; look above for its error."
        )
    suggestions.append(
        Suggestion(
            "NCCL_P2P_DISABLE",
            "1",
            "An environment variable: route GPU-to-GPU traffic through host memory when peer-to-peer is "
            "broken (common in VMs and containers); slower all-reduce.",
        )
    )
    tp = ctx.facts.get("tp_size")
    if isinstance(tp, int) and tp > 1:
        suggestions.append(
            Suggestion(
                "--tp-size",
                str(tp // 2),
                f"Try {tp // 2} GPUs: if that works, one GPU or link in the {tp}-GPU set is at fault "
                "(needs the model to fit on fewer GPUs).",
            )
        )
    suggestions.append(
        Suggestion("NCCL_DEBUG", "INFO", "An environment variable: NCCL prints why it failed.")
    )
    return Diagnosis("NCCL failed", " ".join(lines), suggestions, "nccl")


def port_in_use(ctx: Context) -> Diagnosis:
    port = ctx.error.values.get("port")
    http_port = ctx.facts.get("port")
    suggestions: list[Suggestion] = []
    if isinstance(port, int) and isinstance(http_port, int) and port != http_port:
        detail = (
            f"Port {port} is already taken by another process; SGLang needs it for its internal "
            f"communication (it derives those ports from --port {http_port}, or NCCL's from --nccl-port)."
        )
        suggestions.append(
            Suggestion(
                "--port", None, "Pick another --port far from the old one: the internal ports move with it."
            )
        )
    elif isinstance(port, int) or isinstance(http_port, int):
        port = port if isinstance(port, int) else http_port
        detail = f"The HTTP server could not bind port {port}: another process is listening on it."
        suggestions.append(
            Suggestion("--port", str(port + 1), "Use a free port; clients must use the new one.")
        )
    else:
        detail = "A port SGLang needs is already in use by another process."
        suggestions.append(Suggestion("--port", None, "Use a free port; clients must use the new one."))
    if isinstance(port, int):
        suggestions.append(
            Suggestion(
                None,
                None,
                f"Or stop what holds it: `ss -ltnp 'sport = :{port}'` names the process (often an earlier "
                "run that is still alive).",
            )
        )
    return Diagnosis("Port already in use", detail, suggestions, "port_in_use")
