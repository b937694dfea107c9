"""`sgtui explain` against `grep -c` on 1M-line logs of both shapes (run by hand). Target (issue 20): within
10x of `grep -c` on each, in constant memory.

    .venv/bin/python bench/bench_explain_shapes.py [--lines 1000000] [--dir /tmp] [--profile] [--per-line]

Shapes:
- serving: a 0.5.23 startup, then serving lines (bench_classifier.serving_lines: batch stats, access log);
- startup: startup and failure records only: every real log in tests/fixtures/logs and ../shared/logs
  concatenated and repeated up to N lines (milestones, warnings, tracebacks, NCCL chatter, errors), the lines
  that go past the batch/access fast path.

Each shape is timed as `grep -c error FILE` (a search a user would run; GNU grep's `grep -c ''` only counts
newlines and is no baseline) and as `sgtui explain FILE --json` (a fresh interpreter each, best of 3
wall-clock and best of 3 CPU, user + system; peak RSS is the explain process's VmHWM). `--profile` also
prints cProfile's top functions of one in-process `classify_file` per shape; `--per-line` prints the
classifier's CPU time a line (`time.process_time`, best of 3, 100,000 lines) for lines no rule reads;
`--budget` prints where the startup shape's time goes by kind of line (200,000 lines, each line's
`_handle` timed) next to the floor any per-line classifier in CPython pays (the loop, the prefix regex);
`--floor` times, on the 1M-line startup file itself, what a classifier that reads nothing costs: reading
and splitting lines, then only the prefilter's one test a line, then only the prefix split, and the
prefilter's automaton run over whole chunks instead of lines (the "skip what no rule reads in bulk" design).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_classifier import STARTUP, serving_lines

ROOT = Path(__file__).resolve().parent.parent
_CHUNK = 100_000


def write_serving(path: Path, total: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.write(STARTUP.read_text(encoding="utf-8"))
        for start in range(0, total, _CHUNK):
            out.write("\n".join(serving_lines(min(_CHUNK, total - start), seed=start)) + "\n")


def write_startup(path: Path, total: int) -> None:
    sources = sorted((ROOT / "tests" / "fixtures" / "logs").rglob("*.log"))
    shared = ROOT.parent / "shared" / "logs"
    if shared.is_dir():
        sources += sorted(shared.glob("*.log"))
    lines: list[str] = []
    for source in sources:
        lines += source.read_text(encoding="utf-8", errors="replace").splitlines()
    written = 0
    with path.open("w", encoding="utf-8") as out:
        while written < total:
            piece = lines[: total - written]
            out.write("\n".join(piece) + "\n")
            written += len(piece)


def best_of(argv: list[str], runs: int = 3) -> tuple[float, float]:
    """(wall, CPU) seconds, each the best of `runs`: CPU is user + system of the child (on a loaded shared
    box the wall time mostly measures the other processes)."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, check=False, capture_output=True)  # a pipe, not /dev/null: see the docstring
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


_PEAK = (
    "import sys; sys.argv = ['sgtui', 'explain', sys.argv[1], '--json']\n"
    "from sgtui.cli import main\n"
    "try:\n    main(sys.argv[1:])\nfinally:\n"
    "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
    "    print(int(hwm) // 1024, file=sys.stderr)\n"
)


def peak_mib(path: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, str(path)],
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return int(done.stderr.strip().splitlines()[-1])


def profile(path: Path) -> None:
    from sgtui.core.logs import classify_file

    profiler = cProfile.Profile()
    with path.open("rb") as stream:
        profiler.runcall(classify_file, stream)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


PER_LINE = {
    "prefixed note": "[2026-01-01 10:00:{:02d} TP0] Some info message about nothing in particular, value=3.",
    "NCCL INFO": "node-1:2345:2400 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
    "warning": "/usr/lib/python3/site-packages/foo.py:53: UserWarning: Only CUDA, HIP and XPU support AWQ.",
}


def per_line_cpu() -> None:
    from sgtui.core.logs import LogClassifier

    for name, shape in PER_LINE.items():
        text = "\n".join(shape.format(i % 60) for i in range(100_000)) + "\n"
        best = float("inf")
        for _ in range(3):
            classifier = LogClassifier()
            start = time.process_time()
            for i in range(0, len(text), 65536):
                classifier.feed(text[i : i + 65536])
            best = min(best, time.process_time() - start)
        print(f"{name}: {best / 100_000 * 1e6:.2f} us a line (CPU)")


def _kind(raw: str) -> str:
    from sgtui.core.logs.prefilter import may_matter
    from sgtui.core.logs.prefix import split_prefix

    body = split_prefix(raw)[2].rstrip()
    if not body:
        return "empty"
    if body[0] == " ":
        return "indented (traceback frames, source lines)"
    return "read by a rule (an anchor matched)" if may_matter(body, body[0]) else "no rule reads it"


