"""The serving workers: a 1 Hz poll of every ready followed run's `/metrics` (group "serving"), the smoke
request once a run is ready, and the load probe (group "bench", one at a time; Esc cancels it). They post
messages (`ServingRead`, `SmokeAnswered`, `BenchProgress`) and never touch widgets."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from textual.message import Message

from sgtui.ui import messages as m
from sgtui.ui.session.run import RunSession

POLL_S = 1.0
BENCH = {"requests": 20, "concurrency": 4, "input_len": 128, "output_len": 64}


async def poll_serving(
    backend: Any, sessions: Callable[[], Iterable[RunSession]], post: Callable[[Message], None]
) -> None:
    """Forever: each second, every ready run's numbers, read at once (a slow host holds up no other)."""
    while True:
        ready = [s for s in sessions() if s.state == "ready"]
        if ready:
            await asyncio.gather(*(_read(backend, s, post) for s in ready))
        await asyncio.sleep(POLL_S)


async def _read(backend: Any, session: RunSession, post: Callable[[Message], None]) -> None:
    read = getattr(backend, "serving", None)
    if read is None:
        return
    try:
        snap, error = await asyncio.wait_for(read(session.run), 5.0)
    except Exception as exc:  # a lost host, a refused channel: said, and asked again next second
        snap, error = None, f"/metrics: {exc}"
    post(m.ServingRead(session.key, snap, error))
    if not session.serving.smoke_asked and hasattr(backend, "smoke"):
        session.serving.smoke_asked = True
        try:
            result = await backend.smoke(session.run)
        except Exception as exc:
            from sgtui.core.serving.state import SmokeResult

            result = SmokeResult(False, None, str(exc))
        post(m.SmokeAnswered(session.key, result))


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
