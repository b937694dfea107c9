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
