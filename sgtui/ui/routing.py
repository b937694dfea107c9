"""How the workers' messages reach the state and the panes: each handler updates the fleet, a followed
run's session or the deployment, then redraws what shows it. Mixed into `SgtuiApp`."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from sgtui.ui import messages as m
from sgtui.ui.panes.runs import RunsTable
from sgtui.ui.session import ALIVE, RunSession
from sgtui.ui.session.fleet import HOST_CHART_SAMPLES
from sgtui.ui.status_line import runs_silence
from sgtui.ui.views import RunView
from sgtui.ui.widgets.gpu_panel import GpuPanel

if TYPE_CHECKING:
    from sgtui.ui.app import SgtuiApp

    Base = SgtuiApp
else:
    Base = object


class Routing(Base):
    # hosts -----------------------------------------------------------------------------------------------
    def connect(self, host: str) -> None:
        if host and host not in self._connected and host in self.fleet:
            self._connected.add(host)
            self.controller.connect(host)

    def on_hosts_loaded(self, message: m.HostsLoaded) -> None:
        if not self.is_running:
            return
        self.fleet.load(message.hosts)
        for problem in message.problems:
            self.notify(problem, title="hosts", severity="warning", timeout=10)
        host = self.deployment.host
        if host and host not in self.fleet:
            self.notify(
                f"the profile's host {host!r} is in neither ~/.ssh/config nor sgtui's hosts.yaml; "
                "add it there or pick another host (1)",
                severity="error",
                timeout=15,
            )
        self.connect(host)  # the deployment's host first, then every other one (bounded in parallel)
        for name in self.fleet.hosts:
            self.connect(name)
        self.fleet_pane.unfolded.add(host)
        self.fleet_pane.refresh_fleet()

    def on_host_state_changed(self, message: m.HostStateChanged) -> None:
        if not self.is_running:
            return
        if message.state == "unknown-key":
            self.ask_host_key(message.host, message.detail)
        if message.state == "key-changed":
            self.tell_key_changed(message.host, message.detail)
            said = "HOST KEY CHANGED: see the dialog (nothing was sent)"
            message = m.HostStateChanged(message.host, "failed", said)
        host = self.fleet.host(message.host)
        before = host.set_state(message.state, message.detail)
        self.fleet_pane.refresh_fleet()
        self.draw_runs()  # a host not connected has its rows greyed
        self.draw_status()
        if message.state == "lost":
            self.notify(
                f"connection to {message.host} lost: {message.detail or 'retrying'}; runs keep running there",
                severity="error",
                timeout=8,
            )
        elif message.state == "connected" and before == "lost":
            self.notify(f"reconnected to {message.host}", timeout=5)
        if message.state == "connected":
            self.controller.list_runs(message.host, None)
            if message.host == self.deployment.host:
                self.deployment_connected()

    def deployment_connected(self) -> None:
        """The deployment's host is up: ask its target for the SGLang version, the model, its runs."""
        d = self.deployment
        self.controller.detect_version(d.host, d.target, d.python)
        self.controller.list_runs(d.host, d.target, getattr(d.profile, "runs_dir", None))
        model = d.profile.sglang.get("--model-path") if hasattr(d.profile, "sglang") else None
        if model and d.fit_inputs.model_config is None:
            d.model_for = str(model)
            self.controller.model_config(d.host, d.target, str(model))

    def relist(self, host: str) -> None:
        """List the runs again where a run changed: the deployment's target on its host, the bare host
        elsewhere."""
        d = self.deployment
        if host == d.host:
            self.controller.list_runs(host, d.target, getattr(d.profile, "runs_dir", None))
        else:
            self.controller.list_runs(host, None)

    def relist_all(self, host: str) -> None:
        """Every target of `host`: the bare host, its running containers, the deployment's target."""
        self.controller.list_runs(host, None)
        for c in self.fleet.host(host).containers:
            if c.kind != "host" and c.status == "running":
                self.controller.list_runs(host, c)
        if host == self.deployment.host and self.deployment.target is not None:
            self.relist(host)

    def on_containers_found(self, message: m.ContainersFound) -> None:
        if not self.is_running:
            return
        host = self.fleet.host(message.host)
        host.containers, host.containers_error = message.containers, message.error
        self.fleet_pane.refresh_fleet()
        for c in message.containers:  # every run on every target: the bare host and running containers
            if c.kind != "host" and c.status == "running":
                self.controller.list_runs(message.host, c)

    def _for_deployment(self, host: str, target: str) -> bool:
        """An answer about the deployment's target now, not one asked for before a retarget (answers
        from two targets can arrive in either order: the late one of the old target must not win)."""
        d = self.deployment
        return self.is_running and host == d.host and target == d.target_label

    def on_version_detected(self, message: m.VersionDetected) -> None:
        if not self._for_deployment(message.host, message.target):
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
        self.deployment.keep_values(self.form.values())
        if self.deployment.set_version(message.version):
            self.call_later(self.flags.rebuild, False)
        self.sub_title = self.deployment.title
        self.draw_status()
        self.flags.schedule_fit()

    def on_flag_table_read(self, message: m.FlagTableRead) -> None:
        if not self._for_deployment(message.host, message.target):
            return
        if message.problem:
            self.notify(message.problem, severity="warning", timeout=10)
        if message.table is not None:
            self.deployment.keep_values(self.form.values())
            if self.deployment.set_flag_table(message.table):
                self.call_later(self.flags.rebuild, False)
                self.flags.schedule_fit()
        self.sub_title = self.deployment.title
        self.draw_status()

    def on_model_config_read(self, message: m.ModelConfigRead) -> None:
        if not self._for_deployment(message.host, message.target):
            return
        if message.model != self.deployment.model_for:  # --model-path changed since it was asked for
            return
        self.deployment.set_model(message.got, message.error)
        self.flags.schedule_fit()

    def on_gpu_sampled(self, message: m.GpuSampled) -> None:
        if not self.is_running:
            return
        host = self.fleet.host(message.host)
        host.set_gpus(message.gpus, message.t)  # into the host's own history, per GPU index
        for session in self.followed.on_host(message.host):
            session.add_gpus(message.host, message.t, message.gpus)
        d = self.deployment
        if message.host == d.host:
            host.history.widen(HOST_CHART_SAMPLES)  # the `g` chart before any run is followed
            usable = [g for g in message.gpus if not g.note and g.total_mib]
            if usable and d.set_gpu(usable[0].name, usable[0].total_mib):
                self.flags.schedule_fit()
            elif (
                message.gpus
                and all(g.index < 0 for g in message.gpus)
                and d.set_gpu_problem(f"{message.host}: {message.gpus[0].note}")
            ):
                self.flags.schedule_fit()
                self.flags.show_gpu_input()
        if message.host == self.gpu_host:
            self.main.query_one(GpuPanel).show(message.gpus, host.history)

    @property
    def gpu_host(self) -> str:
        """The host whose GPUs the bottom panel shows: the run in view's, else the deployment's."""
        session = self.session
        return session.host if session is not None else self.deployment.host

    # runs ------------------------------------------------------------------------------------------------
    def state_of(self, run: RunView) -> str:
        """A run's state as best known: a followed run's log says ready or stalled where the host only
        knows running."""
        session = self.followed.get(run.run_id)
        if session is not None and session.alive and run.state in ("running", "starting"):
            return session.state
        return run.state

    def on_runs_listed(self, message: m.RunsListed) -> None:
        if not self.is_running:
            return
        host = self.fleet.host(message.host)
        if message.error:
            host.runs_error = message.error
            self.notify(
                f"list runs on {message.host} › {message.target} failed: {message.error}",
                severity="error",
                timeout=12,
            )
            return
        host.set_runs(message.target, message.runs)
        for r in message.runs:  # one line per refused record, once: listed, never reattached or signalled
            why = getattr(r.raw, "foreign", None)
            if r.state == "foreign" and why and r.run_id not in self._refusals_told:
                self._refusals_told.add(r.run_id)
                self.notify(f"refusing run {r.run_id} on {r.host}: {why}", severity="warning")
        for run in message.runs:
            session = self.followed.get(run.run_id)
            if session is None:
                continue
            rank = run.node_rank or 0
            if rank not in session.nodes and not run.foreign:  # a node found after the run was followed
                session.add_node(run)
                self.controller.follow_node(session, rank)
            session.host_says(run)
        where = (message.host, message.target)
        if message.host == self.deployment.host and where not in self._reattach_checked:
            self._reattach_checked.add(where)  # once per target: a run launched later is not "reattached"
            alive = [
                r
                for r in message.runs
                if r.state in ALIVE and not r.foreign and r.run_id not in self.followed and not r.node_rank
            ]
            for run in alive:
                view = run is alive[-1] and self.session is None
                if view:
                    self.notify(f"reattached to {run.run_id}, still {run.state} on {run.host}", timeout=8)
                self.follow(run, None, fresh=False, view=view)
        self.draw_runs()
        self.fleet_pane.refresh_fleet()

    def draw_runs(self) -> None:
        runs = [
            dataclasses.replace(r, state=self.state_of(r), note=self.followed.note_of(r))
            for r in self.fleet.all_runs()
        ]
        marks: dict[str, str] = {}
        for session in self.followed:
            marks[session.key] = "changed" if session.unseen else "followed"
        if self.session is not None:
            marks[self.session.key] = "view"
        greyed = frozenset(name for name, h in self.fleet.hosts.items() if h.state != "connected")
        silence = runs_silence(self, runs, self.clock())
        self.main.query_one(RunsTable).show(runs, marks, silence, greyed)

    def on_run_started(self, message: m.RunStarted) -> None:
        if not self.is_running or not message.runs:
            return
        self.follow(message.runs[0], message.predicted, fresh=True, nodes=message.runs)
        for host in dict.fromkeys(r.host for r in message.runs):
            self.relist(host)

    def follow(
        self,
        run: RunView,
        predicted: dict[str, Any] | None,
        fresh: bool,
        view: bool = True,
        nodes: list[RunView] | None = None,
    ) -> None:
        """Follow `run` (alongside the others already followed), every node of it, and with `view` show
        it. A run's other nodes come from `nodes` or from the runs listed on every host."""
        if run.foreign:
            self.notify(f"{run.run_id} is not sgtui's: {run.foreign}", severity="warning", timeout=8)
            return
        session = self.followed.get(run.run_id)
        if session is None:
            session = RunSession(
                run, predicted, self.post_message, max_lines=self.max_log_lines, clock=self.clock
            )
            siblings = nodes if nodes is not None else self.fleet.all_runs()
            for other in siblings:
                if other.run_id == run.run_id and other.node_rank != run.node_rank and not other.foreign:
                    session.add_node(other)
            for gone in self.followed.add(session):
                self.controller.unfollow(gone.key)
            if fresh:
                session.mark("launch")
            self.controller.follow(session)
        if view:
            self.followed.view(session.key)
            self.view_session(session)
        else:
            self.draw_runs()

    def view_session(self, session: RunSession) -> None:
        self.log_pane.show(session)
        self.action_tab("log")
        host = self.fleet.host(session.host)
        panel = self.main.query_one(GpuPanel)
        if host.gpus and panel.latest is not host.gpus:  # another host: its own sample and history only
            panel.show(host.gpus, host.history)
        self.draw_runs()
        self.draw_status()
        self.refresh_bindings()

    def on_log_lines(self, message: m.LogLines) -> None:
        if not self.is_running:
            return
        session = self.followed.in_view
        if session is not None and session.key == message.key:
            self.log_pane.append(session, message.lines, message.skipped, message.upto)

    def on_startup_changed(self, message: m.StartupChanged) -> None:
        if not self.is_running:
            return
        session = self.followed.in_view
        if session is not None and session.key == message.key:
            self.log_pane.show_timeline()
            self.draw_status()

    def on_run_outcome(self, message: m.RunOutcome) -> None:
        if not self.is_running:
            return
        session = self.followed.get(message.key)
        if session is None:
            return
        outcome = message.outcome
        if session is self.followed.in_view:
            self.log_pane.show_timeline()
            if outcome == "failed":
                self.log_pane.show_diagnosis()
                first = self.log_pane.diagnosis.first_suggestion
                hint = f"; a applies {first.as_flag}, then r restarts" if first else ""
                title = session.diagnoses[0].title if session.diagnoses else "the server exited"
                self.notify(f"{session.key} failed: {title}{hint}", severity="error", timeout=12)
            elif outcome == "ready":
                self.notify(f"{session.key} is ready", timeout=8)
            elif outcome == "stalled":
                self.notify(f"{session.key} stalled: {message.detail}", severity="warning", timeout=12)
        elif self.followed.changed_out_of_view(session, outcome):
            what = {"ready": "is ready", "failed": "failed", "stalled": "stalled"}[outcome]
            title = f": {session.diagnoses[0].title}" if outcome == "failed" and session.diagnoses else ""
            self.notify(
                f"{session.key} on {session.host} {what}{title} (] switches to it)",
                severity="error" if outcome == "failed" else "information",
                timeout=10,
            )
        for host in session.hosts:
            self.relist(host)
        self.draw_runs()
        self.draw_status()
        self.refresh_bindings()

    def on_stop_progress(self, message: m.StopProgress) -> None:
        if not self.is_running:
            return
        session = self.followed.get(message.run_id)
        if session is not None and session is self.followed.in_view:
            self.log_pane.draw_status(message.text)
        if session is not None and message.done and message.ok:
            session.set_state("stopped")
        if message.done:
            self.notify(message.text, severity="information" if message.ok else "error", timeout=8)
            self.draw_status()

    def on_service_error(self, message: m.ServiceError) -> None:
        if self.is_running:
            self.notify(f"{message.what} failed: {message.message}", severity="error", timeout=12)

    def on_diagnosis_changed(self, message: m.DiagnosisChanged) -> None:
        if self.is_running and self.session is not None and self.session.key == message.key:
            self.log_pane.show_diagnosis()
            self.refresh_bindings()
