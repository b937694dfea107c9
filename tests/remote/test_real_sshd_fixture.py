"""The real-sshd fixture skips when sshd is missing, except when CI demands it."""

from __future__ import annotations

import pytest

from tests import sshd


def test_missing_sshd_skips_with_a_reason_naming_sshd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sshd, "SSHD", "/nonexistent/sshd")
    monkeypatch.delenv(sshd.REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="sshd"):
        sshd.require_sshd()


def test_missing_sshd_fails_when_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sshd, "SSHD", "/nonexistent/sshd")
    monkeypatch.setenv(sshd.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="SGTUI_REQUIRE_SSHD=1"):
        sshd.require_sshd()
