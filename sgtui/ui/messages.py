"""Messages the service workers post to the app. Workers never touch widgets; the app routes these."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from sgtui.ui.views import ContainerView, DiagnosisView, GpuView, HostView, RunView, TimelineView


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


class ContainersFound(Message):
    def __init__(self, host: str, containers: list[ContainerView], error: str = "") -> None:
        super().__init__()
        self.host = host
        self.containers = containers
        self.error = error


class FlagTableRead(Message):
    """The flag table for the target's SGLang (its own, or the shipped fallback with `problem`)."""

    def __init__(self, host: str, table: Any, problem: str | None) -> None:
        super().__init__()
        self.host = host
        self.table = table
        self.problem = problem


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


class RunsListed(Message):
    def __init__(self, host: str, runs: list[RunView]) -> None:
        super().__init__()
        self.host = host
        self.runs = runs


class RunStarted(Message):
    """A run is now the one the log view follows (a new launch, or a reattach)."""

    def __init__(self, run: RunView, fresh: bool) -> None:
        super().__init__()
        self.run = run
        self.fresh = fresh


class LogLines(Message):
    """Complete lines from one run's log, already stripped of ANSI; coalesced by the tail worker."""

    def __init__(self, run_id: str, lines: list[str], offset: int, dropped: int = 0) -> None:
        super().__init__()
        self.run_id = run_id
        self.lines = lines
        self.offset = offset
        self.dropped = dropped


class StartupChanged(Message):
    def __init__(self, run_id: str, timeline: TimelineView, milestone_kinds: list[str]) -> None:
        super().__init__()
        self.run_id = run_id
        self.timeline = timeline
        self.milestone_kinds = milestone_kinds


class RunOutcome(Message):
    """The run reached ready, or failed (with the diagnosis), or its log ended."""

    def __init__(self, run_id: str, outcome: str, diagnoses: list[DiagnosisView]) -> None:
        super().__init__()
        self.run_id = run_id
        self.outcome = outcome
        self.diagnoses = diagnoses


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


class ServiceError(Message):
    """Something the user asked for failed; shown as a notification with what to do."""

    def __init__(self, what: str, message: str) -> None:
        super().__init__()
        self.what = what
        self.message = message
