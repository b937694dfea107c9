"""The life of one detached server run on a target: launch, find again, check, stop, wait for the GPUs.

Each launch gets its own run directory (command, profile, pid/pgid, process start time, boot id, a fresh
log, and the exit code when the command ends by itself). It is started with setsid so it outlives the SSH
session and sgtui. Stopping signals exactly its process group and refuses when the pid now belongs to an
unrelated process (PID reuse) - never `pkill`.
"""

from __future__ import annotations

import asyncio
import calendar
import enum
import json
import secrets
import shlex
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import asyncssh

from sgtui.core import shell
from sgtui.core.nvsmi import GpuProcess
from sgtui.remote.connection import RemoteError, Transport
from sgtui.remote.gpu import GpuSampler, GpuSnapshot
from sgtui.remote.tail import LogChunk, follow
from sgtui.remote.targets import Target

DEFAULT_RUNS_DIR = "/var/tmp/sgtui-runs"
LOG_NAME = "server.log"


class RunError(RemoteError):
    """A run could not be launched, inspected or stopped; the message says which and why."""


class PidReusedError(RunError):
    """The recorded pid now belongs to another process: sgtui will not signal it."""


class GpusBusyError(RunError):
    """The GPUs were not freed in time; `holders` name who still holds memory."""

    def __init__(self, message: str, holders: list[GpuProcess]) -> None:
        super().__init__(message)
        self.holders = holders


class RunState(enum.Enum):
    RUNNING = "running"
    EXITED = "exited"  # ended by itself; rc known
    DEAD = "dead"  # gone without an exit code (killed, or the host rebooted)
    PID_REUSED = "pid-reused"  # gone, and its pid now belongs to another process


@dataclass(frozen=True)
class RunStatus:
    state: RunState
    rc: int | None = None
    members: int = 0  # live (non-zombie) processes left in the run's process group


@dataclass(frozen=True)
class RunRecord:
    """What sgtui knows about a launched run; saved as run.json + command.json in its run directory."""

    id: str
    host: str
    target: Target
    run_dir: str
    argv: list[str]
    env: dict[str, str]
    gpus: list[int]
    pid: int
    pgid: int
    start: int | None
    boot: str
    started_at: float = field(default_factory=time.time)

    @property
    def log_path(self) -> str:
        return f"{self.run_dir}/{LOG_NAME}"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["target"] = {"kind": self.target.kind, "id": self.target.id}
        return data


@dataclass(frozen=True)
class StopResult:
    result: str  # "stopped" | "not-running" | "survivors"
    signal: str | None  # the last signal sent: "TERM" or "KILL"
    members: int  # processes still alive at the end (0 unless "survivors")
    seconds: float


