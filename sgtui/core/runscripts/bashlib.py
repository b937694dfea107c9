"""The bash functions the run scripts share: /proc readers, JSON escaping, ownership checks, the
per-user runs dir, and the scan for processes a run left behind. Text only; see scripts.py."""

# Reads fields of /proc/PID/stat after the ") " that ends comm (comm may hold spaces and parens).
# Sets: st_state st_pgrp st_sid st_start ; returns 1 when the process is gone.
PROC_FNS = r"""
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
# The server's main process: the runner's own child in the group (the runner runs argv as its one
# foreground command). Sets M; returns 1 when there is none (the server has exited, or the leader is it).
main_of() {
  local f line rest
  M=
  for f in /proc/[0-9]*/stat; do
    { read -r line < "$f"; } 2>/dev/null || continue
    rest=${line##*) }
    set -- $rest
    if [ "$2" = "$G" ] && [ "$3" = "$G" ] && [ "$1" != Z ] && [ "$1" != X ]; then
      M=${f#/proc/}; M=${M%/stat}; return 0
    fi
  done
  return 1
}
# Milliseconds since the epoch in NOW (bash 5's EPOCHREALTIME, else date).
now_ms() {
  local t=${EPOCHREALTIME:-}
  t=${t//[.,]/}
  if [[ $t =~ ^[0-9]{7,}$ ]]; then NOW=$(( 10#$t / 1000 )); else NOW=$(date +%s%3N); fi
}
boot_id() { cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown; }
jv() {
  local s=$1
  s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\n'/ }; s=${s//$'\r'/ }; s=${s//$'\t'/ }
  s=${s//[$'\001'-$'\037'$'\177']/?}
  J=$s
}
jesc() { jv "$1"; printf '%s' "$J"; }
"""

# Ownership checks. `why` holds the refusal (one line), `owner` the directory owner's name.
SAFE_FNS = r"""
ME=$(id -u)
dir_ok() {
  local p=$1 s
  why=; owner=
  if [ -L "$p" ]; then why="$p is a symbolic link"; return 1; fi
  if [ ! -d "$p" ]; then why="$p is not a directory"; return 1; fi
  s=$(stat -c '%u %a %U' -- "$p" 2>/dev/null) || { why="$p cannot be inspected"; return 1; }
  set -- $s
  owner=${3:-$1}
  if [ "$1" != "$ME" ]; then why="$p is owned by $owner (uid $1), not by uid $ME"; return 1; fi
  if [ $(( 8#$2 & 8#022 )) != 0 ]; then why="$p is writable by group or others (mode $2)"; return 1; fi
  return 0
}
# walk_dir PATH [CREATE]: the one resolution of a runs dir (or a run dir). Each component is looked at
# with lstat before it is used: a directory passed through must belong to root or to us and be writable by
# others only with the sticky bit (as /tmp is); a symbolic link on the way must belong to root or to us and
# sit in a directory that no one else can write, and its target is walked the same way; the last component
# is never a symbolic link. With CREATE=1 the missing tail is created (umask decides its mode) under the
# part already checked. Sets RP, the resolved path (no symbolic link left in it, so every later use of RP
# in this script names what was checked), and returns 0; 1 with `why`; 2 when a component is missing
# (RP: the path as far as it resolved, then the rest as given); 3 when it could not be created.
walk_dir() {
  local path=$1 create=${2:-0} cur=/ c p s u m hops=0 t
  local -a todo parts
  why=; RP=
  IFS=/ read -r -a todo <<< "${path#/}"
  while [ ${#todo[@]} -gt 0 ]; do
    c=${todo[0]}; todo=("${todo[@]:1}")
    case $c in
      ''|.) continue ;;
      ..) cur=${cur%/*}; [ -n "$cur" ] || cur=/; continue ;;
    esac
    p=${cur%/}/$c
    if [ -L "$p" ]; then
      if [ ${#todo[@]} = 0 ]; then why="$p is a symbolic link"; return 1; fi
      hops=$((hops+1)); [ $hops -le 40 ] || { why="$path: too many symbolic links"; return 1; }
      s=$(stat -c '%u %U' -- "$p" 2>/dev/null) || { why="$p cannot be inspected"; return 1; }
      u=${s%% *}
      if [ "$u" != 0 ] && [ "$u" != "$ME" ]; then
        why="$p (on the way to the runs dir) is a symbolic link owned by ${s#* } (uid $u),"
        why="$why not by root or uid $ME"
        return 1
      fi
      m=$(stat -c '%a' -- "$cur" 2>/dev/null) || { why="$cur cannot be inspected"; return 1; }
      if [ $(( 8#$m & 8#022 )) != 0 ]; then
        why="$p (on the way to the runs dir) is a symbolic link in $cur, which others can write (mode $m)"
        return 1
      fi
      t=$(readlink -- "$p") || { why="$p cannot be read"; return 1; }
      case $t in /*) cur=/ ;; esac
      IFS=/ read -r -a parts <<< "${t#/}"
      todo=("${parts[@]}" "${todo[@]}")
      continue
    fi
    if [ ! -e "$p" ]; then
      if [ "$create" != 1 ]; then
        RP=$p; for c in "${todo[@]}"; do [ -n "$c" ] && RP=$RP/$c; done
        return 2
      fi
      # another may make it meanwhile: it is checked below like any other
      mkdir -- "$p" || [ -e "$p" ] || [ -L "$p" ] || { why="cannot create $p"; return 3; }
      [ -L "$p" ] && { why="$p is a symbolic link"; return 1; }
    fi
    if [ ! -d "$p" ]; then
      why="$p is not a directory"
      [ "$create" = 1 ] && { echo "cannot create $path: $why" >&2; return 3; }
      return 1
    fi
    s=$(stat -c '%u %a' -- "$p" 2>/dev/null) || { why="$p cannot be inspected"; return 1; }
    u=${s%% *}; m=${s#* }
    if [ ${#todo[@]} != 0 ]; then
      if [ "$u" != 0 ] && [ "$u" != "$ME" ]; then
        why="$p (above the runs dir) is owned by uid $u, not by root or uid $ME"; return 1
      fi
      if [ $(( 8#$m & 8#022 )) != 0 ] && [ $(( 8#$m & 8#1000 )) = 0 ]; then
        why="$p (above the runs dir) is writable by others without the sticky bit (mode $m)"; return 1
      fi
    fi
    cur=$p
  done
  if [ "$cur" = / ]; then why="/ cannot be a runs dir"; return 1; fi
  RP=$cur
}
# The directories above PATH, checked as walk_dir checks them; PATH itself is dir_ok's.
above_ok() {
  local rc
  walk_dir "$1"; rc=$?
  [ $rc = 1 ] && return 1
  return 0
}
run_dir_ok() {
  walk_dir "$1" || { [ -n "$why" ] || why="$1 does not exist"; return 1; }
  if [ "$RP" != "$1" ]; then why="$1 is reached through a symbolic link (it is $RP)"; return 1; fi
  dir_ok "$1" || return 1
  local o=$owner
  dir_ok "${1%/*}" || return 1
  owner=$o
}
"""

