"""The plain data the widgets draw.

The lower layers have their own richer types; the UI converts them into these small frozen records at the
service boundary so that widgets, snapshot tests and the fakes in the tests share one vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class HostView:
    """A host the user can pick, with the live state of its SSH connection."""

    name: str
    address: str = ""
    source: str = ""  # "ssh config", "hosts.yaml", "sim"
    state: str = "idle"  # idle | connecting | connected | lost | failed
    detail: str = ""


@dataclass(frozen=True)
class ContainerView:
    """A place on a host where SGLang can run: the host itself, a Proxmox LXC or a Docker container."""

    kind: str  # host | pct | docker
    id: str
    name: str = ""
    status: str = ""
    gpus: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        if self.kind == "host":
            return "bare host"
        prefix = "lxc" if self.kind == "pct" else "docker"
        return f"{prefix} {self.id}" + (f" {self.name}" if self.name and self.name != self.id else "")


def place_of(label: str) -> tuple[str, str]:
    """(kind, id) of a target as either layer labels it: a run's "pct 129" / "host" (the record's own
    Target) or the app's "lxc 129 name" / "bare host" (`ContainerView.label`)."""
    words = label.split()
    if not words or words[0] in ("host", "bare"):
        return ("host", "")
    return ("pct" if words[0] in ("pct", "lxc") else words[0], words[1] if len(words) > 1 else "")


@dataclass(frozen=True)
class GpuProcessView:
    """A process holding GPU memory; `used_mib` is None when nvidia-smi says [N/A] (containers, MIG)."""

    pid: int
    name: str
    used_mib: int | None
    container: str = ""


@dataclass(frozen=True)
class GpuView:
    """One GPU at one instant."""

    index: int
    name: str
    used_mib: int
    total_mib: int
    util_pct: int | None = None
    processes: tuple[GpuProcessView, ...] = ()
    note: str = ""  # e.g. "no driver", "[N/A]"


@dataclass(frozen=True)
class RunView:
    """A launch on a target: its id, its own log, and what we last knew of it."""

    run_id: str
    host: str
    target: str
    profile: str
    state: str  # starting | running | ready | failed | stopped | exited | unknown
    log_path: str = ""
    started: str = ""
    pgid: int | None = None
    gpus: tuple[int, ...] = ()
    node_rank: int | None = None  # a multi-node run has one record per node, all with the same run_id
    foreign: str = ""  # why sgtui refuses to act on it (another user's run, ...): never followed or stopped
    note: str = ""  # why it is in its state beyond the state's name (a full disk, its container gone)
    rate: str = ""  # a ready followed run's generation rate ("312 tok/s"), from its serving numbers
    raw: Any = field(default=None, compare=False, repr=False)  # the lower layer's record, passed back

    @property
    def row_key(self) -> str:
        """Host, target and run id (and node): one id may be listed by two names of one machine, or by
        two machines sharing a home dir; the runs table and its stale ages need one key per row."""
        node = "" if self.node_rank is None else f":{self.node_rank}"
        return f"{self.host}\x00{self.target}\x00{self.run_id}{node}"


@dataclass(frozen=True)
class Milestone:
    kind: str
    label: str
    elapsed_s: float | None
    done: bool


@dataclass(frozen=True)
class TimelineView:
    """The startup of one run as the timeline widget shows it."""

    phase: str = "waiting"
    elapsed_s: float | None = None
    progress_pct: int | None = None
    milestones: tuple[Milestone, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()  # label -> formatted value, in display order
    comparisons: tuple[tuple[str, str, str], ...] = ()  # label, predicted, actual
    error: str | None = None


@dataclass(frozen=True)
class SuggestionView:
    """A change the diagnosis proposes; only a launch flag with a concrete value can be applied by a key."""

    flag: str | None
    value: Any
    why: str = ""

    @property
    def applicable(self) -> bool:
        return bool(self.flag) and str(self.flag).startswith("--") and self.value is not None

    @property
    def as_flag(self) -> str:
        if not self.flag:
            return "action"
        if self.value is None:
            return self.flag
        return f"{self.flag} {self.value}"


@dataclass(frozen=True)
class DiagnosisView:
    title: str
    detail: str
    suggestions: tuple[SuggestionView, ...] = ()
