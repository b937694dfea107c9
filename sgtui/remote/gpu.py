"""GPU memory and the processes holding it, per host.

One long-lived `nvidia-smi --query-gpu ... -lms N` channel per host streams readings (no process start per
sample, which is what makes 10 hosts x 8 GPUs at 2 Hz cheap on the jump box). Process ownership is asked
separately and less often, and host PIDs are mapped to containers through /proc/PID/cgroup. Locally,
NVML is used directly. Problems are named states (core.nvsmi.GpuState), never zeros.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import asyncssh

from sgtui.core.nvsmi import (
    QUERY_APPS_FIELDS,
    QUERY_GPU_FIELDS,
    CycleParser,
    GpuProblem,
    GpuProcess,
    GpuReading,
    GpuState,
    Value,
    advice,
    classify_failure,
    container_from_cgroup,
    parse_compute_apps,
    parse_query_gpu,
)
from sgtui.remote.connection import AuthError, HostKeyError, RemoteError, Transport
from sgtui.remote.targets import HOST


@dataclass(frozen=True)
class GpuSnapshot:
    """All GPUs of one host at one moment, or the named problem that prevented reading them."""

    host: str
    gpus: list[GpuReading]
    problem: GpuProblem | None = None
    unreadable: list[str] = field(default_factory=list)
    at: float = field(default_factory=time.time)
    same: bool = False  # the very readings of the stream's previous snapshot (nothing changed)


def query_gpu_command(interval_ms: int | None = None) -> str:
    loop = f" -lms {int(interval_ms)}" if interval_ms else ""
    return f"exec nvidia-smi --query-gpu={QUERY_GPU_FIELDS} --format=csv,noheader,nounits{loop} 2>&1"


_PROCESSES = f"""
out=$(nvidia-smi --query-compute-apps={QUERY_APPS_FIELDS} --format=csv,noheader,nounits 2>&1); rc=$?
echo "@@apps $rc"; printf '%s\\n' "$out"
echo "@@gpus"; nvidia-smi --query-gpu=index,uuid --format=csv,noheader,nounits 2>/dev/null
for pid in $(printf '%s\\n' "$out" | awk -F', *' '$1 ~ /^[0-9]+$/ {{print $1}}'); do
  echo "@@user $pid $(stat -c %U "/proc/$pid" 2>/dev/null)"
  echo "@@cgroup $pid"; cat "/proc/$pid/cgroup" 2>/dev/null
