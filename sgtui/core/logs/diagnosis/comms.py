"""Communication diagnoses: NCCL, Gloo and the rendezvous store failures, and ports already in use.

What failed decides the words and the advice. NCCL between the GPUs of one host: peer-to-peer, /dev/shm, one
bad GPU or link. Anything that crosses hosts or says another process went away (torch.distributed's TCPStore
at --dist-init-addr, Gloo's TCP pairs that SGLang's CPU-side barriers use, NCCL's bootstrap socket being
refused, a peer closing the connection, a collective's watchdog timeout): the network between the nodes, and
the other node's own log, which holds the failure this one only sees the end of.
"""

from __future__ import annotations

import re

from sgtui.core.logs.diagnosis.common import (
    Context,
    Diagnosis,
    Suggestion,
    phase_words,
)

# NCCL's bootstrap (`ncclOsSocketPollConnect: connect to 10.0.0.2<58525> returned Connection refused`) and
# PyTorch's store client (`The client socket has failed to connect to [host]:29500 (errno: 111 ...)`)
_CONNECT_TO = re.compile(r"connect to \[?([\w.:-]+?)\]?(?:<(\d+)>|:(\d+))?\s+(?:returned|\(errno)")
_STORE_WAIT_MS = re.compile(r"(?:wait timeout|timed out) after (\d+)\s*ms")

_SHM = Suggestion(
    "--shm-size",
    "32g",
    "A docker run flag (or use --ipc=host; for LXC, enlarge /dev/shm): Docker's default 64 MB is too small "
    "for NCCL's buffers.",
)
_NCCL_DEBUG = Suggestion("NCCL_DEBUG", "INFO", "An environment variable: NCCL prints why it failed.")
_IFNAME = Suggestion(
    "NCCL_SOCKET_IFNAME",
    None,
    "An environment variable on every node (set GLOO_SOCKET_IFNAME to the same interface): the network "
    "interface the nodes reach each other on; a wrong default (docker0, a VPN, a second NIC) connects to an "
    "address the other node cannot reach.",
)
_EVERY_RANK = Suggestion(
    None,
    None,
    "Read every rank's lines before this one for the first error: a collective waits for a rank that died "
    "or hung.",
)
_VERSIONS = Suggestion(
    None, None, "Run the same SGLang, PyTorch and NCCL versions (the same image) on every node."
)


def _remote_signs(ctx: Context) -> tuple[str, str | None, bool]:
    """(what failed: "store" | "gloo" | "nccl", the address a connection was refused at, whether the launch
    spans hosts or the failure is another process going away)."""
    values = ctx.error.values
    text = ctx.error.text
    refused = None
    m = _CONNECT_TO.search(text) if "onnect" in text else None
    if m is not None and "refused" in text:
        port = m.group(2) or m.group(3)
        refused = m.group(1) + (f":{port}" if port else "")
    what = "store" if values.get("store") else "gloo" if values.get("backend") == "gloo" else "nccl"
    nnodes = ctx.facts.get("nnodes")
    one_node = nnodes == 1  # the launch says so, whatever --dist-init-addr says: another process on this host
    if not one_node and ((isinstance(nnodes, int) and nnodes > 1) or ctx.facts.get("dist_init_addr")):
        return what, refused, True
    return what, refused, not one_node and (what != "nccl" or bool(values.get("peer")) or refused is not None)


def _store_timeout(ctx: Context) -> float | None:
    seconds = ctx.error.values.get("timeout_s")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool):
        return float(seconds)
    m = _STORE_WAIT_MS.search(ctx.error.text)
    return int(m.group(1)) / 1000 if m else None


_WHAT = {
    "nccl": "NCCL (the GPU-to-GPU communication library)",
    "gloo": "Gloo (PyTorch's CPU-side communication over TCP, which SGLang's barriers and control messages "
    "use)",
    "store": "torch.distributed's rendezvous store (the TCPStore at --dist-init-addr, or on the first rank, "
    "that every rank connects to in order to find the others)",
}
_TITLES = {
    "nccl": "NCCL failed",
    "gloo": "Gloo lost its connection to another rank",
    "store": "The rendezvous store (TCPStore) failed",
}


