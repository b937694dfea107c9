"""Log classifier throughput (run by hand): typical serving-log lines per second on one core, and the cost
of one 200 kB line. Targets: >= 200,000 lines/s; a 200 kB line in < 1 ms.

    .venv/bin/python bench/bench_classifier.py [--lines 1000000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import time
from pathlib import Path

from sgtui.core.logs import LogClassifier

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "logs"
STARTUP = FIXTURES / "v0523_ready_hybrid_mtp.log"


def serving_lines(n: int, seed: int = 1) -> list[str]:
    """What a busy server prints after startup: batch stats, access log lines, the odd other record."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(n):
        stamp = f"[2026-05-10 09:{(i // 600) % 60:02d}:{(i // 10) % 60:02d} TP{rng.randint(0, 1)}]"
        roll = rng.random()
        if roll < 0.45:
            out.append(
                f"{stamp} Decode batch, #running-req: {rng.randint(1, 64)}, "
                f"#token: {rng.randint(1000, 90000)}, token usage: 0.{rng.randint(1, 99):02d}, "
                f"accept len: 2.{rng.randint(0, 99):02d}, cuda graph: True, "
                f"gen throughput (token/s): {rng.uniform(50, 900):.2f}, #queue-req: {rng.randint(0, 5)}"
            )
        elif roll < 0.60:
            out.append(
                f"{stamp} Prefill batch, #new-seq: 1, #new-token: {rng.randint(10, 8000)}, #cached-token: "
                f"{rng.randint(0, 4000)}, token usage: 0.{rng.randint(1, 99):02d}, "
                f"#running-req: {rng.randint(0, 64)}, #queue-req: 0"
            )
        elif roll < 0.95:
            out.append(
                f"[2026-05-10 09:00:00] INFO:     10.0.0.{rng.randint(2, 250)}:{rng.randint(20000, 60000)} - "
                f'"POST /v1/chat/completions HTTP/1.1" 200 OK'
            )
        else:
            out.append(
                f"{stamp} Cache flushed successfully!"
                if roll < 0.97
                else f"[2026-05-10 09:00:00] WARNING: request {i} finished with reason length"
            )
    return out


def lines_per_second(total: int) -> tuple[float, int]:
    text = STARTUP.read_text(encoding="utf-8") + "\n".join(serving_lines(total)) + "\n"
    chunks = [text[i : i + 65536] for i in range(0, len(text), 65536)]
    classifier = LogClassifier()
    start = time.perf_counter()
    for chunk in chunks:
        classifier.feed(chunk)
    classifier.finish()
    elapsed = time.perf_counter() - start
    assert classifier.state.phase == "ready", classifier.state.phase
    return classifier.line_count / elapsed, classifier.line_count


def startup_lines_per_second(copies: int) -> float:
    """The worst case: only startup and failure records (every line past the batch/access fast path)."""
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.log"))) * copies
    classifier = LogClassifier()
    start = time.perf_counter()
    for i in range(0, len(text), 65536):
        classifier.feed(text[i : i + 65536])
    classifier.finish()
    return classifier.line_count / (time.perf_counter() - start)


def long_line_ms(kind: str, repeats: int = 50) -> float:
    rng = random.Random(2)
    if kind == "text":
        body = "".join(rng.choices(string.ascii_letters + string.digits + " =,.:[]", k=200_000))
        line = "[2026-05-10 09:00:00 TP0] " + body
    elif kind == "progress":
        line = "".join(
            f"\rCapturing batches (bs={i} avail_mem=3.1 GB): {i % 100}%|###| {i}/9999" for i in range(4000)
        )
        line = line[:200_000]
    else:
        line = "".join(chr(rng.randint(0, 255)) for _ in range(200_000)).replace("\n", " ")
    times = []
    for _ in range(repeats):
        classifier = LogClassifier()
        start = time.perf_counter()
        classifier.feed(line + "\n")
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    args = parser.parse_args()
    rates = [lines_per_second(args.lines)[0] for _ in range(3)]
    print(f"typical serving log: {max(rates):,.0f} lines/s (best of 3, {args.lines:,} lines, 64 KiB chunks)")
    print(f"startup and failure records only: {startup_lines_per_second(500):,.0f} lines/s")
    for kind in ("text", "progress", "binary"):
        print(f"one 200 kB {kind} line: {long_line_ms(kind):.3f} ms (median of 50)")


if __name__ == "__main__":
    main()
