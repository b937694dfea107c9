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

from rich.text import Text
from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from sgtui.ui.backend import Backend
from sgtui.ui.commands_provider import SgtuiCommands
from sgtui.ui.deploy import DeployActions
from sgtui.ui.fitting import FitInputs, compute_fit
from sgtui.ui.keymap import KEYS_FILE, load_keymap
from sgtui.ui.panes.flags import FlagsPane
from sgtui.ui.panes.hosts import FleetPane
from sgtui.ui.panes.log import LogPane
from sgtui.ui.panes.runs import RunsTable
from sgtui.ui.routing import Routing
from sgtui.ui.screens.confirm import ConfirmScreen
from sgtui.ui.screens.gpu_detail import GpuDetailScreen
from sgtui.ui.screens.help import HelpScreen
from sgtui.ui.session import Deployment, FleetState, FollowedRuns, GpuHistory, RunSession
from sgtui.ui.session.ages import age_text
from sgtui.ui.views import RunView
from sgtui.ui.widgets.fit_panel import fit_badge
from sgtui.ui.widgets.gpu_panel import GpuPanel
from sgtui.ui.widgets.launch_form import FlagInfo, LaunchForm
from sgtui.ui.widgets.log_view import LogView
from sgtui.ui.workers.controller import Controller

GPU_STALE_S = 5.0  # ten missed GPU samples (every 0.5 s): the host's values are marked stale

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
FLEET_TICK_S = 1.0  # ages in the fleet view and status line
RUNS_REFRESH_S = 30.0


def stale_text(value: str, age: float | None) -> Text:
    """A live value; with an age, it is stale: "ready, last seen 35s ago", marked."""
    if age is None:
        return Text(value)
    return Text(f"{value}, last seen {age_text(age)} ago", style="bold yellow")


def host_silence(host: Any, now: float) -> float | None:
    """How long a connected host has sent nothing (no GPU sample) past a few missed samples; else None."""
    if host is None or host.state != "connected":
        return None
    age = host.ages.age("gpus", now)
    if age is None:
        age = host.ages.age("state", now)
    return age if age is not None and age > GPU_STALE_S else None


def status_line(app: SgtuiApp, host: Any, state: str) -> Text:
    d = app.deployment
    now = app.clock()
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"{d.host} › {d.target_label} · ")
    silent = host_silence(host, now)
    text.append_text(stale_text(state, silent))
    text.append(f" · SGLang {d.version}" if d.version else " · SGLang ?")
    text.append(" · fit ")
    text.append_text(fit_badge(d.fit_report, app.flags.fit_error))
    session = app.session
    if session is not None:
        shown = session.phase if session.state == "starting" and session.phase else session.state
        run_host = app.fleet.host(session.host)
        unsure = session.alive and (run_host.state != "connected" or host_silence(run_host, now) is not None)
        heard = [a for a in (session.ages.age("log", now), session.ages.age("state", now)) if a is not None]
        text.append(f" · run {session.key} ")
        text.append_text(stale_text(shown, min(heard) if unsure and heard else None))
        if len(app.followed) > 1:
            keys = [s.key for s in app.followed]
            text.append(f" · {keys.index(session.key) + 1}/{len(keys)} followed ([ ])")
    else:
        text.append(" · no run followed: l launches")
    if app.readonly:
        text.append(" · read-only", style="bold")
    return text


