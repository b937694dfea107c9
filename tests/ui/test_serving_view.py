"""The serving view of a ready run: its numbers on fixed scales with their source and age, the smoke
answer, the KV-full-while-queueing warning naming the flag, the load probe (`b`, Esc cancels) and its last
report beside the predicted max_running_requests and KV tokens; tok/s in the runs table and fleet rows."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from textual.pilot import Pilot

from sgtui.core.serving.bench import BenchReport
from sgtui.core.serving.state import Percentiles, ServingSnapshot, SmokeResult
from sgtui.ui.app import SgtuiApp
from sgtui.ui.panes.runs import RunsTable
from sgtui.ui.widgets.serving_panel import ServingPanel, spark
from tests.ui.conftest import launch_anyway, wait_for
from tests.ui.fakes import FakeBackend
from tests.ui.scripts import ready_log
from tests.ui.test_snapshots import GPU_FRAMES, SIZES, app_with, settle, steady

NOW = 1000.0


def snap(i: int, at: float = NOW - 1.0) -> ServingSnapshot:
    """A run filling up: tokens/s rising, the queue growing once the KV pool is full."""
    return ServingSnapshot(
        "metrics", at - (30 - i), gen_tokens_per_s=40.0 * i, prompt_tokens_per_s=100.0 * i, running=min(i, 8),
        queued=max(0, i - 22), kv_usage=min(0.97, i / 18), cache_hit_rate=0.5,
        ttft_ms=Percentiles(18.0, 41.0), itl_ms=Percentiles(4.2, 9.8),
    )  # fmt: skip


REPORT = BenchReport(
    "sgtui", 20, 20, 0, 4.1, 4.9, 624.0, 312.0, Percentiles(18.5, 20.3), Percentiles(4.3, 12.2),
    Percentiles(316.7, 342.5), "/runs/x/bench-1.json", 4, "2027-01-15T08:00:00Z",
)  # fmt: skip


async def _serving(app: SgtuiApp, pilot: Pilot[Any]) -> None:
    await launch_anyway(pilot, app)
    await wait_for(pilot, lambda: app.run_state == "ready", what="ready")
    session = app.session
    assert session is not None
    for i in range(1, 31):
        session.serving.add(snap(i))
    session.serving.smoke = SmokeResult(True, 0.41)
    session.serving.report = REPORT
    b = session.serving.bench
    b.running, b.done, b.total = True, 7, 20
    app.draw_serving()
    app.draw_runs()
    await steady(app, pilot)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_serving_view_while_a_load_probe_runs(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(app_with(launch_logs=[ready_log()]), terminal_size=size, run_before=settle(_serving))


def test_sparklines_are_on_a_fixed_scale() -> None:
    """The same value draws the same block whatever else is in the window (not the data's own min..max)."""
    assert spark([5.0, 5.0], 10.0, 4) == "  ▄▄"
    assert spark([5.0, 10.0], 10.0, 2) == "▄█"
    assert spark([0.0, 20.0], 10.0, 2) == " █"  # above the scale: full, never wraps


@dataclass
class ServingBackend(FakeBackend):
    """A fake backend that serves numbers, a smoke answer and a load probe that waits until told."""

    reads: int = 0
    probe_gate: asyncio.Event = field(default_factory=asyncio.Event)
    probes: list[str] = field(default_factory=list)

    async def serving(self, run: Any) -> tuple[ServingSnapshot | None, str | None]:
        self.reads += 1
        snap = ServingSnapshot("metrics", NOW, gen_tokens_per_s=312.0, running=3, queued=0, kv_usage=0.4)
        return replace(snap, retracted=2), None  # SGLang retracted requests: the KV pool was full

    async def smoke(self, run: Any) -> SmokeResult:
        return SmokeResult(False, None, "POST /generate: no answer in 30 s")

    async def bench(self, run: Any, *, on_progress: Any = None, **kw: Any) -> BenchReport:
        self.probes.append(run.run_id)
        if on_progress is not None:
            on_progress(3, kw["requests"])
        await self.probe_gate.wait()
        return REPORT


def serving_app() -> SgtuiApp:
    """The app on the serving fake, its profile and fit fixed: a launch becomes ready."""
    from sgtui.core.profiles import load_profile
    from tests.ui.conftest import PROFILE
    from tests.ui.test_snapshots import fixed_fit

    fake = ServingBackend(launch_logs=[ready_log()], gpu_frames=GPU_FRAMES)
    return SgtuiApp(
        fake, load_profile(PROFILE), theme="textual-dark", fit_function=fixed_fit, clock=lambda: NOW
    )


async def launched_ready(pilot: Pilot[Any], app: SgtuiApp) -> Any:
    """Launch (past the fit's question) and wait until the run is ready: its session."""
    await wait_for(pilot, lambda: app.fit_report is not None, what="the fit")
    await launch_anyway(pilot, app)
    await wait_for(pilot, lambda: app.run_state == "ready", what="ready")
    assert app.session is not None
    return app.session


async def test_a_ready_run_is_polled_shows_its_rate_and_runs_a_probe_that_esc_cancels() -> None:
    app = serving_app()
    fake = app.backend
    assert isinstance(fake, ServingBackend)
    async with app.run_test(size=(120, 40)) as pilot:
        session = await launched_ready(pilot, app)
        await wait_for(pilot, lambda: session.serving.latest is not None, what="the first poll")
        await wait_for(pilot, lambda: session.serving.smoke is not None, what="the smoke answer")
        panel = app.query_one(ServingPanel)
        text = str(panel.render())
        assert "metrics" in text and "312" in text and "no answer in 30 s" in text
        app.draw_runs()
        table = app.query_one(RunsTable)
        assert any(
            "312 tok/s" in str(cell) for row in range(table.row_count) for cell in table.get_row_at(row)
        )
        assert app.host_rates(session.host) == "312 tok/s"
        told = [n.message for n in app._notifications if "retracted 2 request" in n.message]
        assert len(told) == 1 and "--mem-fraction-static" in told[0]  # once, though polled every second
        assert "retracted 2 request" in text

        await pilot.press("b")
        await wait_for(pilot, lambda: session.serving.bench.done == 3, what="the probe's progress")
        assert "probe 3/20 · esc cancels" in str(panel.render())
        await pilot.press("escape")
        await wait_for(pilot, lambda: not session.serving.bench.running, what="the probe cancelled")
        assert session.serving.bench.error == "cancelled" and session.serving.report is None

        fake.probe_gate.set()  # the next probe finishes: its report is kept and shown
        await pilot.press("b")
        await wait_for(pilot, lambda: session.serving.report is not None, what="the report")
        assert "last probe 20/20 c=4 sgtui" in str(panel.render())
        assert "max running req 8 (fit 48)" in str(panel.render())  # the log's, the fit's beside it
        assert fake.probes == [session.key, session.key]


@pytest.mark.parametrize("version", ["0.4.6", "0.5.9", "0.5.23"])
def test_the_launch_form_offers_enable_metrics_with_its_help(version: str) -> None:
    """The serving numbers come from /metrics only with --enable-metrics: the form has it, SGLang's help
    beside it, as a switch."""
    from sgtui.ui.catalogue import flag_catalogue

    info = flag_catalogue(version)["--enable-metrics"]
    assert info.kind == "bool" and "prometheus metrics" in info.help.lower()


async def test_a_smoke_answer_for_an_earlier_session_of_the_run_is_not_shown_on_the_new_one() -> None:
    """A run followed anew is a new session with its own smoke; the old session's answer, landing after
    that, must not stand in for the new session's."""
    from sgtui.ui import messages as m
    from sgtui.ui.session.serving import ServingState

    app = serving_app()
    async with app.run_test(size=(120, 40)) as pilot:
        session = await launched_ready(pilot, app)
        await wait_for(pilot, lambda: session.serving.smoke is not None, what="its own smoke answer")
        own = session.serving.smoke
        app.post_message(m.SmokeAnswered(session.key, SmokeResult(False, None, "old"), ServingState()))
        app.post_message(m.SmokeAnswered(session.key, SmokeResult(True, 0.2), session.serving))
        await wait_for(pilot, lambda: session.serving.smoke is not own, what="the second answer")
        assert session.serving.smoke == SmokeResult(True, 0.2)
        assert not any("old" in n.message for n in app._notifications)
