"""How long `sgtui fit` takes end to end, what it imports, and what one run costs in process.

Run by hand: `.venv/bin/python bench/bench_fit_cli.py [--runs N]`. The wall time is a fresh interpreter
per run (`python -m sgtui fit ...`, as a user or a script calls it), median of N; the import set is taken
in a fresh interpreter after one fit, so anything heavy that slipped in shows up by name.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run by hand as a script: the shared test cases live in tests/cases.py

from tests.cases import EXAMPLE_A_FLAGS, LLAMA, QWEN35  # noqa: E402

# worked example A up to the algorithm: the draft shape is left to the defaults here
EXAMPLE_A_UP_TO_ALGO = EXAMPLE_A_FLAGS[: EXAMPLE_A_FLAGS.index("NEXTN") + 1]
CASES = {
    "Llama-3.1-8B, H100, defaults": ["--config", str(LLAMA), "--gpu", "H100-80G", "--", "--tp-size", "1"],
    "Qwen3.5-27B, 2xA6000, NEXTN, 0.5.9 (fails: advice searches)": [
        *("--config", str(QWEN35), "--gpu", "A6000", "--sglang", "0.5.9"),
        *("--free-gib", "47", "--weights-gib", "25.5", "--", *EXAMPLE_A_UP_TO_ALGO),
    ],
}
HEAVY = ("textual", "asyncssh", "pynvml", "plotext", "textual_plotext", "platformdirs", "yaml", "rich")


CPU: dict[str, list[float]] = {}  # the same runs' CPU seconds (user + sys): steadier than wall on a busy box


def wall_times(argv: list[str], runs: int) -> list[float]:
    import resource

    times = []
    cpu = CPU.setdefault(" ".join(argv), [])
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "sgtui", "fit", *argv], capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode not in (0, 3):  # 3: the verdict is "fails", still a full answer
            raise SystemExit(f"sgtui fit failed: {proc.stderr.strip()}")
    return times


def import_set(argv: list[str]) -> dict[str, object]:
    code = (
        "import sys, json, io, contextlib\n"
        "from sgtui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['fit', *{argv!r}])\n"
        "mods = sorted(sys.modules)\n"
        "print(json.dumps({'count': len(mods), 'sgtui': [m for m in mods if m.startswith('sgtui')],\n"
        f"    'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def in_process(argv: list[str], repeats: int = 100) -> float:
    """Median milliseconds of the whole command run in process (flags, config read, fit with advice,
    JSON), i.e. what the UI's fit panel pays per keystroke plus the file read."""
    import contextlib
    import io

    from sgtui.cli import main as sgtui_main

    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            sgtui_main(["fit", "--json", *argv])
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    baseline = wall_times(["--help"], args.runs)
    print(f"python -m sgtui fit --help: median {statistics.median(baseline) * 1000:.0f} ms")
    for name, argv in CASES.items():
        times = wall_times(argv, args.runs)
        cpu = CPU[" ".join(argv)]
        print(
            f"{name}: median {statistics.median(times) * 1000:.0f} ms, "
            f"min {min(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms ({args.runs} runs); "
            f"CPU median {statistics.median(cpu) * 1000:.0f} ms, min {min(cpu) * 1000:.0f} ms"
        )
    imports = import_set(CASES["Llama-3.1-8B, H100, defaults"])
    print(f"modules loaded after one fit: {imports['count']}; heavy: {imports['heavy'] or 'none'}")
    print(f"sgtui modules: {', '.join(imports['sgtui'])}")
    for name, argv in CASES.items():
        print(f"in process, {name}: median {in_process(argv):.2f} ms")


if __name__ == "__main__":
    main()
