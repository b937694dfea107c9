"""The 1 Hz serving poll against slow and ending runs: a run's smoke request runs beside the poll (a smoke
that takes far longer than a poll holds up no run's /metrics reads, its own run's included), is bounded in
time, and is cancelled when its run stops or is unfollowed; the backend keeps a `/metrics` reader only for
the runs still polled, however many runs a long session followed and saw end."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from textual.message import Message
from textual.worker import WorkerState

from sgtui.core.serving.state import ServingSnapshot, SmokeResult
from sgtui.remote.serving import ServingReader
from sgtui.ui import messages as m
from sgtui.ui.app import SgtuiApp
from sgtui.ui.serving_backend import ServingBackend
from sgtui.ui.session.run import RunSession
from sgtui.ui.views import RunView
from sgtui.ui.workers import serving as workers

WAIT_S = 5.0  # the most a test waits for something that takes a few polls


@pytest.fixture(autouse=True)
def _fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "POLL_S", 0.01)


def ready(run_id: str) -> RunSession:
    return RunSession(RunView(run_id, "gpu1", "host", "p", "ready"), None, lambda _: None)


class Inbox:
    """What the poll posted, with a way to wait for a condition on it."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def post(self, message: Message) -> None:
        self.messages.append(message)

    def reads(self) -> Counter[str]:
        return Counter(x.key for x in self.messages if isinstance(x, m.ServingRead))

    def smokes(self) -> dict[str, SmokeResult]:
        return {x.key: x.result for x in self.messages if isinstance(x, m.SmokeAnswered)}

    async def until(self, ok: Callable[[], bool], what: str) -> None:
        async def wait() -> None:
            while not ok():
                await asyncio.sleep(0.005)

        try:
            await asyncio.wait_for(wait(), WAIT_S)
        except TimeoutError:
            raise AssertionError(f"no {what} within {WAIT_S} s: {self.reads()} {self.smokes()}") from None


class HangingSmoke:
    """Numbers at once; the smoke request of the runs in `slow` never answers (a server generating
    slowly, a hung request) until cancelled, which it notes."""

    def __init__(self, slow: set[str]) -> None:
        self.slow = slow
        self.started: set[str] = set()
        self.cancelled: set[str] = set()

    async def serving(self, run: RunView) -> tuple[ServingSnapshot | None, str | None]:
        return ServingSnapshot("metrics", 0.0, gen_tokens_per_s=10.0), None

    async def smoke(self, run: RunView) -> SmokeResult:
        self.started.add(run.run_id)
        if run.run_id not in self.slow:
            return SmokeResult(True, 0.2)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.add(run.run_id)
            raise
        raise AssertionError("unreachable")


async def test_a_smoke_that_never_answers_holds_up_no_runs_reads() -> None:
    """Run a's smoke hangs: both runs are still read every poll, a's own included, and b's smoke answers."""
    backend, inbox = HangingSmoke({"a"}), Inbox()
    sessions = [ready("a"), ready("b")]
    poll = asyncio.ensure_future(workers.poll_serving(backend, lambda: sessions, inbox.post))
    try:
        await inbox.until(lambda: "a" in backend.started, "smoke request for a")
        before = inbox.reads()
        await inbox.until(
            lambda: all(inbox.reads()[k] >= before[k] + 5 for k in "ab"), "five more reads of each run"
        )
        assert "a" not in inbox.smokes() and inbox.smokes()["b"].ok
    finally:
        poll.cancel()
        await asyncio.gather(poll, return_exceptions=True)
    await inbox.until(lambda: backend.cancelled == {"a"}, "cancel of the smoke when the poll ends")


async def test_a_smoke_past_its_bound_is_told_as_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """A smoke with no answer within SMOKE_S is a failed smoke, with why, not a wait without end."""
    monkeypatch.setattr(workers, "SMOKE_S", 0.05)
    backend, inbox = HangingSmoke({"a"}), Inbox()
    sessions = [ready("a")]
    poll = asyncio.ensure_future(workers.poll_serving(backend, lambda: sessions, inbox.post))
    try:
        await inbox.until(lambda: "a" in inbox.smokes(), "smoke answer")
    finally:
        poll.cancel()
        await asyncio.gather(poll, return_exceptions=True)
    assert inbox.smokes()["a"] == SmokeResult(False, None, "POST /generate: no answer in 0.05 s")


async def test_a_run_that_stops_or_is_unfollowed_while_its_smoke_hangs_leaves_no_smoke_behind() -> None:
    backend, inbox = HangingSmoke({"a", "b", "c"}), Inbox()
    a, b, c = ready("a"), ready("b"), ready("c")
    sessions = [a, b, c]
    poll = asyncio.ensure_future(workers.poll_serving(backend, lambda: sessions, inbox.post))
    try:
        await inbox.until(lambda: backend.started == {"a", "b", "c"}, "three smoke requests")
        a.state = "stopped"  # it ended
        sessions.remove(b)  # `u`, or let go beyond the followed runs' limit
        sessions[sessions.index(c)] = ready("c")  # followed anew: a new session, with its own smoke
        await inbox.until(lambda: backend.cancelled == {"a", "b", "c"}, "cancel of the three smokes")
        reads = inbox.reads()
        await inbox.until(lambda: inbox.reads()["c"] > reads["c"] + 2, "reads of c")
        assert inbox.reads()["a"] == reads["a"] and inbox.reads()["b"] == reads["b"]
    finally:
        poll.cancel()
        await asyncio.gather(poll, return_exceptions=True)
    assert not inbox.smokes()


