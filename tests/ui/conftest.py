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


async def launch_anyway(pilot: Pilot[Any], app: Any, key: str = "l") -> None:
    """Press l (or r); when the fit says the launch fails and asks, answer "launch anyway" (y).

    The seeds' 0.5.9 profile is predicted to fail (and does, in the scripted logs): tests that are about
    what follows a launch get past the question this way; test_truth_flows tests the question itself."""
    from sgtui.ui.screens.fit_confirm import FitConfirmScreen

    await pilot.press(key)
    await pilot.pause()
    if isinstance(app.screen, FitConfirmScreen):
        await pilot.press("y")
        await pilot.pause()
