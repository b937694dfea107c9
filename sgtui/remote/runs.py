"""The life of one detached server run on a target: launch, find again, check, stop, wait for the GPUs.

Each launch gets its own run directory under the user's runs dir on the target (command, profile, env,
pid/pgid, process start time, boot id, a fresh log, and the exit code when the command ends by itself),
all private to that user (0700 dirs, 0600 files). It is started with setsid so it outlives the SSH
session and sgtui. Every script checks on the target that the runs dir and the run dir are this user's
before reading or acting; a record that fails is `foreign` and never signalled. Stopping signals exactly
its process group, refuses when the pid now belongs to an unrelated process (PID reuse) - never `pkill` -
and names what of the run is left outside the group.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from sgtui.core import runscripts, shell
from sgtui.remote.connection import RemoteError, Result, Transport
from sgtui.remote.gpu import GpuSampler, GpuSnapshot
from sgtui.remote.run_errors import (
    ForeignRunError,
    GpusBusyError,
    LaunchUnknownError,
    PidReusedError,
    RunError,
    launch_failure,
    refuse_foreign,
    where_of,
)
from sgtui.remote.run_gpus import wait_gpus_free
from sgtui.remote.run_prune import PruneResult, prune
from sgtui.remote.run_records import (
    LOG_NAME,
    LeftProcess,
    RunRecord,
    RunState,
    RunStatus,
    StopPreview,
    StopResult,
    checked_ids,
    node_name,
    parse_run_listing,
    status_from_marker,
)
from sgtui.remote.run_stopper import RunStopper
from sgtui.remote.run_store import RunStore, keep_locally
from sgtui.remote.tail import LogChunk, follow, read_rest
from sgtui.remote.targets import Target, container_ended, container_restarted_since, explain_failure

__all__ = [
    "DEFAULT_RUNS_DIR",
    "LOG_NAME",
    "ForeignRunError",
    "GpusBusyError",
    "LaunchUnknownError",
    "LeftProcess",
    "PidReusedError",
    "PruneResult",
    "RunError",
    "RunManager",
    "RunRecord",
    "RunState",
    "RunStatus",
    "StopPreview",
    "StopResult",
    "new_run_id",
    "status_from_marker",
]

DEFAULT_RUNS_DIR = None  # the per-user default, resolved on the target: runscripts.DEFAULT_RUNS_DIR_TEXT


def new_run_id() -> str:
    """Sortable by time, unique enough to never reuse a log path."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


