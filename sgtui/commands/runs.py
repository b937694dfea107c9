"""`sgtui runs (--profile P | --host H [--target T]) [--json]`: the runs sgtui recorded on a target.

Newest first, each with its state from the target: running, exited (ended by itself, with its exit
code), stopped (ended after a stop by sgtui, which recorded it), dead (gone without an exit code and
without a recorded stop: killed, rebooted, a full disk or its container gone: `RunStatus.note` says
which, as the TUI does), or foreign (a record this user may not act on; the reason is printed, on
stderr with --json, and nothing is signalled). The place options are shared with `sgtui stop`.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sgtui.remote.connection import Transport
    from sgtui.remote.runs import RunManager, RunRecord, RunStatus
    from sgtui.remote.targets import Target

HELP = "list the runs sgtui launched on a target, newest first (--json for scripts)"


def add_place_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", help="the profile's host, target and runs_dir")
    parser.add_argument("--host", help="a host from ~/.ssh/config or hosts.yaml")
    parser.add_argument(
        "--target", help="with --host: host (default), pct:VMID or docker:NAME, where the runs live"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_place_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON list")
    parser.add_argument(
        "--prune",
        action="store_true",
        help="first remove the ended runs beyond the newest --keep (never a running or a foreign one)",
    )
    parser.add_argument(
        "--keep",
        type=int,
        help="with --prune: ended runs to keep (default: the profile's keep_runs, else hosts.yaml's, "
        "else 20)",
    )


@dataclass(frozen=True)
class Place:
    """Where to look: a host, a target on it, and the runs dir (None: hosts.yaml's, else the default);
    `keep_runs`: the profile's (None: hosts.yaml's, else the default)."""

    host: str
    target: Target
    runs_dir: str | None
    keep_runs: int | None = None


def parse_target(text: str) -> Target:
    from sgtui.core.errors import UserError
    from sgtui.core.shell import ShellError
    from sgtui.remote.targets import Target

    kind, _, ident = text.partition(":")
    try:
        if kind == "host" and not ident:
            return Target()
        if kind in ("pct", "docker") and ident:
            return Target(kind, ident)  # type: ignore[arg-type]
    except ShellError as exc:
        raise UserError(f"--target {text!r}: {exc}") from None
    raise UserError(f"--target {text!r}: use host, pct:VMID (e.g. pct:129) or docker:NAME")


def resolve_place(args: argparse.Namespace) -> Place:
    """--profile P, or --host H with an optional --target; a UserError for anything else."""
    from sgtui.core.errors import UserError
    from sgtui.remote.targets import Target

    if args.profile and args.host:
        raise UserError("--profile and --host both name the place: give one (a profile names its host)")
    if not args.profile and not args.host:
        raise UserError("name the place: --profile PROFILE, or --host HOST [--target pct:VMID|docker:NAME]")
    if args.profile:
        from sgtui.commands.launch import resolve_profile_path
        from sgtui.core.profiles import load_profile

        if args.target:
            raise UserError("--target goes with --host; a profile names its own target")
        profile = load_profile(resolve_profile_path(args.profile))
        target = Target.from_mapping({"kind": profile.target.kind, "id": profile.target.id})
        return Place(profile.host, target, profile.runs_dir, profile.keep_runs)
    return Place(args.host, parse_target(args.target or "host"), None)


def open_manager(place: Place) -> tuple[Transport, RunManager]:
    """The host's connection and a RunManager for the place's runs dir (profile's, else hosts.yaml's)."""
    from sgtui.commands.launch import ask_password
    from sgtui.remote.connection import ConnectionPool
    from sgtui.remote.runs import RunManager

    pool = ConnectionPool(password_cb=ask_password if sys.stdin.isatty() else None)
    conn = pool.get(place.host)
    runs_dir = place.runs_dir or pool.hosts[place.host].runs_dir
    return conn, RunManager(conn, place.target, runs_dir, keep_runs=place.keep_runs)


def target_text(target: Target) -> str:
    return "host" if target.kind == "host" else f"{target.kind}:{target.id}"


_LIVE = frozenset({"running", "foreign"})  # RunState values whose local record is not marked ended


def state_name(status: RunStatus) -> str:
    from sgtui.remote.runs import RunState

    return {
        RunState.RUNNING: "running",
        RunState.EXITED: "exited",
        RunState.STOPPED: "stopped",  # ended after a stop by sgtui (recorded by the stop)
        RunState.FOREIGN: "foreign",
    }.get(status.state, "dead")


def aligned(rows: list[list[str]]) -> list[str]:
    """Rows as lines with every column as wide as its widest cell (the last one unpadded), indented 2:
    a state like "exited rc=143" or a node column no longer pushes the rest out of line. A record's fields
    come from the target (another user's, on a shared box): no cell carries a control character."""
    from sgtui.core.logs.prefix import strip_controls

    rows = [[strip_controls(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  " + "  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]) for row in rows
    ]


def run_json(record: RunRecord, status: RunStatus) -> dict[str, Any]:
    """One run as the `sgtui runs --json` contract has it (DESIGN.md), nothing more."""
    started = (
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.started_at)) if record.started_at else None
    )
    return {
        "id": record.id,
        "host": record.host,
        "target": target_text(record.target),
        "node_rank": record.node_rank,
        "state": state_name(status),
        "pid": record.pid or None,
        "pgid": record.pgid or None,
        "user": record.user,
        "started": started,
        "rc": status.rc,
        "log_path": record.log_path,
        "argv": list(record.argv),
    }


