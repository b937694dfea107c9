"""What sgtui knows about runs, and how it reads that back from a target's scripts.

`RunRecord` (one launch), `RunStatus` (alive, exited, stopped, dead, ...); `StopPreview` and `StopResult`
live in run_stops.py and are importable from here. Records read back from a target are checked: a record
that fails any check keeps the reason in `.foreign` and is never reattached to or signalled.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import enum
import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from sgtui.core import runscripts
from sgtui.core.shell import ShellError
from sgtui.remote.run_stops import (
    LeftProcess,
    StopPreview,
    StopResult,
    StopStep,
    expected_leader,
    int_value,
    left_from_marker,
    preview_from_marker,
    steps_from_marker,
)
from sgtui.remote.targets import Target

LOG_NAME = runscripts.LOG_FILE
__all__ = [
    "LOG_NAME",
    "LeftProcess",
    "RunRecord",
    "RunState",
    "RunStatus",
    "StopPreview",
    "StopResult",
    "StopStep",
    "expected_leader",
    "left_from_marker",
    "preview_from_marker",
    "steps_from_marker",
]
DISK_FULL_KIB = 1024  # less free space than this where the log is, and the disk counts as full


class RunState(enum.Enum):
    RUNNING = "running"
    EXITED = "exited"  # ended by itself; rc known
    STOPPED = "stopped"  # ended after a stop by sgtui (recorded in its run dir); rc when it was written
    DEAD = "dead"  # gone without an exit code (killed, the host rebooted, or the disk was full)
    PID_REUSED = "pid-reused"  # gone, and its pid now belongs to another process
    FOREIGN = "foreign"  # its run dir is not ours: never looked at further, never signalled


@dataclass(frozen=True)
class RunStatus:
    state: RunState
    rc: int | None = None
    members: int = 0  # live (non-zombie) processes left in the run's process group
    disk_full: str | None = None  # why the exit code is missing, when the log's disk is full
    foreign: str | None = None
    why: str | None = None  # for a run that ended with its container: that container's fate

    @property
    def note(self) -> str | None:
        """Why the run is in its state beyond the state's name, in the one wording `sgtui runs` and the
        TUI both print: the full disk that lost its exit code, or what happened to its container."""
        return self.disk_full or self.why


@dataclass(frozen=True)
class RunRecord:
    """What sgtui knows about a launched run; saved as run.json + command.json in its run directory.

    `foreign` is None for a run this user may act on, else the reason it is refused (another owner, a
    symlink, bad permissions, an unverifiable or damaged record); pid/pgid are 0 when unreadable there.
    """

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
    user: str | None = None
    node_rank: int | None = None
    foreign: str | None = None

    @property
    def log_path(self) -> str:
        return f"{self.run_dir}/{LOG_NAME}"

    @property
    def key(self) -> str:
        """The run's name on its target (run dir and SGTUI_RUN_ID): the id, plus `.nodeN` for a node of a
        multi-node run, so nodes sharing a home directory or a machine never take each other's files or
        processes for their own."""
        return self.run_dir.rsplit("/", 1)[-1]

    def to_json(self) -> dict[str, Any]:
        """Everything but the env values (they may be secrets): names only, under `env_names`."""
        data = asdict(self)
        data["target"] = {"kind": self.target.kind, "id": self.target.id}
        data["env_names"] = sorted(self.env)
        del data["env"]
        data["log_path"] = self.log_path
        return data


def status_from_marker(marker: Mapping[str, Any], log_path: str = "") -> RunStatus:
    """The status script's marker -> RunStatus (members alive win over a recorded exit code)."""
    if marker.get("result") == "foreign":
        return RunStatus(RunState.FOREIGN, foreign=str(marker.get("foreign")))
    rc = marker.get("rc")
    members = int(marker.get("members") or 0)
    reused = str(marker.get("reused", "0"))
    if marker.get("stopped") is True and members == 0:  # a stop by sgtui recorded itself: it ended so,
        return RunStatus(RunState.STOPPED, None if rc is None else int(rc), 0)  # whatever got its pid since
    if reused == "boot":
        return RunStatus(RunState.DEAD, rc, 0)
    if reused != "0":
        return RunStatus(RunState.PID_REUSED, rc, 0)
    why = f"its run dir {log_path.rsplit('/', 1)[0]} was removed" if marker.get("gone") is True else None
    if members > 0:
        return RunStatus(RunState.RUNNING, rc, members, why=why)
    if why is not None:
        return RunStatus(RunState.DEAD, None, 0, why=why)
    if rc is not None:
        return RunStatus(RunState.EXITED, int(rc), 0)
    return RunStatus(RunState.DEAD, None, 0, disk_full=_disk_full(marker, log_path))


def _disk_full(marker: Mapping[str, Any], log_path: str) -> str | None:
    free, tmp = int_value(marker.get("free_kib")), marker.get("rc_tmp")
    if tmp != "empty" and (free is None or free >= DISK_FULL_KIB):
        return None
    where = log_path.rsplit("/", 1)[0] or log_path
    room = f"{free} KiB free" if free is not None else "free space unknown"
    return (
        f"the disk holding the log is full ({where}: {room}), so the server's exit code could not be "
        "written; free space there, then launch again"
    )


