"""How the workers' messages about hosts reach the state and the panes: connection states, containers, the
target's SGLang version, flag table and model config, GPU samples. Each handler updates the fleet or the
deployment, then redraws what shows it. Mixed into `SgtuiApp`; the runs' messages are in `run_routing.py`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sgtui.ui import messages as m
from sgtui.ui.session.fleet import HOST_CHART_SAMPLES
from sgtui.ui.views import place_of
from sgtui.ui.widgets.gpu_panel import GpuPanel

if TYPE_CHECKING:
    from sgtui.ui.app import SgtuiApp
    from sgtui.ui.views import RunView

    Base = SgtuiApp
else:
    Base = object


class HostRouting(Base):
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
        if not message.hosts:
            from sgtui.core.paths import config_dir

            hosts_yaml = config_dir() / "hosts.yaml"
            self.notify(
                f"no hosts configured: add a Host to ~/.ssh/config or an entry to {hosts_yaml} "
                "(hostname, user, identity_file), or quit and run `sgtui demo` for a simulated GPU host",
                title="hosts",
                severity="warning",
                timeout=30,
            )
        elif not host:
            self.notify("this profile names no host: pick a host and target in the hosts tab (1)", timeout=15)
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
            said = "HOST KEY CHANGED: Enter shows it (nothing was sent)"
            message = m.HostStateChanged(message.host, "failed", said)
        host = self.fleet.host(message.host)
        state = message.state
        if state == "connecting" and host.state == "lost":
            state = "lost"  # a retry of a lost link: lost since it was lost (its age too) until it is back
        before = host.set_state(state, host.detail if state != message.state else message.detail)
        self.fleet_pane.refresh_soon()
        self.draw_runs()  # a host not connected has its rows greyed
        self.draw_status()
        if state == "lost" and before != "lost":  # said once, not at every retry
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

    def relist_runs(self, runs: list[RunView]) -> None:
        """List again the targets these runs are on (a run in a container of another host than the
        deployment's: relisting that host's bare host would leave its row as it was until the next round)."""
        for host, place in dict.fromkeys((r.host, place_of(r.target)) for r in runs):
            if host == self.deployment.host and place == place_of(self.deployment.target_label):
                self.relist(host)
                continue
            found = [c for c in self.fleet.host(host).containers if (c.kind, c.id) == place]
            self.controller.list_runs(host, found[0] if found and place[0] != "host" else None)

    def relist_all(self, host: str) -> None:
        """Every target of `host`: the bare host, its running containers, the deployment's target."""
        self.controller.list_runs(host, None)
        for c in self.fleet.host(host).containers:
            if c.kind != "host" and c.status == "running":
                self.controller.list_runs(host, c)
        if host == self.deployment.host and self.deployment.target is not None:
            self.relist(host)

    def on_machine_identified(self, message: m.MachineIdentified) -> None:
        """A name's machine is known: a second name for one machine already shown joins its row."""
        if not self.is_running:
            return
        self.fleet.identify(message.host, message.identity)
        self.fleet_pane.refresh_soon()
        self.draw_runs()

    def on_containers_found(self, message: m.ContainersFound) -> None:
        if not self.is_running:
            return
        host = self.fleet.host(message.host)
        host.containers, host.containers_error = message.containers, message.error
        self.fleet_pane.refresh_soon()
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
        self.deployment.keep_form(self.form)
        if self.deployment.set_version(message.version):
            self.call_later(self.flags.rebuild)  # the edits carried, a mistyped field's text too
        self.sub_title = self.deployment.title
        self.draw_status()
        self.flags.schedule_fit()

    def on_flag_table_read(self, message: m.FlagTableRead) -> None:
        if not self._for_deployment(message.host, message.target):
            return
        if message.problem:
            self.notify(message.problem, severity="warning", timeout=10)
        if message.table is not None:
            self.deployment.keep_form(self.form)
            if self.deployment.set_flag_table(message.table):
                self.call_later(self.flags.rebuild)
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

    def on_gpus_sampled(self, message: m.GpusSampled) -> None:
        for sample in message.samples:
            self.on_gpu_sampled(sample)

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
            sized = bool(usable) and d.set_gpu(usable[0].name, usable[0].total_mib)
            # the memory in use now sizes the fit, except while a run sgtui follows there is alive: its own
            # memory is not another's (a restart frees it), so the reading from before it started stays
            own = any(s.alive for s in self.followed.on_host(message.host))
            if (not own and d.set_live(message.gpus)) or sized:
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