def new_run_id() -> str:
    """Sortable by time, unique enough to never reuse a log path."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


class RunManager:
    """Runs of one target on one host; `runs_dir` is an absolute path on the target."""

    def __init__(self, conn: Transport, target: Target, runs_dir: str = DEFAULT_RUNS_DIR) -> None:
        if not runs_dir.startswith("/"):
            raise shell.ShellError(f"runs_dir must be an absolute path on the target, got {runs_dir!r}")
        self.conn = conn
        self.target = target
        self.runs_dir = runs_dir.rstrip("/") or "/"

    @property
    def host(self) -> str:
        return self.conn.host.name

    async def _script(self, script: str, timeout: float | None = 60) -> dict[str, Any]:
        result = await self.conn.run(self.target.script(script), timeout=timeout)
        marker = shell.parse_marker(result.stdout)
        if marker is None:
            detail = (result.stderr or result.stdout).strip()[-400:] or f"exit {result.rc}"
            raise RunError(f"{self.host} {self.target.label}: remote script failed: {detail}")
        return marker

    async def launch(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        profile_yaml: str | None = None,
        gpus: Sequence[int] = (),
    ) -> RunRecord:
        """Start argv detached into a fresh run directory and log; returns once pid/pgid are known."""
        if not argv or not argv[0].startswith("/"):
            raise shell.ShellError(
                f"the command must start with an absolute interpreter path, got {argv[0] if argv else ''!r}: "
                "inside pct the PATH is reset and rc files are not read"
            )
        run_id = new_run_id()
        run_dir = f"{self.runs_dir}/{run_id}"
        command = {
            "argv": list(argv),
            "env": dict(env or {}),
            "gpus": list(gpus),
            "target": {"kind": self.target.kind, "id": self.target.id},
            "host": self.host,
        }
        files = {"command.json": json.dumps(command, ensure_ascii=False) + "\n"}
        if profile_yaml is not None:
            files["profile.yaml"] = profile_yaml
        marker = await self._script(shell.detach_script(run_dir, argv, env, log_name=LOG_NAME, files=files))
        if marker.get("error") == "log-exists":
            raise RunError(f"{self.host}: log {run_dir}/{LOG_NAME} already exists; refusing to reuse it")
        return RunRecord(
            id=run_id,
            host=self.host,
            target=self.target,
            run_dir=run_dir,
            argv=list(argv),
            env=dict(env or {}),
            gpus=list(gpus),
            pid=int(marker["pid"]),
            pgid=int(marker["pgid"]),
            start=marker.get("start"),
            boot=str(marker.get("boot", "")),
        )

    async def list_runs(self) -> list[RunRecord]:
        """Every run recorded under runs_dir (oldest first): what a restarted sgtui reattaches to."""
        script = (
            f"for d in {shlex.quote(self.runs_dir)}/*/; do\n"
            '  [ -r "$d/run.json" ] || continue\n'
            '  printf "@@run %s\\n" "$d"; cat "$d/run.json"; echo; cat "$d/command.json" 2>/dev/null; echo\n'
            "done\necho '@@sgtui {}'\n"
        )
        result = await self.conn.run(self.target.script(script), timeout=60)
        if shell.parse_marker(result.stdout) is None:
            raise RunError(
                f"{self.host} {self.target.label}: cannot list runs: {result.stderr.strip()[-300:]}"
            )
        return parse_run_listing(result.stdout, self.host, self.target)

    async def status(self, run: RunRecord) -> RunStatus:
        marker = await self._script(shell.status_script(run.pgid, run.start, run.boot, run.log_path))
        return status_from_marker(marker)

    async def stop(
        self,
        run: RunRecord,
        grace: float = 10.0,
        on_progress: Callable[[float, int], None] | None = None,
    ) -> StopResult:
        """TERM the run's process group, wait up to `grace` s, then KILL; confirm nothing is left.

        `on_progress(seconds_since_term, live_members)` is called about every 0.25 s while waiting.
        Raises PidReusedError (nothing is signalled) when the pid belongs to another process now.
        """
        t0 = time.monotonic()
        script = shell.stop_script(run.pgid, run.start, run.boot, grace)
        lines: list[str] = []
        try:
            async with self.conn.stream(self.target.script(script)) as proc:
                pending = b""
                while True:
                    data = await proc.read(4096)
                    if not data:
                        break
                    *complete, pending = (pending + data).split(b"\n")
                    for raw in complete:
                        line = raw.decode("utf-8", "replace")
                        lines.append(line)
                        progress = shell.parse_progress(line)
                        if progress is not None and on_progress is not None:
                            on_progress(*progress)
        except (asyncssh.Error, OSError) as exc:
            raise RunError(
                f"{self.host}: connection lost while stopping run {run.id} ({exc}); the stop goes on on "
                "the host (TERM, then KILL after the grace): check its status once reconnected"
            ) from None
        marker = shell.parse_marker("\n".join(lines))
        if marker is None:
            raise RunError(f"{self.host} {self.target.label}: stop script gave no result: {lines[-3:]}")
        if marker.get("result") == "pid-reused":
            raise PidReusedError(
                f"{self.host}: pid {run.pgid} of run {run.id} now belongs to another process"
                + (" (the host rebooted)" if marker.get("reused") == "boot" else "")
                + "; nothing was signalled"
            )
        return StopResult(
            str(marker["result"]), marker.get("signal"), int(marker.get("members", 0)), time.monotonic() - t0
        )

    async def tail(self, run: RunRecord, offset: int = 0) -> AsyncIterator[LogChunk]:
        """Follow the run's log from byte `offset` (0 = the beginning), resuming after disconnects."""
        async for chunk in follow(self.conn, run.log_path, target=self.target, offset=offset):
            yield chunk

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
        wanted = set(run.gpus if gpus is None else gpus)
        deadline = time.monotonic() + timeout
        while True:
            snap = await sampler.query()
            procs = await sampler.processes()
            holders = [p for p in procs if not wanted or p.gpu_index in wanted]
            busy = [
                g
                for g in snap.gpus
                if (not wanted or g.index in wanted)
                and (g.memory_used_mib.value is None or g.memory_used_mib.value > idle_mib)
            ]
            if snap.problem is None and not holders and not busy:
                return snap
            if time.monotonic() >= deadline:
                raise GpusBusyError(_busy_message(self.host, wanted, holders, busy, snap, timeout), holders)
            await asyncio.sleep(poll)


