"""SVG snapshots of the main screens at 120x40 and 80x24, from fixed data (no clocks, no network).

Update after an intended change with `pytest tests/ui/test_snapshots.py --snapshot-update` and look at
the report it writes before committing the new SVGs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from sgtui.core.profiles import load_profile
from sgtui.ui.app import SgtuiApp
from sgtui.ui.views import GpuView, RunView
from sgtui.ui.widgets.log_view import LogView
from tests.ui.conftest import PROFILE, launch_anyway, wait_for
from tests.ui.fakes import FakeBackend, gpus
from tests.ui.scripts import failing_log, ready_log

SIZES = [(120, 40), (80, 24)]
GPU_FRAMES = [gpus((512, 512)), gpus((27_000, 26_900)), gpus((31_800, 31_700), holder="x")]


FIXED_FIT: dict[str, Any] = {
    "sglang_version": "0.5.9",
    "gpu_total_gib": 47.99,
    "baseline_free_gib": 46.99,
    "mem_fraction_static": 0.85,
    "mem_fraction_static_auto": 0.816,
    "weights_gib": 25.48,
    "draft_weights_gib": 0.41,
    "rest_gib": 14.46,
    "max_total_num_tokens": -89_784,
    "kv_pool_gib": -2.74,
    "max_running_requests": 48,
    "context_length": 32768,
    "mamba": {"state_gib": 3.51, "max_mamba_cache_size": 48, "spec_state_gib": 13.76},
    "swa": None,
    "slack_gib": 7.05,
    "verdict": "fails",
    "error": "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    "fixes": [  # the one ranking (core/fit/fixes.py): what the question offers first
        {
            "flag": "--max-running-requests",
            "value": 38,
            "verdict": "fits",
            "why": "Lower --max-running-requests to 38 or less: 38,168 tokens (fits).",
        },
        {"flag": "--mem-fraction-static", "value": 0.923, "verdict": "tight", "why": "little slack left"},
    ],
    "warnings": [
        {
            "code": "lower_max_running_requests",
            "message": "Lower --max-running-requests to 38 or less: 38,168 tokens (fits).",
            "flag": "--max-running-requests",
            "suggested_value": 38,
        },
        {"code": "baseline_estimated", "message": "Free memory before loading is an estimate.", "flag": None},
    ],
    "budget": [
        {"key": "static_budget", "item": "static budget", "gib": 14.46, "count": "", "detail": ""},
        {
            "key": "speculative_state",
            "item": "speculative state (48 requests x 4 draft tokens)",
            "gib": -13.76,
            "count": "48 requests x 4 draft tokens",
            "detail": "",
        },
        {"key": "mamba_state", "item": "Mamba state", "gib": -3.44, "count": "48 slots", "detail": ""},
        {"key": "kv_pool", "item": "KV pool", "gib": -2.74, "count": "-89,784 tokens", "detail": ""},
    ],
}


def fixed_fit(values: dict[str, Any], inputs: Any) -> dict[str, Any]:
    """The snapshots show the panel's layout, not today's fit engine: its numbers are fixed here."""
    report = dict(FIXED_FIT, context_length=values.get("--context-length"))
    if getattr(inputs, "live", ()):  # sized from a GPU sample, as compute_fit says
        report["free_now"] = "sized from what is free now"
    return report


def app_with(**backend: Any) -> SgtuiApp:
    fake = FakeBackend(gpu_frames=GPU_FRAMES, **backend)
    return SgtuiApp(
        fake, load_profile(PROFILE), theme="textual-dark", fit_function=fixed_fit, clock=lambda: 1000.0
    )


def settle(
    step: Callable[[SgtuiApp, Pilot[Any]], Awaitable[None]],
) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """Run `step`, then wait out the fit and the GPU frames and clear the toasts, which come and go."""

    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, SgtuiApp)
        await wait_for(pilot, lambda: app.fit_report is not None, what="the fit")
        await wait_for(
            pilot, lambda: len(app.history.series.get(0, ())) == len(GPU_FRAMES), what="GPU frames"
        )
        await step(app, pilot)
        app.clear_notifications()
        await pilot.pause(0.1)
        await pilot.wait_for_scheduled_animations()
        await steady(app, pilot)

    return run_before


async def steady(app: SgtuiApp, pilot: Pilot[Any]) -> None:
    """Until two frames in a row render the same screen: a scroll or layout that settles a frame after
    the last line (the log following its end at a new height, say) is in the snapshot, not racing it."""
    last = app.export_screenshot()
    for _ in range(40):
        await pilot.pause(0.05)
        now = app.export_screenshot()
        if now == last:
            return
        last = now


async def _failed(app: SgtuiApp, pilot: Pilot[Any]) -> None:
    await launch_anyway(pilot, app)
    await wait_for(pilot, lambda: app.run_state == "failed", what="the failure")
    # the failure is known at the traceback; the log's last lines (and the view's scroll) come after
    await wait_for(pilot, lambda: _log_at_end(app), what="the log followed to its end")


def _log_at_end(app: SgtuiApp) -> bool:
    """The whole scripted log arrived and the followed view shows its end (no late line moves it)."""
    view, script = app.query_one(LogView), app.backend.launch_logs[0]  # type: ignore[attr-defined]
    return view.following and view.line_count >= len(script) and view.scroll_y >= view.max_scroll_y


async def _ready(app: SgtuiApp, pilot: Pilot[Any]) -> None:
    """Ready, with the followed log scrolled to its end (the layout settles a frame after the lines)."""
    await launch_anyway(pilot, app)
    await wait_for(pilot, lambda: app.run_state == "ready", what="ready")
    await wait_for(pilot, lambda: _log_at_end(app), what="the log followed to its end")


async def _flags(app: SgtuiApp, pilot: Pilot[Any]) -> None:
    await pilot.press("2")


async def _hosts(app: SgtuiApp, pilot: Pilot[Any]) -> None:
    await wait_for(pilot, lambda: app.fleet.host("pve").containers, what="containers")
    await pilot.press("1")


async def _runs(app: SgtuiApp, pilot: Pilot[Any]) -> None:
    await wait_for(pilot, lambda: len(app.runs) == 2, what="the runs")
    await pilot.press("4")


OLD_RUNS = [
    RunView(
        "20260115-080100-a1b2c3",
        "pve",
        "pct 129",
        "qwen36-27b-2xa6000",
        "failed",
        "/var/tmp/sgtui-runs/a/server.log",
        "01-15 08:01",
    ),
    RunView(
        "20260115-081500-d4e5f6",
        "pve",
        "pct 129",
        "qwen36-27b-2xa6000",
        "stopped",
        "/var/tmp/sgtui-runs/b/server.log",
        "01-15 08:15",
    ),
]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_log_after_a_failure_with_its_diagnosis(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(app_with(launch_logs=[failing_log()]), terminal_size=size, run_before=settle(_failed))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_flags_with_the_fit_beside_them(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(app_with(), terminal_size=size, run_before=settle(_flags))


def test_snapshot_ready_with_the_startup_timeline(snap_compare: Any) -> None:
    assert snap_compare(
        app_with(launch_logs=[ready_log()]), terminal_size=(120, 40), run_before=settle(_ready)
    )


def test_snapshot_hosts_and_containers(snap_compare: Any) -> None:
    assert snap_compare(app_with(), terminal_size=(120, 40), run_before=settle(_hosts))


def test_snapshot_runs_on_the_target(snap_compare: Any) -> None:
    assert snap_compare(
        app_with(existing_runs=list(OLD_RUNS)), terminal_size=(80, 24), run_before=settle(_runs)
    )


# ---- the states issue 9 added: each at both sizes, in the default and the ANSI theme ----------------------
THEMES = ["textual-dark", "ansi-dark"]
LONG_ARGS = (
    "[2027-01-15 08:00:00] server_args=ServerArgs("
    + ", ".join(f"option_{i}=value_{i}" for i in range(60))
    + ")"
)


class Clock:
    """A clock the snapshot moves by hand: ages are exact, never the machine's."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def truth_app(theme: str, clock: Clock | None = None, **backend: Any) -> SgtuiApp:
    backend.setdefault("gpu_frames", GPU_FRAMES)
    fake = FakeBackend(**backend)
    return SgtuiApp(fake, load_profile(PROFILE), theme=theme, fit_function=fixed_fit, clock=clock or Clock())