class RunManager:
    """Runs of one target on one host. `runs_dir` is an absolute path on the target, or None for the
    target user's own default (`${XDG_STATE_HOME:-$HOME/.local/state}/sgtui/runs`, resolved there; after
    the first script `runs_dir` holds the resolved path)."""

    def __init__(
        self,
        conn: Transport,
        target: Target,
        runs_dir: str | None = DEFAULT_RUNS_DIR,
        *,
        keep_runs: int | None = None,
    ) -> None:
        self.conn = conn
        self.target = target
        self.runs_dir: str | None = runscripts.check_runs_dir(runs_dir)
        self._configured = self.runs_dir is not None
        # ended runs kept per target (run_prune.py): the profile's, else hosts.yaml's, else the default
        host_keep = getattr(conn.host, "keep_runs", None)
        self.keep_runs: int = keep_runs or host_keep or runscripts.KEEP_RUNS_DEFAULT
        # previews and stops (run_stopper.py); `status` looked up when called, as a method of this class
        self.stopper = RunStopper(conn, target, self._script, lambda run: self.status(run))

    @property
    def host(self) -> str:
        return self.conn.host.name

    @property
    def where(self) -> str:
        return where_of(self.host, self.target)

    async def _script(
        self, script: str, doing: str, timeout: float | None = 60
    ) -> tuple[dict[str, Any], Result]:
        result = await self.conn.run(self.target.script(script), timeout=timeout)
        marker = shell.parse_marker(result.stdout)
        if marker is None:
            raise RunError(explain_failure(self.host, self.target, result, doing))
        return marker, result

    def refuse(self, run: RunRecord, doing: str) -> None:
        """Raise ForeignRunError unless `run` is one this user may act on."""
        refuse_foreign(run, self.where, doing)

    async def launch(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        profile_yaml: str | None = None,
        gpus: Sequence[int] = (),
        *,
        node_rank: int | None = None,
        run_id: str | None = None,
        profile_name: str | None = None,
    ) -> RunRecord:
        """Start argv detached into a fresh run directory and log; returns once pid/pgid are known.
        A launch that fails before the server started leaves no run directory behind. `profile_name` is
        recorded in command.json (the runs lists show it). Every record a launch returns is also kept on
        the jump box (`run_store.py`), so the run stays stoppable after its run dir on the target is gone."""
        if not argv or not argv[0].startswith("/"):
            raise shell.ShellError(
                f"the command must start with an absolute interpreter path, got {argv[0] if argv else ''!r}: "
                "inside pct the PATH is reset and rc files are not read"
            )
        run_id = run_id or new_run_id()
        command: dict[str, Any] = {
            "argv": list(argv),
            "env": dict(env or {}),
            "gpus": list(gpus),
            "target": {"kind": self.target.kind, "id": self.target.id},
            "host": self.host,
        }
        if profile_name:
            command["profile"] = profile_name
        name = node_name(run_id, node_rank)
        if node_rank is not None:
            command["node_rank"] = node_rank
            command["run_id"] = run_id
        files = {"command.json": json.dumps(command, ensure_ascii=False) + "\n"}
        size = len(files["command.json"].encode("utf-8"))
        if size > runscripts.RECORD_MAX_BYTES:  # the listing reads no more of it back: it would be foreign
            raise shell.ShellError(
                f"this launch's arguments and env take {size} bytes in its record (command.json); sgtui "
                f"keeps at most {runscripts.RECORD_MAX_BYTES} bytes per run: pass large values through a file"
            )
        if profile_yaml is not None:
            files["profile.yaml"] = profile_yaml
        script = runscripts.detach_script(self.runs_dir, name, argv, env, log_name=LOG_NAME, files=files)
        try:
            result = await self.conn.run(self.target.script(script), timeout=60)
        except RemoteError as exc:  # cut before, during or after the start: the truth is on the host
            return await self._after_cut(name, run_id, str(exc))
        marker = shell.parse_marker(result.stdout)
        if marker is None and result.rc is None and result.signal is None:  # no exit status: cut short
            return await self._after_cut(name, run_id, "the connection closed before the command finished")
        if marker is None:
            raise RunError(explain_failure(self.host, self.target, result, "launch the server"))
        if "error" in marker:
            run_dir = f"{self.runs_dir or 'the runs dir'}/{name}"
            raise RunError(launch_failure(marker, self.host, self.target, self.where, run_dir, argv, result))
        run_dir = str(marker.get("run_dir") or "")
        try:
            pid, pgid, start, boot = checked_ids(marker)
            # the runs dir as the target resolved it (walk_dir): a configured path may go through links
            if not run_dir.startswith("/") or run_dir.rsplit("/", 1)[-1] != name:
                raise shell.ShellError(f"run dir {run_dir!r} is not RUNS_DIR/{name}")
        except (shell.ShellError, KeyError) as exc:
            raise RunError(f"{self.where}: the launch reported nonsense ({exc})") from None
        self.runs_dir = run_dir.rsplit("/", 1)[0]
        if marker.get("saved") is False:
            raise RunError(
                f"{self.where}: the server started (pid {pid}) but its record could not "
                f"be written to {run_dir}/run.json, so sgtui could not find it again; free space there, "
                "then stop it from this screen"
            )
        await self._prune_quietly()
        record = RunRecord(
            id=run_id,
            host=self.host,
            target=self.target,
            run_dir=run_dir,
            argv=list(argv),
            env=dict(env or {}),
            gpus=list(gpus),
            pid=pid,
            pgid=pgid,
            start=start,
            boot=boot,
            user=str(marker.get("user") or "") or None,
            node_rank=node_rank,
            profile=profile_name or None,
        )
        await asyncio.to_thread(keep_locally, record)  # an fsync and a prune: off the event loop (the TUI's)
        return record

    async def _after_cut(self, name: str, run_id: str, why: str) -> RunRecord:
        """The launch script was cut off: look for its run on the host (the connection reconnects by
        itself). Found: it started, and is returned as launched. Otherwise say that it may be running,
        never that it failed: the detached server may have started before its record was written."""
        where = self.host
        if self.target.kind != "host":
            where += f" --target {self.target.kind}:{self.target.id}"
        check = f"`sgtui runs --host {where}` lists it as {run_id} once {self.host} answers"
        try:
            found = next((r for r in await self.list_runs() if r.key == name), None)
        except RemoteError:
            found = None
        if found is not None and found.foreign is None and found.start is not None:
            await asyncio.to_thread(keep_locally, found)
            return found
        raise LaunchUnknownError(
            f"{self.where}: the connection was lost while launching run {run_id} ({why}); the server runs "
            f"detached, so it may have started anyway: {check}, and `sgtui stop {run_id} --host {where}` "
            "stops it",
            run_id,
        )

    async def prune(self, keep: int | None = None) -> PruneResult:
        """Remove this target's ended runs beyond the newest `keep` (default `keep_runs`): never a
        running or a foreign one (run_prune.py). The jump box's copies of the removed runs are marked
        ended, so they age out of the local store."""
        done = await prune(self, keep or self.keep_runs)
        if done.removed:
            RunStore().mark_pruned(self.host, self.target, done.removed)
        return done

    async def _prune_quietly(self) -> None:
        """After a launch: prune once the target holds more runs than it keeps (a failure to prune
        never fails the launch)."""
        try:
            if len(await self.list_runs()) > self.keep_runs:
                await self.prune()
        except RemoteError:
            pass

    async def list_runs(self) -> list[RunRecord]:
        """Every run recorded under runs_dir (oldest first): what a restarted sgtui reattaches to. Runs
        that fail a check are listed with `.foreign` set; a runs dir that is not ours raises
        ForeignRunError."""
        marker, result = await self._script(runscripts.list_script(self.runs_dir), "list the runs")
        if marker.get("error") == "no-home":
            raise RunError(f"{self.where}: {marker.get('why')}")
        runs_dir = str(marker.get("runs_dir") or "")
        if not runs_dir.startswith("/"):
            raise RunError(f"{self.where}: the runs listing named no runs dir")
        self.runs_dir = runs_dir
        if "unsafe" in marker:
            raise ForeignRunError(
                f"{self.where}: refusing the runs dir: {marker['unsafe']}. Nothing in it was read or acted "
                "on; set runs_dir (hosts.yaml or the profile) to a directory that is yours alone"
            )
        return parse_run_listing(result.stdout, self.host, self.target, runs_dir)

    async def status(self, run: RunRecord) -> RunStatus:
        """The run's state; a foreign record is FOREIGN without a look at its processes. A run whose
        container was stopped, removed or restarted reads as DEAD with `why` saying so."""
        if run.foreign is not None:
            return RunStatus(RunState.FOREIGN, foreign=run.foreign)
        script = runscripts.status_script(run.pgid, run.start, run.boot, run.log_path, run_dir=run.run_dir)
        result = await self.conn.run(self.target.script(script), timeout=60)
        marker = shell.parse_marker(result.stdout)
        if marker is None:
            if why := container_ended(self.host, self.target, result):
                return RunStatus(RunState.DEAD, None, 0, why=why)
            raise RunError(explain_failure(self.host, self.target, result, f"check run {run.id}"))
        status = status_from_marker(marker, run.log_path)
        ended = status.state in (RunState.DEAD, RunState.PID_REUSED)
        if ended and (why := await container_restarted_since(self.conn, self.target, run.started_at)):
            return RunStatus(RunState.DEAD, status.rc, 0, why=why)
        return status

    async def preview(self, run: RunRecord) -> StopPreview:
        """What a stop of `run` would hit (run_stopper.py)."""
        return await self.stopper.preview(run)

    async def stop(
        self, run: RunRecord, grace: float = 10.0, on_progress: Callable[[float, int], None] | None = None
    ) -> StopResult:
        """TERM, drain for `grace` s, then the group, then KILL; `on_progress(seconds, live_members)` while
        waiting (run_stopper.py: `RunStopper.stop`, what it raises and returns)."""
        return await self.stopper.stop(run, grace, on_progress)

    async def tail(self, run: RunRecord, offset: int = 0) -> AsyncIterator[LogChunk]:
        """Follow the run's log from byte `offset` (0 = the beginning), resuming after disconnects."""
        if run.foreign is not None:
            self.refuse(run, "follow")
        async for chunk in follow(self.conn, run.log_path, target=self.target, offset=offset):
            yield chunk

    async def read_rest(self, run: RunRecord, offset: int) -> LogChunk:
        """The log after `offset` including a final line without a newline (for a run that has ended:
        `tail` only delivers complete lines)."""
        if run.foreign is not None:
            self.refuse(run, "read")
        return await read_rest(self.conn, run.log_path, target=self.target, offset=offset)

    async def wait_gpus_free(
        self,
        run: RunRecord,
        gpus: Sequence[int] | None,
        timeout: float,
        sampler: GpuSampler,
        *,
        idle_mib: float = 1024.0,
        poll: float = 0.5,
    ) -> GpuSnapshot:
        """Wait until no process holds memory on `gpus` (default: the run's) and their used memory is
        at most `idle_mib`; on timeout raise GpusBusyError naming the holders (pid, name, container, MiB)."""
        wanted = run.gpus if gpus is None else gpus
        return await wait_gpus_free(self.host, wanted, timeout, sampler, idle_mib=idle_mib, poll=poll)
