"""The scripts themselves: detach (launch), list, status, stop and the stop preview."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from sgtui.core.runscripts.bashlib import LEFT_FN, PROC_FNS, RUNS_ROOT_FN, SAFE_FNS
from sgtui.core.runscripts.checks import (
    _safe_name,
    check_boot,
    check_pgid,
    check_run_id,
    check_runs_dir,
    check_start,
)
from sgtui.core.shell import BASH, MARKER, ShellError, _check_value, check_env, inner_command, marker_line

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
        + 'saved=true; printf \'%s\\n\' "$json" > "$d/run.json" || saved=false\n'
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
        + 'if [ $w != 2 ]; then\n'
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
        + f"        else printf '@@%s ' \"$f\"; head -c {RECORD_MAX_BYTES + 1} \"$d/$f\" | base64 | tr -d "
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
        + '  d=$R/$n\n'
        + '  [ -e "$d" ] || [ -L "$d" ] || continue\n'
        + '  if run_dir_ok "$d" && rm -rf -- "$d"; then removed="$removed${removed:+,}\\"$n\\""\n'
        + '  else refused="$refused${refused:+,}[\\"$n\\",\\"$(jesc "${why:-cannot remove it}")\\"]"; fi\n'
        + "done\n"
        + 'json="{\\"removed\\":[$removed],\\"refused\\":[$refused]}"\n'
        + f"{marker_line()}\n"
    )


def _group_prologue(pgid: int, start: int | None, boot: str | None, run_dir: str | None) -> str:
    """Sets G and `reused`: "boot" after a reboot, 1 when pid G exists but is not our group leader
    (another start time, or not the leader of its own group and session, as setsid left ours). With a
    run dir, `foreign` holds the reason when it (or the runs dir above it) is not ours.

    A run dir that is gone (removed while its server runs) sets `gone`: the record already read (and held
    by the caller) still identifies the run by pid, start time and boot id, and then the group leader must
    also be ours (uid) and be sgtui's runner for that run dir's log, or the run is `foreign`."""
    g, st, bt = check_pgid(pgid), check_start(start), check_boot(boot)
    rd = ""
    if run_dir is not None:
        if not run_dir.startswith("/") or run_dir.rstrip("/").count("/") < 2:
            raise ShellError(f"a run dir must be an absolute path inside a runs dir, got {run_dir!r}")
        rd = _check_value("run dir", run_dir.rstrip("/"))
    return (
        "set -u\n"
        + PROC_FNS
        + SAFE_FNS
        + f"G={g}; START={st if st is not None else -1}; BOOT={shlex.quote(bt)}; RD={shlex.quote(rd)}\n"
        + "foreign=; gone=\n"
        + 'if [ -n "$RD" ] && [ ! -e "$RD" ] && [ ! -L "$RD" ]; then gone=1\n'
        + 'elif [ -n "$RD" ] && ! run_dir_ok "$RD"; then foreign=$why; fi\n'
        + "cur_boot=$(boot_id)\n"
        + "reused=0\n"
        + 'if [ -n "$BOOT" ] && [ "$cur_boot" != "$BOOT" ]; then reused=boot; '
        + 'elif proc_stat "$G" && { { [ "$START" != -1 ] && [ "$st_start" != "$START" ]; } '
        + '|| [ "$st_pgrp" != "$G" ] || [ "$st_sid" != "$G" ]; }; then reused=1; fi\n'
        + 'if [ -n "$gone" ] && [ "$reused" = 0 ] && proc_stat "$G" && [ "$st_state" != Z ] '
        + '&& [ "$st_state" != X ]; then\n'
        + '  cl=(); mapfile -d "" -t cl < "/proc/$G/cmdline" 2>/dev/null\n'
        + '  if [ "$(stat -c %u "/proc/$G" 2>/dev/null)" != "$ME" ] '
        + f'|| [ "${{cl[5]:-}}" != "$RD/{LOG_FILE}" ]; then\n'
        + '    foreign="its run dir $RD was removed, and process group $G is not sgtui\'s runner for it"\n'
        + "  fi\n"
        + "fi\n"
    )


def _foreign_exit(code: int) -> str:
    return (
        'if [ -n "$foreign" ]; then '
        'json=$(printf \'{"result":"foreign","foreign":"%s"}\' "$(jesc "$foreign")"); '
        f"{marker_line()}; exit {code}; fi\n"
    )


def status_script(
    pgid: int, start: int | None, boot: str | None, log_path: str, *, run_dir: str | None = None
) -> str:
    """Report a run's state as a marker line: {"reused", "members", "rc", "stopped"} (rc null while
    unknown; "stopped" true when a stop by sgtui recorded itself in the run dir).

    Zombies do not count as members: PID 1 may reap orphans seconds late. When the run is gone without an
    exit code, "free_kib" (space left where the log is) and "rc_tmp" ("empty" when the exit code file
    was created but could not be written) tell a full disk. A run dir that is not ours: {"foreign"}. A run
    dir that was removed adds "gone": true (the state then comes from the processes alone).
    """
    return (
        _group_prologue(pgid, start, boot, run_dir)
        + _foreign_exit(0)
        + f"rcf={shlex.quote(log_path + '.rc')}\n"
        'rc=null; [ -r "$rcf" ] && rc=$(cat "$rcf")\n'
        "[[ $rc =~ ^-?[0-9]{1,10}$ ]] || rc=null\n"
        f'stopped=false; [ -f "${{rcf%/*}}/{STOPPED_FILE}" ] && stopped=true\n'
        'if [ "$reused" = 0 ]; then members=$(group_members); else members=0; fi\n'
        'json=$(printf \'{"reused":"%s","members":%s,"rc":%s,"stopped":%s,"gone":%s}\' "$reused" "$members" '
        '"$rc" "$stopped" "$([ -n "$gone" ] && echo true || echo false)")\n'
        'if [ "$reused" = 0 ] && [ "$members" = 0 ] && [ "$rc" = null ] && [ -z "$gone" ]; then\n'
        "  free=$(df -Pk -- \"${rcf%/*}\" 2>/dev/null | awk 'NR==2 {print $4}')\n"
        "  [[ $free =~ ^[0-9]{1,20}$ ]] || free=null\n"
        '  tmp=absent; [ -e "$rcf.tmp" ] && { [ -s "$rcf.tmp" ] && tmp=written || tmp=empty; }\n'
        '  json="${json%\\}},\\"free_kib\\":$free,\\"rc_tmp\\":\\"$tmp\\"}"\n'
        "fi\n"
        f"{marker_line()}\n"
    )


def stop_script(
    pgid: int,
    start: int | None,
    boot: str | None,
    grace: float,
    *,
    group_wait: float | None = None,
    kill_wait: float = 5.0,
    run_dir: str | None = None,
    run_id: str | None = None,
) -> str:
    """Stop a run the way SGLang shuts down cleanly, then make sure: TERM to the server's main process,
    up to `grace` s for it to drain and end; TERM to the group, up to `group_wait` s (default: the grace,
    at most 5 s); KILL to the group; confirm.

    Why the main process first: SGLang's tokenizer manager turns SIGTERM into a drain
    (`SignalHandler.sigterm_handler` sets `gracefully_exit`; `TokenizerManager.sigterm_watchdog` polls
    it every 5 s, logs "Gracefully exiting... Remaining number of requests N" until N is 0, sends the
    schedulers a ShutdownReq, waits up to 15 s for them and kills what is left of its own tree:
    sglang/srt/managers/tokenizer_manager.py, 0.5.23; 0.4.0 has the same watchdog and kills its tree
    with `kill_process_tree(os.getpid(), include_parent=True)`). A TERM to the whole group reaches the
    schedulers first, and SGLang logs their death as a crash ("Subprocess scheduler_0 ... crashed ...
    Triggering SIGQUIT for cleanup"). Releases without the handler end on the default TERM, and the group
    TERM and KILL that follow take whatever is left either way.

    Before the first signal the stop records itself in the run dir (`stopped`, 0600), so the run then
    reads `stopped`, not `dead`; the runner's TERM trap still writes the exit code.

    Refuses (marker {"result": "pid-reused"}, exit 3) when the pid now belongs to another process, and
    ({"result": "foreign"}, exit 4) when the run dir is not ours. A start time is required: without one
    the pid cannot be told from a reused one. Once the group is gone, "left" lists the processes of the
    run still alive outside it (same session, or carrying SGTUI_RUN_ID=run_id under the run's uid).
    "steps" lists [what, milliseconds since the first signal, pid or null]: term-main, main-exited,
    term-group, kill, gone. Progress lines: `@@sgtui-progress SECONDS MEMBERS` about every 0.25 s, and
    `@@sgtui-step WHAT MS [PID]` as each step happens.
    """
    check_pgid(pgid)
    if check_start(start) is None:
        raise ShellError(
            f"refusing to signal process group {pgid}: its record has no start time (start: null), so "
            "sgtui cannot tell the run from another process that got the same pid"
        )
    group_wait = min(grace, 5.0) if group_wait is None else group_wait
    wait_ms, group_ms, kill_ms = (max(1, int(s * 1000)) for s in (grace, group_wait, kill_wait))
    rid = shlex.quote(check_run_id(run_id)) if run_id is not None else "''"
    done = (
        f"RUNID={rid}; left_scan\n"
        'json=$(printf \'{"result":"%s","signal":%s,"members":%s,"left":[%s],"steps":[%s]}\' '
        '"$res" "$sig" "$n" "$left_json" "$steps")\n'
        f"{marker_line()}\n"
    )
    # wait_group MS [main]: poll the group for up to MS milliseconds until it is empty (with `main`: or
    # until the main process M has ended); notes the step when M ends; sets n to the members left
    wait_fn = (
        "wait_group() {\n"
        "  local end i=0\n"
        "  now_ms; end=$((NOW + $1))\n"
        "  while :; do\n"
        '    n=$(group_members)\n'
        '    if [ -n "$M" ] && ! { proc_stat "$M" && [ "$st_pgrp" = "$G" ] && [ "$st_state" != Z ]; }; then\n'
        '      step main-exited "$M"; M=\n'
        '      [ -n "${2:-}" ] && return 0\n'
        "    fi\n"
        '    [ "$n" = 0 ] && return 0\n'
        "    now_ms; [ $NOW -lt $end ] || return 1\n"
        "    [ $((i % 5)) = 0 ] && "
        'echo "@@sgtui-progress $(( (NOW - T0) / 1000 )).$(( (NOW - T0) % 1000 / 100 )) $n"\n'
        "    sleep 0.05; i=$((i+1))\n"
        "  done\n"
        "}\n"
        'step() { now_ms; steps="$steps${steps:+,}[\\"$1\\",$((NOW - T0)),${2:-null}]"; '
        'echo "@@sgtui-step $1 $((NOW - T0)) ${2:-}"; }\n'
    )
    record = (
        f'if [ -n "$RD" ] && [ -z "$gone" ]; then printf \'{{"at":%s,"uid":%s}}\\n\' "$(date +%s)" "$ME" '
        f'> "$RD/.{STOPPED_FILE}.tmp" && mv -f -- "$RD/.{STOPPED_FILE}.tmp" "$RD/{STOPPED_FILE}"; fi\n'
    )
    return (
        "trap '' PIPE HUP\n"  # a dropped SSH channel must not cut the stop short between TERM and KILL
        "umask 077\n"
        + _group_prologue(pgid, start, boot, run_dir)
        + LEFT_FN
        + _foreign_exit(4)
        + 'if [ "$reused" = boot ]; then\n'  # the host rebooted: the run died with it, nothing to signal
        f'  json=\'{{"result":"not-running","signal":null,"members":0}}\'; {marker_line()}; exit 0\n'
        "fi\n"
        'if [ "$reused" != 0 ]; then\n'
        f'  json=\'{{"result":"pid-reused","reused":"\'$reused\'"}}\'; {marker_line()}; exit 3\n'
        "fi\n"
        + wait_fn
        + "steps=; M=; now_ms; T0=$NOW\n"
        "n=$(group_members)\n"
        'if [ "$n" = 0 ]; then\n'
        "  res=not-running; sig=null\n" + "  " + done.replace("\n", "\n  ").rstrip() + "\n  exit 0\n"
        "fi\n"
        + record
        + "sig=TERM\n"
        # the server's main process first: SGLang drains and stops its own children
        + "main_of; found=$?; now_ms; T0=$NOW\n"  # the times count from the first signal
        + 'if [ $found = 0 ]; then\n'
        + '  kill -TERM "$M" 2>/dev/null; step term-main "$M"\n'
        + f"  wait_group {wait_ms} main\n"
        # it ended: a moment for the runner to write the exit code and the children to go by themselves
        + '  [ -z "$M" ] && [ "$n" != 0 ] && wait_group 1000\n'
        + "fi\n"
        # what it left (or all of it, when it has no main process of its own): the group
        + 'if [ "$n" != 0 ]; then\n'
        + f"  kill -TERM -- -$G 2>/dev/null; step term-group; wait_group {group_ms}\n"
        + "fi\n"
        + 'if [ "$n" != 0 ]; then\n'
        + "  sig=KILL; kill -KILL -- -$G 2>/dev/null; step kill\n"
        + f"  wait_group {kill_ms}\n"
        + "fi\n"
        + '[ "$n" = 0 ] && step gone\n'
        + 'res=stopped; [ "$n" != 0 ] && res=survivors\n'
        + 'sig="\\"$sig\\""\n' + done
    )


def preview_script(
    pgid: int, start: int | None, boot: str | None, *, run_dir: str, run_id: str | None = None
) -> str:
    """What a stop would hit, read from the target without signalling anything.

    Marker: {"foreign"} | {"reused"} | {"reused": "0", "alive": false, "outside": N} | {"reused": "0",
    "alive": true, "uid", "user", "cmdline" (base64 of /proc/G/cmdline), "start", "uptime", "hz",
    "members", "outside"} where "outside" counts the run's processes outside its group.
    """
    rid = shlex.quote(check_run_id(run_id)) if run_id is not None else "''"
    return (
        _group_prologue(pgid, start, boot, run_dir)
        + LEFT_FN
        + _foreign_exit(0)
        + 'if [ "$reused" != 0 ]; then json=$(printf \'{"reused":"%s"}\' "$reused"); '
        f"{marker_line()}; exit 0; fi\n"
        f"RUNID={rid}; left_scan\n"
        # a leader that is a zombie (its parent has not reaped it yet) has ended: no empty command line
        'if ! proc_stat "$G" || [ "$st_state" = Z ] || [ "$st_state" = X ]; then\n'
        '  json=$(printf \'{"reused":"0","alive":false,"outside":%s}\' "$left_n")\n'
        f"  {marker_line()}; exit 0\n"
        "fi\n"
        "set -- $(stat -c '%u %U' \"/proc/$G\" 2>/dev/null)\n"
        "uid=${1:-null}; user=${2:-}\n"
        "cmd=$(base64 < \"/proc/$G/cmdline\" 2>/dev/null | tr -d '\\n')\n"
        "read -r up _ < /proc/uptime\n"
        "hz=$(getconf CLK_TCK 2>/dev/null) || hz=100\n"
        "members=$(group_members)\n"
        'json=$(printf \'{"reused":"0","alive":true,"uid":%s,"user":"%s","cmdline":"%s","start":%s,'
        '"uptime":"%s","hz":%s,"members":%s,"outside":%s}\' "$uid" "$(jesc "$user")" "$cmd" '
        '"$st_start" "$up" "${hz:-100}" "$members" "$left_n")\n'
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
