"""The real SGLang 0.5.23 on CPU (the real-SGLang tier's environment): install time and size, time to ready,
and the stop: TERM to the server's main process (graceful) against TERM to its whole process group.

    .venv/bin/python bench/bench_real_sglang.py [--install DIR] [--runs N]

--install DIR: a cold install of the tier's pinned set into DIR (removed first), timed, then its size.
Each run starts the server twice straight from a shell (tests/real_sglang/capture.py: tiny model, --device
cpu, HF_HUB_OFFLINE=1) and stops it once each way; it prints the seconds to ready, until the port was free
and until the process group was gone. Runs one server at a time (the idle scheduler busy-polls a core).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def du_gib(path: Path) -> float:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0]) / 2**30


def install(target: Path) -> None:
    from tests.real_sglang import harness

    shutil.rmtree(target, ignore_errors=True)
    t0 = time.monotonic()
    harness.ensure_venv(target)
    took = time.monotonic() - t0
    pkgs = len(
        subprocess.run(
            [str(target / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    )
    print(f"install: {took:.0f} s, {du_gib(target):.1f} GiB, {pkgs} packages in {target}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--install", type=Path, help="time a cold install into this folder first")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    if args.install:
        install(args.install)
        os.environ["SGTUI_REAL_SGLANG_DIR"] = str(args.install)
    from tests.real_sglang.capture import CASES, run_case
    from tests.real_sglang.harness import build_env

    env, _ = build_env()
    by_name = {c.name: c for c in CASES}
    rows: dict[str, list[dict[str, object]]] = {"group": [], "main": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            for how, case in (("group", by_name["ready"]), ("main", by_name["stop-term-main"])):
                result = run_case(env, case, Path(tmp))
                rows[how].append(result)
                print(how, {k: result.get(k) for k in ("ready_s", "port_free_after_s", "group_gone_after_s")})
    for how, results in rows.items():
        for key in ("ready_s", "port_free_after_s", "group_gone_after_s"):
            values = [float(r[key]) for r in results if isinstance(r.get(key), (int, float))]
            if values:
                print(
                    f"TERM to {how}: {key} median {statistics.median(values):.2f} "
                    f"(min {min(values):.2f}, max {max(values):.2f}, n={len(values)})"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
