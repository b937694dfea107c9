"""What `sgtui launch --watch` does with a server that failed but did not exit.

SGLang 0.5.23 whose port is taken logs the bind error and then hangs at "Waiting for application
shutdown" with its scheduler spinning a core and its memory held: the process lives on but can never
serve. The run is the user's own and useless, so the watch says so in its failure line and stops it
(the graceful stop: TERM to its main process, the drain, then the group), printing each step; when that
stop fails it prints the exact `sgtui stop` command. A stalled server is left running (it may only be
slow); its failure line names the command that stops it.
"""

from __future__ import annotations

import asyncio
import shlex
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sgtui.remote.runs import RunManager, RunRecord

LEFTOVER_GRACE_S = 10.0  # the drain a failed server gets before its group is TERMed, then KILLed
EXIT_WAIT_S = 2.0  # how long a failed server may take to exit by itself before it counts as left running


def stop_command(record: RunRecord, *, profile: str | None, host: str, target: str) -> str:
    """The exact command that stops this run, for the user to copy."""
    place = f"--profile {shlex.quote(profile)}" if profile else f"--host {shlex.quote(host)}"
    if not profile and target != "host":
        place += f" --target {shlex.quote(target)}"
    return f"sgtui stop {record.id} {place} --yes"


async def end_watch(watch: Any, verdict: str) -> int:
    """`Watch`'s verdict lines; a failed server that did not exit is said to be running, and stopped; a
    stalled one is left running with the command that stops it."""
    alive = verdict != "ready" and not watch.exited and await still_running(watch.manager, watch.record)
    code: int = watch._finish(verdict, still_running=alive)
    if alive and verdict == "failed":
        await stop_failed(watch.manager, watch.record, watch.printer, watch.stop_command or "sgtui stop")
    return code


def alive_note(verdict: str, record: RunRecord, command: str | None) -> str:
    """What the failure line adds for a server still running: stopped now (failed), or how (stalled)."""
    if verdict == "stalled":
        how = f": {command} stops it" if command else ""
        return f"; the server is still running (pid {record.pid}){how}"
    return f"; the server is still running (pid {record.pid}) and cannot serve: stopping it"


async def still_running(manager: RunManager, record: RunRecord) -> bool:
    """True when the run's processes are still alive EXIT_WAIT_S after its failure (a crash that is
    still tearing itself down is given that long to end by itself)."""
    from sgtui.remote.connection import RemoteError
    from sgtui.remote.runs import RunState

    for _ in range(4):
        try:
            if (await manager.status(record)).state is not RunState.RUNNING:
                return False
        except RemoteError:
            return False  # cannot tell: the failure line does not claim either
        await asyncio.sleep(EXIT_WAIT_S / 4)
    return True


async def stop_failed(manager: RunManager, record: RunRecord, printer: Any, command: str) -> bool:
    """Stop a failed run that is still running; print each step. True when nothing of it is left."""
    from sgtui.remote.connection import RemoteError

    try:
        result = await manager.stop(record, LEFTOVER_GRACE_S)
    except RemoteError as exc:
        printer.emit(
            "stop_failed", f"could not stop {record.id}: {exc}; stop it with: {command}", command=command
        )
        return False
    steps = [[s.what, s.seconds, s.pid] for s in result.steps]
    if result.clean:
        lines = "\n".join(f"  {line}" for line in result.step_lines())
        printer.emit(
            "stopped", f"stopped {record.id} in {result.seconds:.1f} s:\n{lines}", id=record.id, steps=steps
        )
        return True
    left = "; ".join(p.describe() for p in result.left) or f"{result.members} process(es) survived KILL"
    printer.emit(
        "stop_failed",
        f"{record.id} is not wholly stopped ({left}); check it with: {command}",
        command=command,
        steps=steps,
    )
    return False
