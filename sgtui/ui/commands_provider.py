"""ctrl+p: every app action by name, so nothing needs a memorised key."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

if TYPE_CHECKING:
    from sgtui.ui.app import SgtuiApp

PALETTE = (
    ("launch", "Launch the profile on the target", "launch"),
    ("stop", "Stop the followed run (asks first)", "stop"),
    ("restart", "Restart: stop, wait for the GPUs to be free, launch into a new log", "restart"),
    ("apply suggestion", "Apply the diagnosis's first suggested flag change", "apply"),
    ("edit flags", "Go to the launch form", "edit"),
    ("filter log", "Show only log lines containing some text", "filter"),
    ("first error", "Jump to the first error in the log", "first_error"),
    ("follow log", "Toggle following the end of the log", "follow"),
    ("GPU detail", "Memory over time with the run's milestones", "gpus"),
    ("profiles", "Open, save or duplicate a profile", "profiles"),
    ("hosts", "Every host: connection, GPUs, runs; pick a host and container", "tab('targets')"),
    ("runs", "Every run on every connected host; enter follows one", "tab('runs')"),
    ("next followed run", "Show the next run being followed (])", "switch_run(1)"),
    ("previous followed run", "Show the previous run being followed ([)", "switch_run(-1)"),
    ("node view", "A multi-node run's log: all nodes with a node column, or one node (v)", "node_view"),
    ("stop following", "Stop following the run in view; the server keeps running (u)", "unfollow"),
    ("help", "The keys", "help"),
    ("quit", "Quit (running servers keep running)", "quit"),
)


class SgtuiCommands(Provider):
    @property
    def _app(self) -> SgtuiApp:
        return cast("SgtuiApp", self.app)

    def _run(self, action: str) -> Any:
        return partial(self._app.run_action, action)

    def _entries(self) -> list[tuple[str, str, Callable[[], Any], bool]]:
        """(name, help, callback, outside): `outside` names hold run ids and host names, which are never
        parsed as markup (the palette's own highlighter would)."""
        entries = [(name, help_text, self._run(action), False) for name, help_text, action in PALETTE]
        app = self._app
        for session in app.followed:
            name = f"show run {session.key} on {', '.join(session.hosts)}"
            help_text = escape(f"a followed run, {session.state}")
            entries.append((name, help_text, partial(app.action_view_run, session.key), True))
            name = f"stop following run {session.key}"
            help_text = escape("its log is no longer followed; the server is left as it is")
            entries.append((name, help_text, partial(app.action_unfollow, session.key), True))
        return entries

    async def discover(self) -> Hits:
        for name, help_text, callback, outside in self._entries():
            display = Content(name) if outside else name
            yield DiscoveryHit(display, callback, text=name, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback, outside in self._entries():
            score = matcher.match(name)
            if score > 0:
                display = Content(name) if outside else matcher.highlight(name)
                yield Hit(score, display, callback, text=name, help=help_text)
