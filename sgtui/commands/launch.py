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
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sgtui.commands.events import Printer

if TYPE_CHECKING:
    from sgtui.core.logs import LogClassifier, LogEvent
    from sgtui.remote.runs import RunManager, RunRecord

HELP = "launch a profile headless; --watch follows it to ready or failure"

STATUS_POLL_S = 0.5  # how often --watch asks whether the process group is still alive
ERROR_SETTLE_S = 1.0  # after the first fatal line, read this much longer so the whole traceback is in
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


def run(args: argparse.Namespace) -> int:
    import asyncio

    from sgtui.core.errors import UserError

    if args.timeout is not None and args.timeout <= 0:
        raise UserError(f"--timeout {args.timeout:g}: give a positive number of seconds")
    stall_after = getattr(args, "stall_after", None)
    if stall_after is not None and stall_after <= 0:
        raise UserError(f"--stall-after {stall_after:g}: give a positive number of seconds")
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
    for candidate in (folder / name, folder / f"{name}.yaml", folder / f"{name}.yml"):
        if candidate.is_file():
            return candidate
    raise UserError(f"profile {name!r}: no such file, and no {name}.yaml in {folder}")


async def launch(
    path: Path,
    *,
    host: str | None,
    watch: bool,
    printer: Printer,
    timeout: float | None,
    stall_after: float | None = None,
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
        )
    host_name = host or profile.host
    pool = ConnectionPool(password_cb=ask_password if sys.stdin.isatty() else None)
    conn = pool.get(host_name)
    target = Target.from_mapping({"kind": profile.target.kind, "id": profile.target.id})
    runs_dir = profile.runs_dir or pool.hosts[host_name].runs_dir
    manager = RunManager(conn, target, runs_dir, keep_runs=profile.keep_runs)
    argv = [profile.python, "-m", "sglang.launch_server", *profile.argv]
    try:
        from sgtui.remote.preflight import run_preflight

        await conn.connect()  # a host that cannot be reached is a failure (1), not a prediction (3)
        checked = await run_preflight(conn, target, profile)
        printer.preflight(checked.preflight, checked.report)
        if not printer.go_ahead(checked.preflight, force=force):
            return PREDICTED_FAILURE
        record = await manager.launch(argv, profile.env, dump_profile(profile), profile.gpus or [])
        printer.emit(
            "launched",
            f"launched {profile.name} on {host_name} ({target.label}): pid {record.pid}, "
            f"log {record.log_path}",
            run=record.to_json(),
        )
        if not watch:
            return 0
        from sgtui.commands.launch_leftover import stop_command
        from sgtui.commands.runs import target_text

        where = {"host": host_name, "target": target_text(target)}
        stop = stop_command(record, profile=None if host else str(path), **where)
        return await Watch(manager, record, printer, timeout, stall_after, stop_command=stop).run()
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


def phase_label(phase: str) -> str:
    from sgtui.core.logs import PHASE_LABELS

    return PHASE_LABELS.get(phase, phase)


