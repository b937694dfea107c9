"""What goes into one `asyncssh.connect` for a host entry: port, user, keepalives, the known_hosts to
verify against (`HostKeyAlias` looked up alone), the agent, and which keys are offered (`IdentitiesOnly`:
only the entry's identity files, never ~/.ssh/id_*; encrypted ones asked for their passphrase once)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncssh

from sgtui.remote.hosts import HostConfig
from sgtui.remote.known_hosts import known_match
from sgtui.remote.ssh_auth import AuthClient, PasswordCallback

Key = asyncssh.SSHKey | tuple[asyncssh.SSHKey, str]  # a key, or a key with its certificate file

# AES-GCM ahead of chacha20-poly1305 (asyncssh's first choice): both are AEAD ciphers in OpenSSH's default
# list, but asyncssh decrypts a chacha20-poly1305 packet with three cipher contexts and a separate
# Poly1305 check made in Python, AES-GCM with one call. At 500 hosts streaming a sample a second that is
# about a tenth of the client's CPU (bench/RESULTS.md, issue 21). The rest of the list is asyncssh's.
PREFERRED_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")


def encryption_algs() -> list[str]:
    """The ciphers offered, in order: `PREFERRED_CIPHERS` that this asyncssh has, then its defaults."""
    have = [alg.decode() for alg in asyncssh.encryption.get_default_encryption_algs()]
    first = [alg for alg in PREFERRED_CIPHERS if alg in have]
    return first + [alg for alg in have if alg not in first]


async def connect_learning_key_type(hostname: str, kwargs: dict[str, Any]) -> asyncssh.SSHClientConnection:
    """asyncssh only negotiates the key types recorded for a host, so a host that now offers another
    type fails key exchange and would read as "unreachable". Asking once more with every type gets the
    offered key, which is then refused as a changed key (it is not trusted), never accepted."""
    try:
        return await asyncssh.connect(hostname, **kwargs)
    except asyncssh.KeyExchangeFailed as exc:
        if "host key" not in str(exc.reason):
            raise
        return await asyncssh.connect(hostname, **kwargs, server_host_key_algs="default")


class Identities:
    """A host entry's identity files, decrypted in memory and kept for the session (the passphrase is
    dropped); `notes` says why a file was skipped on the last read, for the auth failure message."""

    def __init__(self, host: HostConfig, password_cb: PasswordCallback | None) -> None:
        self._host = host
        self._password_cb = password_cb
        self._keys: dict[str, asyncssh.SSHKey] = {}
        self.notes: list[str] = []

    async def keys(self) -> list[Key]:
        """The readable identity files' keys (with `-cert.pub` certificates beside them)."""
        keys: list[Key] = []
        self.notes = []
        for path in self._host.identity_files:
            if not Path(path).is_file():
                continue
            key = self._keys.get(path) or await self._read(path)
            if key is None:
                continue
            self._keys[path] = key
            cert = f"{path}-cert.pub"
            keys.append((key, cert) if Path(cert).is_file() else key)
        return keys

    async def _read(self, path: str) -> asyncssh.SSHKey | None:
        try:
            return asyncssh.read_private_key(path)
        except OSError as exc:
            self.notes.append(f"cannot read key {path} ({exc.strerror})")
            return None
        except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
            if "passphrase" not in str(exc).lower():
                self.notes.append(f"key {path} is not a private key sgtui can read ({exc})")
                return None
        if self._password_cb is None:
            self.notes.append(f"key {path} is encrypted; load it into ssh-agent (ssh-add {path})")
            return None
        for _ in range(3):
            passphrase = await self._password_cb(f"passphrase for key {path}")
            if passphrase is None:
                break
            try:
                return asyncssh.read_private_key(path, passphrase)
            except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
                if "bcrypt" in str(exc):
                    self.notes.append(f"key {path} needs the bcrypt module; ssh-add it instead")
                    return None
        self.notes.append(f"no working passphrase for key {path}")
        return None


async def connect_options(
    host: HostConfig,
    known: asyncssh.SSHKnownHosts,
    client: AuthClient,
    identities: Identities,
    *,
    client_keys: list[asyncssh.SSHKey] | None,
    agent_path: str | tuple[()] | None,
    keepalive: tuple[float, int],
    connect_timeout: float,
) -> dict[str, Any]:
    """The keyword arguments of `asyncssh.connect` for `host` (no ProxyCommand socket or tunnel: the
    connection adds those). `client_keys` given by the caller win over the entry's identity files;
    `agent_path=()` leaves asyncssh's default (SSH_AUTH_SOCK)."""
    kwargs: dict[str, Any] = {
        "port": host.port,
        "known_hosts": known,
        "config": None,
        "client_factory": lambda: client,
        "keepalive_interval": keepalive[0],
        "keepalive_count_max": keepalive[1],
        "connect_timeout": connect_timeout,
        "encryption_algs": encryption_algs(),
    }
    if host.user:
        kwargs["username"] = host.user
    if host.host_key_alias:  # OpenSSH looks the alias up alone (no address, no port)
        kwargs["known_hosts"] = known_match(known, host, "")[:3]
    if agent_path != ():
        kwargs["agent_path"] = agent_path
    if client_keys is not None:
        kwargs["client_keys"] = client_keys
    elif host.identities_only and host.identity_files:
        # only these keys, from their files or the agent: never ~/.ssh/id_* or other agent keys
        keys = await identities.keys()
        kwargs["client_keys"] = keys or None  # asyncssh reads [] as "the default keys"
        if keys:
            kwargs["agent_identities"] = [k[0] if isinstance(k, tuple) else k for k in keys]
        else:
            kwargs["agent_path"] = None
    elif any(Path(p).is_file() for p in host.identity_files):
        keys = await identities.keys()
        if keys:
            kwargs["client_keys"] = keys
    return kwargs
