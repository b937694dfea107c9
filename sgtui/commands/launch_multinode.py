"""`sgtui launch` for a multi-node profile: check every node, launch node 0 then the others, follow them all.

Each node's log goes through its own classifier (the one analysis path); `CrossNode` compares their
milestones. The watch ends 0 once node 0 is ready and every other node's schedulers finished starting, 1
when any node fails or exits, or when nothing moved on any node for `--stall-after` seconds: the stall names
the nodes and ranks that did not arrive, from the logs when some node is ahead, else from node 0's store
(who is connected to the dist-init port).
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sgtui.commands.events import Printer
from sgtui.commands.launch import PREDICTED_FAILURE
from sgtui.commands.watch import ERROR_SETTLE_S, STATUS_POLL_S, STATUS_TIMEOUT_S
from sgtui.core.preflight import Check

if TYPE_CHECKING:
    from sgtui.core.logs import LogClassifier, LogEvent
    from sgtui.core.node_progress import CrossNode, CrossStall
    from sgtui.core.profiles import Profile
    from sgtui.remote.multinode import MultiNode
    from sgtui.remote.preflight import PreflightResult
    from sgtui.remote.runs import RunRecord


async def launch_multinode(
    profile: Profile,
    path: Path,
    *,
    watch: bool,
    printer: Printer,
    timeout: float | None,
    stall_after: float | None,
    password_cb: Any = None,
    force: bool = False,
    give_up_after: float = 300.0,
) -> int:
    from sgtui.commands import interrupt
    from sgtui.core.profiles import dump_profile
    from sgtui.remote.connection import ConnectionPool, RemoteError
    from sgtui.remote.multinode import MultiNode, PartialLaunchError

    pool = ConnectionPool(password_cb=password_cb)
    records: list[RunRecord] = []
    try:
        nodes = MultiNode(profile, pool)
        addr = await nodes.dist_init_addr()
        problems, checked = await asyncio.gather(nodes.precheck(addr), _head_preflight(nodes))
        pre = checked.preflight
        node_checks = [Check("nodes", False, p.message) for p in problems]
        pre = replace(pre, checks=[*pre.checks, *node_checks])
        printer.preflight(pre, checked.report)
        for problem in problems if printer.json else ():  # the text lists them in the preflight already
            printer.emit(
                "check_failed",
                f"check: {problem}",
                node_rank=problem.rank,
                host=problem.host,
                message=problem.message,
            )
        if not printer.go_ahead(pre, force=force):
            return PREDICTED_FAILURE
        printer.emit("checked", f"checked {len(nodes.nodes)} nodes; dist-init address {addr}", addr=addr)

        def launched(record: RunRecord) -> None:
            printer.emit(
                "launched",
                f"launched {profile.name} node {record.node_rank} on {record.host} ({record.target.label}): "
                f"pid {record.pid}, log {record.log_path}",
                run=record.to_json(),
            )

        try:  # every node or none: a Ctrl-C meanwhile lets the others start too, so one stop ends them all
            records, cut = await interrupt.finish_launch(
                nodes.launch(addr, dump_profile(profile), on_launched=launched), printer
            )
        except PartialLaunchError as exc:
            started = exc.records[0].id if exc.records else None
            hint = (
                f" (the started nodes keep running: sgtui stop {started} --profile {path})" if started else ""
            )
            printer.emit("error", f"error: {exc}{hint}", message=str(exc))
            return 1
        if cut:
            return interrupt.nodes_left_running(printer, records, path)
        if not watch:
            return 0
        watching = MultiWatch(
            nodes, records, printer, timeout, stall_after, addr, give_up_after, fit=checked.report
        )
        watching.place = shlex.join(["--profile", str(path)])
        return await watching.run()
    except asyncio.CancelledError:  # Ctrl-C (asyncio.run cancels this task): say what runs, if anything
        if not records:
            return interrupt.nothing_launched(printer)
        return interrupt.nodes_left_running(printer, records, path)
    except RemoteError as exc:
        printer.emit("error", f"error: {exc}", message=str(exc))
        return 1
    finally:
        await pool.close()


async def _head_preflight(nodes: MultiNode) -> PreflightResult:
    """Node 0's preflight: the fit (tp across the nodes) and its checks; the precheck covers the others."""
    from sgtui.remote.preflight import run_preflight

    head = nodes.head
    return await run_preflight(head.conn, head.target, nodes.profile)


class NodeFollow:
    """One node's log and process, followed: its own classifier (the one analysis path)."""

    def __init__(self, record: RunRecord, stall_after: float | None) -> None:
        from sgtui.core.logs import LogClassifier

        self.record = record
        self.classifier: LogClassifier = LogClassifier(clock=time.monotonic, stall_after=stall_after)
        self.offset = 0
        self.exited = False
        self.exit_code: int | None = None
        self.error_seen_at: float | None = None
        self.link: Any = None  # the LinkWatch of this node's connection

    @property
    def rank(self) -> int:
        return self.record.node_rank or 0


