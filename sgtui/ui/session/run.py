"""One followed run: its records (one per node), classifier, bounded log, GPU history and ages.

A `RunSession` is the unit of state for the log, timeline, diagnosis and GPU views. Tail workers feed it
(`feed`, `flush`, `ended`); it updates itself and posts messages saying what changed, keyed by `key`. The
app keeps the sessions (`FollowedRuns`) and redraws the views from the one in view.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from textual.message import Message

from sgtui.core.logs.state import parse_seconds
from sgtui.core.node_progress import WORKER_DONE
from sgtui.ui import messages as m
from sgtui.ui.session.ages import Ages
from sgtui.ui.session.gpu_history import GpuHistory
from sgtui.ui.session.logbuffer import LogBuffer
from sgtui.ui.session.serving import ServingState
from sgtui.ui.session.startup import StartupTracker
from sgtui.ui.views import DiagnosisView, GpuView, RunView, TimelineView

ALIVE = ("starting", "running", "ready", "stalled")
NOTIFIED = ("ready", "failed", "stalled")  # the changes a run not in view announces, once each


@dataclass
class NodeStream:
    """One node's record and its own classifier: each node's log is a separate file and story."""

    run: RunView
    tracker: StartupTracker
    offset: int = 0
    outcome: str = "starting"
    timeline: TimelineView = field(default_factory=TimelineView)
    note: str = ""  # the host's word on why it ended so (`RunStatus.note`: a full disk, its container gone)


def rank_of(run: RunView) -> int:
    return run.node_rank if run.node_rank is not None else 0


class RunSession:
    def __init__(
        self,
        run: RunView,
        predicted: dict[str, Any] | None,
        post: Callable[[Message], None],
        *,
        max_lines: int = 20_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.key = run.run_id  # every node of a multi-node run shares the id
        self.predicted = predicted
        self.post = post
        self.clock = clock
        self.nodes: dict[int, NodeStream] = {}
        self.log = LogBuffer(max_lines)
        self.pending: list[tuple[int, str]] = []
        self.histories: dict[str, GpuHistory] = {}
        self.ages = Ages(clock)
        self.opened = clock()  # when this run began to be followed: the chart's earliest moment
        self.state = run.state  # starting | running | ready | stalled | failed | stopped | exited
        self.diagnoses: list[DiagnosisView] = []
        self.seen_milestones: set[str] = set()
        self.unseen: str | None = None  # a change ("ready", "failed", "stalled") made while not in view
        self.log_rank: int | None = None  # the node the log view shows; None: all, with a node column
        self.stop_text = ""
        self.in_view = False  # set by FollowedRuns: only the run in view posts its lines (the rest buffer)
        self.told = False
        self.serving = ServingState()  # once ready: its numbers, smoke request and load probe
        self._skipped_told = 0  # whether the logs (or the host) have said anything about the outcome yet
        self.add_node(run)

    # records ---------------------------------------------------------------------------------------
    def add_node(self, run: RunView) -> NodeStream:
        rank = rank_of(run)
        node = self.nodes.get(rank)
        if node is None:
            node = self.nodes[rank] = NodeStream(run, StartupTracker(self.predicted))
            self.histories.setdefault(run.host, GpuHistory())
        else:
            node.run = run
        return node

    @property
    def run(self) -> RunView:
        """The record of node 0 (the only one of a single-node run); its state is `self.state`."""
        return self.nodes[min(self.nodes)].run

    @property
    def records(self) -> list[RunView]:
        """Every node's record, node 0 first."""
        return [n.run for _, n in sorted(self.nodes.items())]

    @property
    def run_id(self) -> str:
        return self.key

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(n.run.host for n in self.nodes.values()))

    @property
    def host(self) -> str:
        return self.run.host

    @property
    def multi_node(self) -> bool:
        return len(self.nodes) > 1

    @property
    def alive(self) -> bool:
        return self.state in ALIVE

    @property
    def history(self) -> GpuHistory:
        """GPU memory of node 0's host, for the `g` chart."""
        return self.histories[self.host]

    @property
    def phase(self) -> str:
        """The startup phase to show: node 0's, or while a multi-node run starts, the first node still
        starting ("n1 loading weights")."""
        if self.multi_node:
            for rank, node in sorted(self.nodes.items()):
                if node.outcome == "starting":
                    return f"n{rank} {node.timeline.phase}"
        return self.timeline.phase

    @property
    def timeline(self) -> TimelineView:
        """Node 0's startup: the one the side panel shows; `node_timelines` has every node's."""
        return self.nodes[min(self.nodes)].timeline

    def node_timelines(self) -> list[tuple[int, str, TimelineView]]:
        """(rank, host, timeline) per node; a worker node whose schedulers are up reads "ready"."""
        return [
            (
                rank,
                n.run.host,
                replace(n.timeline, phase="ready") if rank and n.outcome == "ready" else n.timeline,
            )
            for rank, n in sorted(self.nodes.items())
        ]

    # fed by the tail workers ----------------------------------------------------------------------
    def feed(self, rank: int, lines: list[str], offset: int) -> None:
        """Lines from one node's log: classified at once, shown at the next `flush`."""
        node = self.nodes[rank]
        node.offset = offset
        self.ages.touch("log")
        self.pending.extend((rank, line) for line in lines)
        cap = self.log.max_lines
        if len(self.pending) > cap:  # a flood between two flushes: keep the newest screenful
            extra = len(self.pending) - cap
            del self.pending[:extra]
            self.log.skip(extra)
        if rank == 0 and self.state == "ready":
            self.serving.feed_log(lines, self.clock())  # SGLang's batch lines: numbers without metrics
        tracker = node.tracker
        if tracker.feed(lines):
            node.timeline = tracker.timeline()
            self.milestones_at_log_times(tracker)
            self.post(m.StartupChanged(self.key, rank))
        if node.outcome == "stalled" and getattr(tracker.state, "stall", None) is None:
            node.outcome = "starting"  # progress again: a stall is not a failure until someone decides
            if not any(n.outcome in ("stalled", "failed") for n in self.nodes.values()):
                self.set_state("starting")
        outcome = tracker.outcome
        if rank > 0 and outcome == "starting" and any(k in tracker.state.milestones for k in WORKER_DONE):
            outcome = "ready"  # a worker node never serves HTTP: its schedulers finishing is its last word
        if outcome != node.outcome and outcome in ("ready", "failed"):
            node.outcome = outcome
            self.flush()
            self._node_outcome(node, outcome)

    def flush(self) -> None:
        """Move the pending lines into the buffer and tell the views."""
        if not self.pending:
            return
        skipped = self.log.skipped - self._skipped_told  # since the last batch the views saw
        self._skipped_told = self.log.skipped
        batch, self.pending = self.pending, []
        by_rank: dict[int, list[str]] = {}
        for rank, line in batch:
            by_rank.setdefault(rank, []).append(line)
        for rank, lines in by_rank.items():
            self.log.add(rank, lines)
        if self.in_view:  # a run out of view keeps its lines; the view refills from the buffer
            self.post(m.LogLines(self.key, batch, skipped, self.log.total))

    @property
    def note(self) -> str:
        """The host's word on why the run (a node of it) is in its state, "" when it has none; with the
        node named in a multi-node run."""
        for rank, node in sorted(self.nodes.items()):
            if node.note:
                return f"n{rank}: {node.note}" if self.multi_node else node.note
        return ""

    def set_note(self, rank: int, note: str) -> None:
        node = self.nodes.get(rank)
        if node is not None and note and note != node.note:
            node.note = note
            self.post(m.DiagnosisChanged(self.key))

    def ended(self, rank: int, state: str, returncode: int | None = None, note: str = "") -> None:
        """A node's log is read to its end and its process is gone; `state` is the host's word, `note`
        its reason beyond the state (a full disk lost the exit code, the container is gone).

        The classifier then hears what `sgtui launch --watch` and `sgtui explain` tell theirs: the process
        exit (with its code, when it exited by itself) and the end of the log. Its verdict decides."""
        node = self.nodes[rank]
        self.flush()
        self.set_note(rank, note)
        tracker = node.tracker
        if state in ("exited", "failed"):  # stopped by us, or unknown: no exit code to judge by
            tracker.process_exited(returncode)
        tracker.end_of_log()
        node.timeline = tracker.timeline()
        self.post(m.StartupChanged(self.key, rank))
        verdict = tracker.outcome
        if verdict == "failed" and node.outcome == "failed":  # the whole log says more than its first error
            self.diagnoses = tracker.diagnoses()
            self.post(m.DiagnosisChanged(self.key))
            return
        final = verdict if verdict in ("ready", "failed") else state
        if final != node.outcome and node.outcome != "stopped":
            node.outcome = final
            self._node_outcome(node, final)

    def stalled(self, rank: int, detail: str) -> None:
        node = self.nodes[rank]
        if node.outcome == "starting":
            node.outcome = "stalled"
            self._node_outcome(node, "stalled", detail)

    def _node_outcome(self, node: NodeStream, outcome: str, detail: str = "") -> None:
        at = None
        if outcome in ("failed", "stalled"):  # a stall has its own diagnosis: the phase and what to check
            self.diagnoses = node.tracker.diagnoses()
            error = node.tracker.state.error
            if error is not None and error.time:
                at = self.log_moment(node.tracker, parse_seconds(error.time))
        outcomes = [n.outcome for n in self.nodes.values()]
        # one node failing fails the run; it is ready only when every node is
        if "failed" in outcomes:
            state = "failed"
        elif "stalled" in outcomes:
            state = "stalled"
        elif all(o == "ready" for o in outcomes):
            state = "ready"
        elif all(o not in ALIVE for o in outcomes):
            state = outcome
        else:
            return
        self.set_state(state, detail, at)

    def set_state(self, state: str, detail: str = "", at: float | None = None) -> None:
        if state == self.state and self.told:
            return
        self.state = state
        self.told = True
        self.ages.touch("state")
        if state not in self.seen_milestones:  # "ready" is a log milestone too: one chart line
            self.seen_milestones.add(state)
            self.mark(state, at)
        self.post(m.RunOutcome(self.key, state, detail))

    def host_says(self, run: RunView) -> None:
        """A runs listing: the host only knows running or ended; a run that ended before its log said
        ready or failed takes the host's word."""
        self.ages.touch("state")
        self.set_note(rank_of(run), run.note)
        if run.state not in ALIVE and self.state in ALIVE:
            node = self.nodes.get(rank_of(run))
            if node is not None and node.outcome in ("starting", "ready", "stalled"):
                node.outcome = run.state
                self._node_outcome(node, run.state)

    # GPU history ----------------------------------------------------------------------------------
    def add_gpus(self, host: str, t: float, gpus: list[GpuView]) -> None:
        history = self.histories.get(host)
        if history is not None:
            history.add(t, gpus)
            self.ages.touch(f"gpus:{host}", t)

    def mark(self, label: str, at: float | None = None) -> None:
        """A chart line for this run at `at` (default now). One from before this run was followed (an
        old run's milestones read back on reattach) is left off: it is no moment of this chart."""
        now = self.clock()
        at = now if at is None else at
        if at < self.opened - 1.0:
            return
        for history in self.histories.values():
            history.mark(at, label)

    def milestones_at_log_times(self, tracker: StartupTracker) -> None:
        """Each new milestone at the moment its log line says, on this session's clock.

        The log's clock (the target's local time) is anchored at the run's recorded start (the first
        stamp is the launch), so an old run's milestones fall before this chart and are left off; without
        a recorded start, the newest line is taken as now."""
        for milestone in tracker.state.milestone_list():
            if milestone.kind not in self.seen_milestones:
                self.seen_milestones.add(milestone.kind)
                self.mark(milestone.kind, self.log_moment(tracker, milestone.seconds))

    def log_moment(self, tracker: StartupTracker, seconds: float | None) -> float:
        """A log time (`parse_seconds` scale) on this session's clock."""
        state = tracker.state
        stamps = [m.seconds for m in state.milestones.values() if m.seconds is not None]
        now = self.clock()
        if seconds is None or not stamps:
            return now
        started = getattr(self.run.raw, "started_at", None)
        if isinstance(started, int | float):
            return now - (time.time() - (started + seconds - min(stamps)))
        last = state.last_seconds
        return now - (last - seconds) if last is not None else now

    def milestones_seen(self, kinds: list[str]) -> None:
        for kind in kinds:
            if kind not in self.seen_milestones:
                self.seen_milestones.add(kind)
                self.mark(kind)
