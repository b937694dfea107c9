"""The log view's own drawing cost while it follows a flood (run by hand): CPU per frame (thread time, less
disturbed by a loaded box than wall time) for `LogView.render_lines` of the whole view when every row is new,
and for `append` of the batch that made them new.

    .venv/bin/python bench/bench_log_render.py [--frames 300] [--batch 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ui_keys import flood_line
from textual.app import App, ComposeResult
from textual.geometry import Region

from sgtui.ui.widgets.log_column import LogColumn
from sgtui.ui.widgets.log_view import LogView


class ColumnApp(App[None]):
    def compose(self) -> ComposeResult:
        yield LogColumn(max_lines=20_000)


async def main(frames: int, batch: int) -> None:
    app = ColumnApp()
    async with app.run_test(size=(120, 40)) as pilot:
        view = app.query_one(LogView)
        view.focus()
        await pilot.pause()
        draw: list[float] = []
        feed: list[float] = []
        n = 0
        for _ in range(frames):
            lines = [flood_line(k) for k in range(n, n + batch)]
            n += batch
            t0 = time.thread_time()
            view.append(lines)
            t1 = time.thread_time()
            size = view.size
            view.render_lines(Region(0, 0, size.width, size.height))
            draw.append(time.thread_time() - t1)
            feed.append(t1 - t0)
        draw.sort()
        feed.sort()
        print(
            f"{frames} frames of {size.height} new rows ({batch:,} lines a frame): render_lines median "
            f"{draw[len(draw) // 2] * 1000:.2f} ms, p95 {draw[int(0.95 * len(draw))] * 1000:.2f} ms CPU; "
            f"append median {feed[len(feed) // 2] * 1000:.2f} ms CPU"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--batch", type=int, default=1000)
    ns = parser.parse_args()
    asyncio.run(main(ns.frames, ns.batch))
