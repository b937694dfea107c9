"""The sgtui app: composes the fleet, the followed runs, the deployment and the panes that render them.

State lives in `sgtui.ui.session` (one `RunSession` per followed run, `FleetState` for the hosts, the
`Deployment` being edited); workers (`sgtui.ui.workers`) post messages; the handlers here update that
state and tell the panes (`sgtui.ui.panes`) to redraw. Nothing here owns a run's data.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Header, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from sgtui.ui.actions import Actions
from sgtui.ui.backend import Backend
from sgtui.ui.commands_provider import SgtuiCommands
from sgtui.ui.deploy import DeployActions
from sgtui.ui.fitting import FitInputs, compute_fit
from sgtui.ui.host_dialogs import HostDialogs, KeyCase
from sgtui.ui.keymap import KEYS_FILE, load_keymap
from sgtui.ui.panes.flags import FlagsPane
from sgtui.ui.panes.hosts import FleetPane
from sgtui.ui.panes.log import LogPane
from sgtui.ui.panes.runs import RunsTable
from sgtui.ui.routing import HostRouting
from sgtui.ui.run_routing import RunRouting
from sgtui.ui.serving_routing import ServingRouting
from sgtui.ui.session import Deployment, FleetState, FollowedRuns, GpuHistory, RunSession
from sgtui.ui.session.fleet import FitNeed
from sgtui.ui.status_line import GPU_STALE_S, host_runs_silence, status_line
from sgtui.ui.views import RunView, place_of
from sgtui.ui.widgets.footer import SgtuiFooter
from sgtui.ui.widgets.gpu_panel import GpuPanel
from sgtui.ui.widgets.launch_form import FlagInfo, LaunchForm
from sgtui.ui.workers.controller import Controller

ANSI_THEMES = ("textual-ansi", "ansi-dark")  # the ANSI theme's name differs between Textual releases


def pick_theme(available: Iterable[str], environ: Mapping[str, str] = os.environ) -> str:
    """Truecolor terminals get the default theme; others (tmux without Tc, old xterms) ANSI colours."""
    if environ.get("COLORTERM", "").lower() in ("truecolor", "24bit"):
        return "textual-dark"
    names = set(available)
    return next((name for name in ANSI_THEMES if name in names), "textual-dark")


# one key per line: the log does not wrap, and at 80 columns it is about 46 wide
WELCOME_KEYS = (
    "  l  launch here and follow the log",
    "  e  edit the flags, with the memory fit",
    "  1  every host; pick another target",
    "  4  every run; enter follows one",
    "  ?  every key",
)
NO_HOST_LINES = (
    "No host yet. To add one:",
    "  a Host in ~/.ssh/config, or an entry",
    "  in hosts.yaml in sgtui's config dir;",
    "  or quit (q) and run `sgtui demo`",
    "  for a simulated GPU host.",
    "  1  the hosts; enter picks a target",
    "  ?  every key",
)
FLEET_TICK_S = 1.0  # ages in the fleet view and status line
RUNS_REFRESH_S = 30.0


class SgtuiApp(Actions, HostDialogs, HostRouting, RunRouting, ServingRouting, App[None]):
    CSS_PATH = Path(__file__).with_name("sgtui.tcss")  # absolute: subclasses elsewhere find it too
    TITLE = "sgtui"
    COMMANDS: ClassVar = App.COMMANDS | {SgtuiCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "launch", "launch", id="launch"),
        Binding("s", "stop", "stop", id="stop"),
        Binding("r", "restart", "restart", id="restart"),
        Binding("a", "apply", "fix", id="apply"),
        Binding("e", "edit", "flags", id="edit"),
        Binding("slash", "filter", "search", id="filter"),
        Binding("g", "gpus", "GPUs", id="gpus"),
        Binding("p", "profiles", "profile", id="profiles"),
        Binding("question_mark", "help", "help", id="help"),
        Binding("q", "quit", "quit", id="quit"),
        Binding("right_square_bracket", "switch_run(1)", "next run", id="next-run", show=False),
        Binding("left_square_bracket", "switch_run(-1)", "previous run", id="previous-run", show=False),
        Binding("v", "node_view", "node view", id="node-view", show=False),
        Binding("u", "unfollow", "stop following", id="unfollow", show=False),
        Binding("f", "follow", "follow", id="follow", show=False),
        Binding("x", "first_error", "first error", id="first-error", show=False),
        Binding("o", "sort_hosts", "sort hosts", id="sort-hosts", show=False),
        Binding("b", "bench", "load probe", id="bench", show=False),
        Binding("1", "tab('targets')", "hosts", id="tab-targets", show=False),
        Binding("2", "tab('flags')", "flags", id="tab-flags", show=False),
        Binding("3", "tab('log')", "log", id="tab-log", show=False),
        Binding("4", "tab('runs')", "runs", id="tab-runs", show=False),
        Binding("escape", "leave_input", "leave field", id="leave-input", show=False),
    ]

    def __init__(
        self,
        backend: Backend,
        profile: Any,
        profile_path: Path | None = None,
        *,
        profile_dirs: tuple[Path, ...] = (),
        theme: str | None = None,
        max_log_lines: int = 20_000,
        fit_function: Callable[[dict[str, Any], FitInputs], dict[str, Any]] = compute_fit,
        clock: Callable[[], float] = time.monotonic,
        readonly: bool = False,
        demo: bool = False,
    ) -> None:
        super().__init__()
        self.readonly = readonly  # watching someone else's run: no launch, stop, restart or fix
        self.demo = demo  # `sgtui demo`: the simulated host lives in this process and stops with it
        self.backend = backend
        self.profile_dirs = profile_dirs
        self.max_log_lines = max_log_lines
        self.clock = clock
        self.theme = theme or pick_theme(self.available_themes)
        self.controller = Controller(self, backend)
        self.fleet = FleetState(clock)
        self.followed = FollowedRuns()
        self.deployment = Deployment(profile, profile_path)
        self.deploy = DeployActions(self)
        self.fit_function = fit_function
        self._connected: set[str] = set()
        self._reattach_checked: set[str] = set()
        self._refusals_told: set[str] = set()
        self._holders_shown: frozenset[str] | None = None  # what the backend was last told (`show_holders`)
        self.key_cases: dict[str, KeyCase] = {}  # a changed host key (by fingerprint) -> its host names

    # the state the panes render, by the names the tests and the palette use ------------------------------
    @property
    def profile(self) -> Any:
        return self.deployment.profile

    @property
    def version(self) -> str | None:
        return self.deployment.version

    @property
    def flag_table(self) -> Any:
        """The target's own flag table once read (FlagTable); None while the shipped one is used."""
        return self.deployment.flag_table

    @property
    def catalogue(self) -> dict[str, FlagInfo]:
        return self.deployment.catalogue

    @property
    def fit_inputs(self) -> FitInputs:
        return self.deployment.fit_inputs

    @property
    def fit_report(self) -> dict[str, Any] | None:
        return self.deployment.fit_report

    def fit_need(self) -> FitNeed | None:
        """What the launch in view needs of a host (the hosts tab marks the hosts that have it)."""
        return FitNeed.from_fit(self.fit_report, self.deployment.fit_inputs.n_gpus)

    @property
    def session(self) -> RunSession | None:
        """The followed run in view."""
        return self.followed.in_view

    @property
    def current(self) -> RunView | None:
        return self.session.run if self.session is not None else None

    @property
    def run_state(self) -> str:
        return self.session.state if self.session is not None else ""

    @property
    def host_history(self) -> GpuHistory:
        """The deployment host's own GPU history: the `g` chart before any run is followed."""
        host = self.fleet.hosts.get(self.deployment.host)
        return host.history if host is not None else GpuHistory()

    @property
    def history(self) -> GpuHistory:
        return self.session.history if self.session is not None else self.host_history

    @property
    def host_states(self) -> dict[str, str]:
        return self.fleet.states()

    @property
    def runs(self) -> list[RunView]:
        return self.query_one(RunsTable).runs

    @property
    def main(self) -> Screen[Any]:
        """The app's own screen: message handlers must reach it even while a modal is on top."""
        return self.screen_stack[0]

    @property
    def flags(self) -> FlagsPane:
        return self.main.query_one(FlagsPane)

    @property
    def form(self) -> LaunchForm:
        return self.flags.form

    @property
    def log_pane(self) -> LogPane:
        return self.main.query_one(LogPane)

    @property
    def fleet_pane(self) -> FleetPane:
        return self.main.query_one(FleetPane)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every message here carries outside text (hosts, run ids, paths, remote errors): never markup."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    # layout --------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(icon="⚡")
        yield Static("", id="status")
        with TabbedContent(initial="log", id="tabs"):
            with TabPane("1 Hosts", id="targets"):
                yield FleetPane(self.fleet, id="picker")
            with TabPane("2 Flags", id="flags"):
                yield FlagsPane(self.deployment, self.controller, self.fit_function, id="flags-row")
            with TabPane("3 Log", id="log"):
                yield LogPane(self.max_log_lines, id="log-row")
            with TabPane("4 Runs", id="runs"):
                yield RunsTable(id="runs-table")
        yield GpuPanel(id="gpus")
        yield SgtuiFooter(compact=True, show_command_palette=False)  # ctrl+p still opens it; see ? help

    def on_mount(self) -> None:
        d = self.deployment
        self.sub_title = d.title
        self.fleet_pane.state_of = self.state_of
        self.fleet_pane.runs_silence = lambda name: host_runs_silence(self, name)
        self.fleet_pane.fit_need = self.fit_need
        self.fleet_pane.rates = self.host_rates
        self.log_pane.log.focus()
        self.welcome()
        self.main.set_class(self.size.width < 100, "-narrow")
        self.draw_status()
        self._load_keymap()
        self.backend.set_password_prompt(self.ask_password)
        self._show_holders()
        self.controller.load_hosts()
        self.flags.schedule_fit()
        self.set_interval(FLEET_TICK_S, self._tick)
        self.start_serving()

    def _tick(self) -> None:
        """Ages move: the fleet rows, the status line and the GPU panel say how old their values are;
        every RUNS_REFRESH_S a connected host's runs are listed again (runs started or ended by someone
        else show up in the fleet and runs views)."""
        if not self.is_running:
            return
        self.check_key_files()
        for name, host_model in self.fleet.hosts.items():
            runs_age = host_model.ages.age("runs")
            if host_model.state == "connected" and runs_age is not None and runs_age > RUNS_REFRESH_S:
                host_model.ages.touch("runs")  # once per period, answered or not
                self.relist_all(name)
        self.fleet_pane.refresh_fleet()
        self.draw_runs()  # redrawn only when a mark or an age shown there moved
        self.draw_status()
        self.draw_serving()  # the numbers' ages move
        self._show_holders()
        host = self.fleet.host(self.gpu_host) if self.gpu_host else None
        if host is not None:
            age = host.ages.age("gpus", self.clock())
            stale = host.state != "connected" or (age is not None and age > GPU_STALE_S)
            self.main.query_one(GpuPanel).set_age(age, stale and age is not None)

    def _show_holders(self) -> None:
        """Tell the backend whose GPU holders are on screen (the GPU panel's host) when that changes: that
        host's are listed every 2 s, another's only when its memory moves (`ui/holder_refresh.py`)."""
        shown = frozenset({self.gpu_host} if self.gpu_host else ())
        if shown != self._holders_shown:
            self._holders_shown = shown
            self.backend.show_holders(shown)

    def _load_keymap(self) -> None:
        from sgtui.core.errors import UserError
        from sgtui.core.paths import config_dir

        path = config_dir() / KEYS_FILE
        if not path.is_file():
            return
        ids = [b.id for b in self.BINDINGS if isinstance(b, Binding) and b.id]
        try:
            self.set_keymap(load_keymap(path, ids))
        except UserError as exc:
            self.notify(f"{exc}\n(the default keys apply)", title="keys", severity="error", timeout=20)

    def on_resize(self, event: events.Resize) -> None:
        """Below 100 columns the side panes narrow and flag labels go above their inputs; the status line
        keeps what matters most at the new width."""
        if self.is_mounted:
            self.query_one(SgtuiFooter).refresh(recompose=True)  # its key order: do they all fit?
        self.main.set_class(event.size.width < 100, "-narrow")
        self.call_after_refresh(self.draw_status)

    async def on_unmount(self) -> None:
        await self.backend.close()

    def draw_status(self) -> None:
        """The line under the header, on every tab: target, connection, version, the fit's verdict and
        the run in view, each live value with its age once it is stale. Text, never markup."""
        d = self.deployment
        host = self.fleet.host(d.host) if d.host else None
        state = host.state if host is not None else "idle"
        status = self.main.query_one("#status", Static)
        status.update(status_line(self, host, state, self.size.width), layout=False)
        status.set_class(state in ("lost", "failed"), "-lost")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that died of a bug says so instead of vanishing (they run with exit_on_error=False)."""
        if event.state is WorkerState.ERROR:
            self.notify(
                f"{event.worker.name}: {event.worker.error}", title="internal error", severity="error"
            )

    # messages from the panes ---------------------------------------------------------------------------
    @on(FleetPane.Picked)
    def _picked(self, event: FleetPane.Picked) -> None:
        pick = event.pick
        case = self.key_case_of(pick.host)
        if case is not None and pick.container is None:  # its changed key: the dialog again
            self.show_key_case(case)
            return
        self.connect(pick.host)
        if pick.container is not None:
            self.deploy.retarget(pick.host, pick.container)

    def welcome(self) -> None:
        """The log tab's first words while no run is shown: the profile and target in use, the keys."""
        d = self.deployment
        if d.host:
            self.log_pane.welcome([f"Profile {d.name} for {d.host} › {d.target_label}.", *WELCOME_KEYS])
        else:  # nothing configured yet: what to do, not a blank host
            self.log_pane.welcome(NO_HOST_LINES)

    @on(RunsTable.Open)
    def _open_run(self, event: RunsTable.Open) -> None:
        self.follow(event.run, self._fit_of(event.run), fresh=False)

    def _fit_of(self, run: RunView) -> dict[str, Any] | None:
        """The form's fit stands for a run only if the run is this deployment's with the same command: a
        run launched with other flags, or elsewhere, is not compared with a prediction for these."""
        d = self.deployment
        if run.host != d.host or place_of(run.target) != place_of(d.target_label):
            return None
        argv = getattr(run.raw, "argv", None)
        if argv is not None and list(argv) != list(getattr(d.profile, "command", argv)):
            return None
        return self.fit_report
