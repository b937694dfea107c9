"""Replacing a file on this machine without ever leaving a half-written one: the profiles a user edits,
sgtui's local run records and its cached flag tables all go through `write_atomic`.

A temp file beside the target (created with O_EXCL, 0600, so a planted link is never followed and nobody
else can read it while it is written), flushed and fsynced, given its final mode, then renamed over the
target, and the directory fsynced so the rename itself survives a crash. Until the rename the old file
stays intact; if anything fails the temp file is removed and the error raised. With `follow_link` a
symlinked target (a profile kept in a dotfiles repo) has the file it points to replaced: the link stays.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(
    path: Path, text: str, *, mode: int | None = None, prefix: str | None = None, follow_link: bool = False
) -> None:
    """Write `text` (UTF-8) to `path` atomically. `mode`: the file's permissions; None keeps an existing
    file's and makes a new one 0600. `prefix`: the temp file's name start (default `.<name>.`), so a
    directory's own listing can tell temp files apart. `follow_link`: a symlink has the file it names
    replaced (a user's profile); else the link itself is (sgtui's own records). Raises OSError."""
    path = Path(os.path.realpath(path)) if follow_link and path.is_symlink() else path
    fd, tmp_name = tempfile.mkstemp(prefix=prefix or f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
            if mode is None and path.exists():
                mode = path.stat().st_mode & 0o7777
            if mode is not None:
                os.fchmod(out.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_dir(path.parent)


def _sync_dir(directory: Path) -> None:
    """The rename is on disk once its directory is: best effort (some filesystems refuse a directory's
    fsync; the file itself already is)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
