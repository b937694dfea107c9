"""Fixtures of the real-SGLang tier: the environment (built once per session, cached across sessions) and
this machine as a bare host behind a real sshd, with every run it started KILLed at the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.real_sglang.harness import RealEnv, build_env
from tests.real_sglang.realhost import RealHost
from tests.sshd import start_sshd

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture(scope="session")
def real_env() -> RealEnv:
    """SGLang 0.5.23, the stub libcuda.so.1 and the tiny model (skips, or fails under
    SGTUI_REQUIRE_REAL_SGLANG=1, when they cannot be built here)."""
    env, _took = build_env()
    return env


@pytest.fixture(autouse=True)
def _config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never the real sgtui config dir (the TUI test builds its app in this process)."""
    cfg = tmp_path / "sgtui-config"
    cfg.mkdir(exist_ok=True)
    monkeypatch.setenv("SGTUI_CONFIG_DIR", str(cfg))
    return cfg


def real_host_at(base: Path, env: RealEnv) -> Iterator[RealHost]:
    with start_sshd(base / "sshd", env_path=SYSTEM_PATH) as sshd:
        host = RealHost.create(sshd, env, base)
        try:
            yield host
        finally:
            host.kill_everything()


@pytest.fixture
def real_host(real_env: RealEnv, tmp_path: Path) -> Iterator[RealHost]:
    yield from real_host_at(tmp_path, real_env)
