"""The remote layer's records as the UI's views: targets, run states and records, GPU readings, host
key entries and GPU problems, each turned into the small frozen records of `sgtui.ui.views`."""

from __future__ import annotations

import time

from sgtui.core.nvsmi import GpuProblem, GpuProcess, GpuReading, advice
from sgtui.remote.connection import ConnState, HostKeyError
from sgtui.remote.runs import RunRecord, RunState, RunStatus
from sgtui.remote.targets import Target
from sgtui.ui.views import ContainerView, GpuProcessView, GpuView, RunView

STATE_NAMES = {
    ConnState.CONNECTING: "connecting",
    ConnState.UP: "connected",
    ConnState.LOST: "lost",
    ConnState.RETRYING: "lost",
    ConnState.AUTH_FAILED: "failed",
    ConnState.UNREACHABLE: "failed",
    ConnState.HOST_KEY_UNKNOWN: "failed",
    ConnState.HOST_KEY_CHANGED: "failed",
    ConnState.CLOSED: "idle",
}


def to_target(container: ContainerView | None) -> Target:
    if container is None or container.kind == "host":
        return Target()
    return Target(container.kind, container.id)  # type: ignore[arg-type]


def run_state_name(status: RunStatus) -> str:
    if status.state is RunState.RUNNING:
        return "running"
    if status.state is RunState.FOREIGN:
        return "foreign"  # not ours: listed, never reattached to or signalled
    if status.state is RunState.EXITED:
        return "exited" if status.rc == 0 else "failed"
    if status.state is RunState.STOPPED:
        return "stopped"  # a stop by sgtui recorded itself: not a death
    return "dead"  # gone with no exit code and no recorded stop (killed, rebooted, container gone)


def run_view(record: RunRecord, state: str, profile: str = "", note: str = "") -> RunView:
    started = time.strftime("%m-%d %H:%M", time.localtime(record.started_at)) if record.started_at else ""
    return RunView(
        run_id=record.id,
        host=record.host,
        target=record.target.label,
        profile=profile or _profile_from_argv(record.argv),
        state=state,
        log_path=record.log_path,
        started=started or record.id[:15],
        pgid=record.pgid,
        gpus=tuple(record.gpus),
        node_rank=record.node_rank,
        foreign=record.foreign or "",
        note=note,
        raw=record,
    )


def _profile_from_argv(argv: list[str]) -> str:
    for flag in ("--served-model-name", "--model-path"):
        if flag in argv and argv.index(flag) + 1 < len(argv):
            return argv[argv.index(flag) + 1].rsplit("/", 1)[-1]
    return ""


def gpu_views(readings: list[GpuReading], procs: list[GpuProcess]) -> list[GpuView]:
    out: list[GpuView] = []
    for r in readings:
        used, total, util = r.memory_used_mib.value, r.memory_total_mib.value, r.utilization_pct.value
        note = "" if used is not None and total else (r.memory_used_mib.reason or r.state.value)
        mine = tuple(
            GpuProcessView(p.pid, p.name.rsplit("/", 1)[-1], _mib(p), p.container or "")
            for p in procs
            if p.gpu_index == r.index
        )
        out.append(
            GpuView(
                r.index,
                r.name,
                int(used or 0),
                int(total or 0),
                int(util) if util is not None else None,
                mine,
                note,
            )
        )
    return out


def key_entry(exc: HostKeyError) -> str:
    """Where the recorded key that differs is: "<file> line N" ("" when sgtui cannot tell)."""
    from sgtui.core.known_hosts import recorded_line

    path = exc.recorded_in
    if path is None:
        return ""
    line = recorded_line(path, exc.host.hostname, exc.host.port)
    return f"{path} line {line}" if line else str(path)


def problem_note(problem: GpuProblem) -> str:
    """One line: the named state, what to do, then the host's own words (first line only)."""
    said = problem.detail.strip().splitlines()[0][:120] if problem.detail.strip() else ""
    return f"{problem.state.value}: {advice(problem)}" + (f" ({said})" if said else "")


def _mib(proc: GpuProcess) -> int | None:
    """nvidia-smi prints [N/A] for a process's memory in some setups: unknown, never zero."""
    value = proc.used_mib.value
    return None if value is None else int(value)


def holder_text(proc: GpuProcess) -> str:
    """A process still holding a GPU, as the restart's wait names it."""
    value = proc.used_mib.value
    used = f"{value:.0f} MiB" if value is not None else f"? MiB ({proc.used_mib.reason or 'N/A'})"
    return f"{proc.name.rsplit('/', 1)[-1]}[{proc.pid}] {used}"
