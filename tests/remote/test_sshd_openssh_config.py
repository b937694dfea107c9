"""OpenSSH config options sgtui honours, each against a real sshd: HostKeyAlias, IdentitiesOnly,
ProxyCommand, @revoked keys, and a password kept for the session."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import asyncssh
import pytest

from sgtui.remote.connection import AuthError, Connection, ConnState, HostKeyError, UnreachableError
from sgtui.remote.hosts import HostConfig, load_hosts
from tests.sshd import SshdServer, start_sshd

from .conftest import SYSTEM_PATH

pytestmark = pytest.mark.sshd


def _public(server: SshdServer) -> str:
    return server.host_key.convert_to_public().export_public_key().decode().strip()


def _write_config(tmp_path: Path, text: str) -> Path:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(text)
    return cfg


def _connect(host: HostConfig, server: SshdServer, **kw: object) -> Connection:
    kw.setdefault("client_keys", [server.client_key])
    return Connection(host, agent_path=None, user_known_hosts=None, **kw)  # type: ignore[arg-type]


async def test_host_key_alias_finds_the_key_recorded_under_the_alias(
    sshd: SshdServer, tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(f"gpu-box-alias {_public(sshd)}\n")  # no address, no port: OpenSSH's alias lookup
    cfg = _write_config(
        tmp_path,
        f"Host gpu\n  HostName {sshd.host}\n  Port {sshd.port}\n  User root\n"
        f"  HostKeyAlias gpu-box-alias\n  UserKnownHostsFile {known}\n",
    )
    host = load_hosts(cfg, False)["gpu"]
    assert host.host_key_alias == "gpu-box-alias"
    conn = _connect(host, sshd)
    try:
        assert (await conn.run("echo ok")).stdout.splitlines()[-1] == "ok"
    finally:
        await conn.close()
    without = _connect(HostConfig("gpu", sshd.host, sshd.port, user="root", known_hosts=(str(known),)), sshd)
    with pytest.raises(HostKeyError):  # the same file without the alias: the key is unknown
        await without.connect()
    await without.close()


async def test_a_revoked_host_key_is_called_revoked(sshd: SshdServer, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(f"@revoked [{sshd.host}]:{sshd.port} {_public(sshd)}\n")
    conn = _connect(HostConfig("gpu", sshd.host, sshd.port, user="root", known_hosts=(str(known),)), sshd)
    with pytest.raises(HostKeyError) as err:
        await conn.connect()
    await conn.close()
    message = str(err.value)
    assert message.startswith("REVOKED host key for gpu") and "@revoked" in message
    assert sshd.host_key.convert_to_public().get_fingerprint() in message
    assert "no key seen" not in message and "CHANGED" not in message
    assert err.value.revoked and err.value.changed  # never offered for acceptance


async def test_identities_only_offers_only_the_named_key_never_the_default_ones(
    sshd: SshdServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """~/.ssh/id_ed25519 is the authorized key; identity_file names another. Without IdentitiesOnly the
    default key is tried too and gets in; with it, authentication fails and says what was offered."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_bytes(sshd.client_key.export_private_key())
    (home / ".ssh" / "id_ed25519").chmod(0o600)
    monkeypatch.setenv("HOME", str(home))
    wrong = tmp_path / "wrong_key"
    wrong.write_bytes(asyncssh.generate_private_key("ssh-ed25519").export_private_key())
    wrong.chmod(0o600)
    known = tmp_path / "known_hosts"
    known.write_text(sshd.known_hosts_line() + "\n")
    base = f"Host gpu\n  HostName {sshd.host}\n  Port {sshd.port}\n  User root\n  IdentityFile {wrong}\n"
    base += f"  UserKnownHostsFile {known}\n"
    loose = load_hosts(_write_config(tmp_path, base), False)["gpu"]
    strict = load_hosts(_write_config(tmp_path, base + "  IdentitiesOnly yes\n"), False)["gpu"]
    assert (loose.identities_only, strict.identities_only) == (False, True)

    async def try_host(host: HostConfig) -> str:
        conn = Connection(host, agent_path=None, user_known_hosts=None)
        try:
            return (await conn.run("echo in")).stdout.strip().splitlines()[-1]
        finally:
            await conn.close()

    # the loose host gets in with a default key once its own identity file is unreadable
    unreadable = HostConfig(**{**vars(loose), "identity_files": (str(tmp_path / "missing"),)})
    assert await try_host(unreadable) == "in"
    with pytest.raises(AuthError) as err:
        await try_host(HostConfig(**{**vars(strict), "identity_files": (str(tmp_path / "missing"),)}))
    assert "IdentitiesOnly" in str(err.value)
    with pytest.raises(AuthError):
        await try_host(strict)


