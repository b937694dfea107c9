"""Stopping one target's runs: what a stop would hit (the preview asked before it) and the stop itself,
streamed from the target's stop script (runscripts.stop_script) with its progress. `RunManager` holds one
(`RunManager.stopper`) and its `preview`/`stop` are these; the shapes read back (`StopPreview`,
`StopResult`) live in run_stops.py.

Only the run's own process group is signalled, never `pkill`; a pid that now belongs to an unrelated
process (PID reuse) or a record that is not ours is refused before anything is signalled.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncssh

from sgtui.core import runscripts, shell
from sgtui.remote.connection import Result, Transport
from sgtui.remote.run_errors import ForeignRunError, PidReusedError, RunError, refuse_foreign, where_of
from sgtui.remote.run_records import (
    RunRecord,
    RunStatus,
    StopPreview,
    StopResult,
    left_from_marker,
    preview_from_marker,
    steps_from_marker,
)
from sgtui.remote.targets import Target, explain_failure

# the owner's "run a script on the target, return its marker" (RunManager._script) and "the run's status"
ScriptRunner = Callable[[str, str], Awaitable[tuple[dict[str, Any], Result]]]
StatusReader = Callable[[RunRecord], Awaitable[RunStatus]]


class RunStopper:
    """Previews and stops of the runs of one target on one host."""

    def __init__(self, conn: Transport, target: Target, script: ScriptRunner, status: StatusReader) -> None:
        self.conn = conn
        self.target = target
        self._script = script
        self._status = status

    @property
    def where(self) -> str:
        """The host, and the container on it: how messages name where the run is."""
        return where_of(self.conn.host.name, self.target)

    async def preview(self, run: RunRecord) -> StopPreview:
        """What a stop of `run` would hit: its group leader's owner, age and command line next to the
        recorded argv (with a warning when they differ), and how many of its processes left the group."""
        refuse_foreign(run, self.where, "preview a stop of")
        marker, _ = await self._script(
            runscripts.preview_script(run.pgid, run.start, run.boot, run_dir=run.run_dir, run_id=run.key),
            f"look at run {run.id}",
        )
        if marker.get("result") == "foreign":
            raise ForeignRunError(f"{self.where}: refusing run {run.id}: {marker.get('foreign')}")
        if str(marker.get("reused", "0")) != "0":
            raise PidReusedError(self._reused_message(run))
        return preview_from_marker(run, marker)

    def _reused_message(self, run: RunRecord) -> str:
        return (
            f"{self.conn.host.name}: pid {run.pgid} of run {run.id} now belongs to another process, so the "
            "run itself has ended; nothing was signalled (check the GPU holders if memory is still in use)"
        )

    async def stop(
        self,
        run: RunRecord,
        grace: float = 10.0,
        on_progress: Callable[[float, int], None] | None = None,
    ) -> StopResult:
        """TERM the server's main process and give it `grace` s to drain and end (SGLang stops its own
        children), then TERM the group, then KILL; confirm nothing is left (runscripts.stop_script).
        `StopResult.steps` has the time of each step. The stop records itself in the run dir first, so
        the run then reads STOPPED.

        `on_progress(seconds_since_term, live_members)` is called about every 0.25 s while waiting.
        Raises PidReusedError (nothing is signalled) when the pid belongs to another process now, and
        ForeignRunError for a record that is not ours (checked again on the target). `StopResult.left`
        names the run's processes still alive outside its group.
        """
        refuse_foreign(run, self.where, "stop")
        t0 = time.monotonic()
        script = runscripts.stop_script(
            run.pgid, run.start, run.boot, grace, run_dir=run.run_dir, run_id=run.key
        )
        lines: list[str] = []
        try:
            async with self.conn.stream(self.target.script(script), long_lived=False) as proc:
                pending = b""
                while True:
                    data = await proc.read(4096)
                    if not data:
                        break
                    *complete, pending = (pending + data).split(b"\n")
                    for raw in complete:
                        line = raw.decode("utf-8", "replace")
                        lines.append(line)
                        progress = runscripts.parse_progress(line)
                        if progress is not None and on_progress is not None:
                            on_progress(*progress)
        except (asyncssh.Error, OSError) as exc:
            raise RunError(
                f"{self.conn.host.name}: connection lost while stopping run {run.id} ({exc}); the stop goes "
                "on on the host (TERM, then KILL after the grace): check its status once reconnected"
            ) from None
        marker = shell.parse_marker("\n".join(lines))
        if marker is None:
            failed = Result("\n".join(lines), "", None)
            if self.target.kind != "host" and (await self._status(run)).why:  # its container is gone
                return StopResult("not-running", None, 0, time.monotonic() - t0)
            raise RunError(explain_failure(self.conn.host.name, self.target, failed, f"stop run {run.id}"))
        if marker.get("result") == "foreign":
            raise ForeignRunError(
                f"{self.where}: refusing to stop run {run.id}: {marker.get('foreign')}; nothing was signalled"
            )
        if marker.get("result") == "pid-reused":
            raise PidReusedError(self._reused_message(run))
        return StopResult(
            str(marker["result"]),
            marker.get("signal"),
            int(marker.get("members", 0)),
            time.monotonic() - t0,
            left_from_marker(marker),
            steps_from_marker(marker),
        )
