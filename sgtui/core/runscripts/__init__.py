"""The bash scripts that launch, list, inspect and stop a detached run on a target (pure: text only).

Every script refuses what is not ours before reading or acting: the runs dir and each run dir must be
real directories (not symlinks) owned by the uid the script runs as and not writable by group or others,
and every directory above the runs dir must belong to root or to us and be writable by others only with
the sticky bit (as /tmp is). A planted record therefore cannot steer a stop at someone else's process.

The default runs dir is per user, resolved on the target (inside the container for pct/docker):
`${XDG_STATE_HOME:-$HOME/.local/state}/sgtui/runs`. The detach script runs under `umask 077`, so the
runs dir and each run dir are 0700 and every run file (command.json with the env, profile.yaml, env,
server.log, run.json) is 0600. The env reaches the server through the 0600 `env` file, never through a
command line that any user on the box could read in /proc; it also carries SGTUI_RUN_ID=<id>, which
lets a stop find processes that left the run's session (a child that called setsid).

Results come back as one `@@sgtui {json}` marker line (see core/shell.py); file contents are sent
base64-encoded so nothing inside a record can forge a line of the listing.
"""

from __future__ import annotations

from sgtui.core.runscripts.checks import (
    PID_MAX_LIMIT,
    check_boot,
    check_keep_runs,
    check_pgid,
    check_run_id,
    check_runs_dir,
    check_start,
)
from sgtui.core.runscripts.process import parse_progress, preview_script, status_script, stop_script
from sgtui.core.runscripts.scripts import (
    DEFAULT_RUNS_DIR_TEXT,
    ENV_FILE,
    KEEP_RUNS_DEFAULT,
    LOG_FILE,
    RECORD_MAX_BYTES,
    RUN_ID_VAR,
    RUNNER,
    STOPPED_FILE,
    detach_script,
    list_script,
    prune_script,
)

__all__ = [
    "DEFAULT_RUNS_DIR_TEXT",
    "ENV_FILE",
    "KEEP_RUNS_DEFAULT",
    "LOG_FILE",
    "PID_MAX_LIMIT",
    "RECORD_MAX_BYTES",
    "RUNNER",
    "RUN_ID_VAR",
    "STOPPED_FILE",
    "check_boot",
    "check_keep_runs",
    "check_pgid",
    "check_run_id",
    "check_runs_dir",
    "check_start",
    "detach_script",
    "list_script",
    "parse_progress",
    "preview_script",
    "prune_script",
    "status_script",
    "stop_script",
]
