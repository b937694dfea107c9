"""One connection per host: verified host keys, visible state, reconnects, and a channel budget."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncssh
import pytest

from sgtui.remote.connection import (
    AuthError,
    Connection,
    ConnectionEvent,
    ConnectionPool,
    ConnState,
    HostKeyError,
    LocalTransport,
    UnreachableError,
    accept_host_key,
)
from sgtui.remote.hosts import HostConfig, sgtui_known_hosts
from sgtui.sim.sshserver import SimSSHServer

from .conftest import ConnFactory, host_env, pinned_connection


def _unpinned(server: SimSSHServer, **kw: object) -> Connection:
    return Connection(
        HostConfig("gpu1", server.host, server.port),
        client_keys=[server.client_key],
        agent_path=None,
        user_known_hosts=None,
        **kw,  # type: ignore[arg-type]
    )


async def test_unknown_host_key_stops_with_its_fingerprint(sim_server: SimSSHServer) -> None:
    conn = _unpinned(sim_server)
    events: list[ConnectionEvent] = []
    conn.subscribe(events.append)
    with pytest.raises(HostKeyError) as err:
        await conn.run("true")
    fp = sim_server.host_key_public.get_fingerprint()
    assert not err.value.changed
    assert fp in str(err.value)
    assert events[-1].state is ConnState.HOST_KEY_UNKNOWN and events[-1].fingerprint == fp
    await conn.close()


async def test_accepting_the_key_writes_sgtui_known_hosts_and_connects(sim_server: SimSSHServer) -> None:
    conn = _unpinned(sim_server)
    with pytest.raises(HostKeyError) as err:
        await conn.connect()
    assert err.value.key is not None
    path = accept_host_key(conn.host, err.value.key)
    assert path == sgtui_known_hosts()
    assert f"[127.0.0.1]:{sim_server.port} ssh-ed25519 " in path.read_text()
    conn.reset()
    assert (await conn.run("echo ok")).stdout == "ok\n"
    await conn.close()


async def test_changed_host_key_is_reported_as_changed(sim_server: SimSSHServer, tmp_path: Path) -> None:
    stale = asyncssh.generate_private_key("ssh-ed25519").convert_to_public().export_public_key().decode()
    sgtui_known_hosts().write_text(f"[127.0.0.1]:{sim_server.port} {stale}")
    conn = _unpinned(sim_server)
    with pytest.raises(HostKeyError, match="HOST KEY CHANGED") as err:
        await conn.connect()
    assert err.value.changed
    assert conn.state is ConnState.HOST_KEY_CHANGED
    with pytest.raises(HostKeyError):  # stays failed until the user acts; no silent retries
        await conn.run("true")
    await conn.close()


async def test_a_wrong_client_key_is_an_auth_failure(sim_server: SimSSHServer, tmp_path: Path) -> None:
    conn = pinned_connection(sim_server, tmp_path)
    conn._client_keys = [asyncssh.generate_private_key("ssh-ed25519")]
    with pytest.raises(AuthError, match="authentication failed"):
        await conn.connect()
    assert conn.state is ConnState.AUTH_FAILED
    await conn.close()


async def test_nothing_listening_is_unreachable(tmp_path: Path) -> None:
    server = await SimSSHServer().start()
    port = server.port
    await server.close()
    conn = pinned_connection(server, tmp_path, connect_timeout=2)
    with pytest.raises(UnreachableError, match=str(port)):
        await conn.connect()
    assert conn.state is ConnState.UNREACHABLE
    await conn.close()


async def test_a_password_is_asked_once_and_kept_in_memory_only_across_reconnects(
    fake_bin: Path, tmp_path: Path
) -> None:
    server = await SimSSHServer(env=host_env(fake_bin), password="s3cret").start()
    asked: list[str] = []

    async def ask(prompt: str) -> str | None:
        asked.append(prompt)
        return "s3cret"

    conn = pinned_connection(server, tmp_path, password_cb=ask)
    conn._client_keys = []
    try:
        assert (await conn.run("echo in")).stdout == "in\n"
        assert len(asked) == 1
        await server.abort_connections()
        assert (await conn.run("echo again")).stdout == "again\n"
        assert len(asked) == 1  # the reconnect used the kept password, as the prompt promises
        assert "s3cret" not in repr(vars(conn))
        assert not any("s3cret" in p.read_text(errors="ignore") for p in tmp_path.rglob("*") if p.is_file())
    finally:
        await conn.close()
        await server.close()


async def test_a_lost_connection_comes_back_with_events(sim_server: SimSSHServer, conn: Connection) -> None:
    queue: asyncio.Queue[ConnectionEvent] = asyncio.Queue()
    conn.subscribe(queue)
    await conn.run("true")
    await sim_server.abort_connections()
    result = await conn.run("echo back")
    assert result.stdout == "back\n"
    states = []
    while not queue.empty():
        states.append(queue.get_nowait().state)
    assert states[:2] == [ConnState.CONNECTING, ConnState.UP]
    assert ConnState.LOST in states and ConnState.RETRYING in states
    assert states[-1] is ConnState.UP


async def test_a_connection_lost_as_soon_as_it_opened_is_not_kept_as_up(
    conn: Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The link can drop between the handshake and the moment the connection becomes current (its
    connection_lost then comes while there is none to lose): that attempt fails, the next one connects."""
    from sgtui.remote import connection as module

    real = module.connect_learning_key_type
    cut = []

    async def cut_once(hostname: str, kwargs: dict[str, object]) -> asyncssh.SSHClientConnection:
        opened = await real(hostname, kwargs)
        if not cut:
            cut.append(opened)
            opened.abort()
            await opened.wait_closed()  # its connection_lost has run
        return opened

    monkeypatch.setattr(module, "connect_learning_key_type", cut_once)
    with pytest.raises(UnreachableError, match="lost as soon as it opened"):
        await conn.run("true")
    assert conn.state is ConnState.UNREACHABLE
    assert (await conn.run("echo back")).stdout == "back\n"
    assert conn.state is ConnState.UP and len(cut) == 1


