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
above_ok() {
  local up rest c acc= p s
  why=
  up=${1%/*}; [ -n "$up" ] || up=/
  up=$(cd -P -- "$up" 2>/dev/null && pwd -P) || { why="the directory above $1 cannot be entered"; return 1; }
  local comps=(/)
  rest=${up#/}
  while [ -n "$rest" ]; do
    c=${rest%%/*}; acc=$acc/$c; comps+=("$acc")
    [ "$rest" = "$c" ] && break
    rest=${rest#*/}
  done
  for p in "${comps[@]}"; do
    s=$(stat -c '%u %a' -- "$p" 2>/dev/null) || { why="$p cannot be inspected"; return 1; }
    set -- $s
    if [ "$1" != 0 ] && [ "$1" != "$ME" ]; then
      why="$p (above the runs dir) is owned by uid $1, not by root or uid $ME"; return 1
    fi
    if [ $(( 8#$2 & 8#022 )) != 0 ] && [ $(( 8#$2 & 8#1000 )) = 0 ]; then
      why="$p (above the runs dir) is writable by others without the sticky bit (mode $2)"; return 1
    fi
  done
  return 0
}
run_dir_ok() {
  dir_ok "$1" || return 1
  local o=$owner
  dir_ok "${1%/*}" || return 1
  above_ok "${1%/*}" || return 1
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
      add_left "$p" marker
    done
  fi
  left_n=$n
}
"""
