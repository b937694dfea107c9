"""Command strings that survive every layer: ssh -> login shell -> (pct exec | docker exec) -> bash -> argv.

Each layer parses once, so each gets exactly one round of quoting. Inside a Proxmox container the script
travels as base64 (ASCII only), because `pct` decodes its arguments with the host locale and mangles
non-ASCII under LANG=C. Every bash here runs with `--norc --noprofile`: Debian bash sources ~/.bashrc for
SSH commands, again inside `pct exec`, and its output or PATH changes would corrupt what we parse. Scripts
too large for one argv element (MAX_ARG_STRLEN, 128 KiB) go on stdin to `bash -s` instead.

Remote scripts print their result as one marker line (`MARKER {json}`) so stray output cannot confuse the
parser.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from sgtui.core.errors import UserError

TargetKind = Literal["host", "pct", "docker"]
BASH = ("bash", "--norc", "--noprofile")
MARKER = "@@sgtui"
# The kernel refuses any single argv element longer than this (MAX_ARG_STRLEN = 32 pages).
MAX_ARG_STRLEN = 131072
# Our own ceiling for the outer command: leaves room for the login shell's own additions.
ARG_BUDGET = 100_000

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DOCKER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


class ShellError(UserError):
    """A value that cannot be passed safely (bad env name, NUL byte, bad container id)."""


class TargetLike(Protocol):
    """Anything naming where a command runs: kind host/pct/docker and its id (VMID or container name)."""

    @property
    def kind(self) -> str: ...

    @property
    def id(self) -> str | None: ...


@dataclass(frozen=True)
class RemoteCommand:
    """What to send over SSH: the command line for the login shell, and the bytes for its stdin."""

    command: str
    stdin: bytes | None = None


def _check_value(what: str, value: str) -> str:
    if "\x00" in value:
        raise ShellError(f"{what} contains a NUL byte, which no command line can carry; remove it")
    return value


def check_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """Validate environment variables: names are shell identifiers, values carry no NUL."""
    checked: dict[str, str] = {}
    for name, value in (env or {}).items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ShellError(
                f"environment variable name {name!r} is not valid: use letters, digits and _ "
                "(not starting with a digit)"
            )
        if not isinstance(value, str):
            raise ShellError(f"environment variable {name} must be a string, got {type(value).__name__}")
        checked[name] = _check_value(f"environment variable {name}", value)
    return checked


def inner_command(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """`exec env K=V ... argv` as one bash-parsable line; argv[0] should be an absolute path."""
    if not argv:
        raise ShellError("empty command: nothing to run")
    words = [_check_value(f"argument {i}", a) for i, a in enumerate(argv)]
    checked = check_env(env)
    assignments = [f"{k}={v}" for k, v in checked.items()]
    for what, word in [
        *((f"argument {i}", w) for i, w in enumerate(words)),
        *(("environment", a) for a in assignments),
    ]:
        size = len(word.encode("utf-8")) + 1
        if size > MAX_ARG_STRLEN:
            raise ShellError(
                f"{what} {word[:40]!r}... is {size} bytes; Linux limits one argument to "
                f"{MAX_ARG_STRLEN} bytes (MAX_ARG_STRLEN): pass it through a file instead"
            )
    prefix = ["env", *assignments] if assignments else []
    return "exec " + shlex.join([*prefix, *words])


def b64_eval(script: str) -> str:
    """A bash line that decodes and evals `script`: ASCII only, immune to locale decoding."""
    encoded = base64.b64encode(script.encode("utf-8")).decode("ascii")
    return f'eval "$(echo {encoded} | base64 -d)"'


def _vmid(ident: str | None) -> str:
    text = str(ident or "").strip()
    if not text.isdigit() or not text.isascii():
        raise ShellError(f"pct target needs a numeric VMID, got {ident!r}")
    return str(int(text))


def _docker_name(ident: str | None) -> str:
    text = str(ident or "")
    if not _DOCKER_NAME.match(text):
        raise ShellError(f"docker target needs a container name or id, got {ident!r}")
    return text


def target_prefix(kind: str, ident: str | None, *, interactive: bool = False) -> list[str]:
    """argv that enters the target before our bash: nothing, `pct exec VMID --`, or `docker exec NAME`."""
    if kind == "host":
        return []
    if kind == "pct":
        return ["pct", "exec", _vmid(ident), "--"]
    if kind == "docker":
        return ["docker", "exec", *(["-i"] if interactive else []), _docker_name(ident)]
    raise ShellError(f"unknown target kind {kind!r}: use host, pct or docker")


def wrap_script(script: str, kind: str = "host", ident: str | None = None) -> RemoteCommand:
    """Wrap a bash script for the target; fall back to stdin (`bash -s`) when argv would be too big."""
    _check_value("script", script)
    body = b64_eval(script) if kind == "pct" else script
    command = shlex.join([*target_prefix(kind, ident), *BASH, "-c", body])
    if len(command.encode("utf-8")) <= ARG_BUDGET:
        return RemoteCommand(command)
    stdin_cmd = shlex.join([*target_prefix(kind, ident, interactive=True), *BASH, "-s"])
    return RemoteCommand(stdin_cmd, script.encode("utf-8"))


def target_command(
    argv: Sequence[str], env: Mapping[str, str] | None, target: TargetLike | None = None
) -> RemoteCommand:
    """The full remote command that runs `argv` with `env` on the target, exactly as given."""
    kind = target.kind if target is not None else "host"
    ident = target.id if target is not None else None
    return wrap_script(inner_command(argv, env), kind, ident)


def marker_line() -> str:
    """The printf that emits `$json` as a result line the parser can find among any stray output."""
    return f"printf '%s %s\\n' {MARKER} \"$json\""


def parse_marker(stdout: str) -> dict[str, Any] | None:
    """The JSON of the last marker line in `stdout`, or None when there is none."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER + " "):
            try:
                value = json.loads(line[len(MARKER) + 1 :])
            except json.JSONDecodeError:
                return None
            return value if isinstance(value, dict) else None
    return None


