"""Across the nodes of one multi-node run: which node (and which of its ranks) did not reach a milestone.

Each node's log goes through its own `LogClassifier`; this module only reads the milestone events those
classifiers produce (kind + rank tags) and keeps, per node, which milestones each of its ranks reached and
when the node last made progress. `CrossNode.check(now)` then answers the question a hung multi-node start
poses: once nothing anywhere moved for `stall_after` seconds, which nodes are behind the others, in which
phase, and which of their ranks are missing the milestone the others reached. When every node waits at the
same place (as all do while one node never joins distributed init), the logs cannot tell who is missing:
the stall is reported with `behind=[]` and the caller asks node 0's store who connected (remote side).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sgtui.core.logs import MILESTONE_KINDS, LogEvent
from sgtui.core.logs import PHASE_LABELS as _LABELS
from sgtui.core.logs.state import MILESTONE_PHASE

# Milestones only node 0 prints (it alone runs the tokenizer and HTTP server): never "missing" elsewhere.
HEAD_ONLY = frozenset({"uvicorn_running", "ready"})
# A worker node (rank >= 1) prints nothing after its schedulers finish initialising: this is its last word.
WORKER_DONE = ("max_total_num_tokens", "cuda_graph_end")
_ORDER = {kind: i for i, kind in enumerate(MILESTONE_KINDS)}
# The phase a node is in while it waits to print this milestone.
_WAITING_FOR = {
    "server_args": "starting",
    "init_torch_distributed": "distributed_init",
    "load_weight_begin": "distributed_init",
    "load_weight_end": "loading_weights",
    "mamba_cache_allocated": "allocating_pools",
    "swa_pool": "allocating_pools",
    "kv_cache_allocated": "allocating_pools",
    "memory_pool_end": "allocating_pools",
    "cuda_graph_begin": "allocating_pools",
    "cuda_graph_end": "capturing_graphs",
    "max_total_num_tokens": "capturing_graphs",
}


def tp_tags(rank: int, nnodes: int, tp_size: int) -> list[str]:
    """The rank tags node `rank` prints (SGLang: TP ranks node_rank*tp/nnodes ...; none when tp is 1)."""
    per = max(tp_size // max(nnodes, 1), 1)
    if tp_size <= 1:
        return []
    return [f"TP{i}" for i in range(rank * per, rank * per + per)]


@dataclass
class NodeProgress:
    """What one node's log showed so far: per rank tag, the milestones reached."""

    rank: int
    label: str  # "sim-2" (the host alias), or "sim-2 pct 129"
    tags: list[str]  # the rank tags this node should print, e.g. ["TP2", "TP3"]
    started: float
    reached: dict[str, set[str]] = field(default_factory=dict)  # kind -> tags that printed it ("" = none)
    last_progress: float = 0.0

    def __post_init__(self) -> None:
        self.last_progress = self.started

    def observe(self, event: LogEvent, now: float) -> None:
        if event.kind not in _ORDER:
            return
        seen = self.reached.setdefault(event.kind, set())
        tags = set(t for t in event.ranks if t.startswith("TP")) or {""}
        if not tags <= seen:
            seen |= tags
            self.last_progress = now

    def has(self, kind: str) -> bool:
        return kind in self.reached

    def missing_tags(self, kind: str) -> list[str]:
        """This node's rank tags that did not print `kind` (all of them when none did)."""
        seen = self.reached.get(kind, set())
        return [t for t in self.tags if t not in seen]

    @property
    def worker_done(self) -> bool:
        return any(self.has(k) for k in WORKER_DONE)


@dataclass(frozen=True)
class Lagging:
    """One node behind the others: the milestone it lacks and the ranks that lack it."""

    rank: int
    label: str
    phase: str  # the phase it is stuck in ("distributed_init", ...)
    milestone: str  # the milestone the others reached
    ranks: list[str]

    def describe(self) -> str:
        ranks = f" (ranks {', '.join(self.ranks)})" if self.ranks else ""
        phase = _LABELS.get(self.phase, self.phase)
        return f"node {self.rank} ({self.label}){ranks} did not get past {phase}"


