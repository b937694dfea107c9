"""How the workers' messages about runs reach the state and the panes: runs listed and started, the
followed runs' log lines, startup, outcome and diagnosis, stops. Each handler updates the fleet or a followed
run's session, then redraws what shows it. Mixed into `SgtuiApp`; the hosts' messages are in `routing.py`."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from sgtui.ui import messages as m
from sgtui.ui.panes.runs import RunsTable
from sgtui.ui.session import ALIVE, RunSession
from sgtui.ui.status_line import runs_silence
from sgtui.ui.views import RunView
from sgtui.ui.widgets.gpu_panel import GpuPanel

if TYPE_CHECKING:
    from sgtui.ui.app import SgtuiApp

    Base = SgtuiApp
else:
    Base = object


UNLISTED_NOTE = "no longer in its host's listing of runs"  # when the host gives no reason of its own
STOP_SAID_S = 5.0  # how long a stop's last word stays on the log's status line


class RunRouting(Base):
    # runs ------------------------------------------------------------------------------------------------
    def state_of(self, run: RunView) -> str:
        """A run's state as best known: a followed run's log says ready or stalled where the host only
        knows running."""
        session = self.followed.get(run.run_id)
        if session is not None and session.alive and run.state in ("running", "starting"):
            return session.state
        if session is not None and session.state == "stopped" and run.state in ("failed", "exited", "dead"):
            return "stopped"  # sgtui stopped it: a SIGTERM'd server's exit code is no failure of its own
        if session is not None and session.state == "failed" and run.state in ("stopped", "exited", "dead"):
            return "failed"  # its log failed: the stop that followed cleared a server that could not serve
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
        # a followed run its listing dropped (its run dir was removed) keeps its row, from the record in hand
        kept = self.followed.unlisted(host.runs_by_target.get(message.target, []), message.runs)
        host.set_runs(message.target, [*message.runs, *(row for _, _, row in kept)])
        for session, rank, row in kept:
            if not session.nodes[rank].note:  # asked once: the host's note is then the node's
                self.controller.check_unlisted(session.key, rank, row)
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
        self.fleet_pane.refresh_soon()

    def on_run_checked(self, message: m.RunChecked) -> None:
        """The host's word on a followed node its listing dropped: its note ("its run dir ... was removed")
        on the row, the status line and the diagnosis panel, while the run lives too."""
        session = self.followed.get(message.key) if self.is_running else None
        if session is None or message.rank not in session.nodes:
            return
        note = message.exit.note if message.exit is not None else ""
        session.set_note(message.rank, note or UNLISTED_NOTE)
        self.draw_runs()
        self.draw_status()

    def draw_runs(self) -> None:
        runs = [
            dataclasses.replace(
                r, state=self.state_of(r), note=self.followed.note_of(r), rate=self.rate_of(r)
            )
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
        if outcome == "failed":
            self.controller.check_failed_alive(session.key, session.records)
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
        self.relist_runs(session.records)
        self.draw_runs()
        self.draw_status()
        self.refresh_bindings()

    def on_failed_still_running(self, message: m.FailedStillRunning) -> None:
        """The failed run's server lives on and cannot serve: say so, and offer to stop it."""
        session = self.followed.get(message.key) if self.is_running else None
        stopping = any(w.group == f"stop:{message.key}" and w.is_running for w in self.workers)
        if session is not None and session.state == "failed" and not stopping:
            self.deploy.offer_stop(session)

    def on_stop_progress(self, message: m.StopProgress) -> None:
        if not self.is_running:
            return
        session = self.followed.get(message.run_id)
        if session is not None and session is self.followed.in_view:
            self.log_pane.draw_status(message.text)
        if session is not None and message.done and message.ok:
            if session.state == "failed":  # a failed run stays failed: the stop only freed what it held
                self.relist_runs(session.records)
            else:
                session.set_state("stopped")  # relists, as every outcome does
        if message.done:  # said for a moment (and in a notification), then the view's own state again
            self.set_timer(STOP_SAID_S, lambda: self._stop_said(message.text))
            self.notify(message.text, severity="information" if message.ok else "error", timeout=8)
            self.draw_status()

    def _stop_said(self, text: str) -> None:
        if self.is_running and self.log_pane.column.extra == text:
            self.log_pane.draw_status()

    def on_preflight_checked(self, message: m.PreflightChecked) -> None:
        self.deploy.gate.checked(message.seq, message.checks)

    def on_service_error(self, message: m.ServiceError) -> None:
        if self.is_running and message.unknown:
            self.notify(f"{message.what}: {message.message}", severity="warning", timeout=20)
            self.relist(self.deployment.host)
        elif self.is_running:
            self.notify(f"{message.what} failed: {message.message}", severity="error", timeout=12)

    def on_diagnosis_changed(self, message: m.DiagnosisChanged) -> None:
        if self.is_running and self.session is not None and self.session.key == message.key:
            self.log_pane.show_diagnosis()
            self.refresh_bindings()
