"""Every configured host at once: the state the fleet view renders (the UI builds on this; no Textual here).

`Fleet(pool)` connects all hosts in parallel (at most `concurrency` handshakes at a time, each with its own
timeout), so one slow or dead host never holds up the others; a host that fails keeps its reason as one
line. For each host it keeps a `HostView`: the connection state and when it last changed, a GPU summary
from one long-lived `nvidia-smi -lms` channel (`sample()`), its containers and the runs sgtui recorded on
each target (`refresh()`). Changes are announced through `on_change(view)` (a callback, called on the event
loop: the UI turns it into a Message); `views()` reads them at any time.

Memory is bounded by construction: per host one summary of the latest reading (never a history: the
followed run keeps its own), the container list and the run records as last listed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from sgtui.core.nvsmi import GpuReading
from sgtui.remote.connection import ConnectionEvent, ConnectionPool, ConnState, RemoteError, Transport
from sgtui.remote.fleet_runs import RunRow, ServingHook, run_rows
from sgtui.remote.gpu import GpuSampler, GpuSnapshot
from sgtui.remote.runs import RunManager, RunRecord
from sgtui.remote.targets import HOST, ContainerInfo, Target, discover

CONNECT_TIMEOUT_S = 20.0
# SSH handshakes in flight at once. Across a network a handshake is mostly waiting (round trips), so many
# overlap and the bound sets a floor of ceil(N / bound) handshake times; on a loaded jump box (or loopback)
# it is CPU (~2.6 ms of the client's a handshake), and 500 at once would all finish late together. 64 keeps
# the first hosts' samples coming back within ~0.2 s of CPU while the rest connect; at 500 hosts with 100 ms
# logins it took 1.45 s against 1.97 s for 32 and 1.39 s for 128 (bench/RESULTS.md, issue 21).
CONCURRENCY = 64


@dataclass(frozen=True)
class GpuSummary:
    """One host's GPUs at one reading: what a fleet row shows (used/total on a fixed 0..total scale)."""

    count: int
    used_mib: int
    total_mib: int
    names: tuple[str, ...]
    busy: int  # GPUs with more than 1 GiB in use
    per_gpu: tuple[tuple[int, int], ...]  # (used MiB, total MiB) per GPU, by index
    problem: str | None = None  # why there is no reading (no driver, nvidia-smi missing, unreachable)
    readings: tuple[GpuReading, ...] = ()  # the readings themselves (index, name, util: `sgtui fleet`)

    @property
    def fraction(self) -> float:
        return self.used_mib / self.total_mib if self.total_mib else 0.0

    @classmethod
    def from_snapshot(cls, snap: GpuSnapshot) -> GpuSummary:
        if snap.problem is not None:
            detail = snap.problem.detail.strip().splitlines()[0][:160] if snap.problem.detail else ""
            return cls(0, 0, 0, (), 0, (), f"{snap.problem.state.value}: {detail}".rstrip(": "))
        per = tuple((_mib(g.memory_used_mib.value), _mib(g.memory_total_mib.value)) for g in snap.gpus)
        return cls(
            count=len(snap.gpus),
            used_mib=sum(u for u, _ in per),
            total_mib=sum(t for _, t in per),
            names=tuple(sorted({g.name for g in snap.gpus})),
            busy=sum(1 for g in snap.gpus if _used(g) > 1024),
            per_gpu=per,
            readings=tuple(snap.gpus),
        )


@dataclass
class HostView:
    """One host as the fleet view shows it. `since` is the monotonic time of the last state change.

    Every change makes a new view (`on_change` gets it), except a sample that repeats the last reading:
    then only `gpus_at` moves, in place (500 hosts at 1 Hz would otherwise copy 500 views a second)."""

    name: str
    address: str
    state: ConnState = ConnState.CONNECTING
    since: float = field(default_factory=time.monotonic)
    reason: str | None = None  # one line: why the host is not up
    connect_s: float | None = None  # how long the last connect took
    gpus: GpuSummary | None = None
    gpus_at: float | None = None
    containers: tuple[ContainerInfo, ...] = ()
    runs: tuple[RunRecord, ...] = ()
    runs_problem: str | None = None
    run_rows: tuple[RunRow, ...] = ()  # its live runs and each target's newest, checked (`fleet_runs`)

    def age(self, now: float | None = None) -> float:
        """Seconds in the current state."""
        return (time.monotonic() if now is None else now) - self.since

    def gpu_age(self, now: float | None = None) -> float | None:
        """Seconds since the last GPU reading (None before the first): a stale row is marked."""
        return None if self.gpus_at is None else (time.monotonic() if now is None else now) - self.gpus_at