done
echo "@@end"
"""


def parse_processes(text: str) -> tuple[list[GpuProcess], GpuProblem | None]:
    """The output of the processes script -> processes with GPU index and container, or a problem."""
    sections: dict[str, list[str]] = {}
    key = ""
    for line in text.splitlines():
        if line.startswith("@@"):
            key = line[2:].strip()
            sections[key] = []
        elif key:
            sections[key].append(line)
    apps_key = next((k for k in sections if k.startswith("apps ")), None)
    if apps_key is None or "end" not in sections:
        return [], GpuProblem(GpuState.UNREADABLE, text.strip()[:200] or "no output")
    rc_text = apps_key.split()[1]
    apps_text = "\n".join(sections[apps_key])
    problem = classify_failure(apps_text, int(rc_text) if rc_text.lstrip("-").isdigit() else None)
    if problem is not None:
        return [], problem
    by_uuid: dict[str, int] = {}
    for line in sections.get("gpus", []):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit():
            by_uuid[parts[1]] = int(parts[0])
    users: dict[str, str] = {}
    for key in sections:
        parts = key.split()
        if len(parts) == 3 and parts[0] == "user":
            users[parts[1]] = parts[2]
    procs = [
        replace(
            p,
            gpu_index=by_uuid.get(p.gpu_uuid),
            container=container_from_cgroup("\n".join(sections.get(f"cgroup {p.pid}", []))),
            user=users.get(str(p.pid)),
        )
        for p in parse_compute_apps(apps_text)
    ]
    return procs, None


class GpuSampler:
    """nvidia-smi over a host's connection (nvidia-smi runs on the host, where all GPUs are visible)."""

    def __init__(self, conn: Transport, interval_ms: int = 500, *, problem_retry_s: float = 10.0) -> None:
        self.conn = conn
        self.interval_ms = interval_ms
        self.problem_retry_s = problem_retry_s

    @property
    def host(self) -> str:
        return self.conn.host.name

    async def query(self) -> GpuSnapshot:
        """One reading of every GPU now."""
        try:
            result = await self.conn.run(HOST.script(query_gpu_command()), timeout=30)
        except RemoteError as exc:
            return GpuSnapshot(self.host, [], GpuProblem(GpuState.UNREACHABLE, str(exc)))
        readings, bad = parse_query_gpu(result.stdout)
        if readings:  # one lost GPU ("Unable to determine the device handle ...") must not hide the rest
            return GpuSnapshot(self.host, readings, None, bad)
        problem = classify_failure(result.stdout + result.stderr, result.rc)
        if problem is not None:
            return GpuSnapshot(self.host, [], problem)
        text = (result.stdout + result.stderr).strip()[
            :200
        ] or f"nvidia-smi printed nothing (exit {result.rc})"
        return GpuSnapshot(self.host, [], GpuProblem(GpuState.UNREADABLE, text), bad)

    async def processes(self) -> list[GpuProcess]:
        """Processes holding GPU memory, with GPU index and container. Raises RemoteError on a problem."""
        result = await self.conn.run(HOST.script(_PROCESSES), timeout=30)
        procs, problem = parse_processes(result.stdout)
        if problem is not None:
            raise RemoteError(
                f"{self.host}: cannot list GPU processes: {problem.state.value} ({problem.detail}); "
                f"{advice(problem)}"
            )
        return procs

    async def stream(self) -> AsyncIterator[GpuSnapshot]:
        """Snapshots every interval from one long-lived channel, re-opened when it drops (`watch`, through a
        queue)."""
        queue: asyncio.Queue[GpuSnapshot | None] = asyncio.Queue()
        task = asyncio.ensure_future(self.watch(queue.put_nowait))
        task.add_done_callback(lambda _t: queue.put_nowait(None))
        try:
            while (snap := await queue.get()) is not None:
                yield snap
            if not task.cancelled() and (exc := task.exception()) is not None:
                raise exc
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def watch(self, on_snapshot: Callable[[GpuSnapshot], None]) -> None:
        """Hand a snapshot to `on_snapshot` every interval, until cancelled, from one long-lived channel
        re-opened when it drops; the readings are parsed in the connection's own callback (no task switch
        per sample: what lets one process follow 500 hosts).

        Problems come as snapshots without GPUs: NO_DRIVER and the like (then retried every
        `problem_retry_s`), UNREACHABLE while the connection is down (retried with backoff); a host key
        or authentication failure ends the watch after its snapshot. Stray lines (a chatty ~/.bashrc) are
        kept in `unreadable`, never mistaken for a failure once rows arrive.
        """
        delay = 0.05
        quiet = min(0.25, max(self.interval_ms / 2000, 0.02))
        while True:
            problem: GpuProblem | None = None
            retry_in = delay
            feed = _Feed(self.host, on_snapshot, quiet)
            try:
                await self.conn.stream_to(HOST.script(query_gpu_command(self.interval_ms)), feed.data)
                feed.end()
                if not feed.yielded:
                    text = "\n".join(feed.parser.bad)
                    problem = classify_failure(text) or GpuProblem(
                        GpuState.UNREADABLE, text[:200] or "nvidia-smi ended without output"
                    )
                    retry_in = self.problem_retry_s
            except (HostKeyError, AuthError) as exc:
                feed.end(emit=False)
                on_snapshot(GpuSnapshot(self.host, [], GpuProblem(GpuState.UNREACHABLE, str(exc))))
                return
            except (asyncssh.Error, OSError, RemoteError) as exc:
                feed.end(emit=False)
                problem = GpuProblem(GpuState.UNREACHABLE, str(exc))
            except BaseException:
                feed.end(emit=False)
                raise
            if feed.yielded:
                delay = 0.05
                retry_in = delay
            if problem is not None:
                on_snapshot(GpuSnapshot(self.host, [], problem))
            await asyncio.sleep(retry_in)
            delay = min(delay * 2, 2.0)