def run(args: argparse.Namespace) -> int:
    import asyncio

    from sgtui.core.errors import UserError

    keep = getattr(args, "keep", None)
    prune = bool(getattr(args, "prune", False))
    if keep is not None and not prune:
        raise UserError("--keep goes with --prune")
    if keep is not None and not 1 <= keep <= 100_000:
        raise UserError(f"--keep {keep}: give the number of ended runs to keep (1 to 100000)")
    if args.profile and not args.host:
        from sgtui.commands.multinode_runs import multinode_profile, runs_multinode

        profile = multinode_profile(args.profile, args.target)
        if profile is not None:
            if prune:
                raise UserError("--prune works on one target: give each node's --host (and --target)")
            return asyncio.run(runs_multinode(profile, as_json=args.json))
    return asyncio.run(_runs(resolve_place(args), as_json=args.json, prune=prune, keep=keep))


async def listed(manager: RunManager, notes: list[str] | None = None) -> list[tuple[RunRecord, RunStatus]]:
    """Every run with its status, newest first (a foreign record's status is never asked for). With
    `notes`: also the runs still running that the target no longer lists but this machine kept a record
    of at launch (their run dir was removed: `RunStatus.note` says so), each with a note naming the file;
    a damaged local record adds its line to `notes`. Runs seen ended are marked so in the local store
    (remote/run_store.py), so its records age out."""
    import asyncio

    from sgtui.remote.run_store import Kept, RunStore
    from sgtui.remote.runs import RunState

    records = list(reversed(await manager.list_runs()))
    store = RunStore()
    found: list[Kept] = []
    if notes is not None:
        found, problems = store.live_at(manager.host, manager.target, skip=(r.key for r in records))
        notes += [f"sgtui runs: {problem}" for problem in problems]
    statuses = await asyncio.gather(*(manager.status(r) for r in records))
    # a local record the target cannot answer for (a hand-edited run dir it refuses) is a note naming the
    # file, never the whole listing's failure
    asked = await asyncio.gather(*(manager.status(k.record) for k in found), return_exceptions=True)
    rows = list(zip(records, statuses, strict=True))
    seen = list(rows)
    for kept, status in zip(found, asked, strict=True):
        if isinstance(status, Exception):
            if notes is not None:
                notes.append(f"sgtui runs: {kept.path}: the record of run {kept.record.id}: {status}")
            continue
        if isinstance(status, BaseException):
            raise status
        seen.append((kept.record, status))
        if status.state is RunState.RUNNING and notes is not None:
            rows.append((kept.record, status))
            notes.append(f"sgtui runs: run {kept.record.id}: listed from this machine's record ({kept.path})")
    store.mark_ended(r for r, s in seen if s.state.value not in _LIVE)
    return sorted(rows, key=lambda row: row[0].id, reverse=True)


async def _runs(place: Place, *, as_json: bool, prune: bool = False, keep: int | None = None) -> int:
    import json

    from sgtui.remote.connection import RemoteError

    conn, manager = open_manager(place)
    kept_notes: list[str] = []
    try:
        rows = await listed(manager, kept_notes)
        if prune:
            from sgtui.remote.run_prune import prune as prune_runs

            done = await prune_runs(manager, keep or manager.keep_runs, rows)
            gone = set(done.removed)
            rows = [(r, s) for r, s in rows if r.key not in gone]
            said = (
                f"pruned {len(done.removed)} ended run(s) on {place.host} ({manager.target.label}), "
                f"kept the newest {done.kept}" + (f": {', '.join(done.removed)}" if done.removed else "")
            )
            print(said, file=sys.stderr if as_json else sys.stdout)
            for name, why in done.refused:
                print(f"sgtui runs: not pruned {name}: {why}", file=sys.stderr)
    except RemoteError as exc:
        print(f"sgtui runs: {exc}", file=sys.stderr)
        return 1
    finally:
        await conn.close()
    notes = (
        [
            f"sgtui runs: refusing run {r.id}: {r.foreign}; it is listed as foreign and never signalled"
            for r, _ in rows
            if r.foreign
        ]
        + [f"sgtui runs: run {r.id}: {s.note}" for r, s in rows if s.note]
        + kept_notes
    )
    if as_json:
        print(json.dumps([run_json(r, s) for r, s in rows], ensure_ascii=False))
        for note in notes:
            print(note, file=sys.stderr)
        return 0
    where = f"{place.host} ({manager.target.label})"
    if not rows:
        print(f"no runs recorded on {where} in {manager.runs_dir}")
        return 0
    print(f"runs on {where} in {manager.runs_dir}, newest first:")
    table = [["RUN", "STATE", "PGID", "USER", "PROFILE", "LOG"]]
    for record, status in rows:
        data = run_json(record, status)
        state = data["state"] + (f" rc={data['rc']}" if data["rc"] is not None else "")
        table.append(
            [
                record.id,
                state,
                str(data["pgid"] or "?"),
                record.user or "?",
                record.profile or "-",
                record.log_path,
            ]
        )
    for line in aligned(table):
        print(line)
    for note in notes:
        print(note.removeprefix("sgtui runs: "))
    return 0
