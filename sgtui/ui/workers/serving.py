"""The serving workers: a 1 Hz poll of every ready followed run's `/metrics` (group "serving"), the smoke
request once a run is ready (group "smoke", one worker per run, beside the poll: a slow smoke holds up no
read), and the load probe (group "bench", one at a time; Esc cancels it). They post messages
(`ServingRead`, `SmokeAnswered`, `BenchProgress`) and never touch widgets."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Protocol

from textual.message import Message

from sgtui.core.serving.state import SmokeResult
from sgtui.ui import messages as m
from sgtui.ui.session.run import RunSession

POLL_S = 1.0
READ_S = 5.0  # one /metrics read; past it the run's panel says why and it is asked again next second
# SGLang's own /health_generate gives one 1-token request HEALTH_CHECK_TIMEOUT = 20 s (env
# SGLANG_HEALTH_CHECK_TIMEOUT) to answer before it calls the server unhealthy (entrypoints/http_server.py:
# health_generate, as read in 0.5.6, 0.5.7, 0.5.8, 0.5.10 and 0.5.23); the smoke asks for 4 tokens through
# an SSH channel (and, the first time, the server's address): 30 s, then it is said to have failed
SMOKE_S = 30.0
BENCH = {"requests": 20, "concurrency": 4, "input_len": 128, "output_len": 64}


class Cancellable(Protocol):
    def cancel(self) -> Any: ...


Start = Callable[[Coroutine[Any, Any, None], str], Cancellable]  # (work, name): a running worker


def start_task(work: Coroutine[Any, Any, None], name: str) -> Cancellable:
    """A bare asyncio task (the app passes its own: a worker in group "smoke")."""
    return asyncio.ensure_future(work)


class Smokes:
    """The smoke requests in flight, one per ready run: asked once per followed session, each in its own
    worker; a run no longer ready (stopped, failed, unfollowed, followed anew) has its smoke cancelled."""

    def __init__(self, backend: Any, post: Callable[[Message], None], start: Start) -> None:
        self.backend = backend
        self.post = post
        self.start = start
        self._asked: dict[str, tuple[RunSession, Cancellable]] = {}

    def keep(self, ready: list[RunSession]) -> None:
        """Cancel and forget the smokes of every session not in `ready` (by identity: a run followed
        anew is a new session with its own smoke)."""
        live = {id(s) for s in ready}
        for key, (session, worker) in list(self._asked.items()):
            if id(session) not in live:
                worker.cancel()
                del self._asked[key]

    def ask(self, session: RunSession) -> None:
        if session.serving.smoke_asked or not hasattr(self.backend, "smoke"):
            return
        session.serving.smoke_asked = True
        self._asked[session.key] = (session, self.start(self._smoke(session), f"smoke:{session.key}"))

    async def _smoke(self, session: RunSession) -> None:
        try:
            result = await asyncio.wait_for(self.backend.smoke(session.run), SMOKE_S)
        except TimeoutError:
            result = SmokeResult(False, None, f"POST /generate: no answer in {SMOKE_S:g} s")
        except Exception as exc:
            result = SmokeResult(False, None, str(exc))
        self.post(m.SmokeAnswered(session.key, result, session.serving))

    def close(self) -> None:
        self.keep([])


async def poll_serving(
    backend: Any,
    sessions: Callable[[], Iterable[RunSession]],
    post: Callable[[Message], None],
    start: Start = start_task,
) -> None:
    """Forever: each second, every ready run's numbers, read at once (a slow host holds up no other), and
    a new ready run's smoke request started beside them. Whatever belongs to runs no longer ready goes:
    their smokes are cancelled and the backend forgets their readers (`forget_serving`)."""
    smokes = Smokes(backend, post, start)
    forget = getattr(backend, "forget_serving", None)
    try:
        while True:
            ready = [s for s in sessions() if s.state == "ready"]
            smokes.keep(ready)
            if forget is not None:
                forget({s.run_id for s in ready})
            for session in ready:
                smokes.ask(session)
            if ready:
                await asyncio.gather(*(_read(backend, s, post) for s in ready))
            await asyncio.sleep(POLL_S)
    finally:
        smokes.close()


async def _read(backend: Any, session: RunSession, post: Callable[[Message], None]) -> None:
    read = getattr(backend, "serving", None)
    if read is None:
        return
    try:
        snap, error = await asyncio.wait_for(read(session.run), READ_S)
    except Exception as exc:  # a lost host, a refused channel: said, and asked again next second
        snap, error = None, f"/metrics: {exc}"
    post(m.ServingRead(session.key, snap, error))


async def load_probe(backend: Any, session: RunSession, post: Callable[[Message], None]) -> None:
    total = BENCH["requests"]
    post(m.BenchProgress(session.key, 0, total))
    try:
        report = await backend.bench(
            session.run, on_progress=lambda done, n: post(m.BenchProgress(session.key, done, n)), **BENCH
        )
    except asyncio.CancelledError:
        post(m.BenchProgress(session.key, 0, total, error="cancelled", ended=True))
        raise
    except Exception as exc:
        post(m.BenchProgress(session.key, 0, total, error=str(exc), ended=True))
        return
    post(m.BenchProgress(session.key, report.completed, total, report=report, ended=True))
