"""`sgtui stop RUN_ID (--profile P | --host H [--target T]) [--yes] [--grace S]`: stop one run.

Shows what the stop will hit first (the process group, its owner and age, the group leader's command
line next to the recorded one, with a warning when they differ) and asks, unless --yes. Then the stop
SGLang shuts down cleanly from: TERM to the server's main process and up to --grace seconds for it to
drain and stop its own children, then TERM to the group, then KILL, and a check that nothing of the run
is left, including processes that left its group (same session, or carrying its SGTUI_RUN_ID). Prints
the time of each step. A run that has already ended gets one line saying so, and no question. Exit 0
when stopped (or already ended), 1 when something is left, 2 on bad input or a record it refuses.

A run the target no longer lists (its run dir was removed while it runs) is found in the copy of its
record sgtui kept on this machine when it launched it (remote/run_store.py), said so, and then goes
through the same checks: the target verifies pid, process start time and boot id, and that the process
is sgtui's runner for that run dir's log, before anything is signalled.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgtui.remote.run_store import RunStore
    from sgtui.remote.runs import RunManager, RunRecord

HELP = (
    "stop one run: TERM its server's main process, let it drain, then TERM and KILL its process group; "
    "says what is left (asks first unless --yes)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sgtui.commands.runs import add_place_arguments

    parser.add_argument("run_id", metavar="RUN_ID", help="the run's id, as `sgtui runs` lists it")
    add_place_arguments(parser)
    parser.add_argument("--yes", action="store_true", help="do not ask before stopping")
    parser.add_argument(
        "--grace",
        type=float,
        default=10.0,
        help="seconds the server gets to drain after TERM to its main process, before the group gets TERM "
        "and then KILL (default 10)",
    )


def run(args: argparse.Namespace) -> int:
    import asyncio

    from sgtui.commands.runs import resolve_place
    from sgtui.core.errors import UserError
    from sgtui.core.runscripts import check_run_id

    if not args.grace >= 0:
        raise UserError(f"--grace {args.grace:g}: give the seconds the server may take to drain (0 or more)")
    try:
        check_run_id(args.run_id)
    except UserError as exc:
        raise UserError(f"{exc}; `sgtui runs` lists the ids") from None
    if args.profile and not args.host:
        from sgtui.commands.multinode_runs import multinode_profile, stop_multinode

        profile = multinode_profile(args.profile, args.target)
        if profile is not None:
            return asyncio.run(stop_multinode(profile, args.run_id, args.grace, args.yes))
    return asyncio.run(_stop(resolve_place(args), args.run_id, args.grace, args.yes))


def _ask(question: str) -> bool:
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        return False


async def _stop(place: object, run_id: str, grace: float, yes: bool) -> int:
    from sgtui.commands.runs import Place, open_manager
    from sgtui.remote.connection import RemoteError
    from sgtui.remote.run_store import RunStore
    from sgtui.remote.runs import ForeignRunError, PidReusedError

    assert isinstance(place, Place)
    conn, manager = open_manager(place)
    store = RunStore()
    try:
        records = {r.id: r for r in await manager.list_runs()}
        record = records.get(run_id)
        if record is None and (kept := await kept_record(store, manager, run_id)):
            record, said = kept
            print(f"run {run_id} on {place.host} ({place.target.label}) is {said}")
        if record is None:
            print(
                f"sgtui stop: no run {run_id} on {place.host} ({place.target.label}) in {manager.runs_dir}, "
                f"nor in the records this machine kept ({store.root}); `sgtui runs` lists the runs there",
                file=sys.stderr,
            )
            return 2
        manager.refuse(record, "stop")  # a foreign or unverifiable record: exit 2, nothing signalled
        try:
            preview = await manager.preview(record)
        except PidReusedError as exc:
            print(f"sgtui stop: {exc}")
            store.mark_ended([record])
            return 0
        if not preview.alive and not preview.outside:
            print(f"{run_id} had already ended; nothing was signalled")
            store.mark_ended([record])
            return 0
        print(f"stop {run_id} on {place.host} ({place.target.label}):")
        for line in preview.lines():
            print(f"  {line}")
        if not yes:
            if not sys.stdin.isatty():
                print("sgtui stop: no terminal to ask on; pass --yes to stop without asking", file=sys.stderr)
                return 2
            if not _ask("Stop it? [y/N] "):
                print("not stopped")
                return 2
        result = await manager.stop(record, grace, on_progress=_progress)
    except ForeignRunError as exc:
        print(f"sgtui stop: {exc}", file=sys.stderr)
        return 2
    except RemoteError as exc:
        print(f"sgtui stop: {exc}", file=sys.stderr)
        return 1
    finally:
        await conn.close()
    if result.clean:
        store.mark_ended([record])
    if result.result == "not-running":
        print(f"{run_id} had already ended; nothing was signalled")
    elif result.result == "stopped":
        how = "drained and ended on TERM" if result.graceful else f"last signal {result.signal}"
        print(f"stopped {run_id} ({how}) in {result.seconds:.1f} s:")
    else:
        print(f"{result.members} process(es) of {run_id}'s group survived KILL", file=sys.stderr)
    if result.result != "not-running":
        for line in result.step_lines():
            print(f"  {line}")
    for left in result.left:
        print(f"still alive outside its process group: {left.describe()}", file=sys.stderr)
    return 0 if result.clean else 1


async def kept_record(
    store: RunStore, manager: RunManager, run_id: str, node_rank: int | None = None
) -> tuple[RunRecord, str] | None:
    """The run's record as this machine kept it at launch, for a run the target's listing lacks (with
    `node_rank`: that node's), and a sentence saying why the listing lacks it (the status from the
    record: "its run dir ... was removed") and which file was used. A damaged file raises RunStoreError
    (exit 2, naming it); several nodes of one run on one target are left to `--profile`."""
    from sgtui.core.errors import UserError

    kept = [
        k
        for k in store.find(run_id, manager.host, manager.target)
        if node_rank is None or k.record.node_rank == node_rank
    ]
    if not kept:
        return None
    if len(kept) > 1:
        raise UserError(
            f"run {run_id} has {len(kept)} nodes on {manager.where} in this machine's records "
            f"({', '.join(str(k.path) for k in kept)}); stop it with --profile and its multi-node profile"
        )
    record = kept[0].record
    status = await manager.status(record)
    parent = record.run_dir.rsplit("/", 1)[0]
    why = status.note or (
        f"its run dir {record.run_dir} is missing"
        if parent == manager.runs_dir
        else f"it was launched into {parent}, not {manager.runs_dir}"
    )
    said = (
        f"not in the listing of {manager.runs_dir}: {why}; using the record this machine kept when sgtui "
        f"launched it ({kept[0].path})"
    )
    return record, said


def _progress(seconds: float, members: int) -> None:
    print(f"  waiting for {members} process(es) to exit after TERM: {seconds:.1f} s", file=sys.stderr)