class SgtuiApp(Routing, App[None]):
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
        Binding("f", "follow", "follow", id="follow", show=False),
        Binding("x", "first_error", "first error", id="first-error", show=False),
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
        self.host_history = GpuHistory()  # the deployment host's GPUs before any run is followed
        self.deploy = DeployActions(self)
        self.fit_function = fit_function
        self._connected: set[str] = set()
        self._reattach_checked: set[str] = set()
        self._refusals_told: set[str] = set()

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
        yield Footer(compact=True, show_command_palette=False)  # ctrl+p still opens it; see ? help

    def on_mount(self) -> None:
        d = self.deployment
        self.sub_title = d.title
        self.fleet_pane.state_of = self.state_of
        pane = self.log_pane
        pane.log.focus()
        pane.welcome([f"Profile {d.name} for {d.host} › {d.target_label}.", *WELCOME_KEYS])
        self.main.set_class(self.size.width < 100, "-narrow")
        self.draw_status()
        self._load_keymap()
        self.backend.set_password_prompt(self.ask_password)
        self.controller.load_hosts()
        self.flags.schedule_fit()
        self.set_interval(FLEET_TICK_S, self._tick)

    def _tick(self) -> None:
        """Ages move: the fleet rows, the status line and the GPU panel say how old their values are;
        every RUNS_REFRESH_S a connected host's runs are listed again (runs started or ended by someone
        else show up in the fleet and runs views)."""
        if not self.is_running:
            return
        for name, host_model in self.fleet.hosts.items():
            runs_age = host_model.ages.age("runs")
            if host_model.state == "connected" and runs_age is not None and runs_age > RUNS_REFRESH_S:
                host_model.ages.touch("runs")  # once per period, answered or not
                self.relist_all(name)
        self.fleet_pane.refresh_fleet()
        self.draw_status()
        host = self.fleet.host(self.gpu_host) if self.gpu_host else None
        if host is not None:
            age = host.ages.age("gpus", self.clock())
            stale = host.state != "connected" or (age is not None and age > GPU_STALE_S)
            self.main.query_one(GpuPanel).set_age(age, stale and age is not None)

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
        """Below 100 columns the side panes narrow and flag labels go above their inputs."""
        self.main.set_class(event.size.width < 100, "-narrow")

    async def on_unmount(self) -> None:
        await self.backend.close()

    def draw_status(self) -> None:
        """The line under the header, on every tab: target, connection, version, the fit's verdict and
        the run in view, each live value with its age once it is stale. Text, never markup."""
        d = self.deployment
        host = self.fleet.host(d.host) if d.host else None
        state = host.state if host is not None else "idle"
        status = self.main.query_one("#status", Static)
        status.update(status_line(self, host, state), layout=False)
        status.set_class(state in ("lost", "failed"), "-lost")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that died of a bug says so instead of vanishing (they run with exit_on_error=False)."""
        if event.state is WorkerState.ERROR:
            self.notify(
                f"{event.worker.name}: {event.worker.error}", title="internal error", severity="error"
            )

    # actions -------------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.readonly and action in ("launch", "stop", "restart", "apply"):
            return None  # greyed in the footer; the key says why
        if action == "apply":
            return self.log_pane.diagnosis.first_suggestion is not None
        if action == "stop":
            return True if self.session is not None and self.session.alive else None
        return True

    def action_tab(self, tab: str) -> None:
        self.main.query_one(TabbedContent).active = tab
        # always move focus into the new tab: left behind in a hidden pane, it would pull that pane back
        focus = {"targets": "#host-tree", "flags": "#form", "log": "#log-view", "runs": "#runs-table"}[tab]
        self.main.query_one(focus).focus()

    def action_leave_input(self) -> None:
        """esc: out of a text field, so that the single-letter keys act again."""
        focused = self.focused
        if isinstance(focused, Input) and focused.id == "log-search":
            self.log_pane.close_filter()
        elif isinstance(focused, Input) and focused.id == "host-filter":
            self.main.query_one("#host-tree").focus()
        elif focused is not None and self.form in focused.ancestors:
            self.form.focus()

    def action_launch(self) -> None:
        self.deploy.launch()

    def action_stop(self) -> None:
        self.deploy.stop()

    def action_restart(self) -> None:
        self.deploy.restart()

    def action_apply(self) -> None:
        self.deploy.apply()

    def action_profiles(self) -> None:
        self.deploy.profiles()

    def action_edit(self) -> None:
        self.main.query_one(TabbedContent).active = "flags"
        fields = self.form.query("Input, Checkbox")
        if fields:
            fields.first().focus()

    def action_filter(self) -> None:
        self.main.query_one(TabbedContent).active = "log"
        self.log_pane.open_filter()

    def action_follow(self) -> None:
        log = self.main.query_one(LogView)
        log.set_following(not log.following)

    def action_first_error(self) -> None:
        self.action_tab("log")
        if not self.main.query_one(LogView).jump_to_first_error():
            self.notify("no error in the log shown", timeout=4)

    def action_switch_run(self, step: int) -> None:
        """[ and ]: the previous or next followed run, each with its own log, timeline and GPUs."""
        if len(self.followed) < 2:
            self.notify("one run is followed at most: enter on another in the runs tab (4) follows it too")
            return
        session = self.followed.step(step)
        if session is not None:
            self.view_session(session)

    def action_view_run(self, key: str) -> None:
        session = self.followed.view(key)
        if session is not None:
            self.view_session(session)

    def action_node_view(self) -> None:
        """v: a multi-node run's log, all nodes interleaved with a node column, then node by node."""
        session = self.session
        if session is None or not session.multi_node:
            self.notify("v switches between the nodes of a multi-node run", timeout=4)
            return
        ranks = sorted(session.nodes)
        order: list[int | None] = [None, *ranks]
        session.log_rank = order[(order.index(session.log_rank) + 1) % len(order)]
        self.log_pane.show(session)

    def action_gpus(self) -> None:
        self.push_screen(GpuDetailScreen(self.history, self.fit_report))

    def action_help(self) -> None:
        rows = [(self.get_key_display(b), b.description) for b in self.BINDINGS if isinstance(b, Binding)]
        rows += [
            ("ctrl+p", "command palette: every action by name"),
            ("ctrl+y", "apply a fit suggestion (flags)"),
        ]
        self.push_screen(HelpScreen(rows))

    async def action_quit(self) -> None:
        """Quitting with flag edits not saved to the profile asks first (default No)."""
        if self.form.dirty and not self.readonly:

            def answer(yes: bool | None) -> None:
                if yes:
                    self._quit()

            self.push_screen(
                ConfirmScreen(
                    "Quit with unsaved flag edits?",
                    "The flags tab has edits not saved to the profile (p, then ctrl+s saves them). "
                    "Yes quits and loses them; no goes back.",
                ),
                answer,
            )
            return
        self._quit()

    def _quit(self) -> None:
        alive = [s for s in self.followed if s.alive]
        message = None
        if alive and self.demo:
            message = "sgtui demo: the demo host and its servers stopped with the app"
        elif alive:
            names = ", ".join(f"{s.key} on {s.host}" for s in alive)
            message = f"sgtui: {names} keep{'s' if len(alive) == 1 else ''} running; `sgtui` reattaches"
        self.exit(message=message)

    @on(FleetPane.Picked)
    def _picked(self, event: FleetPane.Picked) -> None:
        pick = event.pick
        self.connect(pick.host)
        if pick.container is not None:
            self.deploy.retarget(pick.host, pick.container)

    @on(RunsTable.Open)
    def _open_run(self, event: RunsTable.Open) -> None:
        self.follow(event.run, self.fit_report, fresh=False)
