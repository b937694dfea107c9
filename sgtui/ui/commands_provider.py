"""ctrl+p: every app action by name, so nothing needs a memorised key."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

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
    ("hosts", "Pick a host and container", "tab('targets')"),
    ("runs", "Every run on the target; open any one's log", "tab('runs')"),
    ("help", "The keys", "help"),
    ("quit", "Quit (running servers keep running)", "quit"),
)


class SgtuiCommands(Provider):
    @property
    def _app(self) -> SgtuiApp:
        return cast("SgtuiApp", self.app)

    def _run(self, action: str) -> Any:
        return partial(self._app.run_action, action)

    async def discover(self) -> Hits:
        for name, help_text, action in PALETTE:
            yield DiscoveryHit(name, self._run(action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, action in PALETTE:
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), self._run(action), help=help_text)
