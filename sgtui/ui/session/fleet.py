"""Every configured host at once: connection state and its age, GPUs, containers and runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sgtui.ui.session.ages import Ages
from sgtui.ui.session.gpu_history import GpuHistory
from sgtui.ui.views import ContainerView, GpuView, HostView, RunView

HEALTH_ORDER = ("failed", "stalled", "starting", "running", "ready")  # worst first; ended runs rank none
ALIVE_STATES = ("starting", "running", "ready", "stalled")
BUSY_MIB = 1024  # a GPU holding more than this is in use (a driver context alone takes ~500 MiB)
HOST_SAMPLES = 240  # per GPU of every host: the GPU panel's sparklines (2 min at 0.5 s); bounded per fleet
HOST_CHART_SAMPLES = 3600  # the deployment host's, for the `g` chart before a run is followed (30 min)


@dataclass(frozen=True)
class GpuSummary:
    count: int
    busy: int
    used_mib: int
    total_mib: int
    problem: str = ""  # nvidia-smi missing, no driver, ...: said instead of numbers


@dataclass(frozen=True)
class FitNeed:
    """What the launch in view needs of a host: `n_gpus` GPUs, each at least `min_total_mib` big (the
    size the fit was computed for) with `per_gpu_mib` free (mem-fraction-static of it: SGLang's static
    allocation takes that share of each GPU, `core/fit`)."""

    n_gpus: int
    per_gpu_mib: int
    min_total_mib: int

    @classmethod
    def from_fit(cls, report: dict[str, object] | None, n_gpus: int | None) -> FitNeed | None:
        """From a fit report's JSON (`FitReport.to_json`); None when the fit fails or says too little."""
        if not report or report.get("verdict") == "fails":
            return None
        total, mfs = report.get("gpu_total_gib"), report.get("mem_fraction_static")
        if not isinstance(total, int | float) or not isinstance(mfs, int | float) or total <= 0:
            return None
        count = n_gpus or report.get("n_gpus") or report.get("tp_size") or 1
        total_mib = int(total * 1024)
        return cls(int(count), int(total_mib * mfs), int(total_mib * 0.99))  # 1 %: sizes as reported


@dataclass
class HostModel:
    name: str
    address: str = ""
    source: str = ""
    state: str = "idle"  # idle | connecting | connected | lost | failed | unknown-key
    detail: str = ""
    gpus: list[GpuView] = field(default_factory=list)
    containers: list[ContainerView] = field(default_factory=list)
    containers_error: str = ""
    runs_by_target: dict[str, list[RunView]] = field(default_factory=dict)
    runs_error: str = ""
    ages: Ages = field(default_factory=Ages)
    machine: str | None = None  # which machine and login it reaches (`remote/identity.py`), once read
    same_as: str | None = None  # an earlier name reaching the same machine: its rows are shown there
    also: list[str] = field(default_factory=list)  # the later names reaching this same machine
    history: GpuHistory = field(default_factory=lambda: GpuHistory(maxlen=HOST_SAMPLES))  # its own only

    def set_state(self, state: str, detail: str = "") -> str:
        before = self.state
        if state != before:
            self.ages.touch("state")
        self.state, self.detail = state, detail
        return before

    @property
    def state_age(self) -> float | None:
        return self.ages.age("state")

    def set_gpus(self, gpus: list[GpuView], t: float | None = None) -> None:
        self.gpus = gpus
        self.ages.touch("gpus", t)
        self.history.add(self.ages.seen("gpus") or 0.0, gpus)

    def gpu_summary(self) -> GpuSummary | None:
        if not self.gpus:
            return None
        problems = [g.note for g in self.gpus if g.index < 0 or not g.total_mib]
        usable = [g for g in self.gpus if g.total_mib and not g.note]
        if not usable:
            return GpuSummary(0, 0, 0, 0, problems[0] if problems else "no GPUs")
        return GpuSummary(
            len(usable),
            sum(1 for g in usable if g.used_mib > BUSY_MIB or g.processes),
            sum(g.used_mib for g in usable),
            sum(g.total_mib for g in usable),
        )

    def _free(self) -> list[GpuView]:
        usable = [g for g in self.gpus if g.total_mib and not g.note]
        return [g for g in usable if g.used_mib <= BUSY_MIB and not g.processes]

    def free_gpus(self) -> int | None:
        """GPUs nobody uses (the same rule as `busy`), None before a reading or with a GPU problem."""
        summary = self.gpu_summary()
        return None if summary is None or summary.problem else len(self._free())

    def free_mib(self) -> int:
        """Free GPU memory over all GPUs (the hosts tab's sort key); 0 without a reading."""
        return sum(g.total_mib - g.used_mib for g in self.gpus if g.total_mib and not g.note)

    def fits(self, need: FitNeed | None) -> bool:
        """`need.n_gpus` GPUs here, each big enough with enough of it free, on a connected host."""
        if need is None or self.state != "connected":
            return False
        big = [g for g in self.gpus if g.total_mib >= need.min_total_mib and not g.note]
        return sum(1 for g in big if g.total_mib - g.used_mib >= need.per_gpu_mib) >= need.n_gpus

    def set_runs(self, target: str, runs: list[RunView]) -> None:
        self.runs_by_target[target] = runs
        self.runs_error = ""
        self.ages.touch("runs")

    @property
    def runs(self) -> list[RunView]:
        """Every run listed on any of the host's targets, once each, oldest first."""
        seen: dict[str, RunView] = {}
        for runs in self.runs_by_target.values():
            for run in runs:
                seen.setdefault(f"{run.run_id}:{run.node_rank}", run)
        return sorted(seen.values(), key=lambda r: (r.started, r.run_id))

    def view(self) -> HostView:
        return HostView(self.name, self.address, self.source, self.state, self.detail)


