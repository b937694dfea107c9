"""Fixtures shared by every test tier."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_LOGS = REPO.parent / "shared" / "logs"


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