# Reads fields of /proc/PID/stat after the ") " that ends comm (comm may hold spaces and parens).
# Sets: st_state st_pgrp st_sid st_start ; returns 1 when the process is gone.
_PROC_STAT_FN = r"""
proc_stat() {
  local line rest
  { read -r line < "/proc/$1/stat"; } 2>/dev/null || return 1
  rest=${line##*) }
  set -- $rest
  st_state=$1; st_pgrp=$3; st_sid=$4; st_start=${20}
}
group_members() {
  local f line rest n=0
  for f in /proc/[0-9]*/stat; do
    { read -r line < "$f"; } 2>/dev/null || continue
    rest=${line##*) }
    set -- $rest
    if [ "$3" = "$G" ] && [ "$1" != Z ] && [ "$1" != X ]; then n=$((n+1)); fi
  done
  echo "$n"
}
boot_id() { cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown; }
"""


_FIND_MODULE = (
    "import importlib.util, sys; sys.exit(3 if importlib.util.find_spec(sys.argv[1]) is None else 0)"
)


def detach_script(
    run_dir: str,
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    log_name: str = "server.log",
    files: Mapping[str, str] | None = None,
) -> str:
    """Start argv detached (setsid nohup) with its output in a fresh log under run_dir.

    Refuses an existing log (a live old writer would corrupt or hide new output), writes `files` into the
    run dir first, records the exit code in `LOG.rc` when the command ends by itself, and prints one
    marker line (also saved as run.json): {"pid", "pgid", "sid", "start", "boot"} (pid = pgid = sid).
    """
    command = inner_command(argv, env).removeprefix("exec ")
    q_dir = shlex.quote(run_dir)
    writes = "".join(
        f"printf '%s' {shlex.quote(_check_value(name, body))} > \"$d\"/{shlex.quote(_safe_name(name))}"
        " || fail write\n"
        for name, body in (files or {}).items()
    )
    exe_check = ""
    if argv[0].startswith("/"):
        exe_check = (
            f"exe={shlex.quote(argv[0])}\n"
            + 'if [ ! -f "$exe" ] || [ ! -x "$exe" ]; then fail not-executable; fi\n'
        )
    if exe_check and len(argv) >= 3 and argv[1] == "-m":
        # `python -m sglang.launch_server` without sglang installed would only show up in the log
        probe = inner_command([argv[0], "-c", _FIND_MODULE, argv[2].split(".")[0]], env).removeprefix("exec ")
        # stdin from /dev/null: under `bash -s` the script itself is on stdin
        exe_check += f"{probe} < /dev/null 2>/dev/null; [ $? = 3 ] && fail no-module\n"
    runner = '"$@"; rc=$?; echo $rc > "$0.rc.tmp" && mv -f "$0.rc.tmp" "$0.rc"'
    return (
        "set -u\n"
        f"{_PROC_STAT_FN}"
        # one marker naming what failed; the command's own message (EACCES, ENOSPC, ...) is on stderr
        f"fail() {{ json='{{\"error\":\"'$1'\"}}'; {marker_line()}; exit 2; }}\n"
        f"{exe_check}"
        f'd={q_dir}; log="$d"/{shlex.quote(_safe_name(log_name))}\n'
        'if [ -e "$log" ]; then fail log-exists; fi\n'
        'mkdir -p -- "$d" || fail run-dir\n'
        f"{writes}"
        # noclobber creates the log only if it does not exist yet: two launches can never share one
        '( set -C; : > "$log" ) || { [ -e "$log" ] && fail log-exists; fail write; }\n'
        f'setsid nohup bash --norc --noprofile -c {shlex.quote(runner)} "$log" {command}'
        ' >> "$log" 2>&1 < /dev/null &\n'
        "pid=$!\n"
        "start=null\n"
        "for _ in $(seq 1 400); do\n"
        '  proc_stat "$pid" || break\n'
        "  start=$st_start\n"
        '  [ "$st_pgrp" = "$pid" ] && [ "$st_sid" = "$pid" ] && break\n'
        "  sleep 0.005\n"
        "done\n"
        "boot=$(boot_id)\n"
        'json=$(printf \'{"pid":%s,"pgid":%s,"sid":%s,"start":%s,"boot":"%s"}\''
        ' "$pid" "$pid" "$pid" "$start" "$boot")\n'
        'saved=true; printf \'%s\\n\' "$json" > "$d/run.json" || saved=false\n'
        'json="${json%\\}},\\"saved\\":$saved}"\n'
        f"{marker_line()}\n"
    )


