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
from sgtui.core.nvsmi import GpuProcess, Value, advice
from sgtui.remote.connection import RemoteError, Result, Transport
from sgtui.remote.gpu import GpuSampler, GpuSnapshot
from sgtui.remote.tail import LogChunk, follow, read_rest
from sgtui.remote.targets import Target, container_ended, container_restarted_since, explain_failure

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
    why: str | None = None  # for a run that ended with its container: that container's fate


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

    async def _script(
        self, script: str, doing: str, timeout: float | None = 60
    ) -> tuple[dict[str, Any], Result]:
        result = await self.conn.run(self.target.script(script), timeout=timeout)
        marker = shell.parse_marker(result.stdout)
        if marker is None:
            raise RunError(explain_failure(self.host, self.target, result, doing))
        return marker, result

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
        script = shell.detach_script(run_dir, argv, env, log_name=LOG_NAME, files=files)
        marker, result = await self._script(script, "launch the server")
        if "error" in marker:
            raise RunError(self._launch_failure(str(marker["error"]), run_dir, argv, result))
        try:
            pid, pgid, start, boot = _checked_ids(marker)
        except (shell.ShellError, KeyError) as exc:
            raise RunError(f"{self.host} {self.target.label}: the launch reported nonsense ({exc})") from None
        if marker.get("saved") is False:
            raise RunError(
                f"{self.host} {self.target.label}: the server started (pid {pid}) but its record could not "
                f"be written to {run_dir}/run.json, so sgtui could not find it again; free space there, "
                "then stop it from this screen"
            )
        return RunRecord(
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
        )

    def _launch_failure(self, error: str, run_dir: str, argv: Sequence[str], result: Result) -> str:
        exe = argv[0]
        where = f"{self.host} {self.target.label}" if self.target.kind != "host" else self.host
        if error == "log-exists":
            return f"{self.host}: log {run_dir}/{LOG_NAME} already exists; refusing to reuse it"
        if error == "not-executable":
            return (
                f"the interpreter {exe} does not exist or is not executable on {where}: set the profile's "
                "`python:` to the python of the environment where SGLang is installed"
            )
        if error == "no-module":
            module = argv[2].split(".")[0] if len(argv) > 2 else "its"
            return (
                f"{exe} on {where} has no {module} module: install SGLang into that environment, or set the "
                "profile's `python:` to the environment that has it"
            )
        if error == "run-dir":
            return explain_failure(self.host, self.target, result, f"create the run directory {run_dir}")
        return explain_failure(self.host, self.target, result, f"write the run files in {run_dir}")

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
                explain_failure(self.host, self.target, result, f"list the runs in {self.runs_dir}")
            )
        return [
            r
            for r in parse_run_listing(result.stdout, self.host, self.target)
            if _directly_under(r, self.runs_dir)
        ]

    async def status(self, run: RunRecord) -> RunStatus:
        """The run's state; a run whose container was stopped, removed or restarted reads as DEAD with
        `why` saying so."""
        script = shell.status_script(run.pgid, run.start, run.boot, run.log_path)
        result = await self.conn.run(self.target.script(script), timeout=60)
        marker = shell.parse_marker(result.stdout)
        if marker is None:
            if why := container_ended(self.host, self.target, result):
                return RunStatus(RunState.DEAD, None, 0, why)
            raise RunError(explain_failure(self.host, self.target, result, f"check run {run.id}"))
        status = status_from_marker(marker)
        ended = status.state in (RunState.DEAD, RunState.PID_REUSED)
        if ended and (why := await container_restarted_since(self.conn, self.target, run.started_at)):
            return RunStatus(RunState.DEAD, status.rc, 0, why)
        return status

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
            failed = Result("\n".join(lines), "", None)
            if self.target.kind != "host" and (await self.status(run)).why:  # its container is gone
                return StopResult("not-running", None, 0, time.monotonic() - t0)
            raise RunError(explain_failure(self.host, self.target, failed, f"stop run {run.id}"))
        if marker.get("result") == "pid-reused":
            raise PidReusedError(
                f"{self.host}: pid {run.pgid} of run {run.id} now belongs to another process, so the run "
                "itself has ended; nothing was signalled (check the GPU holders if memory is still in use)"
            )
        return StopResult(
            str(marker["result"]), marker.get("signal"), int(marker.get("members", 0)), time.monotonic() - t0
        )

    async def tail(self, run: RunRecord, offset: int = 0) -> AsyncIterator[LogChunk]:
        """Follow the run's log from byte `offset` (0 = the beginning), resuming after disconnects."""
        async for chunk in follow(self.conn, run.log_path, target=self.target, offset=offset):
            yield chunk

    async def read_rest(self, run: RunRecord, offset: int) -> LogChunk:
        """The log after `offset` including a final line without a newline (for a run that has ended:
        `tail` only delivers complete lines)."""
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
        wanted = set(run.gpus if gpus is None else gpus)
        deadline = time.monotonic() + timeout
        while True:
            snap = await sampler.query()
            procs = await sampler.processes()
            # a holder whose GPU cannot be told (a MIG instance, a GPU missing from the index list) counts
            holders = [p for p in procs if not wanted or p.gpu_index is None or p.gpu_index in wanted]
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
        return (
            f"{host}: cannot tell whether GPUs {which} are free: {problem.state.value} ({problem.detail}); "
            f"{advice(problem)}"
        )
    parts = [
        f"pid {p.pid} {p.name} ({p.container or 'host'}) {_mib(p.used_mib)} on "
        + (f"GPU {p.gpu_index}" if p.gpu_index is not None else p.gpu_uuid or "an unknown GPU")
        for p in holders
    ]
    if not parts:
        parts = [f"GPU {g.index}: {_mib(g.memory_used_mib)} used by no listed process" for g in busy]
    return f"{host}: GPUs {which} still busy after {timeout:.0f} s: " + "; ".join(parts)


