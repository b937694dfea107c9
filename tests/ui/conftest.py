"""Fixtures for the UI tests: the demo profile, a scripted backend, and a way to wait on the app."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.css.query import NoMatches
from textual.pilot import Pilot

from sgtui.core.profiles import Profile, load_profile

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "profiles" / "qwen36-27b-2xa6000.yaml"


def asking(app: Any) -> bool:
    """A yes/no question is on screen and ready to answer: pushed, composed, its No button focused (the
    screen becomes the active one before its children are mounted)."""
    from sgtui.ui.screens.confirm import ConfirmScreen

    screen = app.screen
    return isinstance(screen, ConfirmScreen) and screen.focused is not None and screen.focused.id == "no"


@pytest.fixture
def profile() -> Profile:
    return load_profile(PROFILE)


@pytest.fixture(autouse=True)
def _config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never read or write the real sgtui config dir."""
    monkeypatch.setenv("SGTUI_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


async def wait_for(
    pilot: Pilot[Any], condition: Callable[[], Any], timeout: float = 10.0, what: str = ""
) -> None:
    """Let the app run until `condition()` is true; fail with `what` when it never becomes true.

    A widget the condition queries may be absent for a moment (a form or pane being replaced): that is
    "not yet", and the last such miss is named if the wait times out."""
    deadline = time.monotonic() + timeout
    missed: NoMatches | None = None
    while True:
        try:
            if condition():
                return
        except NoMatches as exc:
            missed = exc
        if time.monotonic() > deadline:
            why = f" ({missed})" if missed else ""
            raise AssertionError(f"timed out waiting for {what or condition}{why}")
        await pilot.pause(0.02)


async def press_until(
    pilot: Pilot[Any], key: str, condition: Callable[[], Any], what: str, timeout: float = 10.0
) -> None:
    """Press `key`, then wait for what it does: `press` returns once the queues it saw are drained, and a
    key bubbling from the focused widget up to the app's binding can take longer on a loaded machine."""
    await pilot.press(key)
    await wait_for(pilot, condition, timeout, what)


async def launch_anyway(pilot: Pilot[Any], app: Any, key: str = "l") -> None:
    """Press l (or r); when the fit says the launch fails and asks, answer "launch anyway" (y).

    The seeds' 0.5.9 profile is predicted to fail (and does, in the scripted logs): tests that are about
    what follows a launch get past the question this way; test_truth_flows tests the question itself.
    It waits for the key to reach the preflight's decision, once the target checks answered (where the
    question is asked, or not), never a fixed number of pauses."""
    from sgtui.ui.screens.fit_confirm import FitConfirmScreen

    checked: list[str] = []
    gate = app.deploy.gate
    decide = gate.decide

    def decided(pending: Any, checks: Any) -> None:
        checked.append(pending.what)
        decide(pending, checks)

    gate.decide = decided
    try:
        await press_until(pilot, key, lambda: checked, f"{key} to reach the preflight's decision")
    finally:
        del gate.decide
    if isinstance(app.screen, FitConfirmScreen):
        await press_until(pilot, "y", lambda: not isinstance(app.screen, FitConfirmScreen), "the answer")
