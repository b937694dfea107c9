"""The scripts that look at or signal a run's processes: status, stop (graceful: the server's main
process first, then its group) and the stop preview. Text only; the shared bash is in bashlib.py."""

from __future__ import annotations

import shlex

from sgtui.core.runscripts.bashlib import LEFT_FN, PROC_FNS, SAFE_FNS
from sgtui.core.runscripts.checks import check_boot, check_pgid, check_run_id, check_start
from sgtui.core.runscripts.scripts import LOG_FILE, STOPPED_FILE
from sgtui.core.shell import MARKER, ShellError, _check_value, marker_line


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
        "    n=$(group_members)\n"
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
        "fi\n" + wait_fn + "steps=; M=; now_ms; T0=$NOW\n"
        "n=$(group_members)\n"
        'if [ "$n" = 0 ]; then\n'
        "  res=not-running; sig=null\n" + "  " + done.replace("\n", "\n  ").rstrip() + "\n  exit 0\n"
        "fi\n"
        + record
        + "sig=TERM\n"
        # the server's main process first: SGLang drains and stops its own children
        + "main_of; found=$?; now_ms; T0=$NOW\n"  # the times count from the first signal
        + "if [ $found = 0 ]; then\n"
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
        + 'sig="\\"$sig\\""\n'
        + done
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
