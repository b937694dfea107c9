"""Parsers for nvidia-smi's CSV output and /proc/PID/cgroup, with named states instead of fake zeros.

A missing driver, `[N/A]`, `[Not Supported]` or a line we cannot read must never look like an idle GPU:
every value is either a number or None with a reason.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

QUERY_GPU_FIELDS = "index,uuid,name,memory.used,memory.total,utilization.gpu"
QUERY_APPS_FIELDS = "pid,process_name,used_memory,gpu_uuid"


class GpuState(enum.Enum):
    OK = "ok"
    NO_DRIVER = "no driver"  # nvidia-smi runs but cannot talk to the driver
    NO_NVIDIA_SMI = "no nvidia-smi"  # the command is not installed
    NO_DEVICES = "no devices"
    PARTIAL = "partial"  # some fields are [N/A] / [Not Supported]
    UNREADABLE = "unreadable"  # output we do not understand
    UNREACHABLE = "unreachable"  # the host could not be asked


@dataclass(frozen=True)
class Value:
    """A number, or None with the reason nvidia-smi gave ("N/A", "Not Supported", ...)."""

    value: float | None
    reason: str | None = None

    @property
    def known(self) -> bool:
        return self.value is not None


@dataclass(frozen=True)
class GpuReading:
    index: int
    uuid: str
    name: str
    memory_used_mib: Value
    memory_total_mib: Value
    utilization_pct: Value
    state: GpuState = GpuState.OK


@dataclass(frozen=True)
class GpuProcess:
    """A process holding GPU memory; `container` is "pct 129" / "docker 3f2a..." / None (the host)."""

    pid: int
    name: str
    used_mib: Value
    gpu_uuid: str
    gpu_index: int | None = None
    container: str | None = None
    user: str | None = None  # the owner of /proc/PID (None when it could not be read)


@dataclass(frozen=True)
class GpuProblem:
    """Why there are no readings: a named state and the text that shows it."""

    state: GpuState
    detail: str


_DRIVER_ERRORS = (
    "couldn't communicate with the nvidia driver",
    "nvidia-smi has failed",
    "failed to initialize nvml",  # "...: Driver/library version mismatch", "...: Unknown Error" (containers)
    "driver/library version mismatch",
    "couldn't find libnvidia-ml.so",
    "unable to determine the device handle",
)


def classify_failure(text: str, rc: int | None = None) -> GpuProblem | None:
    """A named problem when nvidia-smi output (or exit code) shows no usable readings, else None."""
    low = text.lower()
    if (
        rc == 127
        or "command not found" in low
        or ("no such file or directory" in low and "nvidia-smi" in low)
    ):
        return GpuProblem(GpuState.NO_NVIDIA_SMI, text.strip()[:200] or "nvidia-smi not found")
    if any(e in low for e in _DRIVER_ERRORS):
        return GpuProblem(GpuState.NO_DRIVER, text.strip()[:200])
    if "no devices were found" in low:
        return GpuProblem(GpuState.NO_DEVICES, text.strip()[:200])
    return None


def advice(problem: GpuProblem) -> str:
    """What a user can do about a GPU problem, in one clause."""
    low = problem.detail.lower()
    if "version mismatch" in low:
        return "the NVIDIA kernel module and the user-space driver differ (an upgrade without a reboot?)"
    if problem.state is GpuState.NO_NVIDIA_SMI:
        return "install the NVIDIA driver utilities (nvidia-smi) on that host"
    if problem.state is GpuState.NO_DRIVER:
        return "the NVIDIA driver is not loaded or not reachable there; check `nvidia-smi` on the host"
    if problem.state is GpuState.NO_DEVICES:
        return "the driver sees no GPU on that host"
    return "run nvidia-smi on the host to see what it prints"


def parse_value(text: str) -> Value:
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        return Value(None, t[1:-1])
    if t in ("", "N/A"):
        return Value(None, t or "empty")
    if m := _WITH_UNIT.match(t):  # "1024 MiB" / "35 %" when a driver ignores `nounits`
        return Value(float(m.group(1)))
    return Value(None, f"unreadable {t!r}")


_WITH_UNIT = re.compile(r"(\d+(?:\.\d+)?)\s*(?:MiB|%)?\Z")


def parse_gpu_line(line: str) -> GpuReading | None:
    """One `--query-gpu=index,uuid,name,memory.used,memory.total,utilization.gpu` row, or None."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) < 6 or not parts[0].isdigit():
        return None
    # a GPU name could hold a comma: the name is everything between uuid and the last three fields
    index, uuid, *name_parts = parts[:-3]
    used, total, util = (parse_value(p) for p in parts[-3:])
    state = GpuState.OK if used.known and total.known and util.known else GpuState.PARTIAL
    return GpuReading(int(index), uuid, ", ".join(name_parts), used, total, util, state)


