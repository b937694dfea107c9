"""Messages the service workers post to the app. Workers never touch widgets; the app routes these."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from sgtui.ui.views import ContainerView, GpuView, HostView, RunView


class HostsLoaded(Message):
    def __init__(self, hosts: list[HostView], problems: list[str]) -> None:
        super().__init__()
        self.hosts = hosts
        self.problems = problems


class HostStateChanged(Message):
    def __init__(self, host: str, state: str, detail: str = "") -> None:
        super().__init__()
        self.host = host
        self.state = state
        self.detail = detail


class MachineIdentified(Message):
    """Which machine and login `host` reaches (host key, uid, boot id: `remote/identity.py`); None when
    it cannot be told. Two names with one identity are shown once."""

    def __init__(self, host: str, identity: str | None) -> None:
        super().__init__()
        self.host = host
        self.identity = identity


class ContainersFound(Message):
    def __init__(self, host: str, containers: list[ContainerView], error: str = "") -> None:
        super().__init__()
        self.host = host
        self.containers = containers
        self.error = error


class FlagTableRead(Message):
    """The flag table for the target's SGLang (its own, or the shipped fallback with `problem`)."""

    def __init__(self, host: str, table: Any, problem: str | None, target: str = "bare host") -> None:
        super().__init__()
        self.host = host
        self.table = table
        self.problem = problem
        self.target = target  # the target's label: an answer for a target since left is dropped


class VersionDetected(Message):
    def __init__(self, host: str, target: str, version: str | None, detail: str = "") -> None:
        super().__init__()
        self.host = host
        self.target = target
        self.version = version
        self.detail = detail


class GpuSampled(Message):
    def __init__(self, host: str, gpus: list[GpuView], t: float) -> None:
        super().__init__()
        self.host = host
        self.gpus = gpus
        self.t = t


class GpusSampled(Message):
    """Several hosts' samples at once (the controller batches them: one message, not one per host)."""

    def __init__(self, samples: list[GpuSampled]) -> None:
        super().__init__()
        self.samples = samples


class RunsListed(Message):
    """The runs recorded on one target of a host (`error`: why they could not be listed)."""

    def __init__(self, host: str, target: str, runs: list[RunView], error: str = "") -> None:
        super().__init__()
        self.host = host
        self.target = target
        self.runs = runs
        self.error = error


class RunChecked(Message):
    """The host's word on a followed run's node that its target's listing no longer has (its run dir was
    removed): `exit` is the backend's `RunExit`, None when it could not be asked."""

    def __init__(self, key: str, rank: int, exit: Any) -> None:
        super().__init__()
        self.key = key
        self.rank = rank
        self.exit = exit


class ModelConfigRead(Message):
    """The model's config.json from the target, for the fit; `error` when it could not be read."""

    def __init__(
        self, host: str, model: str, got: dict[str, Any] | None, error: str = "", target: str = "bare host"
    ) -> None:
        super().__init__()
        self.host = host
        self.model = model
        self.got = got
        self.error = error
        self.target = target  # the target's label, as for FlagTableRead


class RunStarted(Message):
    """A launch succeeded: the app follows the new run (with the fit it was launched on)."""

    def __init__(self, runs: list[RunView], predicted: dict[str, Any] | None) -> None:
        super().__init__()
        self.runs = runs  # one per node, node 0 first
        self.predicted = predicted


class LogLines(Message):
    """A followed run's new lines (already in its session's buffer), as (node rank, line)."""

    def __init__(self, key: str, lines: list[tuple[int, str]], skipped: int = 0, upto: int = 0) -> None:
        super().__init__()
        self.key = key
        self.lines = lines
        self.upto = upto  # the buffer's line count after these: a view filled later has them already
        self.skipped = skipped  # lines a flood outran just before these (never kept)


class StartupChanged(Message):
    """A node's startup timeline moved (a milestone, a phase, a fact)."""

    def __init__(self, key: str, rank: int) -> None:
        super().__init__()
        self.key = key
        self.rank = rank


class RunOutcome(Message):
    """A followed run's state changed: ready, failed (its session has the diagnosis), stalled, ended."""

    def __init__(self, key: str, outcome: str, detail: str = "") -> None:
        super().__init__()
        self.key = key
        self.outcome = outcome
        self.detail = detail


class FailedStillRunning(Message):
    """A run failed (its log says so) but its server is still running: it cannot serve and holds its
    memory (SGLang 0.5.23 with its port taken hangs at "Waiting for application shutdown")."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key


class StopProgress(Message):
    """Stopping or restarting: what we are waiting for, until `done`."""

    def __init__(self, run_id: str, text: str, done: bool = False, ok: bool = True) -> None:
        super().__init__()
        self.run_id = run_id
        self.text = text
        self.done = done
        self.ok = ok


class FitComputed(Message):
    def __init__(self, report: dict[str, Any] | None, error: str = "", generation: int = 0) -> None:
        super().__init__()
        self.report = report
        self.error = error
        self.generation = generation


class PreflightChecked(Message):
    """The target checks asked for by the launch question numbered `seq` (`core.preflight.Check`s)."""

    def __init__(self, seq: int, checks: list[Any]) -> None:
        super().__init__()
        self.seq = seq
        self.checks = checks


class ServiceError(Message):
    """Something the user asked for failed; shown as a notification with what to do."""

    def __init__(self, what: str, message: str, *, unknown: bool = False) -> None:
        """`unknown`: it may have happened after all (a launch cut by a lost connection); never "failed"."""
        super().__init__()
        self.what = what
        self.message = message
        self.unknown = unknown


class DiagnosisChanged(Message):
    """A failed run's whole log (read to its end, its exit code known) says more than its first error."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key


class ServingRead(Message):
    """One poll of a ready run's serving numbers (None: no /metrics, `error` says why)."""

    def __init__(self, key: str, snapshot: Any, error: str | None) -> None:
        super().__init__()
        self.key = key
        self.snapshot = snapshot
        self.error = error


class SmokeAnswered(Message):
    """The smoke request of run `key` answered; `serving` is the state of the session that asked (a run
    followed anew is a new session: an answer for the old one is not its)."""

    def __init__(self, key: str, result: Any, serving: Any = None) -> None:
        super().__init__()
        self.key = key
        self.result = result
        self.serving = serving


class BenchProgress(Message):
    """The load probe on run `key`: `done` of `total` requests; `report` or `error` once it ended."""

    def __init__(
        self,
        key: str,
        done: int,
        total: int,
        report: Any = None,
        error: str | None = None,
        ended: bool = False,
    ) -> None:
        super().__init__()
        self.key = key
        self.done = done
        self.total = total
        self.report = report
        self.error = error
        self.ended = ended
