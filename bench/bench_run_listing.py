"""How long the runs listing takes on the target as run dirs pile up (every launch leaves one).

The listing checks every run dir (owner, mode, not a symlink) before reading it, so its cost grows with
the number of runs. It runs the listing script with bash directly, as the target would, on N planted run
dirs in a private temp dir, and also the status script of one record, for scale.

Run by hand from the repository root:
    .venv/bin/python bench/bench_run_listing.py [--runs 100 500] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sgtui.core import runscripts
from sgtui.remote.run_records import parse_run_listing
from sgtui.remote.targets import Target


def plant(runs: Path, n: int) -> None:
    runs.mkdir(mode=0o700)
    for i in range(n):
        d = runs / f"20260101-{i // 60:04d}{i % 60:02d}-{i:06x}"
        d.mkdir(mode=0o700)
        (d / "run.json").write_text(
            json.dumps({"pid": 4242, "pgid": 4242, "sid": 4242, "start": 5, "boot": "b"})
        )
        command = {"argv": ["/opt/sglang/venv/bin/python", "-m", "sglang.launch_server", "--tp", "2"]}
        (d / "command.json").write_text(
            json.dumps({**command, "env": {}, "gpus": [0, 1], "target": {"kind": "host"}})
        )


def timed(script: str, repeat: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(repeat):
        t0 = time.monotonic()
        out = subprocess.run(
            ["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True
        ).stdout
        times.append(time.monotonic() - t0)
    return statistics.median(times), out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[100, 500])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for n in args.runs:
        with tempfile.TemporaryDirectory() as tmp:
            runs = Path(tmp) / "runs"
            plant(runs, n)
            median, out = timed(runscripts.list_script(str(runs)), args.repeat)
            listed = parse_run_listing(out, "h", Target(), str(runs))
            assert len(listed) == n and not any(r.foreign for r in listed)
            print(f"list {n:4d} runs: {median * 1000:7.0f} ms median of {args.repeat}")
    status = runscripts.status_script(4_000_000, 5, None, "/nonexistent/server.log")
    median, _ = timed(status, args.repeat)
    print(f"status of one run (for scale): {median * 1000:5.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
