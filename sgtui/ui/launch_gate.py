"""`l`/`r`: the preflight before a launch starts, as headless `sgtui launch` runs it.

The fit for exactly the flags being launched (or why it cannot be computed yet: no GPU sample, no
nvidia-smi on the host, an unreadable model config) and the target checks read by the "preflight" worker
(port free, GPUs not held by others, model path, installed release). A launch that fits and passes goes at
once (a tight fit or a failed non-blocking check gets a warning line); one whose fit fails, whose fit is not
known yet, or whose blocking check failed asks first (`screens/fit_confirm.py`, No focused).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sgtui.core.preflight import Check, Preflight, from_fit_json
from sgtui.ui.screens.fit_confirm import FitConfirmScreen, as_flag, best_fix, tight_warning

if TYPE_CHECKING:
    from sgtui.ui.app import SgtuiApp


@dataclass(frozen=True)
class Pending:
    """A launch waiting for its target checks: what was asked, and what to do if it goes."""

    seq: int
    what: str
    go: Callable[[], None]
    skip: tuple[str, ...] = ()  # checks that do not apply (a restart's own run holds its port and GPUs)


class LaunchGate:
    """One launch question at a time: the newest `l`/`r` wins, an older check's answer is dropped."""

    def __init__(self, app: SgtuiApp) -> None:
        self.app = app
        self._seq = 0
        self.pending: Pending | None = None

    def ask(self, what: str, go: Callable[[], None], skip: tuple[str, ...] = ()) -> None:
        """The target checks first; `decide` follows their answer."""
        app = self.app
        self._seq += 1
        self.pending = Pending(self._seq, what, go, skip)
        app.notify(f"checking the target before the {what}…", timeout=3)
        app.controller.preflight_checks(app.deployment.profile, self._seq)

    def checked(self, seq: int, checks: list[Check]) -> None:
        """The worker's answer; one for an older ask, or after the ask was dropped, is ignored."""
        pending = self.pending
        if pending is None or pending.seq != seq or not self.app.is_running:
            return
        self.pending = None
        self.decide(pending, checks)

    def decide(self, pending: Pending, checks: list[Check]) -> None:
        """The fit for exactly the flags that `go` launches, made now (never a stale report; a GPU sample
        or model config that came during the checks counts), with the checks: go, warn, or ask."""
        app = self.app
        report, why = app.flags.predict()
        checks = [c for c in checks if c.name not in pending.skip]
        pre = from_fit_json(report, checks, why or None)
        if not pre.blocks and pre.verdict != "unknown":
            for line in _warnings(pre, report):
                app.notify(line, severity="warning", timeout=8)
            pending.go()
            return

        def answer(choice: str | None) -> None:
            if choice == "launch":
                pending.go()
            elif choice == "fix":
                app.call_later(self._fix_then, pending, report)
            else:
                why = "the fit is not known yet" if pre.verdict == "unknown" else "the preflight says no"
                app.notify(f"not {pending.what}ed: {why} (2 shows the fit)", timeout=6)

        app.push_screen(FitConfirmScreen(report, pending.what, pre), answer)

    async def _fix_then(self, pending: Pending, report: dict[str, Any] | None) -> None:
        fix = best_fix(report)
        if fix is None:
            return
        flag, value, _ = fix
        app = self.app
        await app.form.set_flag(flag, value)
        if not app.is_running:  # the app is shutting down: its screen is going
            return
        app.notify(f"applied {as_flag(flag, value)}", timeout=6)
        if app.deploy.profile_to_launch() is not None:
            self.ask(pending.what, pending.go, pending.skip)  # the fix is checked like any other flags


def _warnings(pre: Preflight, report: dict[str, Any] | None) -> list[str]:
    """What a launch that goes ahead still gets told: a tight fit, each failed check that does not block."""
    lines = [w for w in (tight_warning(report),) if w]
    lines.extend(f"{c.name}: {c.message}" for c in pre.checks if not c.ok and c.name != "fit")
    return lines
