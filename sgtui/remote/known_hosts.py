"""Which host keys are trusted, as OpenSSH decides it: the known_hosts files (the host entry's, sgtui's own,
~/.ssh/known_hosts, /etc/ssh/ssh_known_hosts), HostKeyAlias (looked up alone: no address, no port),
@revoked entries, and recording a key the user accepted."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import asyncssh

from sgtui.remote.hosts import HostConfig, sgtui_known_hosts
from sgtui.remote.transport import RemoteError

USER_KNOWN_HOSTS = Path(os.path.expanduser("~/.ssh/known_hosts"))
GLOBAL_KNOWN_HOSTS = Path("/etc/ssh/ssh_known_hosts")  # admins (and Proxmox clusters) record keys here


class HostKeyError(RemoteError):
    """The host's key is unknown or differs from the recorded one. Nothing was sent to it."""

    def __init__(
        self,
        host: HostConfig,
        key: asyncssh.SSHKey | None,
        changed: bool,
        recorded_in: Path | None = None,
        *,
        revoked: bool = False,
    ) -> None:
        self.host = host
        self.key = key
        self.changed = changed or revoked  # a revoked key is never offered for acceptance either
        self.revoked = revoked
        self.recorded_in = recorded_in
        self.fingerprint = key.get_fingerprint() if key is not None else "(no key seen)"
        kind = key.get_algorithm() if key is not None else "host"
        where = f"{host.name} ({host.hostname}:{host.port})"
        if host.host_key_alias:
            where += f" (keys recorded as {host.host_key_alias})"
        if revoked:
            msg = (
                f"REVOKED host key for {where}: it offers {kind} key {self.fingerprint}, which "
                f"{recorded_in or 'your known_hosts'} marks @revoked; sgtui will not connect: ask the "
                "host's owner which key it should have now"
            )
        elif changed:
            msg = (
                f"HOST KEY CHANGED for {where}: it now offers {kind} key {self.fingerprint}, which differs "
                "from the recorded key; someone may be intercepting the connection, or the host was "
                "reinstalled: check with its owner before removing the old entry from "
                f"{recorded_in or 'your known_hosts'}"
            )
        else:
            msg = (
                f"unknown host key for {where}: {kind} {self.fingerprint}; compare it with "
                f"`ssh-keygen -lf /etc/ssh/ssh_host_{_key_file_kind(kind)}_key.pub` run on the host, "
                "then accept it"
            )
        super().__init__(msg)


def _key_file_kind(algorithm: str) -> str:
    """The word in sshd's host key file name for a key algorithm (ssh_host_<word>_key.pub)."""
    if algorithm.startswith("ecdsa-"):
        return "ecdsa"
    return algorithm.removeprefix("ssh-").split("-")[0]


# A name as it may appear in a known_hosts line: anything else (space, comma, *, ?, !, #, newline) would
# make the line mean more than "this key for this host".
_KNOWN_HOSTS_NAME = re.compile(r"[A-Za-z0-9._:%-]+\Z")


def accept_host_key(host: HostConfig, key: asyncssh.SSHKey, path: Path | None = None) -> Path:
    """Trust `key` for `host` from now on: append it to sgtui's known_hosts (the user decided). Recorded
    under the name it is looked up by (`known_match`): the HostKeyAlias alone when the host has one (as
    OpenSSH records it: no address, no port), else the hostname (and port)."""
    alias = host.host_key_alias
    if alias is not None:
        if not _KNOWN_HOSTS_NAME.match(alias):
            raise RemoteError(
                f"{host.name}: will not record a host key under HostKeyAlias {alias!r}: a known_hosts entry "
                "needs a plain name (no spaces, commas or wildcards); fix host_key_alias"
            )
    elif not _KNOWN_HOSTS_NAME.match(host.hostname) or not 0 < host.port < 65536:
        raise RemoteError(
            f"{host.name}: will not record a host key for {host.hostname!r}:{host.port}: a known_hosts entry "
            "needs a plain host name or address (no spaces, commas or wildcards); fix the hostname"
        )
    path = path or sgtui_known_hosts()
    path.parent.mkdir(parents=True, exist_ok=True)
    if alias is not None:
        name = alias
    else:
        name = host.hostname if host.port == 22 else f"[{host.hostname}]:{host.port}"
    line = f"{name} {key.convert_to_public().export_public_key().decode().strip()}\n"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line)
    return path


def known_hosts_paths(host: HostConfig, user_known_hosts: Path | None) -> list[Path]:
    """Where trusted keys come from: the host entry's files, sgtui's own, and (unless the caller keeps
    the user's files out, as tests do) ~/.ssh/known_hosts and the system-wide file `ssh` also reads."""
    found = [Path(p) for p in host.known_hosts]
    found.append(sgtui_known_hosts())
    if user_known_hosts is not None:
        found += [user_known_hosts, GLOBAL_KNOWN_HOSTS]
    return [p for p in found if p.is_file()]


def load_known_hosts(paths: Sequence[Path]) -> asyncssh.SSHKnownHosts:
    """All entries of the known_hosts files; a malformed line is skipped (as OpenSSH does), not fatal."""
    return _parse_known_hosts("\n".join(p.read_text(encoding="utf-8", errors="replace") for p in paths))


@functools.lru_cache(maxsize=8)
def _parse_known_hosts(text: str) -> asyncssh.SSHKnownHosts:
    """Parsed once per distinct file content: with a fleet of N hosts the file has N lines, and parsing
    it for every connection made connecting all of them cost O(N^2) key imports (read-only afterwards)."""
    try:
        return asyncssh.import_known_hosts(text)
    except ValueError:
        good = []
        for line in text.splitlines():
            try:
                asyncssh.import_known_hosts(line)
            except ValueError:
                continue
            good.append(line)
        return asyncssh.import_known_hosts("\n".join(good))


def known_match(known: asyncssh.SSHKnownHosts, host: HostConfig, addr: str) -> Any:
    """What known_hosts says for this host: under its HostKeyAlias alone when it has one (as OpenSSH
    looks it up: no address, no port), else by hostname, address and port."""
    if host.host_key_alias:
        return known.match(host.host_key_alias, "", None)
    return known.match(host.hostname, addr, host.port)


def revoked_keys(known: asyncssh.SSHKnownHosts, host: HostConfig, addr: str) -> list[asyncssh.SSHKey]:
    """@revoked keys for the host. asyncssh's `match` retries a non-22 port without it when no trusted
    key matched, and that retry drops the revoked entries recorded under `[host]:port`, so both lookups
    are asked here."""
    found = list(known_match(known, host, addr)[2])
    if not host.host_key_alias and host.port != 22:
        found += known._match(host.hostname, addr, host.port)[2]
    return found


def recorded_in(paths: Sequence[Path], host: HostConfig, addr: str, revoked: bool = False) -> Path | None:
    """The known_hosts file holding the old (or the revoked) key, for the message."""
    for path in paths:
        known = load_known_hosts([path])
        if revoked_keys(known, host, addr) if revoked else known_match(known, host, addr)[0]:
            return path
    return None
