"""A tail chunk of any size is fed to its session a slice at a time, the event loop free in between (keys
and frames are handled while a reattach reads a whole log), and always whole: the offset moves with the
chunk's last line, also when the follow is cancelled half-way."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from textual.message import Message

from sgtui.ui.session.run import RunSession
from sgtui.ui.views import RunView
from sgtui.ui.workers import follow
from sgtui.ui.workers.follow import Follower
from tests.ui.fakes import FakeBackend


@pytest.fixture(autouse=True)
def a_turn_after_every_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop gets a turn after each slice (not after each TURN_S of work): the same every run."""
    monkeypatch.setattr(follow, "TURN_S", 0.0)


LINES = [f"[2026-01-15 08:01:02 TP0] Decode batch. #running-req: {i}" for i in range(5 * follow.SLICE + 7)]


class OneChunk(FakeBackend):
    """The whole log in one chunk, then the tail stays open (a live run)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    async def tail(self, run: RunView, offset: int) -> AsyncIterator[tuple[int, list[str]]]:
        yield offset + 1000, self.lines
        await asyncio.Event().wait()


def session() -> RunSession:
    posted: list[Message] = []
    run = RunView("r", "h", "bare host", "p", "running", "/logs/r/server.log")
    return RunSession(run, None, posted.append, max_lines=100_000)


def classified(s: RunSession) -> int:
    return s.nodes[0].tracker.classifier.line_count


async def _follow_while_watching(s: RunSession, lines: list[str], cancel_after: int | None) -> list[int]:
    """Run a follower; another task notes how many lines were classified each loop turn it gets."""
    task = asyncio.create_task(Follower(OneChunk(lines), s, 0).run())
    seen: list[int] = []
    for _ in range(100):
        await asyncio.sleep(0)
        seen.append(classified(s))
        if cancel_after is not None and len(seen) == cancel_after:
            task.cancel()
            break
        if seen[-1] == len(lines):
            break
    if not task.done():
        task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return seen


def test_a_big_chunk_is_classified_a_slice_per_loop_turn_in_order() -> None:
    s = session()
    seen = asyncio.run(_follow_while_watching(s, LINES, None))
    partial = [n for n in seen if 0 < n < len(LINES)]
    assert partial, seen  # other tasks ran while the chunk was being fed
    assert all(n % follow.SLICE == 0 for n in partial)
    s.flush()
    assert s.log.lines() == LINES
    assert s.nodes[0].offset == 1000


def test_cancelled_half_way_the_chunk_is_still_fed_whole() -> None:
    s = session()
    seen = asyncio.run(_follow_while_watching(s, LINES, cancel_after=2))
    assert 0 < seen[-1] < len(LINES)  # cancelled with slices still to go
    assert classified(s) == len(LINES)
    assert s.nodes[0].offset == 1000  # a later tail from here repeats no line
    s.flush()
    assert s.log.lines() == LINES


def test_a_small_chunk_goes_in_at_once() -> None:
    s = session()
    lines = LINES[: follow.SLICE]
    seen = asyncio.run(_follow_while_watching(s, lines, None))
    assert [n for n in seen if 0 < n < len(lines)] == []
    assert classified(s) == len(lines)
