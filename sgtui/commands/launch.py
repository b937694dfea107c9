"""`sgtui launch PROFILE [--host H] [--force] [--watch] [--json-events] [--stall-after S]`: a headless launch.

First the preflight (`remote/preflight.py`): the fit with the target's release and live GPU memory, and the
target checks; its event comes first. When it predicts a failure (the fit says "fails", or a blocking check
failed: port taken, GPUs held by others, no model there) nothing is launched and the exit code is 3, unless
`--force`.

With --watch it follows the run's log through the one analysis path (core.logs: feed, process_exited,
finish, check_stall) and prints each startup milestone as it appears (elapsed time and the values the line
carried), then the diagnosis; exit 0 once the server is ready, 1 when the launch failed or stalled. A
dropped connection is resumed from the last byte read (the tail does that), and the run's own status is
polled so a server that dies without a word is noticed too.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sgtui.commands.events import Printer
from sgtui.commands.watch import GIVE_UP_AFTER_S, Watch

if TYPE_CHECKING:
    pass

HELP = "launch a profile headless; --watch follows it to ready or failure"

PREDICTED_FAILURE = 3  # the exit code when the preflight predicts a failure and nothing was launched


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("profile", help="a profile YAML file, or the name of one in sgtui's profiles dir")
    parser.add_argument("--host", help="run on this host instead of the profile's `host`")
    parser.add_argument(
        "--watch", action="store_true", help="follow the log until ready (exit 0) or failed (1)"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="launch even when the preflight predicts a failure (otherwise: exit 3, nothing launched)",
    )
    parser.add_argument(
        "--json-events", action="store_true", help="print one JSON object per event instead of text lines"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="with --watch: give up (exit 1) after this many seconds without ready or failure",
    )
    parser.add_argument(
        "--stall-after",
        type=float,
        default=None,
        metavar="S",
        help="with --watch: a phase with no progress for S seconds is a stall (exit 1); default: scaled "
        "per phase from what the log says (model size, TP, loading rate); on a multi-node profile the "
        "stall names the nodes and ranks that did not arrive",
    )
    parser.add_argument(
        "--give-up-after",
        type=float,
        default=GIVE_UP_AFTER_S,
        metavar="S",
        help=f"with --watch: stop watching (exit 1) after S seconds without a connection to the host "
        f"(default {GIVE_UP_AFTER_S:g}); the server is not stopped",
    )


def run(args: argparse.Namespace) -> int:
    import asyncio

    from sgtui.core.errors import UserError

    if args.timeout is not None and not args.timeout > 0:  # NaN too: a limit that could never fire
        raise UserError(f"--timeout {args.timeout:g}: give a positive number of seconds")
    stall_after = getattr(args, "stall_after", None)
    if stall_after is not None and not stall_after > 0:
        raise UserError(f"--stall-after {stall_after:g}: give a positive number of seconds")
    give_up = getattr(args, "give_up_after", GIVE_UP_AFTER_S)
    if not give_up > 0:
        raise UserError(f"--give-up-after {give_up:g}: give a positive number of seconds")
    path = resolve_profile_path(args.profile)
    printer = Printer(json_events=args.json_events)
    return asyncio.run(
        launch(
            path,
            host=args.host,
            watch=args.watch,
            printer=printer,
            timeout=args.timeout,
            stall_after=stall_after,
            give_up_after=give_up,
            force=args.force,
        )
    )


def resolve_profile_path(name: str) -> Path:
    """A path as given, else `<profiles dir>/NAME[.yaml|.yml]`; a UserError saying where it looked."""
    from sgtui.core.errors import UserError
    from sgtui.core.paths import profiles_dir

    given = Path(name).expanduser()
    if given.is_file():
        return given
    folder = profiles_dir()
    named = [folder / name] + ([] if name.endswith((".yaml", ".yml")) else [folder / f"{name}.yaml"])
    for candidate in (*named, folder / f"{name}.yml"):
        if candidate.is_file():
            return candidate
    if given.is_dir():
        raise UserError(
            f"profile {name!r} is a directory; give a YAML file in it, or a profile's name from {folder}"
        )
    raise UserError(f"profile {name!r}: no such file, and no {named[-1].name} in {folder}")


async def launch(
    path: Path,
    *,
    host: str | None,
    watch: bool,
    printer: Printer,
    timeout: float | None,
    stall_after: float | None = None,
    give_up_after: float = GIVE_UP_AFTER_S,
    force: bool = False,
) -> int:
    from sgtui.core.profiles import dump_profile, load_profile
    from sgtui.remote.connection import ConnectionPool, RemoteError
    from sgtui.remote.flag_probe import cached_table
    from sgtui.remote.runs import RunManager
    from sgtui.remote.targets import Target

    # ProfileError (a UserError) lists every problem; the CLI exits 2. A table read from the target before
    # (the app, `sgtui flags --profile`) checks the flags, so a dev build's own flags are accepted.
    profile = load_profile(path, flag_tables=cached_table)
    if profile.nodes:
        from sgtui.commands.launch_multinode import launch_multinode
        from sgtui.core.errors import UserError

        if host is not None:
            raise UserError(f"--host {host}: {path} is a multi-node profile; its `nodes:` name the hosts")
        return await launch_multinode(
            profile,
            path,
            watch=watch,
            printer=printer,
            timeout=timeout,
            stall_after=stall_after,
            password_cb=ask_password if sys.stdin.isatty() else None,
            force=force,
            give_up_after=give_up_after,
        )
    host_name = host or profile.host
    pool = ConnectionPool(password_cb=ask_password if sys.stdin.isatty() else None)
    conn = pool.get(host_name)
    target = Target.from_mapping({"kind": profile.target.kind, "id": profile.target.id})
    runs_dir = profile.runs_dir or pool.hosts[host_name].runs_dir
    manager = RunManager(conn, target, runs_dir, keep_runs=profile.keep_runs)
    argv = profile.command
    from sgtui.commands import interrupt
    from sgtui.commands.launch_leftover import stop_command
    from sgtui.commands.runs import target_text

    where = {"host": host_name, "target": target_text(target)}
    record = stop = None
    try:
        from sgtui.remote.preflight import run_preflight

        await conn.connect()  # a host that cannot be reached is a failure (1), not a prediction (3)
        checked = await run_preflight(conn, target, profile)
        printer.preflight(checked.preflight, checked.report)
        if not printer.go_ahead(checked.preflight, force=force):
            return PREDICTED_FAILURE
        record, cut = await interrupt.finish_launch(
            manager.launch(
                argv, profile.env, dump_profile(profile), profile.gpus or [], profile_name=profile.name
            ),
            printer,
        )
        printer.emit(
            "launched",
            f"launched {profile.name} on {host_name} ({target.label}): pid {record.pid}, "
            f"log {record.log_path}",
            run=record.to_json(),
        )
        stop = stop_command(record, profile=None if host else str(path), **where)
        if cut:
            return interrupt.left_running(printer, record.id, f"pid {record.pid}", stop)
        if not watch:
            return 0
        import shlex

        follow = Watch(
            manager,
            record,
            printer,
            timeout,
            stall_after,
            stop_command=stop,
            give_up_after=give_up_after,
            fit=checked.report,
        )
        places = ["--host", host_name, "--target", where["target"]] if host else ["--profile", str(path)]
        follow.place = shlex.join(places)
        return await follow.run()
    except asyncio.CancelledError:  # Ctrl-C (asyncio.run cancels this task): say what runs, if anything
        if record is None or stop is None:
            return interrupt.nothing_launched(printer)
        return interrupt.left_running(printer, record.id, f"pid {record.pid}", stop)
    except RemoteError as exc:
        if getattr(exc, "maybe_running", False):  # cut by a lost connection: it may have started
            printer.emit("unknown", f"unknown: {exc}", message=str(exc), maybe_running=True)
            return 1
        printer.emit("error", f"error: {exc}", message=str(exc))
        return 1
    finally:
        await conn.close()


async def ask_password(prompt: str) -> str | None:
    """Ask on the terminal (no echo); the answer lives only in memory for this connection attempt."""
    import asyncio
    import getpass

    try:
        return await asyncio.to_thread(getpass.getpass, f"sgtui: {prompt}: ")
    except (EOFError, KeyboardInterrupt):
        return None
