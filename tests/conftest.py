"""Fixtures shared by every test tier."""

from __future__ import annotations

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
