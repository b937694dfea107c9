"""Against a real OpenSSH sshd: what the in-process server only imitates."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import pytest

from sgtui.remote.connection import Connection, ConnState, HostKeyError
from sgtui.remote.hosts import HostConfig
from sgtui.remote.tail import follow
from tests.sshd import SshdServer, start_sshd

from .conftest import SYSTEM_PATH, sshd_connection

pytestmark = pytest.mark.sshd


async def test_commands_run_and_return_exit_codes(sshd_conn: Connection) -> None:
    result = await sshd_conn.run("echo hello; exit 3")
    assert result.stdout.splitlines()[-1] == "hello" and result.rc == 3


async def test_root_signal_requests_are_refused_so_sgtui_never_relies_on_them(sshd_conn: Connection) -> None:
    ssh = await sshd_conn._ensure()
    proc = await ssh.create_process("echo $$; exec sleep 30")
    pid = int((await proc.stdout.readline()).strip())
    proc.send_signal("TERM")
    await asyncio.sleep(0.3)
    assert Path(f"/proc/{pid}").exists()
    os.kill(pid, signal.SIGKILL)
    await proc.wait()


async def test_an_unknown_host_key_is_refused_with_its_fingerprint(sshd: SshdServer) -> None:
    conn = Connection(
        HostConfig("fresh", sshd.host, sshd.port, user="root"),
        client_keys=[sshd.client_key],
        agent_path=None,
        user_known_hosts=None,
    )
    with pytest.raises(HostKeyError) as err:
        await conn.connect()
    assert sshd.host_key.convert_to_public().get_fingerprint() in str(err.value)
    assert conn.state is ConnState.HOST_KEY_UNKNOWN
    await conn.close()


async def test_the_channel_budget_and_retries_live_with_a_small_max_sessions(tmp_path: Path) -> None:
    with start_sshd(tmp_path / "small", env_path=SYSTEM_PATH, max_sessions=4) as server:
        conn = sshd_connection(server, tmp_path, channel_budget=3)
        try:
            async with conn.stream("exec tail -f /dev/null"):
                results = await asyncio.gather(*(conn.run(f"echo {i}") for i in range(16)))
            assert [r.stdout.splitlines()[-1] for r in results] == [str(i) for i in range(16)]
        finally:
            await conn.close()


async def test_a_tail_survives_killed_connection_processes_without_loss(
    sshd: SshdServer, tmp_path: Path
) -> None:
    conn = sshd_connection(sshd, tmp_path)
    log = tmp_path / "server.log"
    log.write_text("")
    total = 3000

    async def writer() -> None:
        with log.open("a") as fh:
            for i in range(total):
                fh.write(f"{i:06d}\n")
                if i % 25 == 0:
                    fh.flush()
                    await asyncio.sleep(0.004)

    async def chaos() -> None:
        for _ in range(3):
            await asyncio.sleep(0.15)
            for pid in sshd.connection_pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    lines: list[str] = []
    tasks = [asyncio.ensure_future(writer()), asyncio.ensure_future(chaos())]
    try:

        async def collect() -> None:
            async for chunk in follow(conn, str(log)):
                lines.extend(chunk.lines)
                if len(lines) >= total:
                    return

        await asyncio.wait_for(collect(), 30)
        await asyncio.gather(*tasks)
        assert lines == log.read_text().splitlines()
    finally:
        await conn.close()


async def test_several_hosts_on_loopback_addresses_are_separate_hosts(tmp_path: Path) -> None:
    with (
        start_sshd(tmp_path / "h2", env_path=SYSTEM_PATH, host="127.0.0.2") as h2,
        start_sshd(tmp_path / "h3", env_path=SYSTEM_PATH, host="127.0.0.3") as h3,
    ):
        c2, c3 = sshd_connection(h2, tmp_path), sshd_connection(h3, tmp_path)
        try:
            r2, r3 = await asyncio.gather(c2.run("echo $SSH_CONNECTION"), c3.run("echo $SSH_CONNECTION"))
            assert r2.stdout.split()[-2] == "127.0.0.2" and r3.stdout.split()[-2] == "127.0.0.3"
        finally:
            await c2.close()
            await c3.close()


async def test_a_frozen_link_is_detected_by_keepalive_and_reported_lost(
    sshd: SshdServer, tmp_path: Path
) -> None:
    conn = sshd_connection(sshd, tmp_path, keepalive_interval=0.3, keepalive_count_max=2, connect_timeout=2)
    events: list[ConnState] = []
    conn.subscribe(lambda e: events.append(e.state))
    await conn.run("true")
    frozen = sshd.connection_pids()
    for pid in frozen:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    try:
        for _ in range(60):
            if ConnState.LOST in events:
                break
            await asyncio.sleep(0.1)
        assert ConnState.LOST in events, "a half-open link must not look alive"
    finally:
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        await conn.close()