def budget(directory: Path, lines: int = 200_000) -> None:
    """The startup shape's CPU a line by kind, and the floor: what 10x of `grep -c` leaves a line."""
    from collections import defaultdict

    from sgtui.core.logs import LogClassifier
    from sgtui.core.logs.prefix import _SGLANG_PREFIX, split_prefix

    path = directory / f"bench-explain-budget-{lines}.log"
    write_startup(path, lines)
    rows = path.read_text(encoding="utf-8", errors="replace").split("\n")
    path.unlink()
    spent: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    kinds: dict[str, str] = {}
    classifier, events, clock = LogClassifier(), [], time.perf_counter
    for n, raw in enumerate(rows, 1):
        start = clock()
        classifier._handle(raw, n, events)
        took = clock() - start
        kind = kinds.get(raw) or kinds.setdefault(raw, _kind(raw))
        spent[kind] += took
        count[kind] += 1
        events.clear()
    total = sum(spent.values())
    print(f"startup shape, {len(rows):,} lines: {total / len(rows) * 1e6:.2f} us a line in `_handle`")
    for kind in sorted(spent, key=spent.get, reverse=True):
        share = count[kind] / len(rows)
        print(
            f"  {kind}: {share:.0%} of lines, {spent[kind] / count[kind] * 1e6:.2f} us a line, "
            f"{spent[kind] / total:.0%} of the time"
        )
    stamped = [f"[2026-12-01 21:22:{i % 60:02d} TP0] Some info message number {i}" for i in range(lines)]

    def best(step: Callable[[], None]) -> float:
        runs = []
        for _ in range(3):
            start = time.process_time()
            step()
            runs.append(time.process_time() - start)
        return min(runs) / lines * 1e6

    def bare() -> None:
        for raw in stamped:
            if "Decode batch" in raw:
                pass

    def regex() -> None:
        match = _SGLANG_PREFIX.match
        for raw in stamped:
            match(raw)

    def prefix() -> None:
        for raw in stamped:
            split_prefix(raw)

    print("the floor, CPU a line on SGLang-stamped lines:")
    print(f"  loop + one substring test: {best(bare):.2f} us")
    print(f"  + the prefix regex's match: {best(regex):.2f} us")
    print(f"  split_prefix (time, ranks, body): {best(prefix):.2f} us")


def floor(directory: Path, lines: int) -> None:
    """What reading the startup shape costs before any rule runs: 10x of `grep -c` is the budget for all."""
    from sgtui.core.logs.prefilter import _ANY_ANCHOR, ANCHORS
    from sgtui.core.logs.prefix import split_prefix

    path = directory / f"bench-explain-floor-{lines}.log"
    write_startup(path, lines)
    _wall, grep_cpu = best_of(["grep", "-c", "error", str(path)])
    print(f"startup shape, {lines:,} lines: `grep -c error` {grep_cpu:.2f} s CPU; 10x: {10 * grep_cpu:.2f} s")

    def chunks() -> Iterator[str]:
        with path.open("rb") as stream:
            while block := stream.read(1 << 20):
                yield block.decode("utf-8", "replace")

    def per_line(name: str, step: Callable[[str], object]) -> None:
        best = float("inf")
        for _ in range(3):
            start, tail = time.process_time(), ""
            for text in chunks():
                rows = (tail + text).split("\n")
                tail = rows.pop()
                for raw in rows:
                    step(raw)
            best = min(best, time.process_time() - start)
        print(f"  {name}: {best:.2f} s CPU ({best / lines * 1e6:.2f} us a line)")

    per_line("read, decode, split, loop (no test)", lambda raw: None)
    per_line("+ the prefilter's automaton, unindented lines", lambda raw: raw[:1] == " " or _ANY_ANCHOR(raw))
    per_line("+ split_prefix alone, unindented lines", lambda raw: raw[:1] == " " or split_prefix(raw))
    import ahocorasick

    automaton = ahocorasick.Automaton()
    for anchor in ANCHORS:
        automaton.add_word(anchor, anchor)
    automaton.make_automaton()
    best, found = float("inf"), 0
    for _ in range(3):
        start, found = time.process_time(), 0
        for text in chunks():
            text.count("\n")
            for _match in automaton.iter(text):
                found += 1
        best = min(best, time.process_time() - start)
    print(f"  bulk: the automaton over whole 1 MiB chunks, every anchor found ({found:,}): {best:.2f} s CPU")
    import re

    alternation = re.compile("|".join(re.escape(a) for a in sorted(ANCHORS, key=len, reverse=True)))
    head, size = next(chunks()), path.stat().st_size
    for _ in range(15):  # 16 MiB, timed once and scaled to the file: a whole run takes minutes
        head += next(chunks())  # the same first MiB: the same text density
    start = time.process_time()
    for _match in alternation.finditer(head):
        pass
    took = time.process_time() - start
    print(f"  bulk: `re` with every anchor as one alternation: {took * size / len(head):.1f} s CPU (scaled)")
    path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--dir", default="/tmp")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--per-line", action="store_true")
    parser.add_argument("--budget", action="store_true")
    parser.add_argument("--floor", action="store_true")
    args = parser.parse_args()
    if args.floor:
        floor(Path(args.dir), args.lines)
        return
    if args.per_line:
        per_line_cpu()
        return
    if args.budget:
        budget(Path(args.dir))
        return
    explain = [sys.executable, "-m", "sgtui.cli", "explain"]
    print(
        "| shape | lines | `grep -c error` wall / CPU | `sgtui explain --json` wall / CPU | ratio (CPU) "
        "| peak RSS |"
    )
    print("|---|---|---|---|---|---|")
    for shape, writer in (("serving", write_serving), ("startup", write_startup)):
        path = Path(args.dir) / f"bench-explain-{shape}-{args.lines}.log"
        writer(path, args.lines)
        grep_wall, grep_cpu = best_of(["grep", "-c", "error", str(path)])
        wall, cpu = best_of([*explain, str(path), "--json"])
        print(
            f"| {shape} | {args.lines:,} | {grep_wall:.2f} / {grep_cpu:.2f} s | {wall:.2f} / {cpu:.2f} s | "
            f"{cpu / max(grep_cpu, 0.01):.0f}x | {peak_mib(path)} MiB |"
        )
        if args.profile:
            profile(path)
        path.unlink()


if __name__ == "__main__":
    main()