@dataclass(frozen=True)
class CrossStall:
    """No progress on any node for `seconds`; `behind` names the nodes that lag (empty: all wait alike)."""

    phase: str
    seconds: float
    behind: list[Lagging]

    @property
    def phase_label(self) -> str:
        return _LABELS.get(self.phase, self.phase)


class CrossNode:
    """The nodes of one run, compared."""

    def __init__(self, nodes: Sequence[NodeProgress], stall_after: float | None) -> None:
        self.nodes = list(nodes)
        self.stall_after = stall_after

    def node(self, rank: int) -> NodeProgress:
        return self.nodes[rank]

    def observe(self, rank: int, events: Iterable[LogEvent], now: float) -> None:
        for event in events:
            self.nodes[rank].observe(event, now)

    def idle_for(self, now: float) -> float:
        return now - max(n.last_progress for n in self.nodes)

    def lagging(self) -> list[Lagging]:
        """Nodes missing the first milestone (in startup order) that another node already reached."""
        for kind in MILESTONE_KINDS:
            if kind in HEAD_ONLY:
                continue
            have = [n for n in self.nodes if n.has(kind)]
            if have and len(have) < len(self.nodes):
                return [
                    Lagging(n.rank, n.label, _WAITING_FOR.get(kind, "starting"), kind, n.missing_tags(kind))
                    for n in self.nodes
                    if not n.has(kind)
                ]
        return []

    def common_phase(self) -> str:
        """Where every node waits when none is ahead: the phase after the last milestone all printed."""
        last = None
        for kind in MILESTONE_KINDS:
            if kind not in HEAD_ONLY and all(n.has(kind) for n in self.nodes):
                last = kind
        return "starting" if last is None else MILESTONE_PHASE.get(last, "serving")

    def check(self, now: float) -> CrossStall | None:
        """A stall once no node moved for `stall_after` seconds; None before that (or without a limit)."""
        if self.stall_after is None:
            return None
        idle = self.idle_for(now)
        if idle < self.stall_after:
            return None
        behind = self.lagging()
        phase = behind[0].phase if behind else self.common_phase()
        return CrossStall(phase, idle, behind)


def attribute_peers(
    peers: Sequence[str], addresses: Sequence[Sequence[str]], expected: Sequence[int]
) -> list[int]:
    """Which nodes did not join node 0's store: `peers` are the source addresses of its connections,
    `addresses[i]` node i's known addresses, `expected[i]` how many ranks node i runs. A node with fewer
    connections from its addresses than ranks is missing (all of them when none came)."""
    missing = []
    for rank, (mine, want) in enumerate(zip(addresses, expected, strict=True)):
        got = sum(1 for p in peers if p in set(mine))
        if got < want:
            missing.append(rank)
    return missing


def store_peers_from_proc(text: str, port: int) -> list[str]:
    """Source addresses of the ESTABLISHED connections to local `port`, from /proc/net/tcp (IPv4 rows;
    IPv4-mapped rows of /proc/net/tcp6 too): who is connected to node 0's store right now."""
    peers: list[str] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or parts[3] != "01" or ":" not in parts[1]:
            continue
        local_port = parts[1].rpartition(":")[2]
        remote_addr = parts[2].rpartition(":")[0]
        try:
            if int(local_port, 16) != port:
                continue
        except ValueError:
            continue
        mapped = len(remote_addr) == 32 and remote_addr[:24].upper() == "0000000000000000FFFF0000"
        address = _hex_ipv4(remote_addr[-8:]) if len(remote_addr) == 8 or mapped else None
        if address is not None:
            peers.append(address)
    return peers


def _hex_ipv4(hex8: str) -> str | None:
    try:
        raw = bytes.fromhex(hex8)
    except ValueError:
        return None
    return ".".join(str(b) for b in reversed(raw))
