"""The classifier's CPU on one shape, in process: run it once with the tree to measure and once with an older
tree on PYTHONPATH (run by hand; the script lives outside the package, so PYTHONPATH decides which sgtui is
imported; `python -m sgtui.cli` from the repo's root would always import the repo's own).

    git archive <old commit> sgtui | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old .venv/bin/python bench/bench_classifier_old_new.py --label old
    .venv/bin/python bench/bench_classifier_old_new.py --label new  # interleave a few times; the minimum
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="this tree")
    parser.add_argument("--shape", choices=("startup", "serving"), default="startup")
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default="/tmp")
    args = parser.parse_args()
    from bench_explain_shapes import write_serving, write_startup

    from sgtui.core.logs import classify_file

    path = Path(args.dir) / f"bench-classifier-{args.shape}-{args.lines}.log"
    if not path.exists():  # the same file for both trees (the startup shape grows with the fixtures)
        (write_startup if args.shape == "startup" else write_serving)(path, args.lines)
    best = float("inf")
    for _ in range(args.runs):
        start = time.process_time()
        with path.open("rb") as stream:
            classify_file(stream)
        best = min(best, time.process_time() - start)
    per_line = best / args.lines * 1e6
    print(f"{args.label}: {args.shape} {args.lines:,} lines {best:.3f} s CPU ({per_line:.2f} us a line)")


if __name__ == "__main__":
    main()
