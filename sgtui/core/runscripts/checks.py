"""Values read back from a target before they reach a script: pgid, start time, boot id, run id, runs dir."""

from __future__ import annotations

import re

from sgtui.core.shell import ShellError, _check_value

# Linux never hands out pids above 2**22 (PID_MAX_LIMIT); 0 and 1 would make `kill -- -G` mean "our own
# group" or "every process we may signal".
PID_MAX_LIMIT = 4_194_304
_BOOT_ID = re.compile(r"[0-9A-Za-z-]{1,64}\Z")
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


def check_pgid(pgid: object) -> int:
    """A process group id that is safe to signal as `-G`: an int in 2..PID_MAX_LIMIT, nothing else."""
    if isinstance(pgid, bool) or not isinstance(pgid, int) or not 1 < pgid <= PID_MAX_LIMIT:
        raise ShellError(
            f"refusing to signal process group {pgid!r}: a run's pgid must be a number from 2 to "
            f"{PID_MAX_LIMIT}; its run.json looks damaged, so stop that server by hand"
        )
    return pgid


def check_start(start: object) -> int | None:
    """A process start time (clock ticks since boot) as recorded in run.json, or None when unknown."""
    if start is None:
        return None
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ShellError(f"a run's start time must be a non-negative number, got {start!r}")
    return start


def check_boot(boot: object) -> str:
    """A recorded boot id ("" when unknown); anything else is refused rather than trusted."""
    if boot in (None, "", "unknown"):
        return ""
    if not isinstance(boot, str) or not _BOOT_ID.match(boot):
        raise ShellError(f"a run's boot id must look like a UUID, got {boot!r}")
    return boot


def check_run_id(run_id: str) -> str:
    """A run id as sgtui names run dirs: letters, digits, `.`, `_`, `-` (no path, no shell syntax)."""
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id) or run_id in (".", ".."):
        raise ShellError(f"run id {run_id!r} is not one sgtui writes (letters, digits, . _ -)")
    return run_id


def check_runs_dir(runs_dir: str | None) -> str | None:
    """An explicit runs dir must be an absolute path without NUL; None is the per-user default."""
    if runs_dir is None:
        return None
    if not isinstance(runs_dir, str) or not runs_dir.startswith("/"):
        raise ShellError(f"runs_dir must be an absolute path on the target, got {runs_dir!r}")
    _check_value("runs_dir", runs_dir)
    if any(ord(c) < 32 or ord(c) == 127 for c in runs_dir):
        raise ShellError(f"runs_dir {runs_dir!r} holds control characters; choose a plain path")
    return runs_dir.rstrip("/") or "/"


def _safe_name(name: str) -> str:
    if not name or "/" in name or name in (".", ".."):
        raise ShellError(f"run file name {name!r} must be a plain file name")
    return name


def check_keep_runs(value: object, where: str) -> int:
    """How many ended runs to keep per target (`keep_runs`): a whole number from 1 to 100000."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100_000:
        raise ShellError(f"{where}: keep_runs must be a whole number from 1 to 100000, got {value!r}")
    return value