async def test_reconnect_backs_off_while_the_host_is_down(fake_bin: Path, tmp_path: Path) -> None:
    server = await SimSSHServer(env=host_env(fake_bin)).start()
    port = server.port
    conn = pinned_connection(server, tmp_path, connect_timeout=1)
    events: list[ConnectionEvent] = []
    conn.subscribe(events.append)
    await conn.run("true")
    await server.close()
    await asyncio.sleep(0.5)
    retries = [e.retry_in for e in events if e.state is ConnState.RETRYING]
    assert len(retries) >= 2 and retries == sorted(retries) and retries[1] > retries[0]
    again = SimSSHServer(
        port=port, env=host_env(fake_bin), host_key=server.host_key, client_key=server.client_key
    )
    await again.start()
    try:
        assert (await conn.run("echo up")).stdout == "up\n"
    finally:
        await conn.close()
        await again.close()


async def test_many_commands_share_one_connection_within_the_session_cap(
    fake_bin: Path, connect_to: ConnFactory
) -> None:
    server = await SimSSHServer(env=host_env(fake_bin), max_sessions=3).start()
    try:
        conn = await connect_to(server, channel_budget=5)  # over the cap on purpose: retries absorb it
        results = await asyncio.gather(*(conn.run(f"echo {i}; sleep 0.02") for i in range(40)))
        assert [r.stdout for r in results] == [f"{i}\n" for i in range(40)]
        assert server.connection_count() == 1
    finally:
        await server.close()


async def test_stream_delivers_bytes_until_eof(conn: Connection) -> None:
    async with conn.stream("printf 'a\\nb'; sleep 0.05; printf 'c\\n'") as stream:
        data = b""
        while chunk := await stream.read():
            data += chunk
    assert data == b"a\nbc\n"


async def test_large_scripts_travel_on_stdin(conn: Connection) -> None:
    from sgtui.core.shell import wrap_script

    script = "x='" + "y" * 150_000 + "'; echo ${#x}"
    cmd = wrap_script(script)
    assert cmd.stdin is not None
    assert (await conn.run(cmd)).stdout == "150000\n"


