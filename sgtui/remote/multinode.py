"""Multi-node runs on SGLang's own runtime: one profile, N nodes, one run id.

`MultiNode(profile, pool)` turns a profile's `nodes:` into one `NodeRun` per node (its connection, target
and RunManager). It picks the dist-init address (the profile's, or node 0's address and a port node 0 says
is free), checks every node in parallel before anything starts (`precheck`: every problem at once, one
line each naming the node), launches node 0 first and then the others with their ranks under one shared
run id, finds a run's nodes again after a restart of sgtui, and stops them workers first, node 0 last.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sgtui.core import shell
from sgtui.core.profiles.nodes import format_address
from sgtui.remote.connection import ConnectionPool, RemoteError, Transport
from sgtui.remote.gpu import GpuSampler, GpuSnapshot
from sgtui.remote.runs import RunManager, RunRecord, StopResult, new_run_id
from sgtui.remote.targets import Target

if TYPE_CHECKING:
    from sgtui.core.profiles import Profile

IDLE_MIB = 1024.0  # a GPU with no process and at most this much used counts as free

# Node 0's probe listener: bind the dist-init port the way torch's TCPStore does (every interface), report,
# then note every peer that connects, until all expected peers came or the time is up.
_LISTENER = """
import errno, json, select, socket, sys, time
port, expected, wait = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("", port)); s.listen(64)
except OSError as e:
    name = errno.errorcode.get(e.errno, str(e.errno))
    print("@@sgtui " + json.dumps({"error": name, "message": e.strerror}))
    sys.exit(0)
print("@@listening", flush=True)
peers, end = [], time.time() + wait
while len(peers) < expected and time.time() < end:
    if select.select([s], [], [], 0.2)[0]:
        c, a = s.accept(); peers.append(a[0]); c.close()