def _safe_name(name: str) -> str:
    if not name or "/" in name or name in (".", ".."):
        raise ShellError(f"run file name {name!r} must be a plain file name")
    return name


# Linux never hands out pids above 2**22 (PID_MAX_LIMIT); 0 and 1 would make `kill -- -G` mean "our own
# group" or "every process we may signal".
PID_MAX_LIMIT = 4_194_304
_BOOT_ID = re.compile(r"[0-9A-Za-z-]{1,64}\Z")


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


def _group_prologue(pgid: int, start: int | None, boot: str | None) -> str:
    """Sets G and `reused`: "boot" after a reboot, 1 when pid G exists but is not our group leader
    (another start time, or not the leader of its own group and session, as setsid left ours)."""
    g, st, bt = check_pgid(pgid), check_start(start), check_boot(boot)
    return (
        "set -u\n"
        f"{_PROC_STAT_FN}"
        f"G={g}; START={st if st is not None else -1}; BOOT={shlex.quote(bt)}\n"
        "cur_boot=$(boot_id)\n"
        "reused=0\n"
        'if [ -n "$BOOT" ] && [ "$cur_boot" != "$BOOT" ]; then reused=boot; '
        'elif proc_stat "$G" && { { [ "$START" != -1 ] && [ "$st_start" != "$START" ]; } '
        '|| [ "$st_pgrp" != "$G" ] || [ "$st_sid" != "$G" ]; }; then reused=1; fi\n'
    )