async def test_local_transport_has_the_same_calls() -> None:
    local = LocalTransport()
    assert (await local.run("echo $((1+2))")).stdout == "3\n"
    assert (await local.run("exit 5")).rc == 5
    async with local.stream("printf 'x\\ny\\n'") as stream:
        assert await stream.read() == b"x\ny\n"
    await local.close()


async def test_the_pool_gives_one_connection_per_host_and_names_unknown_ones(
    sim_server: SimSSHServer,
) -> None:
    from sgtui.core.errors import UserError

    pool = ConnectionPool({"a": HostConfig("a", "127.0.0.1", sim_server.port)})
    assert pool.get("a") is pool.get("a")
    with pytest.raises(UserError, match=r"unknown host 'b'.*known: a"):
        pool.get("b")
    await pool.close()


async def test_proxy_jump_tunnels_through_the_jump_host(fake_bin: Path, tmp_path: Path) -> None:
    key = asyncssh.generate_private_key("ssh-ed25519")
    jump = await SimSSHServer(env=host_env(fake_bin), client_key=key).start()
    target = await SimSSHServer("127.0.0.2", env=host_env(fake_bin), client_key=key).start()
    known = tmp_path / "kh"
    known.write_text(jump.known_hosts_line() + "\n" + target.known_hosts_line() + "\n")
    hosts = {
        "bastion": HostConfig("bastion", "127.0.0.1", jump.port, known_hosts=(str(known),)),
        "gpu": HostConfig("gpu", "127.0.0.2", target.port, proxy_jump="bastion", known_hosts=(str(known),)),
    }
    pool = ConnectionPool(hosts, client_keys=[key], agent_path=None, user_known_hosts=None)
    try:
        result = await pool.get("gpu").run("echo via-jump")
        assert result.stdout == "via-jump\n"
        assert jump.connection_count() == 1 and target.connection_count() == 1
    finally:
        await pool.close()
        await jump.close()
        await target.close()


async def test_an_unknown_jump_host_key_is_the_jump_hosts_problem(fake_bin: Path, tmp_path: Path) -> None:
    key = asyncssh.generate_private_key("ssh-ed25519")
    jump = await SimSSHServer(env=host_env(fake_bin), client_key=key).start()
    target = await SimSSHServer("127.0.0.2", env=host_env(fake_bin), client_key=key).start()
    known = tmp_path / "kh"
    known.write_text(target.known_hosts_line() + "\n")  # the jump host's key is not known yet
    hosts = {
        "bastion": HostConfig("bastion", "127.0.0.1", jump.port, known_hosts=(str(known),)),
        "gpu": HostConfig("gpu", "127.0.0.2", target.port, proxy_jump="bastion", known_hosts=(str(known),)),
    }
    pool = ConnectionPool(hosts, client_keys=[key], agent_path=None, user_known_hosts=None)
    try:
        with pytest.raises(HostKeyError) as err:
            await pool.get("gpu").run("true")
        assert err.value.host.name == "bastion"
        bastion = pool.get("bastion")
        assert isinstance(bastion, Connection)
        accept_host_key(bastion.host, err.value.key)  # type: ignore[arg-type]
        bastion.reset()
        assert (await pool.get("gpu").run("echo through")).stdout == "through\n"
    finally:
        await pool.close()
        await jump.close()
        await target.close()


async def test_local_hosts_get_the_local_transport(tmp_path: Path) -> None:
    pool = ConnectionPool({"here": HostConfig("here", "localhost", local=True)})
    conn = pool.get("here")
    assert isinstance(conn, LocalTransport)
    assert (await conn.run("echo local")).stdout == "local\n"
    await pool.close()


async def test_a_malformed_known_hosts_line_does_not_hide_the_good_ones(sim_server: SimSSHServer) -> None:
    sgtui_known_hosts().write_text("justonefield\n@weird x y z\n" + sim_server.known_hosts_line() + "\n")
    conn = _unpinned(sim_server)
    try:
        assert (await conn.run("echo trusted")).stdout == "trusted\n"
    finally:
        await conn.close()
