"""`sgtui sim-host` as a subprocess for the CLI tests: started on a free port, always stopped by pgid."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SPEED = "40"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sgtui(
    *args: str, config_dir: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if config_dir is not None:
        env["SGTUI_CONFIG_DIR"] = str(config_dir)
    return subprocess.run(
        [sys.executable, "-m", "sgtui", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


@dataclass
class SimHostProcess:
    proc: subprocess.Popen[bytes]
    port: int
    config_dir: Path
    banner: str

    def profile(self, name: str, server_port: int | None = None) -> Path:
        """A demo profile the sim-host wrote, its server port moved to a free one (tests run side by side)."""
        path = self.config_dir / "profiles" / name
        if server_port is not None:
            path.write_text(path.read_text().replace("port: 30000", f"port: {server_port}"))
        return path

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM the sim-host's process group, SIGKILL it if it lingers; returns its exit code."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            raise AssertionError("sgtui sim-host did not stop within 10 s of SIGTERM") from None


def _read_until(proc: subprocess.Popen[bytes], needle: str, timeout: float) -> str:
    """Raw reads (no Python buffering between select and read) until `needle` shows up."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    seen = b""
    deadline = time.monotonic() + timeout
    while needle.encode() not in seen:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            rest = proc.stderr.read() if proc.stderr and proc.poll() is not None else b""
            raise AssertionError(f"sgtui sim-host did not report {needle!r}: {seen!r} {rest!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            seen += os.read(fd, 65536)
    return seen.decode()


def _start_sim_host(config_dir: Path, extra: tuple[str, ...]) -> tuple[subprocess.Popen[bytes], int, str]:
    """Start `sgtui sim-host` on a free port. With --hosts N it listens on that port on 127.0.0.1..N, and the
    port free on .1 may be taken on another alias (an ephemeral port of an earlier test's connection): then
    it exits saying so, and another port is tried."""
    for attempt in range(5):
        port = free_port()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sgtui",
                "sim-host",
                "--port",
                str(port),
                "--config-dir",
                str(config_dir),
                "--speed",
                SPEED,
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            return proc, port, _read_until(proc, "try:", timeout=30)
        except AssertionError as err:
            if attempt == 4 or "address already in use" not in str(err) or proc.poll() is None:
                if proc.poll() is None:
                    proc.kill()
                raise
            for stream in (proc.stdout, proc.stderr):  # it exited: try the next port
                if stream is not None:
                    stream.close()
    raise AssertionError("unreachable")


@contextlib.contextmanager
def running_sim_host(config_dir: Path, *extra: str) -> Iterator[SimHostProcess]:
    proc, port, banner = _start_sim_host(config_dir, extra)
    host = SimHostProcess(proc, port, config_dir, banner)
    try:
        yield host
    finally:
        if proc.poll() is None:
            host.stop()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
