"""The simulated host's shared state: GPUs and who holds their memory, in one JSON file under a lock.

Every fake binary (nvidia-smi, pct, the SGLang stand-in) is a separate process, so the state lives in a
file guarded by `fcntl.flock`: readers take a shared lock, writers an exclusive one and replace the file
atomically. A process entry stays "holding memory" while its pid is alive with the recorded start time,
and for `release_delay` seconds after it is seen dead, which is how a killed run's memory lingers.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

STATE_FILE = "state.json"
LOCK_FILE = "state.lock"
BASE_USED_MIB = 3  # what an idle GPU shows in nvidia-smi (driver, persistence daemon)
# Inside a Docker container with its own PID namespace: where the host's /proc is mounted. The state then
# holds host pids (what a real nvidia-smi on the host reports), so the host's fake nvidia-smi and sgtui's
# pid -> container mapping see the container's processes as they would on a real GPU host.
HOST_PROC_ENV = "SGTUI_SIM_HOST_PROC"
_host_pids: dict[int, tuple[int | None, int]] = {}  # pid -> (start time, host pid), once found


def proc_start_time(pid: int, proc: str = "/proc") -> int | None:
    """Field 22 of /proc/PID/stat, or None when the pid is gone or a zombie (zombies hold no memory)."""
    try:
        with open(f"{proc}/{pid}/stat") as fh:
            line = fh.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = line.rpartition(") ")[2].split()
    if not fields or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def host_proc() -> str:
    return os.environ.get(HOST_PROC_ENV) or "/proc"


def host_pid(pid: int) -> int:
    """`pid` as the host sees it: itself, unless HOST_PROC_ENV names the host's /proc, where the entry
    whose NSpid ends in `pid` and whose start time matches ours is the same process (a pid found
    earlier keeps its host pid after it exits, so its memory can be marked released)."""
    root = os.environ.get(HOST_PROC_ENV)
    if not root:
        return pid
    start = proc_start_time(pid)
    known = _host_pids.get(pid)
    if known is not None and (start is None or known[0] == start):
        return known[1]
    if start is None:
        return pid
    for name in os.listdir(root):
        if not name.isdigit():
            continue
        try:
            with open(f"{root}/{name}/status") as fh:
                nspid = next((ln.split()[1:] for ln in fh if ln.startswith("NSpid:")), [])
        except OSError:
            continue
        if len(nspid) > 1 and nspid[-1] == str(pid) and proc_start_time(int(name), root) == start:
            _host_pids[pid] = (start, int(name))
            return int(name)
    return pid


def proc_alive(entry: dict[str, Any]) -> bool:
    if entry.get("static"):
        return True
    start = proc_start_time(int(entry["pid"]), host_proc())
    return start is not None and (entry.get("start") is None or start == entry["start"])


class StateStore:
    """The state file of one simulated host (`<dir>/state.json`)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        # os.path rather than pathlib: the fake nvidia-smi imports this on every call, so it stays light
        self.dir = os.fspath(directory)
        self.path = os.path.join(self.dir, STATE_FILE)
        self.lock_path = os.path.join(self.dir, LOCK_FILE)

    @contextlib.contextmanager
    def _locked(self, mode: int) -> Iterator[None]:
        with open(self.lock_path, "a+") as lock:
            fcntl.flock(lock, mode)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _load(self) -> dict[str, Any]:
        with open(self.path, encoding="utf-8") as fh:
            data: dict[str, Any] = json.load(fh)
        return data

    def _save(self, state: dict[str, Any]) -> None:
        tmp = os.path.join(self.dir, f".{STATE_FILE}.{os.getpid()}")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(state, fh, indent=1)
        os.replace(tmp, self.path)

    def create(self, state: dict[str, Any]) -> None:
        os.makedirs(self.dir, exist_ok=True)
        with self._locked(fcntl.LOCK_EX):
            self._save(state)

    def read(self) -> dict[str, Any]:
        with self._locked(fcntl.LOCK_SH):
            return self._load()

    @contextlib.contextmanager
    def update(self) -> Iterator[dict[str, Any]]:
        """Read-modify-write under the exclusive lock; the file is replaced when the block ends cleanly."""
        with self._locked(fcntl.LOCK_EX):
            state = self._load()
            yield state
            self._save(state)

    def refresh(self, now: float | None = None) -> dict[str, Any]:
        """Note newly dead processes and drop those whose memory has been released; returns the state."""
        with self.update() as state:
            settle(state, time.time() if now is None else now)
            return state


