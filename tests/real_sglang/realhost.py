"""This machine as a bare host behind the real-sshd tier's OpenSSH on 127.0.0.1, driven by the sgtui CLI.

`RealHost` writes sgtui's config dir (hosts.yaml entry `real`, known_hosts, client key) and profiles for
the real SGLang, runs `python -m sgtui ...` against it, and at the end KILLs whatever of its runs is still
alive: every process carrying one of its runs' SGTUI_RUN_ID (the runs dir is its own, so nothing else).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.real_sglang.harness import VERSION, RealEnv
from tests.sshd import SshdServer

HOST = "real"
RUN_ID_VAR = "SGTUI_RUN_ID"
LAUNCH_TIMEOUT_S = 240  # a cold start here: 21-45 s measured (issue 16); a busy 2-core CI box is slower


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Nothing listens on 127.0.0.1:port (SO_REUSEADDR, as uvicorn binds: TIME_WAIT does not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def run_pids(run_id: str) -> list[int]:
    """Live processes carrying the run's SGTUI_RUN_ID (zombies have no environment and do not count)."""
    needle = f"{RUN_ID_VAR}={run_id}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append(int(entry))
    return found


def http(port: int, path: str, body: dict[str, Any] | None = None, timeout: float = 60) -> tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=data, method="POST" if data else "GET"
    )
    if data:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.status, resp.read().decode()


@dataclass
class Launch:
    """One `sgtui launch --watch --json-events`: exit code, the events, and the run it started."""

    rc: int
    events: list[dict[str, Any]]
    stdout: str
    stderr: str

    @property
    def run(self) -> dict[str, Any]:
        return next(e["run"] for e in self.events if e.get("event") == "launched")

    @property
    def run_id(self) -> str:
        return str(self.run["id"])

    @property
    def log(self) -> str:
        return Path(self.run["log_path"]).read_text(errors="replace")

    def last(self, event: str) -> dict[str, Any]:
        return [e for e in self.events if e.get("event") == event][-1]

    def kinds(self) -> list[str]:
        return [e["kind"] for e in self.events if e.get("event") == "milestone"]


@dataclass
class RealHost:
    sshd: SshdServer
    env: RealEnv
    config_dir: Path
    runs_dir: Path
    profiles: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def create(cls, sshd: SshdServer, env: RealEnv, base: Path) -> RealHost:
        config = base / "sgtui-config"
        config.mkdir(parents=True, exist_ok=True)
        key = config / "client_ed25519"
        key.write_bytes(sshd.client_key.export_private_key())
        key.chmod(0o600)
        known = config / "known_hosts"
        known.write_text(sshd.known_hosts_line() + "\n")
        hosts = {
            HOST: {
                "hostname": sshd.host,
                "port": sshd.port,
                "user": "root",
                "identity_file": str(key),
                "known_hosts": str(known),
            }
        }
        (config / "hosts.yaml").write_text(yaml.safe_dump(hosts, sort_keys=False))
        runs = base / "runs"
        return cls(sshd, env, config, runs)

    def profile(
        self,
        name: str,
        port: int,
        *,
        model: str | None = None,
        extra: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
    ) -> Path:
        """A bare-host profile for the real SGLang on CPU: the tiny model, --device cpu, a small KV pool
        (without --max-total-tokens SGLang sizes it from free RAM), 127.0.0.1:port."""
        flags: dict[str, Any] = {
            "model-path": model or str(self.env.model_dir),
            "device": "cpu",
            "max-total-tokens": 8192,
            "max-running-requests": 8,
            "host": "127.0.0.1",
            "port": port,
            **(extra or {}),
        }
        data = {
            "name": name,
            "host": HOST,
            "python": str(self.env.python),
            "sglang_version": VERSION,
            "runs_dir": str(self.runs_dir),
            "env": self.env.server_env() if env is None else env,
            "sglang": {k: v for k, v in flags.items() if v is not None},  # None: leave the flag out
        }
        path = self.config_dir / "profiles" / f"{name}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        self.profiles[name] = path
        return path

    def sgtui(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "SGTUI_CONFIG_DIR": str(self.config_dir)}
        return subprocess.run(
            [sys.executable, "-m", "sgtui", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
        )

    def launch(self, profile: Path, timeout: float = LAUNCH_TIMEOUT_S) -> Launch:
        """`sgtui launch PROFILE --watch --json-events` (with --force where the launch has a preflight that
        would refuse a failure case before SGLang saw it)."""
        args = ["launch", str(profile), "--watch", "--json-events", "--timeout", str(timeout)]
        if "--force" in self.sgtui("launch", "--help").stdout:
            args.append("--force")
        done = self.sgtui(*args, timeout=timeout + 60)
        events = []
        for line in done.stdout.splitlines():
            with contextlib.suppress(ValueError):
                events.append(json.loads(line))
        return Launch(done.returncode, events, done.stdout, done.stderr)

    def runs(self, profile: Path) -> list[dict[str, Any]]:
        done = self.sgtui("runs", "--profile", str(profile), "--json")
        assert done.returncode == 0, done.stderr
        return list(json.loads(done.stdout))

    def state(self, profile: Path, run_id: str) -> str:
        return str(next(r["state"] for r in self.runs(profile) if r["id"] == run_id))

    def stop(self, profile: Path, run_id: str, grace: float = 20) -> subprocess.CompletedProcess[str]:
        return self.sgtui(
            "stop", run_id, "--profile", str(profile), "--yes", "--grace", str(grace), timeout=120
        )

    def run_ids(self) -> list[str]:
        return sorted(p.name for p in self.runs_dir.iterdir()) if self.runs_dir.is_dir() else []

    def wait_gone(self, run_id: str, timeout: float = 30) -> list[int]:
        """Wait until no process carries the run's id; the ones still there after `timeout`."""
        deadline = time.monotonic() + timeout
        while (left := run_pids(run_id)) and time.monotonic() < deadline:
            time.sleep(0.2)
        return left

    def kill_everything(self) -> None:
        """The end of every test: KILL any process of this host's runs that is still alive."""
        for run_id in self.run_ids():
            for pid in run_pids(run_id):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            self.wait_gone(run_id, 10)