RUNS_ROOT_FN = r"""
runs_root() {
  if [ -n "$RUNS" ]; then R=$RUNS; return 0; fi
  local base=${XDG_STATE_HOME:-} h
  case $base in /*) ;; *) base= ;; esac
  if [ -z "$base" ]; then
    h=${HOME:-}
    case $h in /*) ;; *) h=$(getent passwd "$ME" 2>/dev/null | cut -d: -f6) ;; esac
    case $h in
      /*) ;;
      *)
        why="no home directory is known for uid $ME on the target (HOME is unset), so there is no"
        why="$why default runs dir; set runs_dir for this host in hosts.yaml"
        return 1 ;;
    esac
    base=${h%/}/.local/state
  fi
  R=${base%/}/sgtui/runs
}
"""

# Processes of the run left outside its process group: same session (sid == G) or carrying the run's
# marker variable (a child that called setsid has a new sid but keeps its environment). Sets `left_json`.
# Only processes of the run's own uid count: anyone can start a process with SGTUI_RUN_ID=<id> in its
# environment, and such a process is not the run's (nor ours to name as left behind).
LEFT_FN = r"""
left_scan() {
  local f line rest p seen=" " cmd n=0
  left_json=
  add_left() {
    cmd=$(tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | head -c 300)
    local uid; uid=$(stat -c %u "/proc/$1" 2>/dev/null || echo null)
    left_json="$left_json${left_json:+,}{\"pid\":$1,\"uid\":$uid,\"why\":\"$2\",\"cmd\":\"$(jesc "$cmd")\"}"
    seen="$seen$1 "; n=$((n+1))
  }
  for f in /proc/[0-9]*/stat; do
    { read -r line < "$f"; } 2>/dev/null || continue
    rest=${line##*) }
    set -- $rest
    p=${f#/proc/}; p=${p%/stat}
    [ "$p" = "$$" ] && continue
    if [ "$4" = "$G" ] && [ "$3" != "$G" ] && [ "$1" != Z ] && [ "$1" != X ]; then add_left "$p" session; fi
  done
  if [ -n "$RUNID" ]; then
    for f in $(grep -lzxF -- "SGTUI_RUN_ID=$RUNID" /proc/[0-9]*/environ 2>/dev/null); do
      p=${f#/proc/}; p=${p%/environ}
      case $seen in *" $p "*) continue ;; esac
      [ "$p" = "$$" ] && continue
      proc_stat "$p" || continue
      [ "$st_pgrp" = "$G" ] && continue
      [ "$st_state" = Z ] || [ "$st_state" = X ] && continue
      [ "$(stat -c %u "/proc/$p" 2>/dev/null)" = "$ME" ] || continue
      add_left "$p" marker
    done
  fi
  left_n=$n
}
"""