async def _ready_then(app: SgtuiApp, pilot: Pilot[Any], *keys: str) -> None:
    await _ready(app, pilot)
    await pilot.press(*keys)
    await pilot.pause(0.1)


async def _paused(app: SgtuiApp, pilot: Pilot[Any]) -> None:
    await _ready_then(app, pilot, "home")  # an upward move pauses; Home lands on one known row


async def _wrapped(app: SgtuiApp, pilot: Pilot[Any]) -> None:
    await _ready_then(app, pilot, "w")


async def _searched(app: SgtuiApp, pilot: Pilot[Any]) -> None:
    await _ready_then(app, pilot, "slash", *"Load weight", "enter")


async def _asks(app: SgtuiApp, pilot: Pilot[Any]) -> None:
    await wait_for(pilot, lambda: app.host_states.get("pve") == "connected", what="the host")
    await pilot.press("l")
    await wait_for(pilot, lambda: app.screen.query("#fit-confirm-text"), what="the question")


def _stale(clock: Clock) -> Callable[[SgtuiApp, Pilot[Any]], Awaitable[None]]:
    async def step(app: SgtuiApp, pilot: Pilot[Any]) -> None:
        await _ready(app, pilot)
        # a frozen link: nothing heard for 20 s while "connected" (under the 30 s runs relisting, which the
        # scripted backend would answer at once where a frozen link never does)
        clock.now += 20.0
        app._tick()
        await pilot.pause(0.1)
        await wait_for(pilot, lambda: _log_at_end(app), what="the log still at its end")

    return step


