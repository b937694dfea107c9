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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sgtui.core.profiles import Profile
    from sgtui.remote.connection import RemoteError
    from sgtui.remote.multinode import MultiNode
    from sgtui.remote.runs import RunRecord, RunStatus


def open_nodes(profile: Profile) -> MultiNode:
    from sgtui.commands.launch import ask_password
    from sgtui.remote.connection import ConnectionPool
    from sgtui.remote.multinode import MultiNode

    pool = ConnectionPool(password_cb=ask_password if sys.stdin.isatty() else None)
    return MultiNode(profile, pool)


def multinode_profile(name: str, target: str | None) -> Profile | None:
    """The profile named by --profile when it is a multi-node one (None: the single-node commands)."""
    from sgtui.commands.launch import resolve_profile_path
    from sgtui.core.errors import UserError
    from sgtui.core.profiles import load_profile

    profile = load_profile(resolve_profile_path(name))
    if not profile.nodes:
        return None
    if target:
        raise UserError("--target goes with --host; a multi-node profile names each node's target")
    return profile


async def statuses(nodes: MultiNode, records: list[RunRecord]) -> list[RunStatus | RemoteError]:
    from sgtui.remote.connection import RemoteError

    async def one(record: RunRecord) -> RunStatus | RemoteError:
        try:
            return await nodes.manager_for(record).status(record)
        except RemoteError as exc:
            return exc

    return list(await asyncio.gather(*(one(r) for r in records)))


async def runs_multinode(profile: Profile, *, as_json: bool) -> int:
    from sgtui.commands.runs import aligned, run_json
    from sgtui.remote.connection import RemoteError

    nodes = open_nodes(profile)
    try:
        runs = await nodes.list_runs()
        rows: list[dict[str, Any]] = []
        problems: list[str] = []
        for records in runs:
            for record, status in zip(records, await statuses(nodes, records), strict=True):
                if isinstance(status, RemoteError):
                    problems.append(f"run {record.id} node {record.node_rank} ({record.host}): {status}")
                    continue
                rows.append(run_json(record, status))
                if record.foreign:
                    problems.append(
                        f"refusing run {record.id} node {record.node_rank} ({record.host}): "
                        f"{record.foreign}; it is listed as foreign and never signalled"
                    )
    except RemoteError as exc:
        print(f"sgtui runs: {exc}", file=sys.stderr)
        return 1
    finally:
        await nodes.pool.close()
    if as_json:
        print(json.dumps(rows, ensure_ascii=False))
        for problem in problems:
            print(f"sgtui runs: {problem}", file=sys.stderr)
        return 0
    hosts = ", ".join(n.label for n in nodes.nodes)
    if not rows:
        print(f"no runs of {profile.name} recorded on {hosts}")
        return 0
    print(f"runs of {profile.name} on {hosts}, newest first:")
    table = [["RUN", "NODE", "HOST", "STATE", "PGID", "LOG"]]
    for row in rows:
        state = row["state"] + (f" rc={row['rc']}" if row["rc"] is not None else "")
        table.append(
            [row["id"], str(row["node_rank"]), row["host"], state, str(row["pgid"] or "?"), row["log_path"]]
        )
    for line in aligned(table):
        print(line)
    for problem in problems:
        print(problem)
    return 0


async def stop_multinode(profile: Profile, run_id: str, grace: float, yes: bool) -> int:
    from sgtui.commands.stop import kept_record
    from sgtui.remote.connection import RemoteError
    from sgtui.remote.run_store import RunStore

    nodes = open_nodes(profile)
    store = RunStore()
    kept: list[str] = []  # one line per node found only in this machine's records (its run dir is gone)
    try:
        try:
            records = await nodes.find_run(run_id)
            for rank in sorted(set(range(len(nodes.nodes))) - {r.node_rank or 0 for r in records}):
                found = await kept_record(store, nodes.node(rank).manager, run_id, rank)
                if found is not None:
                    records.append(found[0])
                    kept.append(f"  node {rank} {found[0].host} ({found[0].target.label}): {found[1]}")
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
        for line in kept:
            print(line)
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
    store.mark_ended(r for r, result in results if not isinstance(result, BaseException) and result.clean)
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
            for line in result.step_lines():
                print(f"{where}:   {line}")
        else:
            print(f"{where}: {result.members} process(es) survived KILL", file=sys.stderr)
            clean = False
        for left in getattr(result, "left", ()):
            print(f"{where}: still alive outside its process group: {left.describe()}", file=sys.stderr)
            clean = False
    return 0 if clean else 1
