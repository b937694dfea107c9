"""Round trip of one short command through `docker exec` against the same command on the bare host.

    .venv/bin/python bench/bench_docker_exec.py [N]

Needs a running dockerd and the image the docker test tier builds (it builds and removes its own).
Both go through sgtui's LocalTransport and Target wrapping, exactly as a run status check does.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sgtui.remote.connection import LocalTransport
from sgtui.remote.targets import Target
from tests.docker.dockerd import LABEL, SESSION, docker, remove_ours, run_container
from tests.docker.image import build_rootfs, import_image


async def timed(conn: LocalTransport, target: Target, n: int) -> list[float]:
    cmd = target.script("echo ok")
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        result = await conn.run(cmd, timeout=30)
        out.append((time.perf_counter() - t0) * 1000)
        assert result.stdout.strip() == "ok", result
    return out


def summary(ms: list[float]) -> str:
    ms = sorted(ms)
    return f"median {statistics.median(ms):.1f} ms, p95 {ms[int(len(ms) * 0.95) - 1]:.1f} ms"


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        root = build_rootfs(Path(tmp) / "root")
        tag = f"sgtui-bench:{SESSION}"
        import_image(root, tag, label=f"{LABEL}={SESSION}")
        print(f"image built and imported in {time.perf_counter() - t0:.1f} s")
    try:
        run_container(tag, f"sgtui-bench-{SESSION}", ["--init", "--network", "none"], ["sleep", "infinity"])
        conn = LocalTransport("bench")
        await timed(conn, Target("docker", f"sgtui-bench-{SESSION}"), 3)  # warm up
        host = await timed(conn, Target(), n)
        inside = await timed(conn, Target("docker", f"sgtui-bench-{SESSION}"), n)
        print(f"bare host bash -c ({n}x): {summary(host)}")
        print(f"docker exec bash -c ({n}x): {summary(inside)}")
        print(f"docker exec adds {statistics.median(inside) - statistics.median(host):.1f} ms (median)")
    finally:
        remove_ours()
        docker("ps", "-a")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