async def _no_gpu(app: SgtuiApp, pilot: Pilot[Any]) -> None:
    await wait_for(pilot, lambda: app.fit_inputs.gpu_error, what="the GPU problem")
    await pilot.press("2")


NO_GPU = [
    [
        GpuView(
            -1,
            "",
            0,
            0,
            None,
            (),
            "no nvidia-smi: install the NVIDIA driver utilities (nvidia-smi) on that host "
            "(bash: line 1: nvidia-smi: command not found)",
        )
    ]
]


def settle_any(
    step: Callable[[SgtuiApp, Pilot[Any]], Awaitable[None]],
) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, SgtuiApp)
        await step(app, pilot)
        app.clear_notifications()
        await pilot.pause(0.1)
        await pilot.wait_for_scheduled_animations()
        await steady(app, pilot)

    return run_before


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("state", ["paused", "stale", "fails-confirmation", "no-gpu-host", "wrap", "search"])
def test_snapshot_truth_states(snap_compare: Any, state: str, size: tuple[int, int], theme: str) -> None:
    clock = Clock()
    log = [LONG_ARGS, *ready_log()]
    if state == "no-gpu-host":
        app = truth_app(theme, gpu_frames=NO_GPU)
        assert snap_compare(app, terminal_size=size, run_before=settle_any(_no_gpu))
        return
    if state == "fails-confirmation":
        assert snap_compare(truth_app(theme), terminal_size=size, run_before=settle(_asks))
        return
    steps = {"paused": _paused, "stale": _stale(clock), "wrap": _wrapped, "search": _searched}
    app = truth_app(theme, clock, launch_logs=[log], hold_tail=True)
    assert snap_compare(app, terminal_size=size, run_before=settle(steps[state]))
