"""The sgtui app: pick a target, edit flags with the fit beside them, launch, follow, fix, restart."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, Input, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from sgtui.ui import messages as m
from sgtui.ui import profile_ops
from sgtui.ui.backend import Backend
from sgtui.ui.catalogue import flag_catalogue, parse_flag_text
from sgtui.ui.commands_provider import SgtuiCommands
from sgtui.ui.fitting import FitInputs, compute_fit, hints_from_report
from sgtui.ui.gpu_history import GpuHistory
from sgtui.ui.keymap import KEYS_FILE, load_keymap
from sgtui.ui.screens.confirm import ConfirmScreen
from sgtui.ui.screens.gpu_detail import GpuDetailScreen
from sgtui.ui.screens.help import HelpScreen
from sgtui.ui.screens.password import PasswordScreen
from sgtui.ui.screens.profiles import ProfileChoice, ProfilesScreen
from sgtui.ui.services import Controller
from sgtui.ui.views import RunView, TimelineView
from sgtui.ui.widgets.diagnosis import DiagnosisPanel
from sgtui.ui.widgets.fit_panel import FitPanel
from sgtui.ui.widgets.gpu_panel import GpuPanel
from sgtui.ui.widgets.host_picker import HostPicker
from sgtui.ui.widgets.launch_form import FlagInfo, LaunchForm
from sgtui.ui.widgets.run_log import RunLog
from sgtui.ui.widgets.runs_table import RunsTable
from sgtui.ui.widgets.timeline import Timeline

FIT_DEBOUNCE_S = 0.25
Handler = TypeVar("Handler", bound=Callable[..., Any])


def while_running(handler: Handler) -> Handler:
    """Worker messages still queued when the app shuts down find its widgets gone: drop them."""

    @functools.wraps(handler)
    def guarded(self: App[Any], *args: Any) -> Any:
        return handler(self, *args) if self.is_running else None

    return cast(Handler, guarded)


ALIVE = ("starting", "running", "ready")


ANSI_THEMES = ("textual-ansi", "ansi-dark")  # the ANSI theme's name differs between Textual releases


def pick_theme(available: Iterable[str], environ: Mapping[str, str] = os.environ) -> str:
    """Truecolor terminals get the default theme; others (tmux without Tc, old xterms) ANSI colours."""
    if environ.get("COLORTERM", "").lower() in ("truecolor", "24bit"):
        return "textual-dark"
    names = set(available)
    return next((name for name in ANSI_THEMES if name in names), "textual-dark")


def tail_of(path: str, room: int) -> str:
    """The end of a path in `room` columns: the run id and file name are what tell runs apart."""
    if room <= 0 or len(path) <= room:
        return path
    return "…" + path[-(room - 1) :] if room > 1 else "…"


# one key per line: the log does not wrap, and at 80 columns it is about 46 wide
WELCOME_KEYS = (
    "  l  launch here and follow the log",
    "  e  edit the flags, with the memory fit",
    "  1  pick another host or container",
    "  4  the runs already there",
    "  ?  every key",
)


class SgtuiApp(App[None]):
    CSS_PATH = Path(__file__).with_name("sgtui.tcss")  # absolute: subclasses elsewhere find it too
    TITLE = "sgtui"
    COMMANDS: ClassVar = App.COMMANDS | {SgtuiCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "launch", "launch", id="launch"),
        Binding("s", "stop", "stop", id="stop"),
        Binding("r", "restart", "restart", id="restart"),
        Binding("a", "apply", "fix", id="apply"),
        Binding("e", "edit", "flags", id="edit"),
        Binding("slash", "filter", "filter", id="filter"),
        Binding("g", "gpus", "GPUs", id="gpus"),
        Binding("p", "profiles", "profile", id="profiles"),
        Binding("question_mark", "help", "help", id="help"),
        Binding("q", "quit", "quit", id="quit"),
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
    ) -> None:
        super().__init__()
        self.backend = backend
        self.profile = profile
        self.profile_path = profile_path
        self.profile_dirs = profile_dirs
        self.controller = Controller(self, backend, max_lines=max_log_lines)
        self.max_log_lines = max_log_lines
        self.fit_function = fit_function
        self.theme = theme or pick_theme(self.available_themes)
        self.version: str | None = profile_ops.declared_version(profile)
        self.catalogue: dict[str, FlagInfo] = flag_catalogue(self.version)
        self.fit_inputs = FitInputs(n_gpus=profile_ops.gpu_count(profile), version=self.version)
        self.fit_report: dict[str, Any] | None = None
        self._fit_generation = 0
        self._fit_timer: Timer | None = None
        self.current: RunView | None = None
        self.run_state = ""  # starting | running | ready | failed | stopped | exited (ALIVE: the first three)
        self.phase = ""  # the startup phase the log shows, for the status line only
        self.runs: list[RunView] = []
        self.host_states: dict[str, str] = {}
        self.history = GpuHistory()
        self._seen_milestones: set[str] = set()
        self._connected: set[str] = set()
        self._reattach_checked: set[str] = set()

    # layout --------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(icon="⚡")
        yield Static("", id="status")
        with TabbedContent(initial="log", id="tabs"):
            with TabPane("1 Hosts", id="targets"):
                yield HostPicker(id="picker")
            with TabPane("2 Flags", id="flags"), Horizontal(id="flags-row"):
                yield self._new_form()
                with VerticalScroll(id="fit-scroll"):
                    yield FitPanel(id="fit")
            with TabPane("3 Log", id="log"), Horizontal(id="log-row"):
                with Vertical(id="log-col"):
                    yield Input(
                        placeholder="filter: show lines containing… (enter keeps, esc clears)",
                        id="log-filter",
                    )
                    yield RunLog(max_lines=self.max_log_lines, id="runlog")
                    yield Static("", id="log-status")
                with VerticalScroll(id="side"):
                    yield Timeline(id="timeline")
                    yield DiagnosisPanel(id="diagnosis")
            with TabPane("4 Runs", id="runs"):
                yield RunsTable(id="runs-table")
        yield GpuPanel(id="gpus")
        yield Footer(compact=True, show_command_palette=False)  # ctrl+p still opens it; see ? help

    def _new_form(self) -> LaunchForm:
        return LaunchForm(
            self.catalogue,
            profile_ops.values(self.profile),
            parser=lambda info, text: parse_flag_text(info, text, self.version),
            id="form",
        )

    def on_mount(self) -> None:
        self.sub_title = profile_ops.name(self.profile)
        self.main.query_one("#log-filter", Input).display = False
        log = self.main.query_one(RunLog)
        log.focus()
        log.write_lines(
            [
                f"Profile {profile_ops.name(self.profile)} for "
                f"{profile_ops.host(self.profile)} › {profile_ops.target_label(self.profile)}.",
                *WELCOME_KEYS,
            ]
        )
        self.main.set_class(self.size.width < 100, "-narrow")
        self._draw_status()
        self._draw_log_status()
        self._load_keymap()
        self.backend.set_password_prompt(self.ask_password)
        self.controller.load_hosts()
        self._schedule_fit()

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

    # status lines --------------------------------------------------------------------------------------
    def _draw_status(self) -> None:
        host = profile_ops.host(self.profile)
        state = self.host_states.get(host, "idle")
        parts = [f"{host} › {profile_ops.target_label(self.profile)}", state]
        parts.append(f"SGLang {self.version}" if self.version else "SGLang ?")
        if self.current is not None:
            shown = self.phase if self.run_state == "starting" and self.phase else self.run_state
            parts.append(f"run {self.current.run_id} {shown or self.current.state}")
        else:
            parts.append("no run followed: l launches")
        self.main.query_one("#status", Static).update(" · ".join(parts), layout=False)
        self.main.query_one("#status", Static).set_class(state in ("lost", "failed"), "-lost")

    def _draw_log_status(self, extra: str = "") -> None:
        log = self.main.query_one(RunLog)
        bits = ["following" if log.following else "paused (f follows)"]
        if log.filter_text:
            bits.append(f"filter {log.filter_text!r}")
        bits.append(f"{log.total_lines:,} lines")
        status = self.main.query_one("#log-status", Static)
        if self.current is not None and self.current.log_path:
            room = status.content_size.width - len(" · ".join(bits)) - len(" · ")
            bits.append(tail_of(self.current.log_path, room))
        # one fixed line, redrawn without a layout pass: this runs for every batch of a log flood
        status.update(extra or " · ".join(bits), layout=False)

    # messages from the workers -------------------------------------------------------------------------
    @while_running
    def on_hosts_loaded(self, message: m.HostsLoaded) -> None:
        picker = self.main.query_one(HostPicker)
        picker.set_hosts(message.hosts)
        for problem in message.problems:
            self.notify(problem, title="hosts", severity="warning", timeout=10)
        host = profile_ops.host(self.profile)
        if any(h.name == host for h in message.hosts):
            self._connect(host)
        elif host:
            self.notify(
                f"the profile's host {host!r} is in neither ~/.ssh/config nor sgtui's hosts.yaml; "
                "add it there or pick another host (1)",
                severity="error",
                timeout=15,
            )

    def _connect(self, host: str) -> None:
        if host not in self._connected:
            self._connected.add(host)
            self.controller.connect(host)

    @while_running
    def on_host_state_changed(self, message: m.HostStateChanged) -> None:
        if message.state == "unknown-key":
            self._ask_host_key(message.host, message.detail)
        before = self.host_states.get(message.host)
        self.host_states[message.host] = message.state
        self.main.query_one(HostPicker).set_state(message.host, message.state, message.detail)
        self._draw_status()
        if message.state == "lost":
            self.notify(
                f"connection to {message.host} lost: {message.detail or 'retrying'}; runs keep running there",
                severity="error",
                timeout=8,
            )
        elif message.state == "connected" and before == "lost":
            self.notify(f"reconnected to {message.host}", timeout=5)
        if message.state == "connected" and message.host == profile_ops.host(self.profile):
            self.controller.detect_version(
                message.host, profile_ops.container(self.profile), profile_ops.python(self.profile)
            )
            self._fetch_model_config()
            self._list_runs()

    def _ask_host_key(self, host: str, fingerprint: str) -> None:
        def answer(yes: bool | None) -> None:
            self.backend.trust_host_key(host, bool(yes))

        self.push_screen(
            ConfirmScreen(
                f"Trust {host}'s host key?",
                f"sgtui has never seen this host: its key is\n  {fingerprint}\nCompare it with "
                "`ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub` on the host. Yes records it in sgtui's "
                "own known_hosts; no connects to nothing.",
            ),
            answer,
        )

    async def ask_password(self, prompt: str) -> str | None:
        """The backend's password prompt: a modal whose answer goes straight to the SSH connection."""
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self.push_screen(PasswordScreen(prompt), lambda value: answer.done() or answer.set_result(value))
        return await answer

    def _list_runs(self) -> None:
        self.controller.list_runs(profile_ops.host(self.profile), profile_ops.container(self.profile))

    def _fetch_model_config(self) -> None:
        model = profile_ops.values(self.profile).get("--model-path")
        if not model or self.fit_inputs.model_config is not None:
            return

        async def fetch() -> None:
            try:
                got = await self.backend.model_config(
                    profile_ops.host(self.profile), profile_ops.container(self.profile), str(model)
                )
            except Exception as exc:
                self.call_later(
                    self._set_model_error, f"no fit: cannot read {model}/config.json there ({exc})"
                )
                return
            if got is not None:
                self.call_later(self._set_model_config, got)

        self.run_worker(fetch(), group="discover", name="model-config", exit_on_error=False)

    def _set_model_error(self, message: str) -> None:
        self.fit_inputs = dataclasses.replace(self.fit_inputs, model_error=message)
        self._schedule_fit()

    def _set_model_config(self, got: dict[str, Any]) -> None:
        self.fit_inputs = dataclasses.replace(
            self.fit_inputs,
            model_config=got.get("config"),
            weight_bytes=got.get("weight_bytes"),
            model_error="",
        )
        self._schedule_fit()

    @while_running
    def on_containers_found(self, message: m.ContainersFound) -> None:
        self.main.query_one(HostPicker).set_containers(message.host, message.containers, message.error)

    @while_running
    def on_version_detected(self, message: m.VersionDetected) -> None:
        if message.host != profile_ops.host(self.profile):
            return
        if message.version is None:
            self.notify(
                f"could not ask {message.host} › {message.target} for its SGLang version"
                + (f": {message.detail}" if message.detail else "")
                + "; the flags shown are for the newest version sgtui knows",
                severity="warning",
                timeout=10,
            )
            return
        if message.version != self.version:
            self.version = message.version
            self._rebuild_form()
        self.fit_inputs = dataclasses.replace(self.fit_inputs, version=message.version)
        self._draw_status()
        self._schedule_fit()

    async def _rebuild_form_async(self, keep_edits: bool = True) -> None:
        """A new form for the current version; `keep_edits` carries the typed values over (a version
        change), otherwise the profile's own values show (a profile was opened)."""
        if keep_edits:
            self.profile = profile_ops.with_values(self.profile, self.form.values())
        self.catalogue = flag_catalogue(self.version)
        old = self.form
        await old.remove()
        await self.main.query_one("#flags-row", Horizontal).mount(self._new_form(), before="#fit-scroll")

    def _rebuild_form(self) -> None:
        self.call_later(self._rebuild_form_async)

    @while_running
    def on_gpu_sampled(self, message: m.GpuSampled) -> None:
        if message.host != profile_ops.host(self.profile):
            return
        self.main.query_one(GpuPanel).show(message.gpus)
        self.history.add(message.t, message.gpus)
        usable = [g for g in message.gpus if not g.note and g.total_mib]
        if usable and self.fit_inputs.gpu_mib is None:
            self.fit_inputs = dataclasses.replace(
                self.fit_inputs, gpu_mib=usable[0].total_mib, gpu_name=usable[0].name
            )
            self._schedule_fit()

    @while_running
    def on_runs_listed(self, message: m.RunsListed) -> None:
        if message.host != profile_ops.host(self.profile):
            return
        current = self.current
        runs = message.runs
        if current is not None:
            for r in runs:
                # the host's word counts when the run has ended before its log said ready or failed
                if r.run_id == current.run_id and r.state not in ALIVE and self.run_state in ("", *ALIVE):
                    self.run_state = r.state
            # the host only knows "running"; the followed run's log knows "ready" (or "starting")
            runs = [
                dataclasses.replace(r, state=self.run_state)
                if r.run_id == current.run_id and r.state == "running" and self.run_state in ALIVE
                else r
                for r in runs
            ]
        self.runs = runs
        self.main.query_one(RunsTable).show(runs, current.run_id if current else None)
        if self.current is None and message.host not in self._reattach_checked:
            self._reattach_checked.add(message.host)
            alive = [r for r in message.runs if r.state in ALIVE]
            if alive:
                run = alive[-1]
                self.notify(f"reattached to {run.run_id}, still {run.state} on {run.host}", timeout=8)
                self._follow(run, fresh=False)
        self._draw_status()

    def _follow(self, run: RunView, fresh: bool) -> None:
        self.post_message(m.RunStarted(run, fresh))
        self.controller.follow(run, self.fit_report)

    @while_running
    def on_run_started(self, message: m.RunStarted) -> None:
        self.current = message.run
        self.run_state = message.run.state
        self.phase = ""
        log = self.main.query_one(RunLog)
        log.reset()
        log.set_following(True)
        self.main.query_one(Timeline).show(TimelineView())
        self.main.query_one(DiagnosisPanel).show([])
        self._seen_milestones = set()
        if message.fresh:
            self.history.mark(time.monotonic(), "launch")
            self._list_runs()
        self.action_tab("log")
        self.main.query_one(RunsTable).show(self.runs, message.run.run_id)
        self._draw_status()
        self._draw_log_status()
        self.refresh_bindings()

    @while_running
    def on_log_lines(self, message: m.LogLines) -> None:
        if self.current is None or message.run_id != self.current.run_id:
            return
        log = self.main.query_one(RunLog)
        if message.dropped:
            log.append([f"… {message.dropped:,} lines skipped in a flood (the full log is on the host) …"])
        log.append(message.lines)
        self._draw_log_status()

    @while_running
    def on_startup_changed(self, message: m.StartupChanged) -> None:
        if self.current is None or message.run_id != self.current.run_id:
            return
        self.main.query_one(Timeline).show(message.timeline)
        now = time.monotonic()
        for kind in message.milestone_kinds:
            if kind not in self._seen_milestones:
                self._seen_milestones.add(kind)
                self.history.mark(now, kind)
        self.phase = message.timeline.phase
        self._draw_status()

    @while_running
    def on_run_outcome(self, message: m.RunOutcome) -> None:
        if self.current is None or message.run_id != self.current.run_id:
            return
        self.run_state = message.outcome
        if message.outcome not in self._seen_milestones:  # "ready" is a log milestone too: one line
            self._seen_milestones.add(message.outcome)
            self.history.mark(time.monotonic(), message.outcome)
        if message.outcome == "failed":
            panel = self.main.query_one(DiagnosisPanel)
            panel.show(message.diagnoses)
            self.call_after_refresh(
                self.main.query_one("#side", VerticalScroll).scroll_to_widget, panel, top=True
            )
            first = self.main.query_one(DiagnosisPanel).first_suggestion
            hint = f"; a applies {first.as_flag}, then r restarts" if first else ""
            title = message.diagnoses[0].title if message.diagnoses else "the server exited"
            self.notify(f"{self.current.run_id} failed: {title}{hint}", severity="error", timeout=12)
        elif message.outcome == "ready":
            self.notify(f"{self.current.run_id} is ready", timeout=8)
        self._list_runs()
        self._draw_status()
        self.refresh_bindings()

    @while_running
    def on_stop_progress(self, message: m.StopProgress) -> None:
        self._draw_log_status(message.text)
        if self.current is not None and message.run_id == self.current.run_id and message.done and message.ok:
            self.run_state = "stopped"
            self._draw_status()
        if message.done:
            self.notify(message.text, severity="information" if message.ok else "error", timeout=8)
            self._list_runs()

    @while_running
    async def on_fit_computed(self, message: m.FitComputed) -> None:
        if message.generation != self._fit_generation:
            return
        if message.report is not None:
            self.fit_report = message.report
        self.main.query_one(FitPanel).show(message.report, message.error)
        await self.form.set_hints(hints_from_report(message.report))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that died of a bug says so instead of vanishing (they run with exit_on_error=False)."""
        if event.state is WorkerState.ERROR:
            self.notify(
                f"{event.worker.name}: {event.worker.error}", title="internal error", severity="error"
            )

    @while_running
    def on_service_error(self, message: m.ServiceError) -> None:
        self.notify(f"{message.what} failed: {message.message}", severity="error", timeout=12)

    # widget events -------------------------------------------------------------------------------------
    @on(LaunchForm.Edited)
    def _form_edited(self) -> None:
        self._schedule_fit()

    @on(LaunchForm.AddFailed)
    def _add_failed(self, event: LaunchForm.AddFailed) -> None:
        self.notify(event.message, severity="error", timeout=8)

    def _schedule_fit(self) -> None:
        if self._fit_timer is not None:
            self._fit_timer.stop()
        self._fit_timer = self.set_timer(FIT_DEBOUNCE_S, self._start_fit)

    def _start_fit(self) -> None:
        if not self.is_running or not self.screen_stack:  # a debounce timer firing during shutdown
            return
        self._fit_generation += 1
        values = self.form.values()
        inputs = self.fit_inputs
        fit = self.fit_function
        self.controller.compute_fit(lambda: fit(values, inputs), self._fit_generation)

    @on(HostPicker.Picked)
    def _picked(self, event: HostPicker.Picked) -> None:
        pick = event.pick
        self._connect(pick.host)
        if pick.container is None:
            return
        same_host = pick.host == profile_ops.host(self.profile)
        self.profile = profile_ops.with_target(self.profile, pick.host, pick.container)
        self.fit_inputs = dataclasses.replace(
            self.fit_inputs if same_host else FitInputs(n_gpus=self.fit_inputs.n_gpus),
            model_config=None,
            weight_bytes=None,
            version=None,
            model_error="",
        )
        self.version = None
        self.notify(f"target: {pick.host} › {pick.container.label}", timeout=4)
        if self.host_states.get(pick.host) == "connected":
            self.controller.detect_version(pick.host, pick.container, profile_ops.python(self.profile))
            self._list_runs()
            self._fetch_model_config()
        self._draw_status()

    @on(RunsTable.Open)
    def _open_run(self, event: RunsTable.Open) -> None:
        self._follow(event.run, fresh=False)

    @on(Input.Changed, "#log-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.main.query_one(RunLog).set_filter(event.value)
        self._draw_log_status()

    @on(Input.Submitted, "#log-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self.main.query_one(RunLog).focus()

    # actions -------------------------------------------------------------------------------------------
    @property
    def main(self) -> Screen[Any]:
        """The app's own screen: message handlers must reach it even while a modal is on top."""
        return self.screen_stack[0]

    @property
    def form(self) -> LaunchForm:
        return self.main.query_one(LaunchForm)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "apply":
            return self.main.query_one(DiagnosisPanel).first_suggestion is not None
        if action in ("stop",):
            return True if self.current is not None and self.run_state in ALIVE else None
        return True

    def action_tab(self, tab: str) -> None:
        self.main.query_one(TabbedContent).active = tab
        # always move focus into the new tab: left behind in a hidden pane, it would pull that pane back
        focus = {"targets": "#host-tree", "flags": "#form", "log": "#runlog", "runs": "#runs-table"}[tab]
        self.main.query_one(focus).focus()

    def action_leave_input(self) -> None:
        """esc: out of a text field, so that the single-letter keys act again."""
        focused = self.focused
        if isinstance(focused, Input) and focused.id == "log-filter":
            focused.value = ""
            focused.display = False
            self.main.query_one(RunLog).focus()
        elif isinstance(focused, Input) and focused.id == "host-filter":
            self.main.query_one("#host-tree").focus()
        elif focused is not None and self.form in focused.ancestors:
            self.form.focus()

    def _launch_problems(self) -> list[str]:
        errors = self.form.errors()
        if errors:
            return list(errors.values())
        from sgtui.core.errors import UserError
        from sgtui.core.flags import FlagError, spec_from_values

        try:
            spec_from_values(self.form.values(), version=self.version)
        except FlagError as exc:
            if exc.flag:
                self.form.set_field_error(exc.flag, str(exc))
            return [str(exc)]
        except UserError as exc:
            return [str(exc)]
        return []

    def _profile_to_launch(self) -> Any | None:
        problems = self._launch_problems()
        if problems:
            self.notify(
                "not launched: " + "; ".join(problems) + " (fix it in the flags tab, 2)",
                severity="error",
                timeout=12,
            )
            self.action_tab("flags")
            return None
        self.profile = profile_ops.with_values(self.profile, self.form.values())
        return self.profile

    def _prediction(self) -> dict[str, Any] | None:
        """The fit for exactly the flags being launched (the debounced panel may lag a fresh edit)."""
        try:
            report = self.fit_function(self.form.values(), self.fit_inputs)
        except Exception:  # no model config or GPU size yet: compare against nothing rather than stale
            return None
        self.fit_report = report
        return report

    def action_launch(self) -> None:
        if self.current is not None and self.run_state in ALIVE:
            self.notify(
                f"{self.current.run_id} is still {self.run_state}: r restarts it, s stops it",
                severity="warning",
            )
            return
        profile = self._profile_to_launch()
        if profile is not None:
            self.notify(f"launching {profile_ops.name(profile)} on {profile_ops.host(profile)}…", timeout=4)
            self.controller.launch(profile, self._prediction())

    def action_stop(self) -> None:
        run = self.current
        if run is None:
            self.notify("no run is followed: open one in the runs tab (4)", severity="warning")
            return

        def answer(yes: bool | None) -> None:
            if yes:
                self.controller.stop(run)

        self.push_screen(
            ConfirmScreen(
                f"Stop {run.run_id}?", f"{run.host} › {run.target}: TERM to its process group, then KILL"
            ),
            answer,
        )

    def action_restart(self) -> None:
        run = self.current
        if run is None or self.run_state not in ALIVE:
            if run is not None:
                self._relaunch_after_end()
                return
            self.action_launch()
            return
        profile = self._profile_to_launch()
        if profile is None:
            return
        predicted = self._prediction()

        def answer(yes: bool | None) -> None:
            if yes:
                self.controller.stop(run, then_launch=(profile, predicted))

        self.push_screen(
            ConfirmScreen(
                f"Restart {run.run_id}?",
                "Stops its process group, waits until its GPUs are free, then launches again into a new log.",
            ),
            answer,
        )

    def _relaunch_after_end(self) -> None:
        """r on a run that already ended: still wait for its GPUs (a dead run can hold memory a while)."""
        run = self.current
        profile = self._profile_to_launch()
        if run is None or profile is None:
            return
        self.controller.stop(run, then_launch=(profile, self._prediction()))

    def action_apply(self) -> None:
        panel = self.main.query_one(DiagnosisPanel)
        suggestion = panel.first_suggestion
        if suggestion is None:
            self.notify("no suggestion to apply", severity="warning")
            return
        self.call_later(self._apply, suggestion.flag, suggestion.value)
        panel.consume_first()
        self.notify(f"applied {suggestion.as_flag}: r restarts with it", timeout=8)
        self.refresh_bindings()

    async def _apply(self, flag: str, value: Any) -> None:
        if value is False:
            value = None
        await self.form.set_flag(flag, value)
        self.profile = profile_ops.with_values(self.profile, self.form.values())

    def action_edit(self) -> None:
        self.main.query_one(TabbedContent).active = "flags"
        fields = self.form.query("Input, Checkbox")
        if fields:
            fields.first().focus()

    def action_filter(self) -> None:
        self.main.query_one(TabbedContent).active = "log"
        box = self.main.query_one("#log-filter", Input)
        box.display = True
        box.focus()

    def action_follow(self) -> None:
        log = self.main.query_one(RunLog)
        log.set_following(not log.following)
        self._draw_log_status()

    def action_first_error(self) -> None:
        self.action_tab("log")
        if not self.main.query_one(RunLog).jump_to_first_error():
            self.notify("no error in the log shown", timeout=4)
        self._draw_log_status()

    def action_gpus(self) -> None:
        self.push_screen(GpuDetailScreen(self.history, self.fit_report))

    def action_help(self) -> None:
        rows = [(self.get_key_display(b), b.description) for b in self.BINDINGS if isinstance(b, Binding)]
        rows += [
            ("ctrl+p", "command palette: every action by name"),
            ("ctrl+y", "apply a fit suggestion (flags)"),
        ]
        self.push_screen(HelpScreen(rows))

    def action_profiles(self) -> None:
        paths = profile_ops.find_profiles(self.profile_dirs)

        def chosen(choice: ProfileChoice | None) -> None:
            if choice is not None:
                self.call_later(self._profile_choice, choice)

        self.push_screen(ProfilesScreen(paths, profile_ops.name(self.profile)), chosen)

    async def _profile_choice(self, choice: ProfileChoice) -> None:
        from sgtui.core.errors import UserError

        self.profile = profile_ops.with_values(self.profile, self.form.values())
        try:
            if choice.action == "open" and choice.path is not None:
                self.profile = profile_ops.load(choice.path)
                self.profile_path = choice.path
                self.version = profile_ops.declared_version(self.profile)
                self.fit_inputs = FitInputs(n_gpus=profile_ops.gpu_count(self.profile), version=self.version)
                await self._rebuild_form_async(keep_edits=False)
                host = profile_ops.host(self.profile)
                self._connect(host)
                if self.host_states.get(host) == "connected":
                    target = profile_ops.container(self.profile)
                    self.controller.detect_version(host, target, profile_ops.python(self.profile))
                    self._list_runs()
                    self._fetch_model_config()
                self.notify(f"opened {choice.path}")
            elif choice.action == "save":
                path = profile_ops.save(self.profile, self.profile_path)
                self.profile_path = path
                self.notify(f"saved {path}")
            elif choice.action == "duplicate":
                self.profile = profile_ops.renamed(self.profile, choice.name)
                path = profile_ops.save(self.profile, None)
                self.profile_path = path
                self.notify(f"saved a copy as {path}")
        except UserError as exc:
            self.notify(str(exc), severity="error", timeout=12)
        self.sub_title = profile_ops.name(self.profile)
        self._draw_status()

    async def action_quit(self) -> None:
        message = None
        if self.current is not None and self.run_state in ALIVE:
            message = (
                f"sgtui: {self.current.run_id} keeps running on {self.current.host}; `sgtui` reattaches to it"
            )
        self.exit(message=message)