class Fleet:
    """All configured hosts (or the `names` given): connect, sample, refresh, read."""

    def __init__(
        self,
        pool: ConnectionPool,
        names: Sequence[str] | None = None,
        *,
        concurrency: int = CONCURRENCY,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        on_change: Callable[[HostView], None] | None = None,
        on_sample: Callable[[HostView], None] | None = None,
        runs_dir: str | None = None,
        serving: ServingHook | None = None,
    ) -> None:
        """`on_change(view)`: a row changed (state, GPU numbers, runs); `on_sample(view)`: every GPU
        sample, changed or not (`sgtui fleet` prints one object per host per sample). `serving`: how a
        live run's health and throughput are read (`fleet_runs.ServingHook`; None: unknown)."""
        self.pool = pool
        self.names = list(names if names is not None else pool.hosts)
        self.connect_timeout = connect_timeout
        self.on_change = on_change
        self.on_sample = on_sample
        self.runs_dir = runs_dir
        self.serving = serving
        self._sem = asyncio.Semaphore(max(concurrency, 1))
        self._views: dict[str, HostView] = {}
        self._unsubscribe: list[Callable[[], None]] = []
        self._subscribed: set[str] = set()
        self._found: set[str] = set()  # hosts whose containers were listed at least once
        for name in self.names:
            config = pool.hosts.get(name)
            address = f"{config.hostname}:{config.port}" if config is not None else ""
            self._views[name] = HostView(name, address)

    def views(self) -> list[HostView]:
        return [self._views[n] for n in self.names]

    def view(self, name: str) -> HostView:
        return self._views[name]

    def conn(self, name: str) -> Transport:
        return self.pool.get(name)

    def _set(self, name: str, **changes: object) -> HostView:
        old = self._views[name]
        if "state" in changes and changes["state"] != old.state:
            changes.setdefault("since", time.monotonic())
        view = replace(old, **changes)  # type: ignore[arg-type]
        self._views[name] = view
        if self.on_change is not None:
            self.on_change(view)
        return view

    # --- connections -------------------------------------------------------------------------------

    async def connect_all(self) -> list[HostView]:
        """Open every connection in parallel (bounded); returns when each is up or has failed."""
        await asyncio.gather(*(self.connect(name) for name in self.names))
        return self.views()

    async def connect(self, name: str) -> HostView:
        try:
            conn = self.pool.get(name)
        except Exception as exc:  # an unknown alias, a broken entry: that host's row says why
            return self._set(name, state=ConnState.UNREACHABLE, reason=_one_line(exc))
        if name not in self._subscribed:
            self._subscribed.add(name)
            self._unsubscribe.append(conn.subscribe(lambda ev, n=name: self._on_event(n, ev)))
        async with self._sem:
            t0 = time.monotonic()
            try:
                await asyncio.wait_for(conn.connect(), self.connect_timeout)
            except TimeoutError:
                return self._set(
                    name,
                    state=ConnState.UNREACHABLE,
                    reason=f"no answer within {self.connect_timeout:g} s",
                    connect_s=time.monotonic() - t0,
                )
            except Exception as exc:  # RemoteError and its kinds carry the one-line reason
                state = self._views[name].state
                if state in (ConnState.CONNECTING, ConnState.UP):
                    state = ConnState.UNREACHABLE
                return self._set(name, state=state, reason=_one_line(exc), connect_s=time.monotonic() - t0)
            return self._set(name, state=ConnState.UP, reason=None, connect_s=time.monotonic() - t0)

    def _on_event(self, name: str, event: ConnectionEvent) -> None:
        reason = None if event.state in (ConnState.UP, ConnState.CONNECTING) else _one_line(event.message)
        if event.state is not self._views[name].state or reason != self._views[name].reason:
            self._set(name, state=event.state, reason=reason)

    # --- GPUs --------------------------------------------------------------------------------------

    async def watch(self, interval_s: float = 1.0) -> None:
        """Connect every host and stream its GPUs as soon as it is up, until cancelled: the first hosts'
        samples come back while the rest are still connecting (at most `concurrency` handshakes at once).
        A host that could not connect stays as it is (its reason kept); the connection's own reconnects
        and the sampler's retries keep an up host streaming."""
        await asyncio.gather(*(self._watch_one(name, interval_s) for name in self.names))

    async def _watch_one(self, name: str, interval_s: float) -> None:
        view = await self.connect(name)
        if view.state is ConnState.UP:
            await self._sample_one(name, interval_s)

    async def sample(self, interval_s: float = 1.0) -> None:
        """Stream GPU readings from every up host until cancelled (one nvidia-smi channel per host)."""
        await asyncio.gather(*(self._sample_one(name, interval_s) for name in self.names))

    async def _sample_one(self, name: str, interval_s: float) -> None:
        if self._views[name].state is not ConnState.UP:
            return
        sampler = GpuSampler(self.pool.get(name), interval_ms=int(interval_s * 1000))
        await sampler.watch(lambda snap: self._sampled(name, snap))

    def _sampled(self, name: str, snap: GpuSnapshot) -> None:
        view = self._views[name]
        if snap.same and view.gpus is not None and view.gpus.problem is None:
            view.gpus_at = time.monotonic()  # the very readings of the last sample: only the age moves
        else:
            summary = GpuSummary.from_snapshot(snap)
            if summary != view.gpus:
                view = self._set(name, gpus=summary, gpus_at=time.monotonic())
            else:  # the same numbers: only the age changes; no change notice for an unchanged row
                view.gpus_at = time.monotonic()
        if self.on_sample is not None:
            self.on_sample(view)

    async def sample_once(self, name: str, timeout: float = 30.0) -> HostView:
        """One reading of the host's GPUs now (`sgtui fleet --once`): the first sample of the same
        long-lived stream `watch` uses, then the channel is closed. A host not up is left as it is."""
        if self._views[name].state is not ConnState.UP:
            return self._views[name]
        first: asyncio.Future[GpuSnapshot] = asyncio.get_running_loop().create_future()

        def got(snap: GpuSnapshot) -> None:
            if not first.done():
                first.set_result(snap)

        watching = asyncio.ensure_future(GpuSampler(self.pool.get(name), interval_ms=1000).watch(got))
        try:
            snap = await asyncio.wait_for(asyncio.shield(first), timeout)
        except TimeoutError:
            return self._set(name, reason=f"nvidia-smi gave no answer within {timeout:g} s")
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watching
        return self._set(name, gpus=GpuSummary.from_snapshot(snap), gpus_at=time.monotonic())

    # --- containers and runs -----------------------------------------------------------------------

    async def refresh_all(self) -> list[HostView]:
        await asyncio.gather(*(self.refresh(n) for n in self.names if self._views[n].state is ConnState.UP))
        return self.views()

    async def refresh(self, name: str, *, containers: bool = True) -> HostView:
        """The host's containers and the runs recorded on the host and in each running container.
        `containers=False` keeps the containers found last time (one command less per host: `sgtui
        fleet` re-lists runs every minute, containers less often)."""
        conn = self.pool.get(name)
        containers_now = self._views[name].containers
        if containers or name not in self._found:
            try:
                containers_now = tuple(await discover(conn))
                self._found.add(name)
            except RemoteError as exc:
                containers_now = ()
                self._set(name, runs_problem=_one_line(exc))
        targets: list[Target] = [HOST] + [
            c.target
            for c in containers_now
            if c.status.lower() in ("running", "up") or c.status.startswith("Up")
        ]
        found = await asyncio.gather(*(self._runs(conn, t) for t in targets), return_exceptions=True)
        runs: list[RunRecord] = []
        problems = []
        for target, result in zip(targets, found, strict=True):
            if isinstance(result, BaseException):
                problems.append(f"{target.label}: {_one_line(result)}")
            else:
                runs.extend(result)
        runs.sort(key=lambda r: r.id, reverse=True)
        rows = await run_rows(conn, runs, self._runs_dir(name), self.serving)
        return self._set(
            name,
            containers=containers_now,
            runs=tuple(runs),
            runs_problem="; ".join(problems) or None,
            run_rows=rows,
        )

    def _runs_dir(self, name: str) -> str | None:
        config = self.pool.hosts.get(name)
        return self.runs_dir or (config.runs_dir if config is not None else None)

    async def _runs(self, conn: Transport, target: Target) -> list[RunRecord]:
        return await RunManager(conn, target, self._runs_dir(conn.host.name)).list_runs()

    async def close(self) -> None:
        for unsubscribe in self._unsubscribe:
            with contextlib.suppress(Exception):
                unsubscribe()
        self._unsubscribe.clear()


def _mib(value: float | None) -> int:
    return int(value) if value is not None else 0


def _used(gpu: GpuReading) -> float:
    return gpu.memory_used_mib.value or 0.0


def _one_line(exc: object) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
