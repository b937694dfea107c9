"""A login shell whose ~/.bashrc prints (Debian bash sources it for SSH commands, here via SSH_CLIENT):
nothing sgtui parses may be confused by it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sgtui.remote.connection import Connection
from sgtui.remote.gpu import GpuSampler
from sgtui.remote.runs import RunManager, RunState
from sgtui.remote.tail import LogChunk, follow, read_rest
from sgtui.remote.targets import Target
from sgtui.sim.sshserver import SimSSHServer

from .conftest import host_env, pinned_connection
from .fakes import fake_gpu_host, gpu_rows
from .test_runs import SERVER

BANNER = "Welcome to gpu1 0, GPU-0, fake, 1, 2, 3"  # even a line that looks like nvidia-smi output


@pytest.fixture
async def chatty(fake_bin: Path, tmp_path: Path) -> AsyncIterator[Connection]:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text(f'echo "{BANNER}"\necho "pyenv: noise" >&2\n')
    env = host_env(fake_bin) | {"HOME": str(home), "SSH_CLIENT": "127.0.0.1 40000 22"}
    server = await SimSSHServer(env=env).start()
    conn = pinned_connection(server, tmp_path)
    assert (await conn.run("true")).stdout.startswith("Welcome to gpu1"), "the fixture must really be chatty"
    yield conn
    await conn.close()
    await server.close()


async def test_the_banner_is_not_counted_as_log_bytes(chatty: Connection, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("one\ntwo\n")
    chunks = []
    async for chunk in follow(chatty, str(log)):
        chunks.append(chunk)
        if sum(len(c.lines) for c in chunks) >= 2:
            break
    assert [ln for c in chunks for ln in c.lines] == ["one", "two"]
    assert chunks[-1].end == log.stat().st_size
    with log.open("a") as fh:
        fh.write("last words")
    assert await read_rest(chatty, str(log), offset=chunks[-1].end) == LogChunk(["last words"], 8, 18)


async def test_runs_launch_report_and_stop(chatty: Connection, tmp_path: Path) -> None:
    script = tmp_path / "fake-server"
    script.write_text(SERVER)
    script.chmod(0o755)
    mgr = RunManager(chatty, Target(), str(tmp_path / "runs"))
    run = await mgr.launch([str(script)])
    assert run.pid > 1 and "Welcome" not in Path(run.log_path).read_text()
    assert (await mgr.status(run)).state is RunState.RUNNING
    assert [r.id for r in await mgr.list_runs()] == [run.id]
    assert (await mgr.stop(run, grace=2)).members == 0


async def test_gpu_readings_ignore_the_banner(chatty: Connection, fake_bin: Path, tmp_path: Path) -> None:
    fake_gpu_host(fake_bin, tmp_path / "gpus", gpus=gpu_rows(2))
    snap = await GpuSampler(chatty).query()
    assert [g.uuid for g in snap.gpus] == ["GPU-0000", "GPU-0001"]
    stream = GpuSampler(chatty, interval_ms=50).stream()
    try:
        for _ in range(2):
            got = await asyncio.wait_for(anext(stream), 5)
            assert [g.uuid for g in got.gpus] == ["GPU-0000", "GPU-0001"]
    finally:
        await stream.aclose()
