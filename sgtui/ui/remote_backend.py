"""The Backend over sgtui.remote: RunManagers per target, nvidia-smi samplers, over the connections of
`remote_connections.py` (one ConnectionPool, host keys, passwords).

What it hands the UI is converted by `remote_views.py`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import Any

from sgtui.core.nvsmi import GpuProcess
from sgtui.remote.connection import RemoteError, Transport
from sgtui.remote.gpu import GpuSampler
from sgtui.remote.hosts import HostConfig
from sgtui.remote.runs import RunManager, RunRecord, RunState, RunStatus
from sgtui.remote.targets import Target, discover, sglang_version
from sgtui.ui.backend import RunExit
from sgtui.ui.holder_refresh import HolderRefresh
from sgtui.ui.remote_connections import RemoteConnections
from sgtui.ui.remote_views import (
    gpu_views,
    holder_text,
    problem_note,
    run_state_name,
    run_view,
    to_target,
)
from sgtui.ui.serving_backend import ServingBackend
from sgtui.ui.views import ContainerView, GpuView, HostView, RunView

STATUS_POLL_S = 1.0
# Exited or stopped by sgtui: its record is on disk, it stays so; the 30 s relisting asks only about the
# rest (a command per run, up to 20 a host: ~330 a second at 500 hosts). DEAD may yet turn into either.
FINAL_STATES = (RunState.EXITED, RunState.STOPPED)
MAX_LISTED_RUNS = 20


async def _rest(manager: RunManager, record: RunRecord, offset: int) -> AsyncIterator[tuple[int, list[str]]]:
    """What `follow` holds back once the writer is gone: a last line without a newline (a crash
    mid-write). Starts at the last delivered offset, so no line is shown twice."""
    while True:
        chunk = await manager.read_rest(record, offset)
        if chunk.end <= offset:
            return
        offset = chunk.end
        if chunk.lines:
            yield chunk.end, chunk.lines


def _retrieve(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


class RemoteBackend(ServingBackend):
    """The hosts' connections are `connections` (remote_connections.py); runs, GPUs, targets are here."""

    def __init__(
        self,
        hosts: dict[str, HostConfig] | None = None,
        *,
        runs_dir: str | None = None,
        gpu_interval_ms: int = 500,
        stop_grace_s: float = 10.0,
        **conn_options: Any,
    ) -> None:
        self.connections = RemoteConnections(hosts, **conn_options)
        self.pool = self.connections.pool
        self.runs_dir = runs_dir
        self.gpu_interval_ms = gpu_interval_ms
        self.stop_grace_s = stop_grace_s
        self._holders_shown: frozenset[str] = frozenset()
        # per (host, target, runs dir): the final statuses of the runs it listed last time, not asked again
        self._ended: dict[tuple[str, str, str], dict[tuple[str, int, int | None, str], RunStatus]] = {}

    def set_password_prompt(self, prompt: Callable[[str], Awaitable[str | None]]) -> None:
        self.connections.set_password_prompt(prompt)

    def trust_host_key(self, host: str, trusted: bool) -> None:
        self.connections.trust_host_key(host, trusted)

    def _conn(self, host: str) -> Transport:
        return self.pool.get(host)

    def show_holders(self, hosts: Collection[str]) -> None:
        """The hosts whose GPU holders are on screen: listed every 2 s, the others when their memory moves
        (`ui/holder_refresh.py`)."""
        self._holders_shown = frozenset(hosts)

    def _manager(
        self, host: str, target: Target, runs_dir: str | None = None, keep_runs: int | None = None
    ) -> RunManager:
        """Runs dir: the backend's own (demo, tests), else the profile's, else hosts.yaml's, else the
        target user's default. `keep_runs`: the profile's (else hosts.yaml's, else the default)."""
        configured = self.pool.hosts[host].runs_dir if host in self.pool.hosts else None
        runs_dir = self.runs_dir or runs_dir or configured
        return RunManager(self._conn(host), target, runs_dir, keep_runs=keep_runs)

    def hosts(self) -> tuple[list[HostView], list[str]]:
        return self.connections.hosts()

    def connection_states(self, host: str) -> AsyncIterator[tuple[str, str]]:
        return self.connections.connection_states(host)

    async def machine(self, host: str) -> str | None:
        from sgtui.remote.identity import machine_identity

        return await machine_identity(self._conn(host))

    def retry(self, host: str) -> None:
        self.connections.retry(host)

    async def containers(self, host: str) -> list[ContainerView]:
        found = await discover(self._conn(host))
        views = [ContainerView("host", "", host, "", ())]
        for c in found:
            views.append(ContainerView(c.target.kind, str(c.target.id), c.name, c.status, c.gpus))
        return views

    async def sglang_version(self, host: str, target: ContainerView | None, python: str) -> str | None:
        return await sglang_version(self._conn(host), to_target(target), python)

    async def flag_table(
        self, host: str, target: ContainerView | None, python: str, version: str
    ) -> tuple[Any, str | None]:
        from sgtui.remote.flag_probe import read_flag_table

        result = await read_flag_table(self._conn(host), to_target(target), python, version)
        return result.table, result.problem

    async def model_config(
        self, host: str, target: ContainerView | None, model_path: str
    ) -> dict[str, Any] | None:
        from sgtui.remote.preflight import read_model

        found = await read_model(self._conn(host), to_target(target), model_path)
        if found.config is None:
            why = found.problem or f"{model_path} does not exist there"
            raise RemoteError(f"{model_path}/config.json is not readable there: {why}")
        return {"config": found.config, "weight_bytes": found.weight_bytes}

    async def gpu_samples(self, host: str) -> AsyncIterator[list[GpuView]]:
        sampler = GpuSampler(self._conn(host), self.gpu_interval_ms)
        procs: list[GpuProcess] = []
        schedule = HolderRefresh()
        refresh: asyncio.Task[list[GpuProcess]] | None = None
        try:
            async for snap in sampler.stream():
                if refresh is not None and refresh.done():
                    if not refresh.cancelled() and refresh.exception() is None:
                        procs = refresh.result()
                    refresh = None
                if refresh is None:
                    now, shown = time.monotonic(), host in self._holders_shown
                    used = tuple(int(r.memory_used_mib.value or 0) for r in snap.gpus)
                    if schedule.due(now, shown, used):
                        refresh = asyncio.create_task(sampler.processes())
                        schedule.listed(now, shown, used)
                if snap.problem is not None:
                    yield [GpuView(-1, "", 0, 0, None, (), problem_note(snap.problem))]
                    continue
                yield gpu_views(snap.gpus, procs)
        finally:
            if refresh is not None:
                refresh.cancel()
                refresh.add_done_callback(_retrieve)  # a failed holder query is not worth a warning at exit

    async def runs(
        self, host: str, target: ContainerView | None, runs_dir: str | None = None
    ) -> list[RunView]:
        where = to_target(target)
        manager = self._manager(host, where, runs_dir)
        records = (await manager.list_runs())[-MAX_LISTED_RUNS:]
        place = (host, where.label, runs_dir or "")  # the runs dir asked for ("": the target's default)
        ended = self._ended.get(place, {})

        async def status(r: RunRecord) -> RunStatus:
            known = ended.get(_identity(r))
            return known if known is not None else await manager.status(r)

        statuses = await asyncio.gather(*(status(r) for r in records), return_exceptions=True)
        final = {
            _identity(r): s
            for r, s in zip(records, statuses, strict=True)
            if isinstance(s, RunStatus) and s.state in FINAL_STATES
        }
        if final:
            self._ended[place] = final
        else:
            self._ended.pop(place, None)  # a place with no ended runs listed keeps nothing
        return [
            run_view(r, "unknown")
            if isinstance(s, BaseException)
            else run_view(r, run_state_name(s), note=s.note or "")
            for r, s in zip(records, statuses, strict=True)
        ]

    async def launch(self, profile: Any) -> list[RunView]:
        """One record per node: a multi-node profile is checked on every node first (every problem at
        once), then node 0 starts and the others after it, under one run id."""
        from sgtui.core.profiles import dump_profile

        if getattr(profile, "nodes", None):
            return await self._launch_nodes(profile, dump_profile(profile))
        target = Target.from_mapping({"kind": profile.target.kind, "id": profile.target.id})
        argv = profile.command
        keep = getattr(profile, "keep_runs", None)
        record = await self._manager(profile.host, target, getattr(profile, "runs_dir", None), keep).launch(
            argv,
            profile.env,
            profile_yaml=dump_profile(profile),
            gpus=profile.gpus or [],
            profile_name=profile.name,
        )
        return [run_view(record, "starting", profile.name)]

    async def preflight_checks(self, profile: Any) -> list[Any]:
        from sgtui.remote.preflight import target_checks

        target = Target.from_mapping({"kind": profile.target.kind, "id": profile.target.id})
        facts = await target_checks(self._conn(profile.host), target, profile)
        return facts.checks

    async def _launch_nodes(self, profile: Any, profile_yaml: str) -> list[RunView]:
        from sgtui.remote.multinode import MultiNode

        nodes = MultiNode(profile, self.pool, self.runs_dir)
        address = await nodes.dist_init_addr()
        problems = await nodes.precheck(address)
        if problems:
            raise RemoteError("not launched: " + "; ".join(str(p) for p in problems))
        records = await nodes.launch(address, profile_yaml)
        return [run_view(r, "starting", profile.name) for r in records]

    async def tail(self, run: RunView, offset: int) -> AsyncIterator[tuple[int, list[str]]]:
        """Follows until the run is gone and one more status poll found nothing new in the log."""
        record: RunRecord = run.raw
        manager = self._manager(run.host, record.target)
        chunks: asyncio.Queue[Any] = asyncio.Queue(maxsize=64)

        async def pump() -> None:
            async for chunk in manager.tail(record, offset):
                await chunks.put(chunk)

        task = asyncio.create_task(pump())
        ended_polls = 0
        end = offset
        try:
            while True:
                try:
                    chunk = await asyncio.wait_for(chunks.get(), STATUS_POLL_S)
                except TimeoutError:
                    if task.done():
                        task.result()  # re-raise why the follow stopped
                    status = await manager.status(record)
                    ended_polls = ended_polls + 1 if status.state is not RunState.RUNNING else 0
                    if ended_polls >= 2:
                        break
                    continue
                ended_polls = 0
                end = chunk.end
                yield chunk.end, chunk.lines
        finally:
            task.cancel()
        while not chunks.empty():  # delivered while the last status poll ran
            chunk = chunks.get_nowait()
            end = chunk.end
            yield chunk.end, chunk.lines
        async for rest_end, lines in _rest(manager, record, end):
            yield rest_end, lines

    async def run_state(self, run: RunView) -> str:
        return (await self.run_exit(run)).state

    async def run_exit(self, run: RunView) -> RunExit:
        record, manager = self._record_manager(run)
        status = await manager.status(record)
        return RunExit(run_state_name(status), status.rc, status.note or "")

    def _record_manager(self, run: RunView) -> tuple[RunRecord, RunManager]:
        """The run's own record and a manager for the runs dir it lives in."""
        record: RunRecord = run.raw
        return record, self._manager(run.host, record.target, record.run_dir.rsplit("/", 1)[0])

    async def stop_preview(self, run: RunView) -> str:
        record, manager = self._record_manager(run)
        return (await manager.preview(record)).text()

    async def stop(self, run: RunView) -> str | None:
        record, manager = self._record_manager(run)
        result = await manager.stop(record, self.stop_grace_s)
        if result.result == "survivors":
            raise RemoteError(
                f"{result.members} processes of {run.run_id} survived KILL; see the GPU holders"
            )
        if result.left:
            raise RemoteError(
                f"{run.run_id}'s process group is gone, but processes of it left the group and still run: "
                + "; ".join(p.describe() for p in result.left)
            )
        return result.summary() or None

    async def wait_gpus_free(self, run: RunView, timeout: float) -> AsyncIterator[str]:
        from sgtui.remote.runs import GpusBusyError

        record: RunRecord = run.raw
        manager = self._manager(run.host, record.target)
        sampler = GpuSampler(self._conn(run.host))
        which = ", ".join(map(str, record.gpus)) or "all"
        deadline = time.monotonic() + timeout
        while True:
            try:
                await manager.wait_gpus_free(
                    record, None, min(2.0, max(0.0, deadline - time.monotonic())), sampler
                )
                return
            except GpusBusyError as exc:
                if time.monotonic() >= deadline:
                    raise TimeoutError(str(exc)) from None
                holders = ", ".join(holder_text(p) for p in exc.holders)
                yield f"waiting for GPUs {which} to be free: {holders or 'memory still in use'}"

    async def close(self) -> None:
        await self.connections.close()


def _identity(record: RunRecord) -> tuple[str, int, int | None, str]:
    """One launch: its run dir, and the process it started (pid, start time, boot)."""
    return record.run_dir, record.pid, record.start, record.boot
