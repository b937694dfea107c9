"""The simulated host's `nvidia-smi`: the query formats sgtui uses, their streaming mode, and the table.

Output follows the real tool: `--format=csv[,noheader][,nounits]`, headers with units in brackets
(`memory.used [MiB]`), `-lms N` / `-l N` loops that end quietly when the reader goes away, `-i` to pick
GPUs, and the error text for an unknown field (exit 2). Inside a container only its GPUs are visible.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

from sgtui.sim.state import GpuProcessRow, GpuRow, StateStore, gpu_rows

if TYPE_CHECKING:
    from pathlib import Path

DRIVER_VERSION = "550.127.05"
CUDA_VERSION = "12.4"
CONTAINER_ENV = "SGTUI_SIM_CONTAINER"

# field -> (header, unit or "", value getter)
_GPU_FIELDS: dict[str, tuple[str, str, Callable[[GpuRow], str]]] = {
    "index": ("index", "", lambda g: str(g.index)),
    "name": ("name", "", lambda g: g.name),
    "uuid": ("uuid", "", lambda g: g.uuid),
    "gpu_uuid": ("uuid", "", lambda g: g.uuid),
    "pci.bus_id": ("pci.bus_id", "", lambda g: g.bus_id),
    "gpu_bus_id": ("pci.bus_id", "", lambda g: g.bus_id),
    "driver_version": ("driver_version", "", lambda g: DRIVER_VERSION),
    "count": ("count", "", lambda g: "0"),  # replaced per call with the visible count
    "memory.total": ("memory.total", "MiB", lambda g: str(g.total_mib)),
    "memory.used": ("memory.used", "MiB", lambda g: str(g.used_mib)),
    "memory.free": ("memory.free", "MiB", lambda g: str(g.free_mib)),
    "memory.reserved": ("memory.reserved", "MiB", lambda g: "0"),
    "utilization.gpu": ("utilization.gpu", "%", lambda g: str(g.utilization)),
    "utilization.memory": ("utilization.memory", "%", lambda g: str(g.utilization // 2)),
    "temperature.gpu": ("temperature.gpu", "", lambda g: str(34 + g.utilization // 3)),
    "power.draw": ("power.draw", "W", lambda g: f"{21.5 + 2.5 * g.utilization:.2f}"),
    "persistence_mode": ("persistence_mode", "", lambda g: "Enabled"),
    "compute_mode": ("compute_mode", "", lambda g: "Default"),
    "timestamp": ("timestamp", "", lambda g: time.strftime("%Y/%m/%d %H:%M:%S.000")),
}

_APP_FIELDS: dict[str, tuple[str, str, Callable[[GpuRow, GpuProcessRow], str]]] = {
    "pid": ("pid", "", lambda g, p: str(p.pid)),
    "process_name": ("process_name", "", lambda g, p: p.name),
    "name": ("process_name", "", lambda g, p: p.name),
    "used_memory": ("used_gpu_memory", "MiB", lambda g, p: str(p.mib)),
    "used_gpu_memory": ("used_gpu_memory", "MiB", lambda g, p: str(p.mib)),
    "gpu_uuid": ("gpu_uuid", "", lambda g, p: g.uuid),
    "gpu_name": ("gpu_name", "", lambda g, p: g.name),
    "gpu_bus_id": ("gpu_bus_id", "", lambda g, p: g.bus_id),
    "timestamp": ("timestamp", "", lambda g, p: time.strftime("%Y/%m/%d %H:%M:%S.000")),
}


class UsageError(Exception):
    """Bad arguments: printed like nvidia-smi prints them, exit code 2."""


def _visible(state: dict, ids: str | None) -> list[int]:
    indices = [int(g["index"]) for g in state["gpus"]]
    container = os.environ.get(CONTAINER_ENV)
    if container and container in state.get("containers", {}):
        allowed = set(state["containers"][container]["gpus"])
        indices = [i for i in indices if i in allowed]
    if ids is not None:
        wanted = []
        for part in ids.split(","):
            if not part.strip().isdigit() or int(part) not in indices:
                raise UsageError(f"No devices were found for id {part.strip()!r}")
            wanted.append(int(part))
        indices = [i for i in indices if i in wanted]
    return indices


def _format_rows(rows: list[list[str]], units: list[str], headers: list[str], fmt: set[str]) -> list[str]:
    out = []
    if "noheader" not in fmt:
        out.append(", ".join(f"{h} [{u}]" if u else h for h, u in zip(headers, units, strict=True)))
    for row in rows:
        if "nounits" in fmt:
            out.append(", ".join(row))
        else:
            out.append(", ".join(f"{v} {u}" if u else v for v, u in zip(row, units, strict=True)))
    return out


def query_gpus(state: dict, fields: list[str], fmt: set[str], ids: str | None) -> list[str]:
    unknown = [f for f in fields if f not in _GPU_FIELDS]
    if unknown:
        raise UsageError(f'Field "{unknown[0]}" is not a valid field to query.')
    visible = _visible(state, ids)
    gpus = gpu_rows(state, visible)
    rows = [[str(len(gpus)) if f == "count" else _GPU_FIELDS[f][2](g) for f in fields] for g in gpus]
    return _format_rows(rows, [_GPU_FIELDS[f][1] for f in fields], [_GPU_FIELDS[f][0] for f in fields], fmt)


def query_apps(state: dict, fields: list[str], fmt: set[str], ids: str | None) -> list[str]:
    unknown = [f for f in fields if f not in _APP_FIELDS]
    if unknown:
        raise UsageError(f'Field "{unknown[0]}" is not a valid field to query.')
    gpus = gpu_rows(state, _visible(state, ids))
    rows = [[_APP_FIELDS[f][2](g, p) for f in fields] for g in gpus for p in g.processes]
    return _format_rows(rows, [_APP_FIELDS[f][1] for f in fields], [_APP_FIELDS[f][0] for f in fields], fmt)


def table(state: dict, ids: str | None) -> list[str]:
    """The default `nvidia-smi` screen, close enough to the real one to read and to grep."""
    gpus = gpu_rows(state, _visible(state, ids))
    bar = "+-----------------------------------------+------------------------+----------------------+"
    wide = "+" + "-" * 89 + "+"
    out = [
        time.strftime("%a %b %d %H:%M:%S %Y       "),
        wide,
        f"| NVIDIA-SMI {DRIVER_VERSION:<22} Driver Version: {DRIVER_VERSION:<14} "
        f"CUDA Version: {CUDA_VERSION:<9}|",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]
    for g in gpus:
        out.append(f"| {g.index:>3}  {g.name[:24]:<24}       On  | {g.bus_id:>18} Off |{'Off':>21} |")
        power = round(21.5 + 2.5 * g.utilization)
        mem = f"{g.used_mib}MiB / {g.total_mib:>6}MiB"
        out.append(
            f"| 30%   {34 + g.utilization // 3:>2}C    P{2 if g.utilization else 8:<2}"
            f"{power:>14}W /  300W | {mem:>22} | {g.utilization:>6}%      Default |"
        )
        out.append(f"|{'':41}|{'':24}|{'N/A':>21} |")
        out.append(bar)
    out += [
        " " * 91,
        wide,
        "| Processes:" + " " * 78 + "|",
        "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|" + "=" * 89 + "|",
    ]
    procs = [(g, p) for g in gpus for p in g.processes]
    if not procs:
        out.append("|  No running processes found" + " " * 61 + "|")
    for g, p in procs:
        out.append(f"| {g.index:>4}   N/A  N/A {p.pid:>10}      C   {p.name[:40]:<40} {p.mib:>7}MiB |")
    out.append(wide)
    return out


def _parse(argv: Sequence[str]) -> dict[str, str]:
    opts: dict[str, str] = {}
    args = list(argv)
    aliases = {
        "-lms": "loop-ms",
        "--loop-ms": "loop-ms",
        "-l": "loop",
        "--loop": "loop",
        "-i": "id",
        "--id": "id",
    }
    i = 0
    while i < len(args):
        arg = args[i]
        key, eq, value = arg.partition("=")
        if key in ("--query-gpu", "--query-compute-apps", "--format") and eq:
            opts[key.lstrip("-")] = value
        elif key in aliases:
            if eq:
                opts[aliases[key]] = value
            elif i + 1 < len(args) and not args[i + 1].startswith("-"):
                opts[aliases[key]] = args[i + 1]
                i += 1
            elif key in ("-l", "--loop"):
                opts["loop"] = "5"
            else:
                raise UsageError(f"Option {arg} requires a value.")
        else:
            raise UsageError(
                f"Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n({arg})"
            )
        i += 1
    return opts


def run(state_dir: str | Path, argv: Sequence[str], out: TextIO = sys.stdout) -> int:
    """nvidia-smi's main: one sample, or one per interval until the reader closes the pipe."""
    try:
        opts = _parse(argv)
        interval = None
        if "loop-ms" in opts:
            interval = max(int(opts["loop-ms"]), 1) / 1000
        elif "loop" in opts:
            interval = max(float(opts["loop"]), 0.001)
        fmt = set(opts.get("format", "").split(",")) - {""}
        if ("query-gpu" in opts or "query-compute-apps" in opts) and "csv" not in fmt:
            raise UsageError("'--format' option is required when using a query option. Use --format=csv.")
        store = StateStore(state_dir)
        while True:
            state = store.refresh()
            if "query-gpu" in opts:
                lines = query_gpus(state, opts["query-gpu"].split(","), fmt, opts.get("id"))
            elif "query-compute-apps" in opts:
                lines = query_apps(state, opts["query-compute-apps"].split(","), fmt, opts.get("id"))
            else:
                lines = table(state, opts.get("id"))
            out.write("".join(line + "\n" for line in lines))
            out.flush()
            if interval is None:
                return 0
            time.sleep(interval)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    except (BrokenPipeError, KeyboardInterrupt):
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), sys.stdout.fileno())  # no second error while Python flushes at exit
        return 0