print("@@sgtui " + json.dumps({"peers": peers}), flush=True)
"""

_FREE_PORT = (
    "import socket; s = socket.socket(); s.bind(('', 0)); "
    "print('@@sgtui {\"port\": %d}' % s.getsockname()[1])"
)


@dataclass(frozen=True)
class NodeRun:
    """One node of a multi-node profile, ready to act on."""

    rank: int
    host: str
    target: Target
    conn: Transport
    manager: RunManager

    @property
    def label(self) -> str:
        where = self.host if self.target.kind == "host" else f"{self.host} {self.target.label}"
        return f"node {self.rank} ({where})"


@dataclass(frozen=True)
class NodeProblem:
    """One pre-launch problem, on one node."""

    rank: int
    host: str
    message: str

    def __str__(self) -> str:
        return self.message


class MultiNode:
    """All nodes of one multi-node profile."""

    def __init__(self, profile: Profile, pool: ConnectionPool, runs_dir: str | None = None) -> None:
        if not profile.nodes:
            raise ValueError(f"profile {profile.name!r} has no `nodes:`")
        self.profile = profile
        self.pool = pool
        self.nodes: list[NodeRun] = []
        for rank, node in enumerate(profile.nodes):
            conn = pool.get(node.host)
            target = Target.from_mapping({"kind": node.target.kind, "id": node.target.id})
            config = pool.hosts.get(node.host)
            where = runs_dir or profile.runs_dir or (config.runs_dir if config is not None else None)
            manager = RunManager(conn, target, where)
            self.nodes.append(NodeRun(rank, node.host, target, conn, manager))

    @property
    def head(self) -> NodeRun:
        return self.nodes[0]

    @property
    def workers(self) -> list[NodeRun]:
        return self.nodes[1:]

    def node(self, rank: int) -> NodeRun:
        return self.nodes[rank]

    # --- address -----------------------------------------------------------------------------------

    def head_address(self) -> str:
        """Node 0's address as the other nodes reach it: its SSH host name (an address or a name the
        cluster resolves). A container with its own network needs `dist_init_addr` in the profile."""
        config = self.pool.hosts.get(self.head.host)
        return config.hostname if config is not None else self.head.host

    async def dist_init_addr(self) -> str:
        """The profile's `dist_init_addr`, or node 0's address and a port node 0 finds free now."""
        if self.profile.dist_init_addr:
            return self.profile.dist_init_addr
        head = self.head
        result = await head.conn.run(head.target.command([self.profile.python, "-c", _FREE_PORT]), timeout=60)
        marker = shell.parse_marker(result.stdout)
        if marker is None or not isinstance(marker.get("port"), int):
            detail = (result.stderr or result.stdout).strip()[-200:] or f"exit {result.rc}"
            raise RemoteError(
                f"{head.label}: cannot pick a free port for distributed init ({detail}); set "
                "`dist_init_addr: HOST:PORT` in the profile"
            )
        return format_address(self.head_address(), int(marker["port"]))

    # --- pre-launch checks (sgtui.remote.multinode_checks) ----------------------------------------

    async def precheck(self, dist_init_addr: str) -> list[NodeProblem]:
        """Check every node in parallel; every problem found, one line each naming its node."""
        from sgtui.remote.multinode_checks import precheck

        return await precheck(self, dist_init_addr)

    # --- launch, find, stop ------------------------------------------------------------------------

    async def launch(
        self,
        dist_init_addr: str,
        profile_yaml: str | None,
        on_launched: Callable[[RunRecord], None] | None = None,
    ) -> list[RunRecord]:
        """Node 0 first (it serves the store the others meet at), then the others together, each with
        its rank; all under one new run id. A node that fails to start leaves the started ones running
        (the caller stops them or shows them: they are found again by their shared id)."""
        run_id = new_run_id()
        gpus = list(self.profile.gpus or [])

        async def one(node: NodeRun) -> RunRecord:
            record = await node.manager.launch(
                self.profile.node_command(node.rank, dist_init_addr),
                self.profile.node_env(node.rank),
                profile_yaml,
                gpus,
                run_id=run_id,
                node_rank=node.rank,
                profile_name=self.profile.name,
            )
            if on_launched is not None:
                on_launched(record)
            return record

        records = [await one(self.head)]
        found = await asyncio.gather(*(one(n) for n in self.workers), return_exceptions=True)
        failed = [f for f in found if isinstance(f, BaseException)]
        records += [f for f in found if isinstance(f, RunRecord)]
        if failed:
            raise PartialLaunchError(records, failed[0])
        return records

    async def list_runs(self) -> list[list[RunRecord]]:
        """Every multi-node run recorded on these nodes, each as its node records (by rank), newest first."""
        found = await asyncio.gather(*(n.manager.list_runs() for n in self.nodes), return_exceptions=True)
        runs: dict[str, dict[int, RunRecord]] = {}
        for node, records in zip(self.nodes, found, strict=True):
            if isinstance(records, BaseException):
                raise records if isinstance(records, RemoteError) else RemoteError(f"{node.label}: {records}")
            for record in records:
                if record.node_rank == node.rank:
                    runs.setdefault(record.id, {})[node.rank] = record
        return [
            [by_rank[r] for r in sorted(by_rank)]
            for run_id, by_rank in sorted(runs.items(), key=lambda kv: kv[0], reverse=True)
        ]

    async def find_run(self, run_id: str) -> list[RunRecord]:
        for records in await self.list_runs():
            if records[0].id == run_id:
                return records
        return []

    def manager_for(self, record: RunRecord) -> RunManager:
        return self.nodes[record.node_rank or 0].manager

    async def stop(
        self,
        records: Sequence[RunRecord],
        grace: float = 10.0,
        on_progress: Callable[[RunRecord, float, int], None] | None = None,
    ) -> list[tuple[RunRecord, StopResult | BaseException]]:
        """Workers first (together), then node 0, as SGLang's own teardown expects: node 0's schedulers
        would otherwise sit in collectives waiting for ranks that are gone. Results in the order stopped."""

        async def one(record: RunRecord) -> tuple[RunRecord, StopResult | BaseException]:
            def progress(seconds: float, members: int) -> None:
                if on_progress is not None:
                    on_progress(record, seconds, members)

            try:
                return record, await self.manager_for(record).stop(record, grace, progress)
            except RemoteError as exc:
                return record, exc

        workers = [r for r in records if (r.node_rank or 0) != 0]
        heads = [r for r in records if (r.node_rank or 0) == 0]
        done = list(await asyncio.gather(*(one(r) for r in workers)))
        for record in heads:
            done.append(await one(record))
        return done

    async def wait_gpus_free(self, records: Sequence[RunRecord], timeout: float) -> list[GpuSnapshot]:
        """Every node's GPUs free again (raises the first node's GpusBusyError, naming that host)."""
        return list(
            await asyncio.gather(
                *(
                    self.manager_for(r).wait_gpus_free(r, None, timeout, GpuSampler(self.manager_for(r).conn))
                    for r in records
                )
            )
        )

    async def restart(
        self,
        records: Sequence[RunRecord],
        profile_yaml: str | None,
        *,
        grace: float = 10.0,
        gpu_timeout: float = 60.0,
        on_launched: Callable[[RunRecord], None] | None = None,
    ) -> list[RunRecord]:
        """Stop every node (workers first), wait until every node's GPUs are free, check again, launch
        anew (node 0 first) under a new run id. Raises RemoteError (or GpusBusyError naming the host)
        before launching anything when a node is not clean."""
        for record, result in await self.stop(records, grace):
            if isinstance(result, BaseException):
                raise result if isinstance(result, RemoteError) else RemoteError(str(result))
            if not result.clean:
                raise RemoteError(
                    f"node {record.node_rank} ({record.host}): run {record.id} left processes behind; "
                    "not relaunching"
                )
        await self.wait_gpus_free(records, gpu_timeout)
        addr = await self.dist_init_addr()
        problems = await self.precheck(addr)
        if problems:
            raise RemoteError("; ".join(str(p) for p in problems))
        return await self.launch(addr, profile_yaml, on_launched)


class PartialLaunchError(RemoteError):
    """Some nodes started and one did not: `records` are the started ones (stop them, or look at them)."""

    def __init__(self, records: list[RunRecord], cause: BaseException) -> None:
        super().__init__(_reason(cause))
        self.records = records
        self.cause = cause


# --- helpers -----------------------------------------------------------------------------------------


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def records_json(records: Sequence[RunRecord]) -> str:
    return json.dumps([r.to_json() for r in records])


async def store_peers(node: NodeRun, port: int) -> list[str] | None:
    """Source addresses connected to `port` on this node now (its /proc/net/tcp, inside the target's
    network namespace); None when that cannot be read."""
    from sgtui.core.node_progress import store_peers_from_proc

    script = "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; echo '@@sgtui {}'"
    try:
        result = await node.conn.run(node.target.script(script), timeout=30)
    except RemoteError:
        return None
    if shell.parse_marker(result.stdout) is None:
        return None
    return store_peers_from_proc(result.stdout, port)


async def node_addresses(pool: ConnectionPool, hosts: Sequence[str]) -> list[list[str]]:
    """The addresses each host's SSH name resolves to on this machine (where the node's traffic comes from,
    on a flat cluster network)."""
    import socket

    loop = asyncio.get_running_loop()

    async def one(alias: str) -> list[str]:
        config = pool.hosts.get(alias)
        name = config.hostname if config is not None else alias
        try:
            infos = await loop.getaddrinfo(name, None, type=socket.SOCK_STREAM)
        except OSError:
            return [name]
        return sorted({str(info[4][0]) for info in infos} | {name})

    return list(await asyncio.gather(*(one(h) for h in hosts)))