async def test_proxy_command_runs_as_openssh_would_with_its_tokens(sshd: SshdServer, tmp_path: Path) -> None:
    """`%h %p` expanded, run through the shell (a pipe works), its stdio the transport."""
    relay = tmp_path / "relay.py"
    relay.write_text(
        "import socket, sys, threading, os\n"
        "s = socket.create_connection((sys.argv[1], int(sys.argv[2])))\n"
        "open(sys.argv[3], 'w').write(' '.join(sys.argv[1:3]) + ' ' + sys.argv[4])\n"
        "def up():\n"
        "    while d := os.read(0, 65536): s.sendall(d)\n"
        "    s.shutdown(socket.SHUT_WR)\n"
        "threading.Thread(target=up, daemon=True).start()\n"
        "while d := s.recv(65536): os.write(1, d)\n"
    )
    seen = tmp_path / "seen"
    known = tmp_path / "known_hosts"
    known.write_text(sshd.known_hosts_line() + "\n")
    cfg = _write_config(
        tmp_path,
        f"Host viaproxy\n  HostName {sshd.host}\n  Port {sshd.port}\n  User root\n"
        f"  UserKnownHostsFile {known}\n"
        f"  ProxyCommand {sys.executable} {relay} %h %p {seen} %r@%n 2>/dev/null | cat\n",
    )
    host = load_hosts(cfg, False)["viaproxy"]
    conn = _connect(host, sshd)
    try:
        assert (await conn.run("echo $SSH_CONNECTION")).stdout.split()[-2] == sshd.host
    finally:
        await conn.close()
    assert seen.read_text() == f"{sshd.host} {sshd.port} root@viaproxy"


async def test_a_failing_proxy_command_is_one_line_naming_it(sshd: SshdServer, tmp_path: Path) -> None:
    host = HostConfig("gw", sshd.host, sshd.port, user="root", proxy_command="echo 'gateway refused' >&2")
    conn = _connect(host, sshd)
    with pytest.raises(UnreachableError) as err:
        await conn.connect()
    await conn.close()
    assert "through its ProxyCommand `echo 'gateway refused' >&2`: gateway refused" in str(err.value)
    assert "\n" not in str(err.value)


async def test_a_password_typed_once_is_reused_when_the_connection_comes_back(tmp_path: Path) -> None:
    user = f"sgtpw{uuid.uuid4().hex[:6]}"
    made = subprocess.run(["useradd", "-M", "-s", "/bin/sh", user], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot create a local user with a password ({made.stderr.strip()})")
    try:
        subprocess.run(["chpasswd"], input=f"{user}:pw-{user}\n", text=True, check=True)
        with start_sshd(tmp_path / "sshd", env_path=SYSTEM_PATH, password_auth=True) as server:
            asked: list[str] = []

            async def ask(prompt: str) -> str | None:
                asked.append(prompt)
                return f"pw-{user}"

            known = tmp_path / "known"
            known.write_text(server.known_hosts_line() + "\n")
            host = HostConfig("pw", server.host, server.port, user=user, known_hosts=(str(known),))
            conn = Connection(host, client_keys=[], agent_path=None, user_known_hosts=None, password_cb=ask)
            try:
                assert (await conn.run("echo one")).stdout.strip() == "one"
                conn.abort()  # the link drops; the reconnect needs the password again
                for _ in range(100):
                    if conn.state is not ConnState.UP:
                        break
                    await asyncio.sleep(0.05)
                assert (await conn.run("echo two")).stdout.strip() == "two"
            finally:
                await conn.close()
            assert asked == [f"password for {user}@{server.host}"]
    finally:
        subprocess.run(["userdel", user], capture_output=True, check=False)


async def test_a_first_seen_key_accepted_for_a_host_key_alias_is_found_on_the_next_connect(
    sshd: SshdServer, tmp_path: Path, _config_dir: Path
) -> None:
    """ "Yes" records the key under the alias, the name it is looked up by: recorded under the address,
    the question came back every 10 s and the host never connected."""
    from sgtui.remote.connection import accept_host_key

    host = HostConfig("gpu", sshd.host, sshd.port, user="root", host_key_alias="gpu-box-alias")
    conn = _connect(host, sshd)
    try:
        with pytest.raises(HostKeyError) as err:
            await conn.connect()
        assert not err.value.changed and err.value.key is not None
        path = accept_host_key(host, err.value.key)
        assert path.read_text().startswith(f"gpu-box-alias {_public(sshd).split()[0]} ")
        conn.reset()
        assert (await conn.run("echo ok")).stdout.splitlines()[-1] == "ok"
    finally:
        await conn.close()


async def test_too_many_keys_offered_is_an_authentication_failure_saying_what_to_do(tmp_path: Path) -> None:
    """sshd hangs up after MaxAuthTries keys ("Too many authentication failures"): that read "cannot
    reach ...; check that the host is up". It is the login that failed, and IdentitiesOnly is the cure."""
    with start_sshd(tmp_path / "sshd", env_path=SYSTEM_PATH, extra_config="MaxAuthTries 2\n") as server:
        known = tmp_path / "known"
        known.write_text(server.known_hosts_line() + "\n")
        host = HostConfig("gpu", server.host, server.port, user="root", known_hosts=(str(known),))
        many = [asyncssh.generate_private_key("ssh-ed25519") for _ in range(4)]
        conn = Connection(host, client_keys=many, agent_path=None, user_known_hosts=None)
        events: list[ConnState] = []
        conn.subscribe(lambda e: events.append(e.state))
        with pytest.raises(AuthError) as err:
            await conn.connect()
        await conn.close()
    said = str(err.value)
    assert said.startswith("gpu: authentication failed as root (Too many authentication failures)")
    assert "IdentitiesOnly yes" in said and "identity_file" in said and "cannot reach" not in said
    assert ConnState.AUTH_FAILED in events and ConnState.UNREACHABLE not in events
