"""The workers between the app and the hosts: async workers in named groups that post Messages.

Workers never touch widgets. Groups: "connect" (one per host, at most CONNECT_PARALLEL connecting at
once), "gpu" (one sampler per host), "discover", "runs", "tail" (one per node of each followed run),
"preflight" (exclusive: the target checks before a launch), "launch", "stop:<run>" (exclusive per run), "fit"
(exclusive, thread).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.message import Message
from textual.worker import Worker

from sgtui.ui import messages as m
from sgtui.ui.backend import Backend
from sgtui.ui.session.run import RunSession
from sgtui.ui.views import ContainerView, RunView
from sgtui.ui.workers.follow import Follower

RECONNECT_S = (1.0, 2.0, 5.0, 10.0)
# SSH handshakes at once when the app opens every configured host. Across a network a handshake is mostly
# waiting, so the bound sets a floor of N/bound handshake times; its CPU (~3 ms, in the app's own loop) is
# what keys wait behind. 500 hosts (bench/bench_ui_hosts.py --login-ms 100|300 --login-cpu-ms 3): 8 took
# 7.7 s at 100 ms logins and 20 s at 300 ms; 32 takes 4.0 s and 5.5 s (keys median 274 and 34 ms while
# connecting); 64 (`sgtui fleet`'s, which answers no keys) 3.6 s with keys ~0.45 s late.
CONNECT_PARALLEL = 32
GPU_BATCH_S = 0.1  # GPU samples of all hosts go to the app together, at most this often (500 hosts at 1 Hz
# as 500 messages a second kept the app's queue busy enough to delay keys; as ten, they do not)
PREFLIGHT_TIMEOUT_S = 20.0  # the target checks before a launch; past it the question says they did not run


class Controller:
    def __init__(self, app: App[Any], backend: Backend) -> None:
        self.app = app
        self.backend = backend
        self._connecting = asyncio.Semaphore(CONNECT_PARALLEL)
        self._tails: dict[str, list[Worker[Any]]] = {}
        self._listing = 0  # numbers each runs listing asked for
        self._listed: dict[tuple[str, str], int] = {}  # per host and target: the newest listing posted
        self._gpu_batch: list[m.GpuSampled] = []  # samples not yet posted, in order
        self._gpu_flush: asyncio.TimerHandle | None = None

    def post(self, message: Message) -> None:
        self.app.post_message(message)

    def _worker(self, coro: Any, group: str, name: str, exclusive: bool = False) -> Worker[Any]:
        return self.app.run_worker(coro, group=group, name=name, exclusive=exclusive, exit_on_error=False)

    # hosts ---------------------------------------------------------------------------------------------
    def load_hosts(self) -> None:
        hosts, problems = self.backend.hosts()
        self.post(m.HostsLoaded(hosts, problems))

    def connect(self, host: str) -> None:
        self._worker(self._connect(host), "connect", f"connect:{host}")

    async def _connect(self, host: str) -> None:
        """Keeps the host connected for the app's life; a slow or failing host holds up no other."""
        first = True
        held = False
        await self._connecting.acquire()
        held = True
        try:
            async for state, detail in self.backend.connection_states(host):
                if held and state != "connecting":  # the handshake is over, whatever its result
                    self._connecting.release()
                    held = False
                self.post(m.HostStateChanged(host, state, detail))
                if state == "connected":
                    self._worker(self._identify(host), "discover", f"machine:{host}")
                    self.discover(host)
                    if first:
                        self._worker(self._gpus(host), "gpu", f"gpu:{host}")
                        first = False
        finally:
            if held:
                self._connecting.release()

    async def _identify(self, host: str) -> None:
        """Once per connect: which machine the name reaches (a reconnect may land on another one)."""
        try:
            identity = await self.backend.machine(host)
        except Exception:
            identity = None
        self.post(m.MachineIdentified(host, identity))

    def discover(self, host: str) -> None:
        self._worker(self._discover(host), "discover", f"discover:{host}")

    async def _discover(self, host: str) -> None:
        try:
            found = await self.backend.containers(host)
        except Exception as exc:
            self.post(m.ContainersFound(host, [], f"discovery failed: {exc}"))
            return
        self.post(m.ContainersFound(host, found))

    def detect_version(self, host: str, target: ContainerView | None, python: str) -> None:
        self._worker(self._version(host, target, python), "discover", f"version:{host}", exclusive=False)

    async def _version(self, host: str, target: ContainerView | None, python: str) -> None:
        label = target.label if target else "bare host"
        try:
            version = await self.backend.sglang_version(host, target, python)
        except Exception as exc:
            self.post(m.VersionDetected(host, label, None, str(exc)))
            return
        self.post(m.VersionDetected(host, label, version))
        if version is not None:
            try:
                table, problem = await self.backend.flag_table(host, target, python, version)
            except Exception as exc:  # the backend already falls back; this is a bug guard, shown as one line
                table, problem = None, f"could not read the target's flag table: {exc}"
            self.post(m.FlagTableRead(host, table, problem, label))

    def model_config(self, host: str, target: ContainerView | None, model: str) -> None:
        self._worker(self._model(host, target, model), "discover", f"model:{host}")

    async def _model(self, host: str, target: ContainerView | None, model: str) -> None:
        label = target.label if target else "bare host"
        try:
            got = await self.backend.model_config(host, target, model)
        except Exception as exc:
            error = f"no fit: cannot read {model}/config.json there ({exc})"
            self.post(m.ModelConfigRead(host, model, None, error, label))
            return
        if got is not None:
            self.post(m.ModelConfigRead(host, model, got, target=label))

    async def _gpus(self, host: str) -> None:
        """Samples until the app exits; a lost connection pauses it and it resumes on its own."""
        delays = iter(RECONNECT_S)
        while True:
            try:
                async for gpus in self.backend.gpu_samples(host):
                    delays = iter(RECONNECT_S)
                    clock = getattr(self.app, "clock", time.monotonic)  # the app's clock: ages agree
                    self._sampled(m.GpuSampled(host, gpus, clock()))
            except asyncio.CancelledError:
                raise
            except Exception:
                pass
            await asyncio.sleep(next(delays, RECONNECT_S[-1]))

    def _sampled(self, sample: m.GpuSampled) -> None:
        """Into the next batch (every sample, in order: the histories keep each one)."""
        self._gpu_batch.append(sample)
        if self._gpu_flush is None:
            self._gpu_flush = asyncio.get_running_loop().call_later(GPU_BATCH_S, self._flush_gpus)

    def _flush_gpus(self) -> None:
        batch, self._gpu_batch, self._gpu_flush = self._gpu_batch, [], None
        if len(batch) == 1:
            self.post(batch[0])
        elif batch:
            self.post(m.GpusSampled(batch))

    def list_runs(self, host: str, target: ContainerView | None, runs_dir: str | None = None) -> None:
        """`runs_dir`: a profile's own (its launches go there), else hosts.yaml's or the per-user default."""
        label = target.label if target else "bare host"
        self._listing += 1
        work = self._runs(host, target, runs_dir, self._listing)
        self._worker(work, "runs", f"runs:{host}:{label}", exclusive=False)

    async def _runs(self, host: str, target: ContainerView | None, runs_dir: str | None, seq: int) -> None:
        label = target.label if target else "bare host"
        try:
            runs = await self.backend.runs(host, target, runs_dir)
        except Exception as exc:
            message = m.RunsListed(host, label, [], str(exc))
        else:
            message = m.RunsListed(host, label, runs)
        if seq < self._listed.get((host, label), 0):
            return  # a listing asked for later already answered: this older view must not overwrite it
        self._listed[(host, label)] = seq
        self.post(message)

    # runs ----------------------------------------------------------------------------------------------
    def launch(self, profile: Any, predicted: dict[str, Any] | None) -> None:
        self._worker(self._launch(profile, predicted), "launch", "launch")

    async def _launch(self, profile: Any, predicted: dict[str, Any] | None) -> None:
        try:
            runs = await self.backend.launch(profile)
        except Exception as exc:
            # a launch cut by a lost connection may have started its server: said so, never "failed"
            self.post(m.ServiceError("launch", str(exc), unknown=getattr(exc, "maybe_running", False)))
            return
        self.post(m.RunStarted(runs, predicted))

    def preflight_checks(self, profile: Any, seq: int) -> None:
        """The target checks before a launch (port, GPUs, model path, release); a newer ask replaces it."""
        self._worker(self._preflight(profile, seq), "preflight", "preflight", exclusive=True)

    async def _preflight(self, profile: Any, seq: int) -> None:
        from sgtui.core.preflight import Check

        try:
            checks = await asyncio.wait_for(self.backend.preflight_checks(profile), PREFLIGHT_TIMEOUT_S)
        except Exception as exc:  # a host that does not answer: say so in the question, do not hang it
            why = str(exc) or f"no answer within {PREFLIGHT_TIMEOUT_S:g} s"
            checks = [Check("target", False, f"the target checks did not run: {why}", blocking=False)]
        self.post(m.PreflightChecked(seq, checks))

    def follow(self, session: RunSession) -> None:
        """Tail every node of `session` into it; following it again restarts its tails from the start."""
        self.unfollow(session.key)
        for rank in session.nodes:
            self.follow_node(session, rank)

    def follow_node(self, session: RunSession, rank: int) -> None:
        worker = self._worker(
            Follower(self.backend, session, rank).run(), "tail", f"tail:{session.key}:{rank}"
        )
        self._tails.setdefault(session.key, []).append(worker)

    def unfollow(self, key: str) -> None:
        for worker in self._tails.pop(key, []):
            worker.cancel()

    def stop(self, runs: list[RunView], then_launch: tuple[Any, dict[str, Any] | None] | None = None) -> None:
        """Stop every node of a run, the workers first and node 0 last (SGLang's own teardown order),
        wait until their GPUs are free, then optionally launch again."""
        key = runs[0].run_id
        # exclusive per run: a second stop of the same run replaces the first; another run's stop (a GPU
        # holder stopped while this one waits) must not cancel this one halfway
        self._worker(self._stop(runs, then_launch), f"stop:{key}", f"stop:{key}", exclusive=True)

    def check_failed_alive(self, key: str, runs: list[RunView], settle: float = 2.0) -> None:
        """After a failure: is the server still running `settle` s later (a crash tearing itself down
        is given that long)? Posts FailedStillRunning when one of its nodes is."""
        self._worker(self._failed_alive(key, runs, settle), f"alive:{key}", f"alive:{key}", exclusive=True)

    def check_unlisted(self, key: str, rank: int, run: RunView) -> None:
        """Ask the host about a followed node its listing dropped (`RunExit`, from the record in hand: the
        remote side tells a removed run dir by pid, start time and boot id); posts RunChecked."""
        name = f"unlisted:{key}:{rank}"
        self._worker(self._unlisted(key, rank, run), name, name, exclusive=True)

    async def _unlisted(self, key: str, rank: int, run: RunView) -> None:
        try:
            exit = await self.backend.run_exit(run)
        except Exception:
            exit = None
        self.post(m.RunChecked(key, rank, exit))

    async def _failed_alive(self, key: str, runs: list[RunView], settle: float) -> None:
        await asyncio.sleep(settle)
        try:
            states = [await self.backend.run_state(r) for r in runs]
        except Exception:
            return  # cannot tell: nothing is claimed
        if "running" in states:
            self.post(m.FailedStillRunning(key))

    async def _stop(self, runs: list[RunView], then_launch: tuple[Any, dict[str, Any] | None] | None) -> None:
        key = runs[0].run_id
        self.post(
            m.StopProgress(key, f"stopping {key} (TERM to its server, the drain, then its group; KILL last)")
        )
        workers = [r for r in runs if (r.node_rank or 0) != 0]
        heads = [r for r in runs if (r.node_rank or 0) == 0]
        steps: list[str | None] = []
        try:
            if workers:
                steps += await asyncio.gather(*(self.backend.stop(r) for r in workers))
            for run in heads:
                steps.append(await self.backend.stop(run))
            if steps and steps[-1]:
                self.post(m.StopProgress(key, f"{key}: {steps[-1]}"))
            for run in runs:
                async for line in self.backend.wait_gpus_free(run, timeout=120.0):
                    self.post(m.StopProgress(key, line))
        except TimeoutError:
            self.post(m.StopProgress(key, "the GPUs were not freed in time: see the holders", True, False))
            return
        except Exception as exc:
            self.post(m.StopProgress(key, f"stop failed: {exc}", True, False))
            return
        how = f" ({steps[-1]})" if steps and steps[-1] else ""
        self.post(m.StopProgress(key, f"{key} stopped; its GPUs are free{how}", True, True))
        if then_launch is not None:
            await self._launch(*then_launch)

    # fit -----------------------------------------------------------------------------------------------
    def compute_fit(
        self, compute: Callable[[], dict[str, Any]], generation: int, post: Callable[[Message], Any]
    ) -> None:
        def work() -> None:
            try:
                report = compute()
            except Exception as exc:
                post(m.FitComputed(None, str(exc), generation))  # post_message is thread-safe
                return
            post(m.FitComputed(report, "", generation))

        self.app.run_worker(work, group="fit", name="fit", thread=True, exclusive=True, exit_on_error=False)
