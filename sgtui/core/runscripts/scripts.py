"""The scripts that make and keep run dirs: detach (launch), list, prune; status, stop and the stop
preview are in process.py."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from sgtui.core.runscripts.bashlib import PROC_FNS, RUNS_ROOT_FN, SAFE_FNS
from sgtui.core.runscripts.checks import (
    _safe_name,
    check_run_id,
    check_runs_dir,
)
from sgtui.core.shell import BASH, ShellError, _check_value, check_env, inner_command, marker_line

DEFAULT_RUNS_DIR_TEXT = "${XDG_STATE_HOME:-$HOME/.local/state}/sgtui/runs"
LOG_FILE = "server.log"  # the run's log in its run dir
# The most a run's command.json may hold, and what the listing reads of it: its argv and env, where one
# argument alone may be 128 KiB (shell.MAX_ARG_STRLEN); a launch that would write more is refused.
RECORD_MAX_BYTES = 1 << 20
KEEP_RUNS_DEFAULT = 20  # ended runs kept per target when pruning (hosts.yaml / profile `keep_runs`)
STOPPED_FILE = "stopped"  # written (0600) by a stop before its first signal: the run was stopped by sgtui
RUN_ID_VAR = "SGTUI_RUN_ID"
ENV_FILE = "env"
# The runner bash: loads the env file, runs argv, writes the exit code next to the log (atomically, with
# only builtins and `command -p`, so a PATH from the profile cannot break it). Its TERM trap is a command,
# not an ignore, so the server still gets the default TERM; a TERM to the whole group then waits for the
# server to end and the exit code is still written.
RUNNER = (
    "trap : TERM; "
    'while IFS= read -r -d "" kv; do export "$kv"; done < "${0%/*}/' + ENV_FILE + '"; '
    '"$@"; rc=$?; echo $rc > "$0.rc.tmp" && command -p mv -f "$0.rc.tmp" "$0.rc"'
)

_FIND_MODULE = (
    "import importlib.util, sys; sys.exit(3 if importlib.util.find_spec(sys.argv[1]) is None else 0)"
)


def _fail_fn() -> str:
    """`fail CODE [WHY]`: one error marker; a run dir this script created is removed again."""
    return (
        'fail() { json=$(printf \'{"error":"%s","why":"%s"}\' "$1" "$(jesc "${2:-}")"); '
        '[ -n "${made:-}" ] && rm -rf -- "$d"; '
        f"{marker_line()}; exit 2; }}\n"
    )


def _runs_var(runs_dir: str | None) -> str:
    checked = check_runs_dir(runs_dir)
    return f"RUNS={shlex.quote(checked) if checked else ''}\n"


def detach_script(
    runs_dir: str | None,
    run_id: str,
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    log_name: str = LOG_FILE,
    files: Mapping[str, str] | None = None,
) -> str:
    """Start argv detached (setsid nohup) in the fresh run dir RUNS/RUN_ID, its output in a fresh log.

    Creates the runs dir when missing (0700), refuses an unsafe one, an existing log or run dir, writes
    `files` and the env file, checks the interpreter, starts the runner, and prints one marker (also saved
    as run.json): {"pid","pgid","sid","start","boot","uid","user","run_dir"} plus "saved". The start
    time is read by the child itself before it execs, so a server that exits before this script looks
    still gets one ("start": null only when the child died before it could read it). A failure before
    the server started prints {"error", "why"} and removes the run dir it created.
    """
    inner_command(argv, env)  # validates every word and the env (NUL, size, names)
    checked_env = check_env(env)
    run_id = check_run_id(run_id)
    writes = "".join(
        f"printf '%s' {shlex.quote(_check_value(name, body))} > \"$d\"/{shlex.quote(_safe_name(name))}"
        " || fail write\n"
        for name, body in (files or {}).items()
    )
    assignments = [f"{k}={v}" for k, v in checked_env.items() if k != RUN_ID_VAR]
    assignments.append(f"{RUN_ID_VAR}={run_id}")
    env_write = (
        "printf '%s\\0' "
        + " ".join(shlex.quote(a) for a in assignments)
        + f' > "$d"/{ENV_FILE} || fail write\n'
    )
    exe_check = ""
    if argv[0].startswith("/"):
        exe_check = (
            f"exe={shlex.quote(argv[0])}\n"
            + 'if [ ! -f "$exe" ] || [ ! -x "$exe" ]; then fail not-executable; fi\n'
        )
    if exe_check and len(argv) >= 3 and argv[1] == "-m":
        # `python -m sglang.launch_server` without sglang installed would only show up in the log; the env
        # comes from the env file, as the server will get it (never on a command line)
        probe = shlex.join([argv[0], "-c", _FIND_MODULE, argv[2].split(".")[0]])
        exe_check += (
            '( while IFS= read -r -d "" kv; do export "$kv"; done < "$d"/'
            + ENV_FILE
            # stdin from /dev/null: under `bash -s` the script itself is on stdin
            + f"; exec {probe} ) < /dev/null 2>/dev/null; [ $? = 3 ] && fail no-module\n"
        )
    return (
        "set -u\numask 077\n"
        + PROC_FNS
        + SAFE_FNS
        + RUNS_ROOT_FN
        + _fail_fn()
        + _runs_var(runs_dir)
        + f"ID={shlex.quote(run_id)}\n"
        + 'runs_root || fail no-home "$why"\n'
        # resolved once, component by component (walk_dir): every write below goes to RP, never back
        # through a path someone else could change
        + 'walk_dir "$R" 1; case $? in 0) R=$RP ;; 3) fail run-dir "$why" ;; *) fail unsafe "$why" ;; esac\n'
        + 'dir_ok "$R" || fail unsafe "$why"\n'
        + f'd=$R/$ID; log="$d"/{shlex.quote(_safe_name(log_name))}\n'
        + 'if [ -e "$log" ]; then fail log-exists; fi\n'
        + 'mkdir -- "$d" || fail run-dir\n'
        + "made=1\n"
        + writes
        + env_write
        + exe_check
        # noclobber creates the log only if it does not exist yet: two launches can never share one
        + '( set -C; : > "$log" ) || { [ -e "$log" ] && fail log-exists; fail write; }\n'
        # the child records its own start time before it execs (same pid, same start time), so a server
        # that exits before this script looks at it still has a verifiable record
        + '( proc_stat "$BASHPID" && printf \'%s\' "$st_start" > "$d/.start"; '
        + f'exec setsid nohup {shlex.join(BASH)} -c {shlex.quote(RUNNER)} "$log" {shlex.join(argv)}'
        + ' ) >> "$log" 2>&1 < /dev/null &\n'
        + "pid=$!; made=\n"
        + "start=null\n"
        + "for _ in $(seq 1 400); do\n"
        + '  proc_stat "$pid" || break\n'
        + "  start=$st_start\n"
        + '  [ "$st_pgrp" = "$pid" ] && [ "$st_sid" = "$pid" ] && break\n'
        + "  sleep 0.005\n"
        + "done\n"
        + 'if [ "$start" = null ]; then { read -r start < "$d/.start"; } 2>/dev/null; '
        + "[[ $start =~ ^[0-9]{1,20}$ ]] || start=null; fi\n"
        + 'rm -f -- "$d/.start"\n'
        + "boot=$(boot_id)\n"
        + "user=$(id -un 2>/dev/null) || user=$ME\n"
        + 'json=$(printf \'{"pid":%s,"pgid":%s,"sid":%s,"start":%s,"boot":"%s","uid":%s,"user":"%s",'
        + '"run_dir":"%s"}\' "$pid" "$pid" "$pid" "$start" "$(jesc "$boot")" "$ME" "$(jesc "$user")" '
        + '"$(jesc "$d")")\n'
        # whole or not at all: a listing in between (it lists a dir once run.json exists) never reads a
        # half-written record and calls a run being launched damaged
        + 'saved=true; { printf \'%s\\n\' "$json" > "$d/.run.json.tmp" && '
        + 'mv -f -- "$d/.run.json.tmp" "$d/run.json"; } || { rm -f -- "$d/.run.json.tmp"; saved=false; }\n'
        + 'json="${json%\\}},\\"saved\\":$saved}"\n'
        + f"{marker_line()}\n"
    )


def list_script(runs_dir: str | None) -> str:
    """List the run dirs under the runs dir, each with the verdict of the ownership checks.

    Per entry: `@@run NAME` (characters sgtui never writes shown as ?), `@@foreign REASON` when a check
    failed, `@@owner NAME`, and the files, never read through a symlink: `@@run.json= TEXT` for a
    one-line record in a run dir that passed the checks (only we can have written it), else
    `@@run.json B64` (base64, at most RECORD_MAX_BYTES, so nothing in it can forge a line); likewise
    command.json.
    Then the marker: {"runs_dir"} or {"runs_dir", "unsafe": REASON} when
    the runs dir itself is not ours (nothing under it is listed), or {"error": "no-home", "why"}.
    """
    return (
        "set -u\n"
        + PROC_FNS
        + SAFE_FNS
        + RUNS_ROOT_FN
        + _runs_var(runs_dir)
        + 'if ! runs_root; then json=$(printf \'{"error":"no-home","why":"%s"}\' "$(jesc "$why")"); '
        + f"{marker_line()}; exit 0; fi\n"
        + 'walk_dir "$R"; w=$?; [ $w = 0 ] && R=$RP\n'
        + "if [ $w != 2 ]; then\n"
        + '  if [ $w != 0 ] || ! dir_ok "$R"; then\n'
        + '    json=$(printf \'{"runs_dir":"%s","unsafe":"%s"}\' "$(jesc "$R")" "$(jesc "$why")")\n'
        + f"    {marker_line()}; exit 0\n"
        + "  fi\n"
        # one stat for every entry (by path), builtin reads for our own records: a listing of hundreds
        # of runs stays a handful of processes; only records that fail a check are sent base64-encoded
        + '  no() { jv "$1"; printf \'@@foreign %s\\n\' "$J"; ok=; }\n'
        + '  ents=("$R"/*); declare -A ST=()\n'
        + '  if [ -e "${ents[0]}" ] || [ -L "${ents[0]}" ]; then\n'
        + "    while IFS= read -r -d '' x; do p=${x#* * * }; ST[$p]=${x%\" $p\"}; done < <(stat --printf "
        + "'%u %a %U %n\\0' -- \"${ents[@]}\" 2>/dev/null)\n"
        + "  else ents=(); fi\n"
        + '  for d in "${ents[@]}"; do\n'
        + "    name=${d##*/}; safe=${name//[^A-Za-z0-9._-]/?}\n"
        + '    if [ -L "$d" ]; then jv "$R/$safe is a symbolic link"; '
        + 'printf \'@@run %s\\n@@foreign %s\\n\' "$safe" "$J"; continue; fi\n'
        + '    [ -d "$d" ] || continue\n'
        + '    [ -e "$d/run.json" ] || [ -L "$d/run.json" ] || continue\n'
        + "    printf '@@run %s\\n' \"$safe\"; ok=1; owner=\n"
        + '    [ "$safe" = "$name" ] || no "its name has characters sgtui never writes"\n'
        + "    st=${ST[$d]:-}\n"
        + '    if [ -z "$st" ]; then no "$R/$safe cannot be inspected"\n'
        + "    else\n"
        + "      set -- $st; owner=${3:-$1}\n"
        + '      if [ "$1" != "$ME" ]; then no "$R/$safe is owned by $owner (uid $1), not by uid $ME"\n'
        + "      elif [ $(( 8#$2 & 8#022 )) != 0 ]; then\n"
        + '        no "$R/$safe is writable by group or others (mode $2)"\n'
        + "      fi\n"
        + "    fi\n"
        + '    jv "$owner"; printf \'@@owner %s\\n\' "$J"\n'
        + "    for f in run.json command.json; do\n"
        + '      if [ -L "$d/$f" ]; then no "$R/$safe/$f is a symbolic link"\n'
        + '      elif [ -f "$d/$f" ] && [ -r "$d/$f" ]; then\n'
        + "        c=; [ -n \"$ok\" ] && { IFS= read -r -d '' c < \"$d/$f\"; c=${c%$'\\n'}; }\n"
        + "        if [ -n \"$c\" ] && [[ $c != *$'\\n'* ]] && [ ${#c} -le "
        + f"{RECORD_MAX_BYTES} ]; then "
        + 'printf \'@@%s= %s\\n\' "$f" "$c"\n'
        + f'        else printf \'@@%s \' "$f"; head -c {RECORD_MAX_BYTES + 1} "$d/$f" | base64 | tr -d '
        + "'\\n'; echo; fi\n"
        + "      fi\n"
        + "    done\n"
        + "  done\n"
        + "fi\n"
        + 'json=$(printf \'{"runs_dir":"%s"}\' "$(jesc "$R")")\n'
        + f"{marker_line()}\n"
    )


def prune_script(runs_dir: str, names: Sequence[str]) -> str:
    """Remove the named run dirs under the runs dir (runs the caller found ended and its own). Each is
    checked again first (ours, a real directory reached without a symbolic link) and removed with `rm -rf`,
    which follows no link inside it. Marker: {"removed": [NAME...], "refused": [[NAME, WHY]...]}."""
    checked = check_runs_dir(runs_dir)
    if checked is None:
        raise ShellError("pruning needs the runs dir as the target resolved it")
    quoted = " ".join(shlex.quote(check_run_id(n)) for n in names)
    return (
        "set -u\n"
        + PROC_FNS
        + SAFE_FNS
        + f"R={shlex.quote(checked)}; removed=; refused=\n"
        + f"for n in {quoted}; do\n"
        + "  d=$R/$n\n"
        + '  [ -e "$d" ] || [ -L "$d" ] || continue\n'
        + '  if run_dir_ok "$d" && rm -rf -- "$d"; then removed="$removed${removed:+,}\\"$n\\""\n'
        + '  else refused="$refused${refused:+,}[\\"$n\\",\\"$(jesc "${why:-cannot remove it}")\\"]"; fi\n'
        + "done\n"
        + 'json="{\\"removed\\":[$removed],\\"refused\\":[$refused]}"\n'
        + f"{marker_line()}\n"
    )
