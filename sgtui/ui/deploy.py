"""What the user does to the deployment and the run in view: launch, stop, restart, apply a fix,
retarget, open or save profiles. Called by the app's actions; it changes state and asks the workers."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sgtui.ui import profile_ops
from sgtui.ui.launch_gate import LaunchGate
from sgtui.ui.screens.confirm import ConfirmScreen
from sgtui.ui.screens.profiles import ProfileChoice, ProfilesScreen
from sgtui.ui.session import ALIVE
from sgtui.ui.views import ContainerView

if TYPE_CHECKING:
    from sgtui.ui.app import SgtuiApp


class DeployActions:
    def __init__(self, app: SgtuiApp) -> None:
        self.app = app
        self.gate = LaunchGate(app)

    @property
    def deployment(self) -> Any:
        return self.app.deployment

    def profile_to_launch(self) -> Any | None:
        app = self.app
        problems = app.flags.launch_problems()
        if problems:
            app.notify(
                "not launched: " + "; ".join(problems) + " (fix it in the flags tab, 2)",
                severity="error",
                timeout=12,
            )
            app.action_tab("flags")
            return None
        self.deployment.keep_form(app.form)
        return self.deployment.profile

    def refused(self, what: str) -> bool:
        """--readonly: watching someone else's run; nothing is launched, stopped or restarted."""
        if self.app.readonly:
            self.app.notify(
                f"read-only: sgtui was opened with --readonly, so no {what}; open it without --readonly "
                "to act on runs",
                severity="warning",
                timeout=6,
            )
        return self.app.readonly

    def ask_fit_first(self, what: str, go: Callable[[], None], replacing: bool = False) -> None:
        """The preflight first (`launch_gate.py`): `go` at once when it fits and the target checks pass;
        a question (default No) when it fails, when the fit is not known yet, or a blocking check failed.
        `replacing`: a restart of a live run, whose own port and GPUs the checks would find taken."""
        self.gate.ask(what, go, skip=("port", "gpus") if replacing else ())

    def launch(self) -> None:
        app = self.app
        if self.refused("launch"):
            return
        session = app.followed.in_view
        if session is not None and session.alive and session.host == self.deployment.host:
            app.notify(
                f"{session.key} is still {session.state}: r restarts it, s stops it", severity="warning"
            )
            return
        if self.profile_to_launch() is None:
            return

        def go() -> None:
            profile = self.profile_to_launch()
            if profile is not None:
                where = profile_ops.host(profile)
                app.notify(f"launching {profile_ops.name(profile)} on {where}…", timeout=4)
                app.controller.launch(profile, app.flags.prediction())

        self.ask_fit_first("launch", go)

    def stop(self) -> None:
        app = self.app
        if self.refused("stop"):
            return
        session = app.followed.in_view
        if session is None:
            app.notify("no run is followed: open one in the runs tab (4)", severity="warning")
            return
        run = session.run
        if run.foreign:
            app.notify(f"{run.run_id} is not sgtui's to stop: {run.foreign}", severity="error", timeout=10)
            return
        runs = session.records

        def answer(yes: bool | None) -> None:
            if yes:
                app.controller.stop(runs)

        where = (
            f"{len(runs)} nodes ({', '.join(r.host for r in runs)}): the workers first, then node 0"
            if len(runs) > 1
            else f"{run.host} › {run.target}"
        )
        app.push_screen(
            ConfirmScreen(
                f"Stop {run.run_id}?",
                f"{where}: TERM to its server, its drain, then TERM and KILL to its group",
                preview=lambda: app.backend.stop_preview(run),
            ),
            answer,
        )

    def offer_stop(self, session: Any) -> None:
        """A failed run whose server is still running (it cannot serve, and holds its memory): say so and
        ask whether to stop it (default No); --readonly only says so."""
        app = self.app
        run = session.run
        title = session.diagnoses[0].title if session.diagnoses else "it failed"
        said = f"{run.run_id} failed ({title}) but its server is still running and cannot serve"
        if app.readonly or run.foreign:
            app.notify(said, severity="error", timeout=12)
            return
        runs = session.records

        def answer(yes: bool | None) -> None:
            if yes:
                app.controller.stop(runs)
            else:
                app.notify(f"{said}; s stops it", severity="warning", timeout=10)

        app.push_screen(
            ConfirmScreen(
                f"Stop {run.run_id}? It failed, but its server is still running",
                f"{said} (it holds its memory until stopped): TERM to its server, then its group",
                preview=lambda: app.backend.stop_preview(run),
            ),
            answer,
        )

    def restart(self) -> None:
        app = self.app
        if self.refused("restart"):
            return
        session = app.followed.in_view
        if session is None:
            self.launch()
            return
        if self.profile_to_launch() is None:
            return
        self.ask_fit_first("restart", lambda: self._restart(session), replacing=session.alive)

    def _restart(self, session: Any) -> None:
        app = self.app
        run, runs = session.run, session.records
        profile = self.profile_to_launch()
        if profile is None:
            return
        predicted = app.flags.prediction()
        if not session.alive:  # it already ended: still wait for its GPUs (a dead run can hold memory)
            holder = self._other_holder(session)
            if holder is not None:
                self._offer_stop_holder(holder, session)
                return
            app.controller.stop(runs, then_launch=(profile, predicted))
            return

        def answer(yes: bool | None) -> None:
            if yes:
                app.controller.stop(runs, then_launch=(profile, predicted))

        app.push_screen(
            ConfirmScreen(
                f"Restart {run.run_id}?",
                "Stops its process group, waits until its GPUs are free, then launches again into a new log.",
                preview=lambda: app.backend.stop_preview(run),
            ),
            answer,
        )

    def _other_holder(self, session: Any) -> Any | None:
        """Another of sgtui's own live runs on the same host holding any of the GPUs this one uses."""
        app = self.app
        run = session.run
        wanted = set(run.gpus) or set(profile_ops.gpu_indices(self.deployment.profile))
        for other in app.fleet.host(run.host).runs:
            if other.run_id == run.run_id or app.state_of(other) not in ALIVE:
                continue
            if not wanted or not other.gpus or wanted & set(other.gpus):
                return other
        return None

    def _offer_stop_holder(self, holder: Any, session: Any) -> None:
        """`r` on an ended run whose GPUs another live sgtui run holds: name it at once, offer to stop it."""
        app = self.app
        gpus = ",".join(str(g) for g in holder.gpus) or "its GPUs"

        def answer(yes: bool | None) -> None:
            if yes:
                app.controller.stop([holder])
                app.notify(f"stopping {holder.run_id}; r restarts {session.key} once its GPUs are free")

        app.push_screen(
            ConfirmScreen(
                f"{holder.run_id} holds GPU {gpus}",
                f"sgtui's own run {holder.run_id} ({holder.state}, {holder.target}) still holds the GPUs "
                f"{session.key} needs, so a restart would wait for them. Stop {holder.run_id} first?",
                preview=lambda: app.backend.stop_preview(holder),
            ),
            answer,
        )

    def apply(self) -> None:
        app = self.app
        if self.refused("change"):
            return
        panel = app.log_pane.diagnosis
        suggestion = panel.first_suggestion
        if suggestion is None:
            app.notify("no suggestion to apply", severity="warning")
            return
        app.call_later(self._apply, suggestion.flag, suggestion.value)
        panel.consume_first()
        app.notify(f"applied {suggestion.as_flag}: r restarts with it", timeout=8)
        app.refresh_bindings()

    async def _apply(self, flag: str, value: Any) -> None:
        if value is False:
            value = None
        await self.app.form.set_flag(flag, value)
        self.deployment.keep_form(self.app.form)

    def retarget(self, host: str, container: ContainerView) -> None:
        app = self.app
        self.deployment.retarget(host, container)
        app.notify(f"target: {host} › {container.label}", timeout=4)
        app.welcome()
        if app.fleet.host(host).state == "connected":
            app.deployment_connected()
        app.draw_status()

    def profiles(self) -> None:
        app = self.app
        paths = profile_ops.find_profiles(app.profile_dirs)

        def chosen(choice: ProfileChoice | None) -> None:
            if choice is None:
                return
            errors = app.form.errors()
            if choice.action in ("save", "duplicate") and errors:  # the profile would lose those flags
                said = "; ".join(errors.values())
                app.notify(f"not saved: fix the flags first ({said})", severity="error", timeout=12)
            elif choice.action == "open" and app.form.dirty and not app.readonly:
                app.push_screen(
                    ConfirmScreen(
                        f"Open {choice.path} and lose the unsaved flag edits?",
                        "The flags tab has edits not saved to the profile (ctrl+s in this list saves "
                        "them). Yes opens the other profile and loses them; no goes back.",
                    ),
                    lambda yes: app.call_later(self._profile_choice, choice) if yes else None,
                )
            else:
                app.call_later(self._profile_choice, choice)

        app.push_screen(ProfilesScreen(paths, self.deployment.name), chosen)

    async def _profile_choice(self, choice: ProfileChoice) -> None:
        from sgtui.core.errors import UserError

        app, d = self.app, self.deployment
        d.keep_form(app.form)
        try:
            if choice.action == "open" and choice.path is not None:
                d.open(profile_ops.load(choice.path), choice.path)
                await app.flags.rebuild(keep_edits=False)
                if not app.is_running:  # shut down while the form was rebuilt: nothing left to draw
                    return
                app.connect(d.host)
                if app.fleet.host(d.host).state == "connected":
                    app.deployment_connected()
                app.notify(f"opened {choice.path}")
                app.welcome()
            elif choice.action == "save":
                d.path = profile_ops.save(d.profile, d.path)
                app.form.mark_saved()
                app.notify(f"saved {d.path}")
            elif choice.action == "duplicate":
                d.profile = profile_ops.renamed(d.profile, choice.name)
                d.path = profile_ops.save(d.profile, None)
                app.form.mark_saved()
                app.notify(f"saved a copy as {d.path}")
        except UserError as exc:
            app.notify(str(exc), severity="error", timeout=12)
        app.sub_title = d.title
        app.draw_status()