class MultiWatch:
    """Follow every node of a run to ready, failure or a stall."""

    def __init__(
        self,
        nodes: MultiNode,
        records: list[RunRecord],
        printer: Printer,
        timeout: float | None,
        stall_after: float | None,
        dist_init_addr: str,
        give_up_after: float = 300.0,
        fit: Any = None,
    ) -> None:
        from sgtui.commands.watch_link import LinkWatch
        from sgtui.core.node_progress import CrossNode, NodeProgress, tp_tags

        self.fit = fit  # node 0's preflight FitReport: every node's diagnosis leads with its first fix
        self.nodes = nodes
        self.printer = printer
        self.timeout = timeout
        self.addr = dist_init_addr
        self.follows = [NodeFollow(r, stall_after) for r in sorted(records, key=lambda r: r.node_rank or 0)]
        self.place = f"--profile {nodes.profile.name}"  # how `sgtui runs`/`stop` find the run
        # one view per connection (nodes sharing a host share it): lost said at once, resumed, given up
        self.links: dict[int, LinkWatch] = {}
        for f in self.follows:
            conn = getattr(nodes.manager_for(f.record), "conn", None)
            if id(conn) not in self.links:
                self.links[id(conn)] = LinkWatch(conn, printer, give_up_after, lambda f=f: f.offset)
            f.link = self.links[id(conn)]
        spec = nodes.profile.spec
        now = time.monotonic()
        n = len(self.follows)
        self.cross: CrossNode = CrossNode(
            [
                NodeProgress(f.rank, nodes.node(f.rank).host, tp_tags(f.rank, n, spec.tp_size), now)
                for f in self.follows
            ],
            stall_after,
        )

    async def run(self) -> int:
        for link in self.links.values():
            link.start()
        tails = [asyncio.ensure_future(self._follow(f)) for f in self.follows]
        try:
            deadline = None if self.timeout is None else time.monotonic() + self.timeout
            while True:
                verdict = self._verdict()
                if verdict is not None:
                    return self._finish(*verdict)
                stall = self._stall()
                if stall is not None:
                    return await self._stalled(stall)
                if deadline is not None and time.monotonic() > deadline:
                    phases = ", ".join(f"node {f.rank} {f.classifier.state.phase}" for f in self.follows)
                    self.printer.emit("timeout", f"gave up after {self.timeout:g} s: {phases}")
                    return 1
                gone = [link for link in self.links.values() if link.fatal or link.gone_too_long()]
                if gone:
                    return gone[0].give_up(self.follows[0].record.id, self.place)
                await asyncio.sleep(STATUS_POLL_S)
                await asyncio.gather(*(self._poll(f) for f in self.follows))
        finally:
            for link in self.links.values():
                link.close()
            for tail in tails:
                tail.cancel()
            for tail in tails:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await tail

    def _stall(self) -> CrossStall | None:
        """A stall once every node sat still for `--stall-after` s (CrossNode), or once a node's own
        classifier calls its phase stalled (its per-phase expected time): then which nodes are behind."""
        from sgtui.core.node_progress import CrossStall

        now = time.monotonic()
        crossed = self.cross.check(now)
        if crossed is not None:
            return crossed
        for f in self.follows:
            if f.rank > 0 and self.cross.node(f.rank).worker_done:
                continue  # a worker node says nothing more once its schedulers are up: that is no stall
            event = f.classifier.check_stall(now)
            if event is not None:
                behind = self.cross.lagging()
                phase = behind[0].phase if behind else self.cross.common_phase()
                return CrossStall(phase, self.cross.idle_for(now), behind)
        return None

    async def _follow(self, f: NodeFollow) -> None:
        manager = self.nodes.manager_for(f.record)
        async for chunk in manager.tail(f.record):
            if chunk.end <= f.offset:
                continue
            f.offset = chunk.end
            self._feed(f, "\n".join(chunk.lines) + "\n")

    def _feed(self, f: NodeFollow, text: str) -> None:
        events = f.classifier.feed(text)
        self.cross.observe(f.rank, events, time.monotonic())
        for event in events:
            self._event(f, event)

    async def _poll(self, f: NodeFollow) -> None:
        from sgtui.remote.connection import RemoteError
        from sgtui.remote.runs import RunState

        if f.exited:
            return
        manager = self.nodes.manager_for(f.record)
        try:
            status = await asyncio.wait_for(manager.status(f.record), STATUS_TIMEOUT_S)
        except TimeoutError:  # a host gone without a goodbye
            f.link.lost(f"no answer in {STATUS_TIMEOUT_S:g} s")
            return
        except RemoteError:
            return
        f.link.back()
        if status.state is RunState.RUNNING:
            return
        await asyncio.sleep(STATUS_POLL_S)
        with contextlib.suppress(RemoteError):
            rest = await manager.read_rest(f.record, f.offset)
            if rest.lines:
                f.offset = rest.end
                self._feed(f, "\n".join(rest.lines) + "\n")
        f.exited = True
        f.exit_code = status.rc
        for event in f.classifier.process_exited(status.rc) + f.classifier.finish():
            self._event(f, event)  # the process is gone: its log has ended

    def _event(self, f: NodeFollow, event: LogEvent) -> None:
        from sgtui.core.logs import MILESTONE_KINDS

        if event.kind in MILESTONE_KINDS:
            self.printer.milestone(
                event, f"node {f.rank} {f.record.host}: ", node_rank=f.rank, host=f.record.host
            )

    def _verdict(self) -> tuple[str, NodeFollow | None] | None:
        """("ready", None) | ("failed", the node) | None (still starting)."""
        now = time.monotonic()
        for f in self.follows:
            state = f.classifier.state
            if state.error is not None:
                f.error_seen_at = f.error_seen_at or now
                if f.exited or now - f.error_seen_at >= ERROR_SETTLE_S:
                    return "failed", f
            elif f.exited:
                return "failed", f
        head = self.follows[0]
        head_ready = head.classifier.state.error is None and head.classifier.analysis().outcome == "ready"
        workers_done = all(self.cross.node(f.rank).worker_done for f in self.follows[1:])
        if head_ready and workers_done:
            return "ready", None
        return None

    def _finish(self, verdict: str, failed: NodeFollow | None) -> int:

        from sgtui.core.logs import diagnose

        if verdict == "ready":
            head = self.follows[0].record
            self.printer.emit(
                "ready",
                f"ready: all {len(self.follows)} nodes (node 0 log {head.log_path})",
                log=head.log_path,
                nodes=[
                    {"node_rank": f.rank, "host": f.record.host, "log": f.record.log_path}
                    for f in self.follows
                ],
            )
            return 0
        assert failed is not None
        analysis = failed.classifier.analysis()
        where = f"node {failed.rank} ({failed.record.host})"
        error = analysis.error
        if error is not None:
            self.printer.emit(
                "error",
                f"{where}: error ({error.error_class}) at line {error.line}: {error.text.strip()[:300]}",
                error_class=error.error_class,
                line=error.line,
                text=error.text,
                node_rank=failed.rank,
                host=failed.record.host,
            )
        for item in diagnose(analysis, self.fit):
            self.printer.diagnosis(item, f" ({where})", node_rank=failed.rank)
        self.printer.emit(
            "failed",
            f"failed on {where}: {error.error_class if error else 'the server exited'} "
            f"(log {failed.record.log_path})",
            error_class=error.error_class if error else None,
            exit_code=failed.exit_code,
            node_rank=failed.rank,
            host=failed.record.host,
            log=failed.record.log_path,
        )
        return 1

    async def _stalled(self, stall: CrossStall) -> int:
        behind = list(stall.behind)
        how = "from the logs"
        if not behind and stall.phase == "distributed_init":
            behind = await self._not_joined()
            how = "from the connections to node 0's store"
        if behind:
            names = "; ".join(b.describe() for b in behind)
            human = f"stalled in {stall.phase_label} for {stall.seconds:.0f} s: {names} ({how})"
        else:
            human = f"stalled in {stall.phase_label} for {stall.seconds:.0f} s on every node"
        self.printer.emit(
            "stalled",
            human,
            error_class="stalled",
            phase=stall.phase,
            seconds=round(stall.seconds, 1),
            nodes=[
                {"node_rank": b.rank, "host": b.label, "ranks": b.ranks, "milestone": b.milestone}
                for b in behind
            ],
        )
        self.printer.emit(
            "failed",
            f"failed: stalled in {stall.phase_label}"
            + (f" ({', '.join(b.label for b in behind)} did not arrive)" if behind else ""),
            error_class="stalled",
            exit_code=None,
        )
        return 1

    async def _not_joined(self) -> list[Any]:
        """Every node waits in distributed init: ask node 0's store who is connected, and name the nodes
        with fewer connections than ranks."""
        from sgtui.core.node_progress import Lagging, attribute_peers
        from sgtui.core.profiles.nodes import parse_address
        from sgtui.remote.multinode import node_addresses, store_peers

        parsed = parse_address(self.addr)
        if parsed is None:
            return []
        peers = await store_peers(self.nodes.head, parsed[1])
        if peers is None:
            return []
        hosts = [n.host for n in self.nodes.nodes]
        addresses = await node_addresses(self.nodes.pool, hosts)
        expected = [max(len(self.cross.node(i).tags), 1) for i in range(len(hosts))]
        missing = attribute_peers(peers, addresses, expected)
        return [
            Lagging(i, hosts[i], "distributed_init", "init_torch_distributed", self.cross.node(i).tags)
            for i in missing
        ]
