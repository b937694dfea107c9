"""What a failed `asyncssh.connect` means for the user: a host key that is unknown, changed or revoked
(with the known_hosts file and line that holds it), refused credentials, or a host that cannot be reached
(directly or through its ProxyCommand). Each is one error whose message says what to do."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import asyncssh

from sgtui.remote.hosts import HostConfig
from sgtui.remote.known_hosts import HostKeyError, known_match, recorded_in, revoked_keys
from sgtui.remote.proxy import ProxyCommand
from sgtui.remote.ssh_auth import AuthClient
from sgtui.remote.transport import AuthError, ConnState, UnreachableError


def host_key_failure(
    exc: asyncssh.HostKeyNotVerifiable,
    host: HostConfig,
    known: asyncssh.SSHKnownHosts,
    known_paths: Sequence[Path],
    client: AuthClient,
) -> tuple[ConnState, HostKeyError]:
    """The offered key is revoked, changed (another key is recorded) or unknown: the state to show and
    the error to raise."""
    matched = known_match(known, host, client.addr)
    revoked = revoked_keys(known, host, client.addr)
    offered = client.offered_key
    if "revoked" in str(exc.reason) or (
        offered is not None and any(k.public_data == offered.public_data for k in revoked)
    ):
        if offered is not None:
            revoked = [offered]
        err = HostKeyError(
            host,
            revoked[0] if len(revoked) == 1 else None,
            True,
            recorded_in(known_paths, host, client.addr, revoked=True),
            revoked=True,
        )
        return ConnState.HOST_KEY_CHANGED, err
    changed = bool(matched[0])
    recorded = recorded_in(known_paths, host, client.addr) if changed else None
    err = HostKeyError(host, client.offered_key, changed, recorded)
    return (ConnState.HOST_KEY_CHANGED if changed else ConnState.HOST_KEY_UNKNOWN), err


def auth_failure(exc: asyncssh.PermissionDenied, host: HostConfig, key_notes: Sequence[str]) -> AuthError:
    """Every key and password was refused: which user, why each identity file was skipped."""
    skipped = "".join(f"; {note}" for note in key_notes)
    if host.identities_only and host.identity_files:
        skipped += "; IdentitiesOnly: only " + ", ".join(host.identity_files) + " were offered"
    return AuthError(
        f"{host.name}: authentication failed as {host.user or 'the current user'} "
        f"({exc.reason}){skipped}; check the key (identity_file), the agent, or the password"
        + _exec_note(host),
        host,
    )


def _exec_note(host: HostConfig) -> str:
    """A `Match exec` block sgtui did not run may be why the settings are not the ones ssh would use."""
    return f" (note: {host.match_exec_note})" if host.skipped_exec else ""


def auth_disconnect(exc: BaseException, host: HostConfig, client: AuthClient) -> AuthError | None:
    """A server that hangs up during authentication (sshd's MaxAuthTries: "Too many authentication
    failures", after every agent key was offered or the passwords were wrong) refused the login: that is
    an authentication failure, not an unreachable host. None when the hang-up is not about the login."""
    reason = str(getattr(exc, "reason", "") or exc)
    code = getattr(exc, "code", None)
    about_auth = code == asyncssh.DISC_NO_MORE_AUTH_METHODS_AVAILABLE or "authentication" in reason.lower()
    if not about_auth and not (client.tried_password and isinstance(exc, asyncssh.ConnectionLost)):
        return None
    who = host.user or "the current user"
    said = reason.strip() or "the server closed the connection during login"
    if client.tried_password:
        todo = "the password was refused; check it (and the user name), or use a key (identity_file)"
    elif host.identities_only and host.identity_files:
        offered = ", ".join(host.identity_files)
        todo = f"IdentitiesOnly: only {offered} was offered; check that key is authorized there"
    else:
        todo = (
            "the agent or ~/.ssh offered more keys than the server allows per login (sshd "
            "MaxAuthTries): name the right key with identity_file and set IdentitiesOnly yes "
            "(hosts.yaml: identity_file: ... and identities_only: true)"
        )
    return AuthError(f"{host.name}: authentication failed as {who} ({said}): {todo}" + _exec_note(host), host)


def unreachable_failure(exc: BaseException, host: HostConfig, proxy: ProxyCommand | None) -> UnreachableError:
    """The host did not answer; through a ProxyCommand (already closed) its own words say why."""
    if proxy is not None:
        said = proxy.stderr_tail()
        return UnreachableError(
            f"cannot reach {host.name} through its ProxyCommand `{proxy.command}`: "
            f"{said or exc or 'timed out'}; run that command by hand to see why" + _exec_note(host)
        )
    said = str(exc).strip() or ("timed out" if isinstance(exc, TimeoutError) else "the connection was closed")
    return UnreachableError(
        f"cannot reach {host.name} ({host.hostname}:{host.port}): "
        f"{said}; check that the host is up and that its hostname and port are right" + _exec_note(host)
    )
