"""Following a log over SSH: chunks of complete lines, byte offsets, and no loss across disconnects."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

from sgtui.remote.connection import Connection
from sgtui.remote.tail import LogChunk, follow, read_rest, split_complete
from sgtui.remote.targets import Target
from sgtui.sim.sshserver import SimSSHServer

from .conftest import SYSTEM_PATH, host_env, pinned_connection
from .fakes import install_fake_pct


async def _collect(
    conn: Connection, path: Path, until_lines: int, offset: int = 0, **kw: object
) -> list[LogChunk]:
    chunks: list[LogChunk] = []
    count = 0
    async for chunk in follow(conn, str(path), offset=offset, **kw):  # type: ignore[arg-type]
        chunks.append(chunk)
        count += len(chunk.lines)
        if count >= until_lines:
            break
    return chunks


def test_only_complete_lines_are_split_off() -> None:
    assert split_complete(b"a\nb\npart") == (b"a\nb\n", b"part")
    assert split_complete(b"part") == (b"", b"part")
    assert split_complete(b"") == (b"", b"")


async def test_lines_arrive_in_chunks_with_byte_offsets(conn: Connection, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes("".join(f"line {i} ✓\n" for i in range(5000)).encode())
    chunks = await asyncio.wait_for(_collect(conn, log, 5000), 10)
    lines = [ln for c in chunks for ln in c.lines]
    assert lines == [f"line {i} ✓" for i in range(5000)]
    assert len(chunks) < 100, "one list per read, not one await per line"
    assert chunks[0].start == 0 and chunks[-1].end == log.stat().st_size
    assert all(a.end == b.start for a, b in itertools.pairwise(chunks))


async def test_a_partial_line_waits_for_its_newline(conn: Connection, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"first\nsec")
    gen = follow(conn, str(log))
    first = await asyncio.wait_for(anext(gen), 5)
    assert first.lines == ["first"] and first.end == 6
    nxt = asyncio.ensure_future(anext(gen))
    await asyncio.sleep(0.2)
    assert not nxt.done()
    with log.open("ab") as fh:
        fh.write(b"ond\n")
    second = await asyncio.wait_for(nxt, 5)
    assert second.lines == ["second"] and second.start == 6
    await gen.aclose()


async def test_resuming_from_an_offset_skips_what_was_delivered(conn: Connection, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("a\nbb\nccc\n")
    chunks = await asyncio.wait_for(_collect(conn, log, 1, offset=2), 5)
    assert chunks[0].lines == ["bb", "ccc"] and chunks[0].start == 2


async def test_no_line_is_lost_or_repeated_across_repeated_disconnects(
    sim_server: SimSSHServer, conn: Connection, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    total = 6000

    async def writer() -> None:
        with log.open("a") as fh:
            for i in range(total):
                fh.write(f"{i:06d} {'x' * (i % 50)}\n")
                if i % 20 == 0:
                    fh.flush()
                    await asyncio.sleep(0.005)

    async def chaos() -> None:
        for _ in range(5):
            await asyncio.sleep(0.15)
            await sim_server.abort_connections()

    reconnects: list[int] = []
    writing = asyncio.ensure_future(writer())
    breaking = asyncio.ensure_future(chaos())
    chunks = await asyncio.wait_for(_collect(conn, log, total, on_reconnect=reconnects.append), 30)
    await writing
    await breaking
    lines = [ln for c in chunks for ln in c.lines]
    assert len(reconnects) >= 3
    assert lines == log.read_text().splitlines()
    assert chunks[-1].end == log.stat().st_size


async def test_a_log_inside_a_pct_container_is_followed_through_pct(fake_bin: Path, tmp_path: Path) -> None:
    install_fake_pct(fake_bin, SYSTEM_PATH)
    server = await SimSSHServer(env=host_env(fake_bin)).start()
    conn = pinned_connection(server, tmp_path)
    log = tmp_path / "ct log ü.log"
    log.write_text("ready\n")
    try:
        chunks = await asyncio.wait_for(_collect(conn, log, 1, target=Target("pct", "129")), 5)
        assert chunks[0].lines == ["ready"]
    finally:
        await conn.close()
        await server.close()


async def test_multibyte_characters_split_across_reads_arrive_whole(conn: Connection, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    text = "".join(f"modèle ✓ {i} 日本語 🚀\n" for i in range(200))
    log.write_bytes(text.encode())
    # 7-byte reads cut through nearly every multi-byte character
    chunks = await asyncio.wait_for(_collect(conn, log, 200, read_size=7), 10)
    assert [ln for c in chunks for ln in c.lines] == text.splitlines()
    assert chunks[-1].end == len(text.encode())


async def test_the_last_line_of_a_log_without_a_final_newline_is_read_once_the_writer_is_gone(
    conn: Connection, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    log.write_bytes("ready\nKilled: schedulér died".encode())
    first = await asyncio.wait_for(_collect(conn, log, 1), 5)
    assert [c.lines for c in first] == [["ready"]]
    rest = await read_rest(conn, str(log), offset=first[-1].end)
    assert rest == LogChunk(["Killed: schedulér died"], 6, log.stat().st_size)
    assert await read_rest(conn, str(log), offset=rest.end) == LogChunk([], rest.end, rest.end)
    log.write_bytes(b"a\nb\n")
    assert await read_rest(conn, str(log)) == LogChunk(["a", "b"], 0, 4)


async def test_a_follow_that_keeps_failing_backs_off_instead_of_spinning(
    fake_bin: Path, tmp_path: Path
) -> None:
    broken_tail = fake_bin / "tail"
    broken_tail.write_text("#!/bin/sh\necho 'tail: cannot follow' >&2\nexit 1\n")
    broken_tail.chmod(0o755)
    attempts: list[float] = []
    loop = asyncio.get_running_loop()
    async with SimSSHServer(env=host_env(fake_bin)) as server:
        conn = pinned_connection(server, tmp_path)
        try:
            gen = follow(
                conn, str(tmp_path / "server.log"), on_reconnect=lambda _: attempts.append(loop.time())
            )
            task = asyncio.ensure_future(anext(gen))
            while len(attempts) < 5:
                await asyncio.sleep(0.05)
            task.cancel()
        finally:
            await conn.close()
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert gaps[3] >= 0.35, f"retries must slow down (50 ms, doubling): {gaps}"