class NoServer:
    """An SSH connection on which no server answers: every channel open is refused; `docker inspect`
    answers after a moment."""

    host = SimpleNamespace(name="gpu1")

    async def run(self, script: str, timeout: float | None = None) -> Any:
        await asyncio.sleep(0.05)
        return SimpleNamespace(rc=0, stdout="10.0.0.5\n", stderr="")

    async def open_connection(self, host: str, port: int) -> Any:
        raise OSError("connection refused")


class Readers(ServingBackend):
    """`RemoteBackend`'s serving half over `NoServer`: real readers, each read fails fast."""

    def __init__(self, kind: str = "host") -> None:
        self.conn = NoServer()
        self.target = SimpleNamespace(kind=kind, id="c1", label=f"{kind} c1")

    def _conn(self, host: str) -> Any:
        return self.conn

    def _record_manager(self, run: RunView) -> tuple[Any, Any]:
        return run.raw, SimpleNamespace(target=self.target)


def metrics_run(run_id: str) -> RunSession:
    record = SimpleNamespace(argv=["python", "-m", "sglang.launch_server", "--enable-metrics"])
    view = RunView(run_id, "gpu1", "host", "p", "ready", raw=record)
    return RunSession(view, None, lambda _: None)


async def test_a_long_session_keeps_readers_only_for_the_runs_still_polled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Following 30 runs one after another, each ending or unfollowed once read, leaves the readers of
    the two still ready, and the others closed."""
    closed: list[ServingReader] = []
    close = ServingReader.close
    monkeypatch.setattr(ServingReader, "close", lambda self: (closed.append(self), close(self))[-1])
    backend, inbox = Readers(), Inbox()
    sessions: list[RunSession] = []
    poll = asyncio.ensure_future(workers.poll_serving(backend, lambda: list(sessions), inbox.post))
    seen: list[ServingReader] = []
    try:
        for i in range(30):
            session = metrics_run(f"run-{i}")
            sessions.append(session)
            await inbox.until(lambda k=session.key: inbox.reads()[k] > 0, f"a read of {session.key}")
            seen.append(backend._serving_readers[session.key])
            if i % 2:
                session.state = "stopped"
            else:
                sessions.remove(session)
        live = [metrics_run("live-1"), metrics_run("live-2")]
        sessions += live
        await inbox.until(lambda: all(inbox.reads()[s.key] > 1 for s in live), "reads of the live runs")
        assert set(backend._serving_readers) == {"live-1", "live-2"}
        assert all(reader in closed for reader in seen)
    finally:
        poll.cancel()
        await asyncio.gather(poll, return_exceptions=True)


async def test_the_first_read_and_the_smoke_asking_at_once_share_one_reader() -> None:
    """The smoke no longer waits for the first read: both look the server's address up at once, and the
    reader kept is the one the read scraped through (its previous page is the next read's window)."""
    backend = Readers(kind="docker")
    run = metrics_run("run-1").run
    await asyncio.gather(backend.serving(run), backend.smoke(run))
    (reader,) = backend._serving_readers.values()
    assert reader.last_error is not None and "connection refused" in reader.last_error


async def test_in_the_app_a_hanging_smoke_is_a_smoke_worker_the_poll_goes_on_beside_and_u_cancels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The app runs each smoke as a worker of group "smoke": while it hangs the run's numbers keep
    coming; unfollowing the run cancels it."""
    from sgtui.core.profiles import load_profile
    from tests.ui.conftest import PROFILE, launch_anyway, wait_for
    from tests.ui.scripts import ready_log
    from tests.ui.test_serving_view import NOW
    from tests.ui.test_serving_view import ServingBackend as Numbers
    from tests.ui.test_snapshots import GPU_FRAMES, fixed_fit

    monkeypatch.setattr(workers, "POLL_S", 0.05)

    class Hung(Numbers):
        async def smoke(self, run: Any) -> SmokeResult:
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

    fake = Hung(launch_logs=[ready_log()], gpu_frames=GPU_FRAMES)
    app = SgtuiApp(
        fake, load_profile(PROFILE), theme="textual-dark", fit_function=fixed_fit, clock=lambda: NOW
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await launch_anyway(pilot, app)
        await wait_for(pilot, lambda: app.run_state == "ready", what="ready")

        def smokes() -> list[Any]:
            return [w for w in app.workers if w.group == "smoke"]

        await wait_for(pilot, smokes, what="the smoke worker")
        (smoke,) = smokes()
        reads = fake.reads
        await wait_for(pilot, lambda: fake.reads >= reads + 3, what="reads while the smoke hangs")
        assert smoke.state == WorkerState.RUNNING and smoke.name.startswith("smoke:")
        await pilot.press("u")
        await wait_for(pilot, lambda: smoke.state == WorkerState.CANCELLED, what="the smoke cancelled")