def nccl(ctx: Context) -> Diagnosis:
    values = ctx.error.values
    what, refused, multi = _remote_signs(ctx)
    text = ctx.error.text.strip()
    lines = [f"{_WHAT[what]} failed while {phase_words(ctx.phase)}: {text[:240].rstrip('.')}."]
    elsewhere = False  # what this log shows is the end of another process's failure
    if values.get("during") == "capturing_graphs":
        lines.append(
            "It broke during CUDA graph capture, which runs collectives across every rank: a rank or node "
            "that went away in the middle (its own crash or OOM) ends the capture here; the graphs are not "
            "the cause."
        )
        elsewhere = True
    peer = values.get("peer")
    if peer:
        lines.append(
            f"{peer} closed the connection: the process at the other end went away (it crashed, was killed "
            "or gave up first); its own log has the real error."
        )
        elsewhere = True
    if refused:
        lines.append(
            f"Nothing accepted the connection at {refused}: the other node's process had not opened its side "
            "(not started yet, or already dead), or a firewall rejects the port."
        )
    if what == "store" and not refused:
        timeout = _store_timeout(ctx)
        if timeout is not None:
            joined, world = values.get("joined"), values.get("world")
            count = f" ({joined} of {world} joined)" if joined is not None and world is not None else ""
            lines.append(
                f"It waited {timeout:g} s for every rank to join{count}: some ranks, usually another node's, "
                "never reached the rendezvous (they failed or hung before it, or cannot reach its address)."
            )
        else:
            lines.append(
                "The store's server went away: it runs in the first rank's process (node 0), so that process "
                "or its node failed first; its log has the real error."
            )
            elsewhere = True
    if values.get("watchdog"):
        other = ", or in the other node's log" if multi else ""
        timeout = values.get("timeout_s")
        after = f" after {timeout:g} s" if isinstance(timeout, int | float) else ""
        lines.append(
            f"A collective timed out{after}: usually another rank died or hung first; look above for its "
            f"error{other}."
        )
        elsewhere = True
    suggestions: list[Suggestion] = []
    if "nccl_shm" in ctx.analysis.state.notes or values.get("shm"):
        lines.append(
            "It could not create a shared-memory segment in /dev/shm: the container's /dev/shm is too small."
        )
        suggestions.append(_SHM)
    if multi:
        suggestions += _across_nodes(ctx, what, refused, elsewhere)
    elif what != "nccl" or values.get("peer"):
        suggestions.append(_EVERY_RANK)  # one host: P2P and the GPU count are not what a lost peer is about
    else:
        suggestions += _one_host(ctx, elsewhere)
    title = "NCCL could not connect to another node" if refused and what == "nccl" else _TITLES[what]
    return Diagnosis(title, " ".join(lines), suggestions, "nccl")


def _across_nodes(ctx: Context, what: str, refused: str | None, elsewhere: bool) -> list[Suggestion]:
    """The network between the hosts and the other node's own failure; never P2P or fewer GPUs, which are
    about the links inside one host."""
    addr = ctx.facts.get("dist_init_addr")
    target = f"{addr} (--dist-init-addr)" if addr else refused or "the first node's --dist-init-addr"
    other_log = Suggestion(
        None,
        None,
        "Read the other node's log (and every rank's) for the first error: a peer that goes away failed "
        "there, and this process only saw the connection end.",
    )
    reach = Suggestion(
        None,
        None,
        f"Check that every node reaches {target} and NCCL's ports: open them in the firewall between the "
        "nodes (`nc -zv HOST PORT` from each node).",
    )
    order = [other_log, _IFNAME, reach] if elsewhere else [_IFNAME, reach, other_log]
    order.append(_VERSIONS)
    if what == "nccl":
        order.append(_NCCL_DEBUG)
    return order


def _one_host(ctx: Context, elsewhere: bool) -> list[Suggestion]:
    """NCCL between the GPUs of one host: peer-to-peer, then one bad GPU or link in the set (after the
    other ranks' own errors when a collective only waited for them)."""
    suggestions = [_EVERY_RANK] if elsewhere else []
    suggestions += [
        Suggestion(
            "NCCL_P2P_DISABLE",
            "1",
            "An environment variable: route GPU-to-GPU traffic through host memory when peer-to-peer is "
            "broken (common in VMs and containers); slower all-reduce.",
        )
    ]
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
    suggestions.append(_NCCL_DEBUG)
    return suggestions


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