def parse_run_listing(text: str, host: str, target: Target, runs_dir: str) -> list[RunRecord]:
    """The listing script's output -> the runs of `target`, oldest first. A record naming another target
    is left out; one that fails a check on the target, or holds values a launch never writes, is kept
    with the reason in `.foreign`."""
    records: list[RunRecord] = []
    for block in ("\n" + text).split("\n@@run ")[1:]:
        name, _, rest = block.partition("\n")
        record = _record(name.strip(), rest.splitlines(), host, target, runs_dir)
        if record is not None:
            records.append(record)
    return sorted(records, key=lambda r: r.id)


def _record(name: str, lines: list[str], host: str, target: Target, runs_dir: str) -> RunRecord | None:
    reasons: list[str] = []
    owner: str | None = None
    files: dict[str, Any] = {}
    for line in lines:
        if line.startswith("@@sgtui"):
            break
        tag, _, value = line.partition(" ")
        if tag == "@@foreign":
            reasons.append(value.strip())
        elif tag == "@@owner":
            owner = value.strip() or None
        elif tag in ("@@run.json", "@@command.json"):
            try:
                files[tag[2:]] = json.loads(base64.b64decode(value.strip(), validate=True))
            except (binascii.Error, ValueError):
                files[tag[2:]] = None
        elif tag in ("@@run.json=", "@@command.json="):  # our own one-line record, sent as it is
            try:
                files[tag[2:-1]] = json.loads(value)
            except ValueError:
                files[tag[2:-1]] = None
    meta, cmd = files.get("run.json"), files.get("command.json", {})
    if not isinstance(cmd, dict):
        reasons.append("its command.json is damaged")
        cmd = {}
    declared = cmd.get("target")
    try:
        if declared and Target.from_mapping(declared) != target:
            return None  # another target's run, sharing this runs dir
    except (ShellError, TypeError, AttributeError, ValueError):
        reasons.append("its command.json names no valid target")
    pid = pgid = 0
    start: int | None = None
    boot = ""
    if not isinstance(meta, dict):
        reasons.append("its run.json is missing or damaged")
    else:
        pid, pgid = int_value(meta.get("pid")) or 0, int_value(meta.get("pgid")) or 0
        try:
            pid, pgid, start, boot = checked_ids(meta)
        except (ShellError, KeyError) as exc:
            reasons.append(f"its run.json holds values a launch never writes ({exc})")
        else:
            if start is None:
                reasons.append(
                    "its run.json records no start time (start: null), so its pid cannot be told from a "
                    "reused one"
                )
    try:
        argv = [str(a) for a in cmd.get("argv", [])]
        env = {str(k): str(v) for k, v in dict(cmd.get("env", {})).items()}
        gpus = list(cmd.get("gpus", []))
        if not all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in gpus):
            raise ValueError("gpus")
    except (TypeError, ValueError, AttributeError):
        argv, env, gpus = [], {}, []
        reasons.append("its command.json is damaged")
    node_rank = int_value(cmd.get("node_rank"))
    shared = cmd.get("run_id")  # a node of a multi-node run: the id all its nodes share
    run_id = shared if isinstance(shared, str) and node_name(shared, node_rank) == name else name
    return RunRecord(
        id=run_id,
        host=host,
        target=target,
        run_dir=f"{runs_dir}/{name}",
        argv=argv,
        env=env,
        gpus=gpus,
        pid=pid,
        pgid=pgid,
        start=start,
        boot=boot,
        started_at=started_at(run_id),
        user=owner,
        node_rank=node_rank,
        foreign="; ".join(dict.fromkeys(reasons)) or None,
    )


def node_name(run_id: str, node_rank: int | None) -> str:
    """The run dir name of one node of a run (`ID.nodeN`), or the id itself for a single-node run."""
    return run_id if node_rank is None else f"{run_id}.node{node_rank}"


def checked_ids(meta: Mapping[str, Any]) -> tuple[int, int, int | None, str]:
    """pid, pgid, start, boot as read back from the host, refused unless they are what a launch writes:
    pid = pgid (a session leader), a plausible pgid (never 0, 1 or negative), an integer start time."""
    pid, pgid = meta["pid"], meta["pgid"]
    runscripts.check_pgid(pgid)
    if pid != pgid:
        raise ShellError(f"pid {pid!r} differs from pgid {pgid!r}, but a run leads its own group")
    return pid, pgid, runscripts.check_start(meta.get("start")), runscripts.check_boot(meta.get("boot"))


def started_at(run_id: str) -> float:
    """The launch time encoded in a run id (UTC), or 0.0 for a directory sgtui did not name."""
    try:
        return float(calendar.timegm(time.strptime(run_id[:15], "%Y%m%d-%H%M%S")))
    except ValueError:
        return 0.0
