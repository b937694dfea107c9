"""`write_atomic`: how profiles, local run records and cached flag tables replace a file on this machine."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sgtui.core.atomic import write_atomic


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_is_readable_only_by_its_owner(tmp_path: Path) -> None:
    target = tmp_path / "profile.yaml"
    write_atomic(target, "model: m\n")
    assert target.read_text(encoding="utf-8") == "model: m\n"
    assert _mode(target) == 0o600


def test_replacing_a_file_keeps_its_permissions_unless_told(tmp_path: Path) -> None:
    target = tmp_path / "profile.yaml"
    target.write_text("old\n", encoding="utf-8")
    os.chmod(target, 0o640)
    write_atomic(target, "new\n")
    assert (target.read_text(encoding="utf-8"), _mode(target)) == ("new\n", 0o640)
    write_atomic(target, "newer\n", mode=0o600)
    assert (target.read_text(encoding="utf-8"), _mode(target)) == ("newer\n", 0o600)


def test_a_failed_write_leaves_the_old_file_whole_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "runs.json"
    target.write_text("the old record\n", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "half \udc80 written")  # a lone surrogate cannot be encoded: fails mid-write
    assert target.read_text(encoding="utf-8") == "the old record\n"
    assert [p.name for p in tmp_path.iterdir()] == ["runs.json"]


def test_temp_files_carry_the_callers_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run store's pruning tells its own temp files apart by their name (run_store._TMP_PREFIX)."""
    seen: list[str] = []
    real_replace = os.replace

    def spy(src: str | Path, dst: str | Path) -> None:
        seen.append(Path(src).name)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    write_atomic(tmp_path / "a.json", "{}", prefix=".tmp-")
    assert len(seen) == 1 and seen[0].startswith(".tmp-")


def test_a_symlinked_file_has_its_target_replaced_and_stays_a_link(tmp_path: Path) -> None:
    """A profile kept in a dotfiles repo and linked into sgtui's folder: saving it edits the dotfile."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "qwen.yaml"
    real.write_text("old\n", encoding="utf-8")
    os.chmod(real, 0o640)
    link = tmp_path / "qwen.yaml"
    link.symlink_to(real)
    write_atomic(link, "new\n", follow_link=True)
    assert link.is_symlink() and real.read_text(encoding="utf-8") == "new\n" and _mode(real) == 0o640
    assert sorted(p.name for p in dotfiles.iterdir()) == ["qwen.yaml"]
    write_atomic(link, "sgtui's own record\n", mode=0o600)  # not asked to follow: the link is replaced
    assert not link.is_symlink() and real.read_text(encoding="utf-8") == "new\n" and _mode(real) == 0o640


def test_the_directory_is_synced_after_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without it a crash just after the save can bring back the old file."""
    synced: list[bool] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    write_atomic(tmp_path / "a.yaml", "x")
    assert synced == [False, True]  # the file's data, then its directory
