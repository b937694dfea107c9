"""How long flag parsing and profile validation take: the launch form re-parses on every keystroke, and
`sgtui fit` pays the flag-table import on every run.

    .venv/bin/python bench/bench_flags.py
"""

from __future__ import annotations

import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QWEN_ARGV = shlex.split(
    "--model-path /models/Qwen3.6-27B --tp-size 2 --mem-fraction-static 0.85 --context-length 32768 "
    "--speculative-algo NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 4 --reasoning-parser qwen3 --tool-call-parser qwen3_coder"
)


def per_call_us(fn: Callable[[], object], seconds: float = 1.0) -> float:
    """Median over batches of the per-call time, in microseconds."""
    fn()
    batches: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(batches) < 5:
        start = time.perf_counter()
        for _ in range(100):
            fn()
        batches.append((time.perf_counter() - start) / 100 * 1e6)
    return statistics.median(batches)


def import_ms(module: str, runs: int = 7) -> float:
    """Median wall time of importing `module` in a fresh interpreter, minus a bare interpreter's start."""

    def run(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
        return time.perf_counter() - start

    bare = statistics.median(run("pass") for _ in range(runs))
    loaded = statistics.median(run(f"import {module}") for _ in range(runs))
    return (loaded - bare) * 1e3


def first_table_ms() -> float:
    """What the first parse for a release not used before pays to build its view of the table."""
    from sgtui.core.sglang.flag_table import shipped_table, table_for

    samples = []
    for release in ("0.5.14", "0.5.18", "0.5.20", "0.4.6.post5", "0.5.10"):
        shipped_table.cache_clear()
        table_for.cache_clear()
        start = time.perf_counter()
        table_for(release)
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def main() -> None:
    sys.path.insert(0, str(REPO))
    from sgtui.core.profiles import dump_profile, load_profile, parse_profile
    from sgtui.core.sglang.flags import FLAGS, RELEASES, parse_argv, spec_from_values, to_argv

    values = parse_argv(QWEN_ARGV, "0.5.9").values
    profile_path = REPO / "profiles" / "qwen36-27b-2xa6000.yaml"
    profile_text = profile_path.read_text()
    profile = load_profile(profile_path)
    rows = [
        (
            "import sgtui.core.sglang.flags (fresh interpreter)",
            f"{import_ms('sgtui.core.sglang.flags'):.0f} ms",
        ),
        ("flags in the table", f"{len(FLAGS)} over {len(RELEASES)} releases"),
        ("first use of one release's table (table_for, uncached)", f"{first_table_ms():.1f} ms"),
        (
            "parse_argv, Qwen 2xA6000 launch (10 flags, 1 abbreviation)",
            f"{per_call_us(lambda: parse_argv(QWEN_ARGV, '0.5.9')):.0f} µs",
        ),
        ("spec_from_values, same values", f"{per_call_us(lambda: spec_from_values(values, '0.5.9')):.0f} µs"),
        ("to_argv, same values", f"{per_call_us(lambda: to_argv(values)):.0f} µs"),
        (
            "parse_profile, qwen36-27b-2xa6000.yaml",
            f"{per_call_us(lambda: parse_profile(profile_text, 'p.yaml')):.0f} µs",
        ),
        ("dump_profile, same profile", f"{per_call_us(lambda: dump_profile(profile)):.0f} µs"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
