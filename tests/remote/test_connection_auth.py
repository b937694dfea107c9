"""Host keys and logins the way real hosts present them, and the channel budget under many followed logs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncssh
import pytest

from sgtui.remote import channels, known_hosts
from sgtui.remote.connection import (
    AuthError,
    Connection,
    ConnectionEvent,
    ConnState,
    HostKeyError,
    RemoteError,
    accept_host_key,
)
from sgtui.remote.hosts import HostConfig
from sgtui.sim.sshserver import SimSSHServer

from .conftest import ConnFactory, host_env, pinned_host

# test keys use one bcrypt round (fast); bcrypt rightly warns that this is weak
pytestmark = pytest.mark.filterwarnings("ignore:.*bcrypt.kdf.*round:UserWarning")


def _prompts(answers: list[str | None]) -> tuple[list[str], object]:
    asked: list[str] = []

    async def ask(prompt: str) -> str | None:
        asked.append(prompt)
        return answers.pop(0) if answers else None

    return asked, ask


async def test_a_keyboard_interactive_password_prompt_is_answered_through_the_callback(
    fake_bin: Path, tmp_path: Path
) -> None:
    asked, ask = _prompts(["s3cret"])
    async with SimSSHServer(env=host_env(fake_bin), password="s3cret", kbdint_only=True) as server:
        conn = Connection(
            pinned_host(server, tmp_path),
            client_keys=[],
            agent_path=None,
            user_known_hosts=None,
            password_cb=ask,
        )  # type: ignore[arg-type]
        try:
            assert (await conn.run("echo in")).stdout == "in\n"
        finally:
            await conn.close()
    assert asked == ["sim: Password:"]


def _encrypted_key_host(server: SimSSHServer, tmp_path: Path, passphrase: str) -> HostConfig:
    key_file = tmp_path / "id_ed25519"
    key_file.write_bytes(server.client_key.export_private_key(passphrase=passphrase, rounds=1))
    key_file.chmod(0o600)
    host = pinned_host(server, tmp_path)
    return HostConfig(
        host.name, host.hostname, host.port, identity_files=(str(key_file),), known_hosts=host.known_hosts
    )


async def test_an_encrypted_identity_file_asks_its_passphrase_once_and_keeps_it_off_disk(
    sim_server: SimSSHServer, tmp_path: Path
) -> None:
    asked, ask = _prompts(["wrong", "open sesame"])
    host = _encrypted_key_host(sim_server, tmp_path, "open sesame")
    conn = Connection(host, agent_path=None, user_known_hosts=None, password_cb=ask)  # type: ignore[arg-type]
    try:
        assert (await conn.run("echo in")).stdout == "in\n"
        await sim_server.abort_connections()
        assert (await conn.run("echo again")).stdout == "again\n"  # the reconnect asks nothing
    finally:
        await conn.close()
    assert asked == [f"passphrase for key {host.identity_files[0]}"] * 2
    assert "open sesame" not in repr(vars(conn))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not any(b"open sesame" in p.read_bytes() for p in files)


async def test_an_encrypted_key_with_nobody_to_ask_says_to_use_the_agent(
    sim_server: SimSSHServer, tmp_path: Path
) -> None:
    host = _encrypted_key_host(sim_server, tmp_path, "pw")
    conn = Connection(host, agent_path=None, user_known_hosts=None)
    try:
        with pytest.raises(AuthError, match=r"is encrypted; load it into ssh-agent \(ssh-add .*id_ed25519\)"):
            await conn.connect()
    finally:
        await conn.close()


@pytest.mark.parametrize("hostname", ["evil *", "a,b", "h\n* ssh-ed25519 AAAA", "#x", "!neg", "host?"])
def test_a_host_key_is_never_recorded_under_a_name_that_means_more_than_one_host(
    hostname: str, tmp_path: Path
) -> None:
    key = asyncssh.generate_private_key("ssh-ed25519")
    path = tmp_path / "known_hosts"
    with pytest.raises(RemoteError, match="plain host name"):
        accept_host_key(HostConfig("gpu1", hostname), key, path)
    assert not path.exists()


async def test_long_lived_streams_never_take_the_last_channels_from_short_commands(
    sim_server: SimSSHServer, connect_to: ConnFactory
) -> None:
    conn = await connect_to(sim_server, channel_budget=4)
    release = asyncio.Event()
    opened: list[int] = []

    async def follow(i: int) -> None:
        async with conn.stream("exec cat"):
            opened.append(i)
            await release.wait()

    tails = [asyncio.create_task(follow(i)) for i in range(4)]
    try:
        await asyncio.sleep(0.3)
        result = await asyncio.wait_for(conn.run("echo still-room"), 5)
        assert result.stdout == "still-room\n"

        async def short_stream() -> bytes:  # how a stop reads its progress
            async with conn.stream("echo stopping", long_lived=False) as stop:
                return await stop.read()

        assert await asyncio.wait_for(short_stream(), 5) == b"stopping\n"
        assert len(opened) == 2  # the others wait for a stream slot instead of starving commands
    finally:
        release.set()
        await asyncio.gather(*tails)
    assert sorted(opened) == [0, 1, 2, 3]


async def test_a_host_offering_a_key_type_other_than_the_recorded_one_is_a_changed_key(
    sim_server: SimSSHServer, tmp_path: Path
) -> None:
    old_rsa = asyncssh.generate_private_key("ssh-rsa", key_size=1024).convert_to_public()
    known = tmp_path / "known_hosts_lab"
    known.write_text(f"[127.0.0.1]:{sim_server.port} {old_rsa.export_public_key().decode()}")
    host = HostConfig("gpu1", sim_server.host, sim_server.port, known_hosts=(str(known),))
    conn = Connection(host, client_keys=[sim_server.client_key], agent_path=None, user_known_hosts=None)
    try:
        with pytest.raises(HostKeyError) as err:
            await conn.connect()  # before: "Unable to find compatible server host key" read as unreachable
        assert err.value.changed and conn.state is ConnState.HOST_KEY_CHANGED
        assert err.value.fingerprint == sim_server.host_key_public.get_fingerprint()
        assert f"old entry from {known}" in str(err.value)
    finally:
        await conn.close()


async def test_keys_in_the_system_wide_known_hosts_are_trusted_like_ssh_does(
    sim_server: SimSSHServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system_file = tmp_path / "ssh_known_hosts"
    system_file.write_text(sim_server.known_hosts_line() + "\n")
    monkeypatch.setattr(known_hosts, "GLOBAL_KNOWN_HOSTS", system_file)
    host = HostConfig("gpu1", sim_server.host, sim_server.port)
    conn = Connection(
        host, client_keys=[sim_server.client_key], agent_path=None, user_known_hosts=tmp_path / "none"
    )
    try:
        assert (await conn.run("echo trusted")).stdout == "trusted\n"
    finally:
        await conn.close()


async def test_an_unknown_ecdsa_host_key_points_at_the_file_to_compare_it_with(
    fake_bin: Path, tmp_path: Path
) -> None:
    ecdsa = asyncssh.generate_private_key("ecdsa-sha2-nistp256")
    async with SimSSHServer(env=host_env(fake_bin), host_key=ecdsa) as server:
        host = HostConfig("gpu1", server.host, server.port)
        conn = Connection(host, client_keys=[server.client_key], agent_path=None, user_known_hosts=None)
        try:
            with pytest.raises(HostKeyError, match=r"ssh-keygen -lf /etc/ssh/ssh_host_ecdsa_key\.pub"):
                await conn.connect()
        finally:
            await conn.close()


async def test_a_failing_event_subscriber_does_not_stop_the_reconnect(
    sim_server: SimSSHServer, connect_to: ConnFactory
) -> None:
    conn = await connect_to(sim_server)
    seen: asyncio.Queue[ConnectionEvent] = asyncio.Queue()

    def broken(event: ConnectionEvent) -> None:
        raise RuntimeError("a UI bug")

    conn.subscribe(broken)
    conn.subscribe(seen)
    await conn.connect()  # the broken subscriber sees CONNECTING and UP too, and raises on each
    while not seen.empty():
        seen.get_nowait()
    await sim_server.abort_connections()
    states: list[ConnState] = []
    while ConnState.UP not in states:
        states.append((await asyncio.wait_for(seen.get(), 5)).state)
    assert ConnState.LOST in states and ConnState.RETRYING in states


async def test_a_host_that_keeps_refusing_sessions_says_what_to_change(
    fake_bin: Path, tmp_path: Path, connect_to: ConnFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(channels, "CHANNEL_RETRY_MAX_DELAY", 0.02)  # give up quickly
    async with SimSSHServer(env=host_env(fake_bin), max_sessions=1) as server:
        conn = await connect_to(server)
        async with conn.stream("exec cat"):  # takes the only session the host allows
            with pytest.raises(RemoteError, match=r"keeps refusing new SSH sessions .* raise MaxSessions"):
                await conn.run("true")
