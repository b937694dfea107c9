"""What the keys do: each binding's action, mixed into `SgtuiApp` (the app composes; this acts).

Launch, stop, restart and apply go through `DeployActions` (`deploy.py`); the rest move between tabs,
followed runs and nodes, open screens, or quit (asking first when flag edits are unsaved)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.binding import Binding
from textual.widgets import Input, TabbedContent

from sgtui.ui.screens.confirm import ConfirmScreen
from sgtui.ui.screens.gpu_detail import GpuDetailScreen
from sgtui.ui.screens.help import HelpScreen
from sgtui.ui.widgets.log_view import LogView

if TYPE_CHECKING:
    from sgtui.ui.app import SgtuiApp

    Base = SgtuiApp
else:
    Base = object


class Actions(Base):
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.readonly and action in ("launch", "stop", "restart", "apply"):
            return True  # the key runs and says "read-only: ..." (a disabled binding would say nothing)
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
        """esc: out of a text field, so that the single-letter keys act again; in the log, clears a kept
        search."""
        focused = self.focused
        if isinstance(focused, Input) and focused.id == "log-search":
            self.log_pane.close_filter()
        elif isinstance(focused, LogView) and focused.store.search is not None:
            self.log_pane.close_filter()  # the search kept with enter: esc in the log clears it (help says)
        elif isinstance(focused, Input) and focused.id == "host-filter":
            self.main.query_one("#host-tree").focus()
        elif focused is not None and self.form in focused.ancestors:
            self.form.focus()
        else:
            self.cancel_bench()  # a load probe running: esc cancels it

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
        """/: on the hosts tab, the host filter (name, state, container); anywhere else, the log search."""
        tabs = self.main.query_one(TabbedContent)
        if tabs.active == "targets":
            self.main.query_one("#host-filter", Input).focus()
            return
        tabs.active = "log"
        self.log_pane.open_filter()

    def action_follow(self) -> None:
        log = self.main.query_one(LogView)
        log.set_following(not log.following)

    def action_sort_hosts(self) -> None:
        """o: the hosts tab in configured order, or with the most free GPU memory first."""
        self.action_tab("targets")
        order = self.fleet_pane.cycle_order()
        self.notify(f"hosts: {order} order", timeout=3)

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

    def action_unfollow(self, key: str = "") -> None:
        """u: stop following the run in view (or `key`): its tail ends and it leaves the followed runs;
        the server itself is left as it is. The next followed run, if any, comes into view."""
        session = self.followed.get(key) if key else self.followed.in_view
        if session is None:
            self.notify("no run is followed here: enter on one in the runs tab (4) follows it", timeout=5)
            return
        was_in_view = session is self.followed.in_view
        self.controller.unfollow(session.key)
        self.followed.remove(session.key)
        alive = f"; it keeps {session.state} on {session.host}" if session.alive else ""
        self.notify(f"stopped following {session.key}{alive}", timeout=6)
        if was_in_view:
            following = next(iter(self.followed), None)
            if following is not None:
                self.followed.view(following.key)
            self.log_pane.show(following)
        self.draw_runs()
        self.draw_status()
        self.refresh_bindings()

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
