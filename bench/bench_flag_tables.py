"""What the per-release flag tables cost: loading them, importing the flag module, `sgtui fit`, and the
payload that reads a target's own table. Optionally beside an older checkout (`--base DIR`, e.g. from
`git archive <commit> | tar -x -C DIR`), run alternately so both see the same load.

    .venv/bin/python bench/bench_flag_tables.py [--base /tmp/flags-base] [--runs 20] [--wheel-dir DIR]

CPU seconds (user + sys of the child) are reported beside wall time: on a shared box the wall time
mostly measures the neighbours. Children run with bytecode caching on (PYTHONDONTWRITEBYTECODE unset, one
warm-up run first), as an installed sgtui has it: without .pyc files every run recompiles every module and
the numbers measure the compiler. `--wheel-dir DIR` holds unpacked releases (DIR/0.5.22/sglang/...).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIT_ARGS = [
    "fit",
    "--config",
    "tests/fixtures/models/llama3_1_8b",
    "--gpu",
    "H100-80G",
    "--",
    "--tp-size",
    "1",
]


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def child(argv: list[str], cwd: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, max RSS KiB) of one child process (its own rusage, from wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {err.strip()[-300:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def summary(samples: list[tuple[float, float, int]]) -> str:
    walls = [s[0] * 1e3 for s in samples]
    cpus = [s[1] * 1e3 for s in samples]
    return (
        f"CPU median {statistics.median(cpus):.0f} ms (min {min(cpus):.0f}), "
        f"wall median {statistics.median(walls):.0f} ms (min {min(walls):.0f})"
    )


def table_load_ms(tree: Path, module: str) -> str:
    code = (
        "import statistics, time, importlib\n"
        f"m = importlib.import_module({module!r})\n"
        "fn = getattr(m, '_load', None) or getattr(m, '_load_table')\n"
        "s = []\n"
        "for _ in range(30):\n"
        "    t = time.process_time(); fn(); s.append(time.process_time() - t)\n"
        "print(f'{statistics.median(s) * 1e3:.1f} ms CPU (min {min(s) * 1e3:.1f})')\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, check=True, env=ENV
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--base", type=Path, help="an older checkout to compare with (sgtui/core/flags.py era)"
    )
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--wheel-dir", type=Path, help="unpacked releases, for the payload's cost")
    args = parser.parse_args()
    trees = {"this tree": (REPO, "sgtui.core.sglang.flag_table", "sgtui.core.sglang.flags")}
    if args.base:
        trees["base"] = (args.base, "sgtui.core.flags", "sgtui.core.flags")
    for name, (tree, table_module, _) in trees.items():
        print(f"{name}: table load in process: {table_load_ms(tree, table_module)}")
    samples: dict[str, list[tuple[float, float, int]]] = {}
    for tree, _, flags_module in trees.values():  # warm-up: writes the .pyc files
        child([sys.executable, "-c", f"import {flags_module}"], tree)
        child([sys.executable, "-m", "sgtui", *FIT_ARGS], tree)
    for _ in range(args.runs):  # alternate, so both trees see the same neighbours
        samples.setdefault("bare interpreter", []).append(child([sys.executable, "-c", "pass"], REPO))
        for name, (tree, _, flags_module) in trees.items():
            imp = child([sys.executable, "-c", f"import {flags_module}"], tree)
            samples.setdefault(f"{name}: import {flags_module}", []).append(imp)
            samples.setdefault(f"{name}: sgtui fit (Llama-3.1-8B, H100)", []).append(
                child([sys.executable, "-m", "sgtui", *FIT_ARGS], tree)
            )
    for name, got in samples.items():
        print(f"{name}: {summary(got)} ({args.runs} runs)")
    if args.wheel_dir:
        payload = REPO / "sgtui" / "remote" / "flag_payload.py"
        for release in ("0.4.6.post5", "0.5.10", "0.5.18", "0.5.23"):
            root = args.wheel_dir / release
            if (root / "sglang").is_dir():
                runs = [child([sys.executable, str(payload), str(root)], REPO) for _ in range(3)]
                rss = max(r[2] for r in runs) / 1024
                print(f"payload on {release}: {summary(runs)}, max RSS {rss:.0f} MiB (3 runs)")


if __name__ == "__main__":
    main()
