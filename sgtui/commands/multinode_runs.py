"""`sgtui runs` and `sgtui stop` for a multi-node profile: every node's record of a run, under its one id.

`runs --profile P` lists, newest run first, one row per node (node_rank 0, 1, ...), each with the state
its own host reports. `stop RUN_ID --profile P` finds the run's record on every node, shows each, asks
once (unless --yes), stops the workers first and node 0 last, and exits 0 only when every node's run is
gone (1 when something is left on any node, 2 when a record is refused or the run is unknown).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sgtui.core.profiles import Profile
    from sgtui.remote.multinode import MultiNode
    from sgtui.remote.runs import RunRecord, RunStatus


def open_nodes(profile: Profile) -> MultiNode:
    from sgtui.commands.launch import ask_password
    from sgtui.remote.connection import ConnectionPool
    from sgtui.remote.multinode import MultiNode

    pool = ConnectionPool(password_cb=ask_password if sys.stdin.isatty() else None)
    return MultiNode(profile, pool, getattr(profile, "runs_dir", None))


def node_run_json(record: RunRecord, status: RunStatus | None, problem: str | None = None) -> dict[str, Any]:
    """One node's run as `sgtui runs --json` prints it (DESIGN.md's fields)."""
    from sgtui.remote.runs import RunState

    state = "dead"
    if getattr(record, "foreign", None):
        state = "foreign"
    elif status is not None:
        state = {RunState.RUNNING: "running", RunState.EXITED: "exited"}.get(status.state, "dead")
        if status.state.value == "foreign":
            state = "foreign"
    started = (
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.started_at)) if record.started_at else None
    )
    target = "host" if record.target.kind == "host" else f"{record.target.kind}:{record.target.id}"
    data = {
        "id": record.id,
        "host": record.host,
        "target": target,
        "node_rank": record.node_rank,
        "state": state,
        "pid": record.pid or None,
        "pgid": record.pgid or None,
        "user": getattr(record, "user", None),
        "started": started,
        "rc": status.rc if status is not None else None,
        "log_path": record.log_path,
        "argv": list(record.argv),
    }
    if problem:
        data["problem"] = problem
    return data


async def statuses(nodes: MultiNode, records: list[RunRecord]) -> list[tuple[RunStatus | None, str | None]]:
    from sgtui.remote.connection import RemoteError

    async def one(record: RunRecord) -> tuple[RunStatus | None, str | None]:
        if getattr(record, "foreign", None):
            return None, str(record.foreign)  # type: ignore[attr-defined]
        try:
            return await nodes.manager_for(record).status(record), None
        except RemoteError as exc:
            return None, str(exc)

    return list(await asyncio.gather(*(one(r) for r in records)))


async def runs_multinode(profile: Profile, *, as_json: bool) -> int:
    from sgtui.remote.connection import RemoteError

    nodes = open_nodes(profile)
    try:
        runs = await nodes.list_runs()
        rows: list[dict[str, Any]] = []
        for records in runs:
            for record, (status, problem) in zip(records, await statuses(nodes, records), strict=True):
                rows.append(node_run_json(record, status, problem))
    except RemoteError as exc:
        print(f"sgtui runs: {exc}", file=sys.stderr)
        return 1
    finally:
        await nodes.pool.close()
    if as_json:
        print(json.dumps(rows, ensure_ascii=False))
        return 0
    hosts = ", ".join(n.label for n in nodes.nodes)
    if not rows:
        print(f"no runs of {profile.name} recorded on {hosts}")
        return 0
    print(f"runs of {profile.name} on {hosts}, newest first:")
    for row in rows:
        state = row["state"] + (f" rc={row['rc']}" if row["rc"] is not None else "")
        print(
            f"  {row['id']}  node {row['node_rank']} {row['host']:<12} {state:<10} "
            f"pgid {row['pgid'] or '?':<8} {row['log_path']}"
        )
        if row.get("problem"):
            print(f"    {row['problem']}")
    return 0


async def stop_multinode(profile: Profile, run_id: str, grace: float, yes: bool) -> int:
    from sgtui.remote.connection import RemoteError

    nodes = open_nodes(profile)
    try:
        try:
            records = await nodes.find_run(run_id)
        except RemoteError as exc:
            print(f"sgtui stop: {exc}", file=sys.stderr)
            return 1
        if not records:
            print(
                f"sgtui stop: no run {run_id} on the nodes of {profile.name}; `sgtui runs --profile "
                f"{profile.name}` lists them",
                file=sys.stderr,
            )
            return 2
        refused = [r for r in records if getattr(r, "foreign", None)]
        for record in refused:
            print(
                f"sgtui stop: refusing node {record.node_rank} ({record.host}) of run {run_id}: "
                f"{record.foreign}",
                file=sys.stderr,
            )  # type: ignore[attr-defined]
        if refused:
            return 2
        missing = sorted(set(range(len(nodes.nodes))) - {r.node_rank or 0 for r in records})
        print(f"stop {run_id} ({profile.name}), workers first, node 0 last:")
        for record in sorted(records, key=lambda r: -(r.node_rank or 0)):
            print(
                f"  node {record.node_rank} {record.host} ({record.target.label}): pgid {record.pgid}, "
                f"log {record.log_path}"
            )
        for rank in missing:
            print(f"  node {rank} {nodes.node(rank).host}: no record of this run there (nothing to stop)")
        if not yes:
            if not sys.stdin.isatty():
                print("sgtui stop: no terminal to ask on; pass --yes to stop without asking", file=sys.stderr)
                return 2
            try:
                answer = input("Stop every node? [y/N] ").strip().lower()
            except EOFError:
                answer = ""
            if answer not in ("y", "yes"):
                print("not stopped")
                return 2

        def progress(record: RunRecord, seconds: float, members: int) -> None:
            print(
                f"  node {record.node_rank} {record.host}: waiting for {members} process(es) after TERM: "
                f"{seconds:.1f} s",
                file=sys.stderr,
            )

        results = await nodes.stop(records, grace, progress)
    finally:
        await nodes.pool.close()
    clean = True
    for record, result in results:
        where = f"node {record.node_rank} ({record.host})"
        if isinstance(result, BaseException):
            print(f"{where}: {result}", file=sys.stderr)
            clean = clean and "now belongs to another process" in str(result)
            continue
        if result.result == "not-running":
            print(f"{where}: had already ended; nothing was signalled")
        elif result.result == "stopped":
            print(f"{where}: stopped ({result.signal}) in {result.seconds:.1f} s")
        else:
            print(f"{where}: {result.members} process(es) survived KILL", file=sys.stderr)
            clean = False
        for left in getattr(result, "left", ()):
            print(f"{where}: still alive outside its process group: {left.describe()}", file=sys.stderr)
            clean = False
    return 0 if clean else 1