def settle(state: dict[str, Any], now: float) -> None:
    """Mark processes found dead (their memory is released `release_delay` later) and forget expired ones."""
    kept = []
    for entry in state["procs"]:
        if entry.get("exited_at") is None and not proc_alive(entry):
            entry["exited_at"] = now
        exited = entry.get("exited_at")
        if exited is not None and now >= exited + float(entry.get("release_delay", 0.0)):
            continue
        kept.append(entry)
    state["procs"] = kept


class GpuProcessRow(NamedTuple):
    pid: int
    name: str
    mib: int
    user: str


class GpuRow(NamedTuple):
    """One GPU as nvidia-smi reports it at this moment."""

    index: int
    name: str
    uuid: str
    bus_id: str
    total_mib: int
    used_mib: int
    utilization: int
    processes: tuple[GpuProcessRow, ...]

    @property
    def free_mib(self) -> int:
        return max(0, self.total_mib - self.used_mib)


def gpu_rows(state: dict[str, Any], visible: list[int] | None = None) -> list[GpuRow]:
    """The GPUs (all, or the `visible` host indices) with the memory each process holds on them."""
    rows = []
    for gpu in state["gpus"]:
        index = int(gpu["index"])
        if visible is not None and index not in visible:
            continue
        procs: dict[int, GpuProcessRow] = {}
        util = 0
        for entry in state["procs"]:
            if int(entry["gpu"]) != index:
                continue
            pid = int(entry["pid"])
            prior = procs.get(pid)
            mib = int(entry["mib"]) + (prior.mib if prior else 0)
            procs[pid] = GpuProcessRow(pid, str(entry["name"]), mib, str(entry.get("user", "root")))
            util += int(entry.get("util", 0))
        used = BASE_USED_MIB + sum(p.mib for p in procs.values())
        rows.append(
            GpuRow(
                index=index,
                name=str(gpu["name"]),
                uuid=str(gpu["uuid"]),
                bus_id=str(gpu["bus_id"]),
                total_mib=int(gpu["total_mib"]),
                used_mib=min(used, int(gpu["total_mib"])),
                utilization=min(100, util),
                processes=tuple(procs.values()),
            )
        )
    return rows


def set_holding(
    state: dict[str, Any],
    *,
    pid: int,
    gpu: int,
    mib: int,
    name: str,
    release_delay: float,
    util: int = 0,
    user: str = "root",
) -> None:
    """Record (or change) how much memory `pid` holds on `gpu`."""
    pid = host_pid(pid)
    for entry in state["procs"]:
        if int(entry["pid"]) == pid and int(entry["gpu"]) == gpu and entry.get("exited_at") is None:
            entry["mib"] = int(mib)
            entry["util"] = util
            return
    state["procs"].append(
        {
            "pid": pid,
            "start": proc_start_time(pid, host_proc()),
            "gpu": gpu,
            "mib": int(mib),
            "name": name,
            "user": user,
            "util": util,
            "static": False,
            "exited_at": None,
            "release_delay": release_delay,
        }
    )


def mark_exited(state: dict[str, Any], pids: set[int], now: float) -> None:
    """The processes in `pids` have exited: their memory goes `release_delay` seconds from now."""
    pids = {host_pid(p) for p in pids}
    for entry in state["procs"]:
        if int(entry["pid"]) in pids and entry.get("exited_at") is None:
            entry["exited_at"] = now
