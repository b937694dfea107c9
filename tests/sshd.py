"""A real OpenSSH sshd on 127.0.0.x for the integration tier, started per test with generated keys.

Follows what was measured on the CI image: /run/sshd must exist, sshd needs its absolute path, the host
key must be 0600, StrictModes must be off under /tmp, stdout must not be a pipe the test runner waits on,
the port is random (collisions are retried), and teardown closes client connections before stopping the
listener (per-connection sshd processes have their own session and survive the listener).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh
import pytest

SSHD = "/usr/sbin/sshd"
REQUIRE_ENV = "SGTUI_REQUIRE_SSHD"


@dataclass
class SshdServer:
    host: str
    port: int
    host_key: asyncssh.SSHKey
    client_key: asyncssh.SSHKey
    proc: subprocess.Popen[bytes]
    log_path: Path
    dir: Path
    user: str = "root"
    _closers: list[object] = field(default_factory=list)

    def known_hosts_line(self) -> str:
        pub = self.host_key.convert_to_public().export_public_key().decode().strip()
        return f"[{self.host}]:{self.port} {pub}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def connection_pids(self) -> list[int]:
        """The per-connection `sshd: root@notty` processes (children of the listener)."""
        out = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(self.proc.pid)], capture_output=True, text=True, check=False
        ).stdout
        return [int(p) for p in out.split()]


def sshd_unavailable_reason() -> str | None:
    if not os.path.exists(SSHD):
        return f"sshd not installed ({SSHD} missing; apt-get install openssh-server)"
    if os.geteuid() != 0:
        return "sshd tier needs root (it logs in as root, like the Proxmox hosts sgtui targets)"
    return None


def require_sshd() -> None:
    """Skip (reason mentions sshd) when sshd is missing, unless SGTUI_REQUIRE_SSHD=1: then fail."""
    reason = sshd_unavailable_reason()
    if reason is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but the real-sshd tier cannot run: {reason}")
    pytest.skip(reason)


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _banner(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2) as s:
            return s.recv(4).startswith(b"SSH-")
    except OSError:
        return False


@contextlib.contextmanager
def start_sshd(
    tmpdir: Path,
    *,
    env_path: str | None = None,
    max_sessions: int | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    extra_config: str = "",
    password_auth: bool = False,
) -> Iterator[SshdServer]:
    """Start sshd on host (random port unless given) with a fresh host key and one authorized client key.

    `env_path` becomes PATH of every session (SetEnv), so fakes can come first; root's ~/.bashrc may
    still prepend to it, which is one of the things this tier is for.
    """
    require_sshd()
    tmpdir.mkdir(parents=True, exist_ok=True)
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    key_path = tmpdir / "ssh_host_ed25519_key"
    key_path.write_bytes(host_key.export_private_key())
    key_path.chmod(0o600)
    auth = tmpdir / "authorized_keys"
    auth.write_bytes(client_key.export_public_key())
    log_path = tmpdir / "sshd.log"
    last_error = ""
    for _attempt in range(5):
        chosen = port or _free_port(host)
        cfg = tmpdir / "sshd_config"
        lines = [
            f"Port {chosen}",
            f"ListenAddress {host}",
            f"HostKey {key_path}",
            "PidFile none",
            f"AuthorizedKeysFile {auth}",
            "StrictModes no",
            "PermitRootLogin prohibit-password",
            f"PasswordAuthentication {'yes' if password_auth else 'no'}",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "LogLevel ERROR",
        ]
        if env_path:
            lines.append(f"SetEnv PATH={env_path}")
        if max_sessions is not None:
            lines.append(f"MaxSessions {max_sessions}")
        cfg.write_text("\n".join(lines) + "\n" + extra_config)
        check = subprocess.run([SSHD, "-t", "-f", str(cfg)], capture_output=True, text=True, check=False)
        if check.returncode != 0:
            pytest.fail(f"sshd rejected the test config {cfg}: {check.stderr.strip()}")
        log = log_path.open("ab")
        proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(cfg)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        log.close()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and proc.poll() is None and not _banner(host, chosen):
            time.sleep(0.01)
        if proc.poll() is None and _banner(host, chosen):
            server = SshdServer(host, chosen, host_key, client_key, proc, log_path, tmpdir)
            try:
                yield server
            finally:
                _stop(server)
            return
        _terminate(proc)
        last_error = log_path.read_text(errors="replace")[-500:]
        if port is not None:
            break
    pytest.fail(f"sshd did not start on {host}: {last_error}")


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _stop(server: SshdServer) -> None:
    """Per-connection sshd processes outlive the listener; end them first, then the listener."""
    for pid in server.connection_pids():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    _terminate(server.proc)