class _Feed:
    """One channel's output -> snapshots, called from the connection's data callback. The first cycle
    has no row count yet: it is whole once the output has been quiet for `quiet` seconds (a timer)."""

    def __init__(self, host: str, emit: Callable[[GpuSnapshot], None], quiet: float) -> None:
        self.host = host
        self.emit = emit
        self.quiet = quiet
        self.parser = CycleParser()
        self.last: tuple[GpuReading, ...] | None = None
        self.yielded = False
        self._timer: asyncio.TimerHandle | None = None

    def data(self, data: bytes) -> None:
        for cycle in self.parser.feed(data):
            self._send(cycle)
        if self.parser.expected is None:
            if self._timer is not None:
                self._timer.cancel()
            if self.parser.open_rows:
                self._timer = asyncio.get_running_loop().call_later(self.quiet, self._quiet)

    def _quiet(self) -> None:
        self._timer = None
        if self.parser.expected is None and self.parser.open_rows:
            self._send(self.parser.close_cycle())

    def _send(self, cycle: tuple[GpuReading, ...]) -> None:
        bad, self.parser.bad = self.parser.bad, []
        self.yielded = True
        self.emit(GpuSnapshot(self.host, list(cycle), None, bad, same=cycle is self.last))
        self.last = cycle

    def end(self, *, emit: bool = True) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if emit and (rest := self.parser.leftover()):
            self._send(rest)


class NvmlSampler:
    """Local GPUs through NVML (when sgtui runs on the GPU machine itself)."""

    def __init__(self, host: str = "local") -> None:
        self.host = host

    def query_sync(self) -> GpuSnapshot:
        try:
            import pynvml
        except ImportError as exc:  # nvidia-ml-py is a dependency, but be explicit about it
            return GpuSnapshot(self.host, [], GpuProblem(GpuState.NO_DRIVER, f"pynvml unavailable: {exc}"))
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            return GpuSnapshot(self.host, [], GpuProblem(GpuState.NO_DRIVER, f"NVML: {exc}"))
        try:
            readings, unreadable = [], []
            for i in range(pynvml.nvmlDeviceGetCount()):
                try:  # one GPU fallen off the bus must not take the others with it
                    readings.append(_nvml_reading(pynvml, i, pynvml.nvmlDeviceGetHandleByIndex(i)))
                except pynvml.NVMLError as exc:
                    unreadable.append(f"GPU {i}: {exc}")
            if not readings:
                problem = (
                    GpuProblem(GpuState.UNREADABLE, "; ".join(unreadable))
                    if unreadable
                    else GpuProblem(GpuState.NO_DEVICES, "NVML reports no GPUs")
                )
                return GpuSnapshot(self.host, [], problem, unreadable)
            return GpuSnapshot(self.host, readings, None, unreadable)
        except pynvml.NVMLError as exc:
            return GpuSnapshot(self.host, [], GpuProblem(GpuState.NO_DRIVER, f"NVML: {exc}"))
        finally:
            pynvml.nvmlShutdown()

    async def query(self) -> GpuSnapshot:
        return await asyncio.to_thread(self.query_sync)


def _nvml_reading(nv: Any, index: int, handle: object) -> GpuReading:
    def value(fn: Callable[[], float]) -> Value:
        try:
            return Value(float(fn()))
        except nv.NVMLError as exc:
            return Value(None, str(exc))

    try:
        mem = nv.nvmlDeviceGetMemoryInfo(handle)
        used, total = Value(mem.used / 2**20), Value(mem.total / 2**20)
    except nv.NVMLError as exc:
        used = total = Value(None, str(exc))
    util = value(lambda: nv.nvmlDeviceGetUtilizationRates(handle).gpu)
    name, uuid = nv.nvmlDeviceGetName(handle), nv.nvmlDeviceGetUUID(handle)
    state = GpuState.OK if used.known and total.known and util.known else GpuState.PARTIAL
    return GpuReading(index, str(uuid), str(name), used, total, util, state)