def parse_query_gpu(text: str) -> tuple[list[GpuReading], list[str]]:
    """All readable rows, and the lines that were not readable (for a visible warning, not silence)."""
    readings, bad = [], []
    for line in text.splitlines():
        if not line.strip():
            continue
        row = parse_gpu_line(line)
        if row is None:
            bad.append(line)
        else:
            readings.append(row)
    return readings, bad


def parse_compute_apps(text: str) -> list[GpuProcess]:
    """`--query-compute-apps=pid,process_name,used_memory,gpu_uuid` rows (no header, no units)."""
    procs = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4 or not parts[0].isdigit():
            continue
        pid, *name_parts, used, uuid = parts
        procs.append(GpuProcess(int(pid), ", ".join(name_parts), parse_value(used), uuid))
    return procs


_LXC = re.compile(r"/lxc(?:\.payload)?[./](\d+)(?:/|$)")
_DOCKER = re.compile(r"(?:/docker/|docker-)([0-9a-f]{12,64})")


def container_from_cgroup(text: str) -> str | None:
    """ "pct 129" for Proxmox LXC, "docker <12-hex id>" for Docker, None for the host itself."""
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        if m := _LXC.search(path):
            return f"pct {m.group(1)}"
        if m := _DOCKER.search(path):
            return f"docker {m.group(1)[:12]}"
    return None


_MISS = object()


class CycleParser:
    """`nvidia-smi --query-gpu=... -lms N` output as it arrives -> complete cycles (one tuple of readings
    per sample), with no work for what did not change.

    nvidia-smi prints one row per GPU per cycle; a row whose index does not increase starts the next
    cycle, and a cycle is complete once it has as many rows as the last complete one (`expected`). The
    first cycle has no count to go by: `close_cycle()` ends it (the stream calls it when the output went
    quiet). Each distinct line is parsed once: a line seen before gives the very same `GpuReading`, so a
    cycle equal to the previous one compares equal by identity; a chunk identical to the previous one
    (an idle GPU host prints the same bytes every second) gives the previous cycle without splitting it.
    The line cache is bounded (`cache_size`, emptied when full). Stray lines are kept in `bad`.
    """

    def __init__(self, cache_size: int = 256) -> None:
        self.expected: int | None = None
        self.bad: list[str] = []
        self._rows: list[GpuReading] = []
        self._pending = b""
        self._cache: dict[bytes, GpuReading | None] = {}
        self._cache_size = cache_size
        self._last_data: bytes | None = None
        self._last_cycle: tuple[GpuReading, ...] | None = None

    @property
    def open_rows(self) -> bool:
        """Rows of a cycle not yet complete (and nothing half a line long after them)."""
        return bool(self._rows) and not self._pending

    def feed(self, data: bytes) -> list[tuple[GpuReading, ...]]:
        if data == self._last_data and not self._rows and not self._pending:
            return [self._last_cycle] if self._last_cycle is not None else []
        cycles: list[tuple[GpuReading, ...]] = []
        *lines, self._pending = (self._pending + data).split(b"\n") if self._pending else data.split(b"\n")
        for raw in lines:
            row = self._cache.get(raw, _MISS)
            if row is _MISS:
                row = parse_gpu_line(raw.decode("utf-8", "replace"))
                if len(self._cache) >= self._cache_size:
                    self._cache.clear()
                self._cache[raw] = row
            if row is None:
                if raw.strip():
                    self.bad.append(raw.decode("utf-8", "replace"))
                continue
            assert isinstance(row, GpuReading)
            if self._rows and row.index <= self._rows[-1].index:
                cycles.append(self.close_cycle())
            self._rows.append(row)
            if self.expected is not None and len(self._rows) == self.expected:
                cycles.append(self.close_cycle())
        one_whole = len(cycles) == 1 and not self._rows and not self._pending
        self._last_data = data if one_whole else None
        return cycles

    def close_cycle(self) -> tuple[GpuReading, ...]:
        """End the cycle being collected (the first one, when the output went quiet): its size is the
        expected size from now on."""
        cycle = tuple(self._rows)
        self._rows = []
        self.expected = len(cycle)
        if cycle != self._last_cycle:
            self._last_cycle = cycle
        return self._last_cycle if self._last_cycle is not None else cycle

    def leftover(self) -> tuple[GpuReading, ...]:
        """Rows of an unfinished cycle when the stream ended."""
        rows, self._rows = tuple(self._rows), []
        return rows