def worst(states: list[str]) -> str | None:
    ranked = [s for s in states if s in HEALTH_ORDER]
    return min(ranked, key=HEALTH_ORDER.index) if ranked else None


class FleetState:
    """The hosts, in the order configured. `state_of` lets a followed run's own word (ready, stalled,
    from its log) override the host's ("running")."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.hosts: dict[str, HostModel] = {}

    def load(self, hosts: list[HostView]) -> None:
        for h in hosts:
            model = self.hosts.get(h.name)
            if model is None:
                self.hosts[h.name] = HostModel(h.name, h.address, h.source, ages=Ages(self.clock))
            else:
                model.address, model.source = h.address, h.source

    def host(self, name: str) -> HostModel:
        model = self.hosts.get(name)
        if model is None:
            model = self.hosts[name] = HostModel(name, ages=Ages(self.clock))
        return model

    def __contains__(self, name: object) -> bool:
        return name in self.hosts

    def states(self) -> dict[str, str]:
        return {name: h.state for name, h in self.hosts.items()}

    def identify(self, name: str, machine: str | None) -> None:
        """`name` reaches `machine` (None: cannot tell). The first configured name of each machine is its
        row; the later ones are `also` reachable names of it, and their listings are not shown twice."""
        self.host(name).machine = machine
        first: dict[str, HostModel] = {}
        for host in self.hosts.values():
            host.same_as, host.also = None, []
        for host in self.hosts.values():
            if host.machine is None:
                continue
            primary = first.setdefault(host.machine, host)
            if primary is not host:
                host.same_as = primary.name
                primary.also.append(host.name)

    def shown(self) -> dict[str, HostModel]:
        """The hosts with a row of their own: a second name for a machine already shown is not one."""
        return {name: h for name, h in self.hosts.items() if h.same_as is None}

    def all_runs(self) -> list[RunView]:
        """Every run on every connected target, host by host; a run listed under two names of one machine
        once, under the first name that listed it (each name may list a target the other did not)."""
        seen: set[tuple[str, str, str, int | None]] = set()
        runs = []
        for h in self.hosts.values():
            for run in h.runs:
                named = self.hosts.get(run.host)
                place = (named.same_as if named is not None else None) or run.host
                key = (place, run.target, run.run_id, run.node_rank)
                if key not in seen:
                    seen.add(key)
                    runs.append(run)  # under the name it was listed by: its actions go through that link
        return runs

    def run_health(self, host: str, state_of: Callable[[RunView], str]) -> tuple[int, str | None]:
        """How many runs are alive on `host`, and the worst health among them and the newest run of each
        target (a run that just failed counts until another is launched there; older history does not)."""
        runs = self.host(host).runs
        newest: dict[str, RunView] = {}
        for run in runs:  # oldest first: the last one per target stays
            newest[run.target] = run
        alive = [state_of(r) for r in runs if state_of(r) in ALIVE_STATES]
        counted = alive + [state_of(r) for r in newest.values() if state_of(r) not in ALIVE_STATES]
        return len(alive), worst(counted)