def _busy_message(
    host: str, wanted: set[int], holders: list[GpuProcess], busy: list[Any], snap: GpuSnapshot, timeout: float
) -> str:
    which = ", ".join(map(str, sorted(wanted))) if wanted else "all"
    if snap.problem is not None:
        problem = snap.problem
        return f"{host}: cannot tell whether GPUs {which} are free: {problem.state.value}: {problem.detail}"
    parts = [
        f"pid {p.pid} {p.name} ({p.container or 'host'}) {p.used_mib.value or 0:.0f} MiB on GPU {p.gpu_index}"
        for p in holders
    ]
    if not parts:
        parts = [
            f"GPU {g.index}: {g.memory_used_mib.value or 0:.0f} MiB used by no listed process" for g in busy
        ]
    return f"{host}: GPUs {which} still busy after {timeout:.0f} s: " + "; ".join(parts)


def status_from_marker(marker: Mapping[str, Any]) -> RunStatus:
    """The status script's marker -> RunStatus (members alive win over a recorded exit code)."""
    rc = marker.get("rc")
    members = int(marker.get("members") or 0)
    reused = str(marker.get("reused", "0"))
    if reused == "boot":
        return RunStatus(RunState.DEAD, rc, 0)
    if reused != "0":
        return RunStatus(RunState.PID_REUSED, rc, 0)
    if members > 0:
        return RunStatus(RunState.RUNNING, rc, members)
    if rc is not None:
        return RunStatus(RunState.EXITED, int(rc), 0)
    return RunStatus(RunState.DEAD, None, 0)


def parse_run_listing(text: str, host: str, default_target: Target) -> list[RunRecord]:
    records: list[RunRecord] = []
    blocks = text.split("@@run ")[1:]
    for block in blocks:
        head, _, rest = block.partition("\n")
        run_dir = head.strip().rstrip("/")
        docs = [ln for ln in rest.splitlines() if ln.strip() and not ln.startswith("@@sgtui")]
        try:
            meta = json.loads(docs[0])
            cmd = json.loads(docs[1]) if len(docs) > 1 else {}
        except (IndexError, json.JSONDecodeError):
            continue
        tgt = cmd.get("target") or {}
        target = Target.from_mapping(tgt) if tgt else default_target
        records.append(
            RunRecord(
                id=run_dir.rsplit("/", 1)[-1],
                host=host,
                target=target,
                run_dir=run_dir,
                argv=list(cmd.get("argv", [])),
                env=dict(cmd.get("env", {})),
                gpus=list(cmd.get("gpus", [])),
                pid=int(meta["pid"]),
                pgid=int(meta["pgid"]),
                start=meta.get("start"),
                boot=str(meta.get("boot", "")),
                started_at=_started_at(run_dir.rsplit("/", 1)[-1]),
            )
        )
    return sorted(records, key=lambda r: r.id)


def _started_at(run_id: str) -> float:
    """The launch time encoded in a run id (UTC), or 0.0 for a directory sgtui did not name."""
    try:
        return float(calendar.timegm(time.strptime(run_id[:15], "%Y%m%d-%H%M%S")))
    except ValueError:
        return 0.0
