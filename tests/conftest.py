"""Fixtures shared by every test tier."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_LOGS = REPO.parent / "shared" / "logs"


@pytest.fixture(autouse=True)
def _jump_box_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every launch keeps a copy of its record in sgtui's local state dir (remote/run_store.py): in this
    process it goes to a temp dir of the test's own (so no test sees another's launches) unless a test set
    SGTUI_CONFIG_DIR, never the user's own."""
    from sgtui.core import paths

    real = paths.state_dir
    temp = tmp_path_factory.mktemp("jump-box-state")
    monkeypatch.setattr(paths, "state_dir", lambda: real() if os.environ.get(paths.ENV_VAR) else temp)


@pytest.fixture
def shared_logs() -> Path:
    """../shared/logs (real SGLang logs with a manifest); absent in a bare clone, so skip then."""
    if not (SHARED_LOGS / "manifest.json").is_file():
        pytest.skip(f"{SHARED_LOGS} is absent: the real-log checks need the shared/ folder beside the clone")
    return SHARED_LOGS


@pytest.fixture
def session_leader() -> Iterator[subprocess.Popen[bytes]]:
    """A process that leads its own group and session, as a detached run's leader does."""
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def other_user() -> Iterator[tuple[str, int]]:
    """A second local user (name, uid), created for this test and removed after it (skips saying why
    where that is impossible: not root, or no useradd)."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("a second local user needs root and useradd to create it")
    name = f"sgtui-t{os.getpid() % 100000}"
    made = subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/false", name], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"useradd failed here: {made.stderr.decode().strip()}")
    try:
        import pwd

        yield name, pwd.getpwnam(name).pw_uid
    finally:
        subprocess.run(["userdel", name], capture_output=True)
