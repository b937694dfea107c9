"""The in-process server behaves like OpenSSH with a root login, so the remote tier tests the real thing."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import asyncssh
import pytest

from sgtui.remote.connection import Connection
from sgtui.sim.sshserver import SimSSHServer

from .conftest import ConnFactory, host_env


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(") ", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def _wait_dead(pid: int, timeout: float = 5.0) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if not _alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


async def test_commands_run_in_real_bash_with_the_given_environment(conn: Connection, fake_bin: Path) -> None:
    result = await conn.run('echo "$PATH"; echo $BASH_VERSION >&2; exit 4')
    assert result.stdout.strip().split(":")[0] == str(fake_bin)
    assert result.stderr.strip()
    assert result.rc == 4


async def test_each_command_leads_its_own_session(conn: Connection) -> None:
    out = (await conn.run("exec cat /proc/self/stat")).stdout
    fields = out.rsplit(") ", 1)[1].split()
    pid = out.split()[0]
    assert fields[2] == pid and fields[3] == pid  # pgrp and session equal the pid, as under sshd


async def test_allowed_signals_reach_the_process_group(fake_bin: Path, connect_to: ConnFactory) -> None:
    server = await SimSSHServer(env=host_env(fake_bin), allow_signals=True).start()
    try:
        c = await connect_to(server)
        ssh = await c._ensure()
        proc = await ssh.create_process("exec sleep 30")
        await asyncio.sleep(0.1)
        proc.send_signal("TERM")
        await asyncio.wait_for(proc.wait(), 5)
        assert proc.exit_signal is not None and proc.exit_signal[0] == "TERM"
    finally:
        await server.close()


async def test_signal_requests_are_ignored_like_openssh_for_root(conn: Connection) -> None:
    ssh = await conn._ensure()
    proc = await ssh.create_process("echo $$; exec sleep 30")
    pid = int((await proc.stdout.readline()).strip())
    proc.send_signal("TERM")
    await asyncio.sleep(0.2)
    assert _alive(pid)
    os.kill(pid, 9)
    await proc.wait()


async def test_a_closed_channel_closes_pipes_but_signals_nothing(conn: Connection) -> None:
    ssh = await conn._ensure()
    silent = await ssh.create_process("echo $$; exec sleep 30")
    pid_silent = int((await silent.stdout.readline()).strip())
    chatty = await ssh.create_process("echo $$; while :; do echo tick; sleep 0.05; done")
    pid_chatty = int((await chatty.stdout.readline()).strip())
    silent.close()
    chatty.close()
    assert await _wait_dead(pid_chatty), "a writing command dies at its next write (SIGPIPE)"
    await asyncio.sleep(0.3)
    assert _alive(pid_silent), "a silent command lingers: nothing signals it"
    os.kill(pid_silent, 9)


async def test_killpg_mode_ends_the_whole_group_on_close(fake_bin: Path, connect_to: ConnFactory) -> None:
    server = await SimSSHServer(env=host_env(fake_bin), on_close="killpg", kill_grace=0.5).start()
    try:
        c = await connect_to(server)
        ssh = await c._ensure()
        proc = await ssh.create_process("echo $$; exec sleep 30")
        pid = int((await proc.stdout.readline()).strip())
        proc.close()
        assert await _wait_dead(pid)
    finally:
        await server.close()


async def test_session_cap_refuses_channels_past_max_sessions(
    fake_bin: Path, connect_to: ConnFactory
) -> None:
    server = await SimSSHServer(env=host_env(fake_bin), max_sessions=2).start()
    try:
        ssh = await (await connect_to(server))._ensure()
        a = await ssh.create_process("exec sleep 5")
        b = await ssh.create_process("exec sleep 5")
        with pytest.raises(asyncssh.ChannelOpenError, match="no more sessions"):
            await ssh.create_process("true")
        a.close()
        await a.wait_closed()
        await asyncio.sleep(0.05)
        ok = await ssh.run("echo freed")
        assert ok.stdout == "freed\n"
        b.close()
    finally:
        await server.close()


async def test_a_burst_of_output_arrives_complete(conn: Connection) -> None:
    result = await conn.run("seq 1 200000")
    assert result.stdout.count("\n") == 200000
    assert result.stdout.endswith("200000\n")


async def test_stdin_reaches_the_command(conn: Connection) -> None:
    result = await conn.run("bash --norc --noprofile -s", input="echo from-stdin\n")
    assert result.stdout == "from-stdin\n"


async def test_wrong_host_key_is_rejected(sim_server: SimSSHServer, tmp_path: Path) -> None:
    other = asyncssh.generate_private_key("ssh-ed25519").convert_to_public()
    known = asyncssh.import_known_hosts(f"[127.0.0.1]:{sim_server.port} {other.export_public_key().decode()}")
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        await asyncssh.connect(
            "127.0.0.1",
            sim_server.port,
            known_hosts=known,
            client_keys=[sim_server.client_key],
            agent_path=None,
            config=None,
        )


async def test_abort_connections_drops_clients(sim_server: SimSSHServer, conn: Connection) -> None:
    await conn.run("true")
    assert sim_server.connection_count() == 1
    await sim_server.abort_connections()
    await asyncio.sleep(0.05)
    assert sim_server.connection_count() == 0
