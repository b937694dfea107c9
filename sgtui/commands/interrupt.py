"""Ctrl-C during `sgtui launch`: what was started is said, never left unknown.

`asyncio.run` turns the first Ctrl-C into a cancellation of the command's task (a second one raises
KeyboardInterrupt at once). Before anything was launched, nothing is: the command says so. A launch already
under way is let finish (`finish_launch`): a detach script cut half-way, or a multi-node run with only some
nodes started, would leave a server holding its GPUs that nobody was told about. Once launched, Ctrl-C stops
the watching only: the detached server keeps running, and the last line names it and the command that stops
it. Exit code 130 (128 + SIGINT) in every case.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from sgtui.commands.launch_leftover import stop_command

T = TypeVar("T")

INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it


async def finish_launch(launching: Awaitable[T], printer: Any) -> tuple[T, bool]:
    """Await `launching` to its end even when this task is cancelled meanwhile; (its result, whether a
    Ctrl-C came during it). Its own errors are raised as they would be. After the first Ctrl-C the user is
    told the launch is being finished, and a second one waits for it too (asyncio.run would otherwise
    cancel the launch half-way, the very thing this prevents)."""
    task = asyncio.ensure_future(launching)
    try:
        return await asyncio.shield(task), False
    except asyncio.CancelledError:
        if task.cancelled():
            raise
    printer.emit(
        "interrupting",
        "interrupted: finishing the launch under way, so that what it starts is named (a few seconds)",
    )
    previous = signal.getsignal(signal.SIGINT)
    with contextlib.suppress(ValueError):  # not the main thread: nothing to hold off
        signal.signal(signal.SIGINT, lambda *_: None)
    try:
        return await task, True
    finally:
        with contextlib.suppress(ValueError, TypeError):
            signal.signal(signal.SIGINT, previous)


def nothing_launched(printer: Any) -> int:
    printer.emit("interrupted", "interrupted: nothing was launched", running=False)
    return INTERRUPTED


def left_running(printer: Any, run_id: str, what: str, stop_command: str) -> int:
    """The last word after Ctrl-C once `what` (the server, or every node) was launched: it keeps running."""
    printer.emit(
        "interrupted",
        f"interrupted: stopped watching; run {run_id} keeps running ({what}): {stop_command} stops it",
        running=True,
        id=run_id,
        command=stop_command,
    )
    return INTERRUPTED


def nodes_left_running(printer: Any, records: Sequence[Any], profile: Path) -> int:
    """`left_running` for a multi-node run: every node was launched under one id; one stop ends them all."""
    head = records[0]
    stop = stop_command(head, profile=str(profile), host=head.host, target="host")
    return left_running(printer, head.id, f"{len(records)} nodes", stop)