class Watch:
    """Follow one run to ready or failure: log chunks into the classifier, status polls on the side."""

    def __init__(
        self,
        manager: RunManager,
        record: RunRecord,
        printer: Printer,
        timeout: float | None,
        stall_after: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        stop_command: str | None = None,
    ) -> None:
        from sgtui.core.logs import LogClassifier

        self.manager = manager
        self.record = record
        self.printer = printer
        self.timeout = timeout
        self.classifier: LogClassifier = LogClassifier(clock=clock, stall_after=stall_after)
        self.error_seen_at: float | None = None
        self.exit_code: int | None = None
        self.exited = False
        self.stopped = False  # it ended on a stop by sgtui (RunState.STOPPED)
        self.offset = 0  # bytes of the log already classified
        self.stop_command = stop_command  # the exact `sgtui stop` of this run (launch_leftover.stop_command)

    async def run(self) -> int:
        import asyncio
        import contextlib

        from sgtui.commands.launch_leftover import end_watch

        tail = asyncio.ensure_future(self._follow())
        try:
            deadline = None if self.timeout is None else time.monotonic() + self.timeout
            while True:
                done = self._verdict()
                if done is not None:
                    return await end_watch(self, done)
                stall = self.classifier.check_stall()
                if stall is not None:
                    self._event(stall)
                    return await end_watch(self, "stalled")
                if deadline is not None and time.monotonic() > deadline:
                    self.printer.emit(
                        "timeout", f"gave up after {self.timeout:g} s: still {self.classifier.state.phase}"
                    )
                    return 1
                await asyncio.sleep(STATUS_POLL_S)
                await self._poll_status()
        finally:
            tail.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await tail

    async def _follow(self) -> None:
        async for chunk in self.manager.tail(self.record):
            if chunk.end <= self.offset:
                continue  # already read by _read_rest after the server exited
            self.offset = chunk.end
            for event in self.classifier.feed("\n".join(chunk.lines) + "\n"):
                self._event(event)

    async def _read_rest(self) -> None:
        """The tail delivers complete lines only: a server that died mid-line left its last words unread."""
        from sgtui.remote.connection import RemoteError

        try:
            rest = await self.manager.read_rest(self.record, self.offset)
        except RemoteError:
            return
        if rest.lines:
            self.offset = rest.end
            for event in self.classifier.feed("\n".join(rest.lines) + "\n"):
                self._event(event)

    async def _poll_status(self) -> None:
        from sgtui.remote.connection import RemoteError
        from sgtui.remote.runs import RunState

        if self.exited:
            return
        try:
            status = await self.manager.status(self.record)
        except RemoteError:
            return  # the connection is being re-established; the next poll asks again
        if status.state is not RunState.RUNNING:
            import asyncio

            await asyncio.sleep(STATUS_POLL_S)  # let the tail deliver the last lines first
            await self._read_rest()
            self.exited = True
            self.stopped = status.state is RunState.STOPPED  # by `sgtui stop` or the TUI: not by itself
            self.exit_code = None if self.stopped else status.rc
            if self.stopped:
                self.printer.emit("note", f"run {self.record.id} was stopped", message="stopped")
            elif status.disk_full:  # no exit code because it could not be written
                self.printer.emit("disk_full", status.disk_full, message=status.disk_full)
            elif status.why:  # what happened to its container (removed, restarted by docker, ...)
                self.printer.emit("note", f"run {self.record.id}: {status.why}", message=status.why)
            for event in self.classifier.process_exited(self.exit_code) + self.classifier.finish():
                self._event(event)  # the process is gone: its log has ended (a trailing traceback killed it)

    def _event(self, event: LogEvent) -> None:
        from sgtui.core.logs import MILESTONE_KINDS

        if event.kind == "stalled":
            self.printer.emit("stalled", f"stalled: {event.text}", line=event.line, **event.values)
        elif event.kind in MILESTONE_KINDS:
            self.printer.milestone(event)

    def _verdict(self) -> str | None:
        state = self.classifier.state
        if state.error is None and self.classifier.analysis().outcome == "ready":
            return "ready"  # also versions that never print the ready banner but answer requests
        if state.error is not None:
            if self.error_seen_at is None:
                self.error_seen_at = time.monotonic()
            if self.exited or time.monotonic() - self.error_seen_at >= ERROR_SETTLE_S:
                return "failed"
        elif self.exited:
            return "failed" if self.exit_code != 0 else "exited"
        return None

    def _finish(self, verdict: str, still_running: bool = False) -> int:

        from sgtui.core.logs import diagnose

        analysis = self.classifier.analysis()
        error = analysis.error
        if error is not None:
            self.printer.emit(
                "error",
                f"error ({error.error_class}) at line {error.line}, while {phase_label(error.phase)}: "
                f"{error.text.strip()[:300]}",
                error_class=error.error_class,
                line=error.line,
                text=error.text,
                phase=error.phase,
                error=error.to_json(),
            )
        for item in diagnose(analysis):
            self.printer.diagnosis(item)
        if verdict == "ready":
            self.printer.emit("ready", f"ready: {self.record.log_path}", log=self.record.log_path)
            return 0
        from sgtui.commands.launch_leftover import alive_note

        alive = alive_note(verdict, self.record, self.stop_command) if still_running else ""
        if verdict == "stalled":
            self.printer.emit(
                "failed",
                f"stalled: {error.text if error else ''} (log {self.record.log_path}){alive}",
                error_class="stalled",
                exit_code=self.exit_code,
                log=self.record.log_path,
                still_running=still_running,
            )
            return 1
        what = error.error_class if error else "stopped" if self.stopped else "the server exited"
        self.printer.emit(
            "failed",
            f"failed: {what} (log {self.record.log_path}){alive}",
            error_class=error.error_class if error else None,
            exit_code=self.exit_code,
            log=self.record.log_path,
            still_running=still_running,
        )
        return 1