def _mib(value: Value) -> str:
    """Memory as nvidia-smi gave it: a number, or the reason there is none (never a made-up 0)."""
    return f"{value.value:.0f} MiB" if value.value is not None else f"unknown MiB ({value.reason})"


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


def parse_run_listing(text: str, host: str, target: Target) -> list[RunRecord]:
    """The listing script's output -> the runs of `target` (where it was listed). A record that is damaged,
    names another target or holds values a launch never writes is left out: nothing acts on it."""
    records: list[RunRecord] = []
    blocks = text.split("@@run ")[1:]
    for block in blocks:
        head, _, rest = block.partition("\n")
        run_dir = head.strip().rstrip("/")
        docs = [ln for ln in rest.splitlines() if ln.strip() and not ln.startswith("@@sgtui")]
        try:
            meta = json.loads(docs[0])
            cmd = json.loads(docs[1]) if len(docs) > 1 else {}
            pid, pgid, start, boot = _checked_ids(meta)
            declared = cmd.get("target")
            if declared and Target.from_mapping(declared) != target:
                continue
            argv = [str(a) for a in cmd.get("argv", [])]
            env = {str(k): str(v) for k, v in dict(cmd.get("env", {})).items()}
            gpus = list(cmd.get("gpus", []))
            if not all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in gpus):
                continue
        except (IndexError, KeyError, TypeError, AttributeError, ValueError, shell.ShellError):
            continue
        run_id = run_dir.rsplit("/", 1)[-1]
        records.append(
            RunRecord(
                id=run_id,
                host=host,
                target=target,
                run_dir=run_dir,
                argv=argv,
                env=env,
                gpus=gpus,
                pid=pid,
                pgid=pgid,
                start=start,
                boot=boot,
                started_at=_started_at(run_id),
            )
        )
    return sorted(records, key=lambda r: r.id)


def _checked_ids(meta: Mapping[str, Any]) -> tuple[int, int, int | None, str]:
    """pid, pgid, start, boot as read back from the host, refused unless they are what a launch writes:
    pid = pgid (a session leader), a plausible pgid (never 0, 1 or negative), an integer start time."""
    pid, pgid = meta["pid"], meta["pgid"]
    shell.check_pgid(pgid)
    if pid != pgid:
        raise shell.ShellError(f"pid {pid!r} differs from pgid {pgid!r}, but a run leads its own group")
    return pid, pgid, shell.check_start(meta.get("start")), shell.check_boot(meta.get("boot"))


def _directly_under(run: RunRecord, runs_dir: str) -> bool:
    parent, _, name = run.run_dir.rpartition("/")
    return (parent or "/") == runs_dir and name not in ("", ".", "..")


def _started_at(run_id: str) -> float:
    """The launch time encoded in a run id (UTC), or 0.0 for a directory sgtui did not name."""
    try:
        return float(calendar.timegm(time.strptime(run_id[:15], "%Y%m%d-%H%M%S")))
    except ValueError:
        return 0.0
