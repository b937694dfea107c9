"""`sgtui explain` peak memory and speed on generated serving logs (run by hand). Target: peak RSS under
150 MiB at any size, the 3M-line log no larger than the 1M-line one; about 2M lines/s.

    .venv/bin/python bench/bench_explain_memory.py [--lines 1000000 3000000] [--dir /tmp]

Each log is a 0.5.23 startup then N serving lines (bench_classifier.serving_lines); each is also written as
a newest-first cloud export (read backwards) and piped to `explain -` on stdin. Every run is a fresh
`sgtui explain FILE --json` interpreter; peak RSS is that process's own high-water mark (VmHWM in
/proc/self/status at exit: unlike ru_maxrss it does not count the parent's image the child was forked from).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_classifier import STARTUP, serving_lines

_CHUNK = 100_000


def write_log(path: Path, total: int, newest_first: bool = False) -> None:
    """Write the log in pieces (the generator's memory stays small); an export stamps and reverses it."""
    startup = STARTUP.read_text(encoding="utf-8").splitlines()
    if not newest_first:
        with path.open("w", encoding="utf-8") as out:
            out.write("\n".join(startup) + "\n")
            for start in range(0, total, _CHUNK):
                out.write("\n".join(serving_lines(min(_CHUNK, total - start), seed=start)) + "\n")
        return
    # newest first: write oldest-first pieces to temp files, then concatenate them in reverse
    pieces: list[Path] = []
    stamp = 0

    def stamped(lines: list[str]) -> list[str]:
        nonlocal stamp
        out = []
        for line in lines:
            stamp += 1
            seconds = stamp // 1000
            out.append(
                f"INFO 2026-05-10T{9 + seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}."
                f"{stamp % 1000:03d}Z {line}"
            )
        return out

    blocks = [startup] + [(start, min(_CHUNK, total - start)) for start in range(0, total, _CHUNK)]
    for i, block in enumerate(blocks):
        lines = block if isinstance(block, list) else serving_lines(block[1], seed=block[0])
        piece = path.with_suffix(f".{i}")
        piece.write_text("\n".join(reversed(stamped(lines))) + "\n", encoding="utf-8")
        pieces.append(piece)
    with path.open("wb") as out:
        for piece in reversed(pieces):
            out.write(piece.read_bytes())
            piece.unlink()


def measure(argv: list[str], stdin_path: Path | None = None) -> tuple[float, float, str]:
    """(peak RSS MiB, seconds, outcome) of one fresh `python -m sgtui explain ...`; `stdin_path` is fed
    through a real pipe (`cat FILE |`), which cannot seek."""
    cat = subprocess.Popen(["cat", str(stdin_path)], stdout=subprocess.PIPE) if stdin_path else None
    stdin = cat.stdout if cat else subprocess.DEVNULL
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, *argv], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    if cat and cat.stdout:
        cat.stdout.close()
    out, err = proc.communicate()
    elapsed = time.perf_counter() - start
    if cat:
        cat.wait()
    assert proc.returncode == 0, err[-500:]
    import json

    outcome = json.loads(out)["outcome"]
    hwm_kib = int(err.decode().rsplit("VmHWM:", 1)[1].split()[0])
    return hwm_kib / 1024, elapsed, outcome


_CHILD = """
import sys
from sgtui.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
status = open('/proc/self/status').read()
sys.stderr.write([line for line in status.splitlines() if line.startswith('VmHWM:')][0] + '\\n')
sys.exit(code)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[1_000_000, 3_000_000])
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="sgtui-bench-"))
    idle, _, _ = measure(["explain", str(STARTUP), "--json"])
    print(f"baseline (the startup fixture alone): {idle:.0f} MiB")
    print("| log | size | peak RSS | wall | lines/s | outcome |")
    print("|---|---|---|---|---|---|")
    for total in args.lines:
        for newest_first in (False, True):
            path = base / f"serving-{total}{'-export' if newest_first else ''}.log"
            write_log(path, total, newest_first)
            size = path.stat().st_size / 2**20
            count = total + len(STARTUP.read_text(encoding="utf-8").splitlines())
            kind = "newest-first export" if newest_first else "file"
            rss, secs, outcome = measure(["explain", str(path), "--json"])
            print(
                f"| {total:,} lines, {kind} | {size:.0f} MiB | {rss:.0f} MiB | {secs:.1f} s | "
                f"{count / secs:,.0f} | {outcome} |"
            )
            if not newest_first:
                rss, secs, outcome = measure(["explain", "-", "--json"], stdin_path=path)
                print(
                    f"| {total:,} lines, `explain -` from a pipe | {size:.0f} MiB | {rss:.0f} MiB | "
                    f"{secs:.1f} s | {count / secs:,.0f} | {outcome} |"
                )
            path.unlink()


if __name__ == "__main__":
    main()
