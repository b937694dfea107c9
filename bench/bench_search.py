"""The log view's search over 20,000 kept lines (run by hand): ms per search, one pass against the per-line
loop it replaces (same results, asserted). Target: within a frame (16 ms). Times are CPU time of this
thread (a loaded box stretches wall time; the frame budget is the app's own CPU).

    .venv/bin/python bench/bench_search.py [--lines 20000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ui_keys import flood_line

from sgtui.ui.widgets.log_search import Search
from sgtui.ui.widgets.log_store import LineStore

QUERIES = (
    ("token usage: 0\\.4", "regex, case-insensitive"),
    ("deadline", "word, case-insensitive"),
    ("Decode batch", "word, case-sensitive"),
    ("[/opt/x", "not a regex: literal"),
    ("^\\[2026.*TP1\\]", "anchored regex"),
    ("out of memory", "no match"),
)


def ms(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        fn()  # type: ignore[operator]
        times.append(time.thread_time() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    store = LineStore(args.lines)
    store.append(flood_line(i) for i in range(args.lines))
    lines = store.lines
    print(f"{len(lines):,} kept lines, median of {args.repeat}:")
    for query, what in QUERIES:
        search = Search.parse(query)
        assert search is not None
        loop = [i for i, line in enumerate(lines) if search.matches(line)]
        assert search.lines(lines) == loop
        old = ms(lambda s=search: [i for i, line in enumerate(lines) if s.matches(line)], args.repeat)
        new = ms(lambda q=query: store.set_search(q), args.repeat)
        print(f"  {query!r:22} ({what}): {len(loop):,} matches, per-line {old:.1f} ms, store {new:.1f} ms")


if __name__ == "__main__":
    main()
