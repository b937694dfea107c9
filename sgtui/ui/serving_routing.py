"""The serving side of the app (mixed into `SgtuiApp`): the 1 Hz poll of ready runs' numbers lands on
their `RunSession.serving`, the smoke answer and the load probe's progress too; the serving panel, the
runs table and the fleet rows redraw from there. Each ready run's smoke request runs in its own worker
(group "smoke"), so a slow one holds up no run's numbers. `b` starts a load probe on the run in view
(one at a time, group "bench"); Esc cancels it."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from textual.worker import Worker

from sgtui.ui import messages as m
from sgtui.ui.views import RunView
from sgtui.ui.widgets.serving_panel import ServingPanel

if TYPE_CHECKING:
    from sgtui.ui.app import SgtuiApp

    Base = SgtuiApp
else:
    Base = object


class ServingRouting(Base):
    def start_serving(self) -> None:
        from sgtui.ui.workers.serving import poll_serving

        self.run_worker(
            poll_serving(self.backend, lambda: list(self.followed), self.post_message, self._start_smoke),
            group="serving", name="serving", exit_on_error=False,
        )  # fmt: skip

    def _start_smoke(self, work: Coroutine[Any, Any, None], name: str) -> Worker[None]:
        """A ready run's smoke request, in its own worker (group "smoke") beside the poll."""
        return self.run_worker(work, group="smoke", name=name, exit_on_error=False)

    def rate_of(self, run: RunView) -> str:
        session = self.followed.get(run.run_id)
        if session is None or session.state != "ready" or run.node_rank not in (None, 0):
            return ""
        return session.serving.tokens_text()

    def host_rates(self, host: str) -> str:
        """The sum of a host's ready followed runs' generation rates ("1,204 tok/s"), or ""."""
        total, any_rate = 0.0, False
        for session in self.followed:
            snap = session.serving.latest
            if (
                session.host == host
                and session.state == "ready"
                and snap
                and snap.gen_tokens_per_s is not None
            ):
                total += snap.gen_tokens_per_s
                any_rate = True
        return f"{total:,.0f} tok/s" if any_rate else ""

    def draw_serving(self) -> None:
        session = self.session
        self.main.query_one(ServingPanel).show(session, self.clock())

    def _serving_changed(self, key: str) -> None:
        if self.session is not None and self.session.key == key:
            self.draw_serving()

    def on_serving_read(self, message: m.ServingRead) -> None:
        session = self.followed.get(message.key)
        if session is None or not self.is_running:
            return
        if message.snapshot is not None:
            session.serving.add(message.snapshot)
        session.serving.note = message.error
        self._serving_changed(message.key)
        for warning in session.serving.warnings():
            if warning.code not in session.serving.warned:  # once per run and kind, in view or not
                session.serving.warned.add(warning.code)
                self.notify(f"{message.key}: {warning.message}", severity="warning", timeout=15)

    def on_smoke_answered(self, message: m.SmokeAnswered) -> None:
        session = self.followed.get(message.key)
        if session is None or not self.is_running:
            return
        if message.serving is not None and message.serving is not session.serving:
            return  # the smoke of an earlier session of this run (followed anew since): not this one's
        session.serving.smoke = message.result
        self._serving_changed(message.key)
        if not message.result.ok:
            self.notify(
                f"{message.key}: HTTP answers but generation fails: {message.result.error}",
                severity="error", timeout=15,
            )  # fmt: skip

    def on_bench_progress(self, message: m.BenchProgress) -> None:
        session = self.followed.get(message.key)
        if session is None or not self.is_running:
            return
        bench = session.serving.bench
        bench.done, bench.total = message.done, message.total
        bench.running = not message.ended
        bench.error = message.error
        if message.report is not None:
            session.serving.report = message.report
            where = f" (saved {message.report.report_path})" if message.report.report_path else ""
            self.notify(
                f"load probe on {message.key}: {message.report.completed}/{message.total} done{where}"
            )
        self._serving_changed(message.key)

    def action_bench(self) -> None:
        """b: a bounded load probe of the run in view (20 requests, 4 at once)."""
        from sgtui.ui.workers.serving import load_probe

        session = self.session
        if session is None or session.state != "ready":
            self.notify("b runs a load probe on a ready run: follow one first", timeout=5)
            return
        if session.serving.bench.running:
            self.notify("a load probe is already running; esc cancels it", timeout=5)
            return
        if not hasattr(self.backend, "bench"):
            self.notify("this backend cannot run a load probe", timeout=5)
            return
        session.serving.bench.running = True
        self.run_worker(
            load_probe(self.backend, session, self.post_message),
            group="bench", name=f"bench:{session.key}", exclusive=True, exit_on_error=False,
        )  # fmt: skip
        self.draw_serving()

    def cancel_bench(self) -> bool:
        """Esc: cancel the load probe; True when one was running."""
        running = [s for s in self.followed if s.serving.bench.running]
        if not running:
            return False
        self.workers.cancel_group(self, "bench")
        for session in running:
            session.serving.bench.running = False
            session.serving.bench.error = "cancelled"
        self.draw_serving()
        return True