def status_script(pgid: int, start: int | None, boot: str | None, log_path: str) -> str:
    """Report a run's state as a marker line: {"reused", "members", "rc"} (rc null while unknown).

    Zombies do not count as members: PID 1 may reap orphans seconds late.
    """
    return (
        _group_prologue(pgid, start, boot) + f"rcf={shlex.quote(log_path + '.rc')}\n"
        'rc=null; [ -r "$rcf" ] && rc=$(cat "$rcf")\n'
        "[[ $rc =~ ^-?[0-9]{1,10}$ ]] || rc=null\n"
        'if [ "$reused" = 0 ]; then members=$(group_members); else members=0; fi\n'
        'json=$(printf \'{"reused":"%s","members":%s,"rc":%s}\' "$reused" "$members" "$rc")\n'
        f"{marker_line()}\n"
    )


def stop_script(
    pgid: int, start: int | None, boot: str | None, grace: float, *, kill_wait: float = 5.0
) -> str:
    """TERM the process group, wait up to `grace` (printing progress), KILL what is left, confirm.

    Refuses (marker {"result": "pid-reused"}, exit 3) when the pid now belongs to another process.
    Progress lines: `@@sgtui-progress SECONDS MEMBERS` about every 0.25 s.
    """
    ticks = max(1, int(grace / 0.05))
    kill_ticks = max(1, int(kill_wait / 0.05))
    return (
        "trap '' PIPE HUP\n"  # a dropped SSH channel must not cut the stop short between TERM and KILL
        + _group_prologue(pgid, start, boot)
        + 'if [ "$reused" = boot ]; then\n'  # the host rebooted: the run died with it, nothing to signal
        f'  json=\'{{"result":"not-running","signal":null,"members":0}}\'; {marker_line()}; exit 0\n'
        "fi\n"
        'if [ "$reused" != 0 ]; then\n'
        f'  json=\'{{"result":"pid-reused","reused":"\'$reused\'"}}\'; {marker_line()}; exit 3\n'
        "fi\n"
        "n=$(group_members)\n"
        'if [ "$n" = 0 ]; then\n'
        f'  json=\'{{"result":"not-running","signal":null,"members":0}}\'; {marker_line()}; exit 0\n'
        "fi\n"
        "sig=TERM\n"
        "kill -TERM -- -$G 2>/dev/null\n"
        f"i=0; while [ $i -lt {ticks} ]; do\n"
        '  n=$(group_members); [ "$n" = 0 ] && break\n'
        '  [ $((i % 5)) = 0 ] && echo "@@sgtui-progress $((i * 5 / 100)).$((i * 5 % 100 / 10)) $n"\n'
        "  sleep 0.05; i=$((i+1))\n"
        "done\n"
        "n=$(group_members)\n"
        'if [ "$n" != 0 ]; then\n'
        "  sig=KILL; kill -KILL -- -$G 2>/dev/null\n"
        f'  i=0; while [ $i -lt {kill_ticks} ]; do n=$(group_members); [ "$n" = 0 ] && break; '
        "sleep 0.05; i=$((i+1)); done\n"
        "fi\n"
        'res=stopped; [ "$n" != 0 ] && res=survivors\n'
        'json=$(printf \'{"result":"%s","signal":"%s","members":%s}\' "$res" "$sig" "$n")\n'
        f"{marker_line()}\n"
    )


def parse_progress(line: str) -> tuple[float, int] | None:
    """(seconds since TERM, live members) from a stop script's progress line, else None."""
    parts = line.split()
    if len(parts) == 3 and parts[0] == MARKER + "-progress":
        try:
            return float(parts[1]), int(parts[2])
        except ValueError:
            return None
    return None
