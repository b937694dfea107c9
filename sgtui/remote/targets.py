"""Where a command runs on a host: the host itself, a Proxmox LXC container (`pct exec`), or a Docker
container, and how to find the containers (and the GPUs each one is given)."""

from __future__ import annotations

import calendar
import json
import re
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sgtui.core.shell import (
    MAX_ARG_STRLEN,
    RemoteCommand,
    ShellError,
    TargetKind,
    target_command,
    target_prefix,
    wrap_script,
)
from sgtui.remote.connection import RemoteError, Transport


@dataclass(frozen=True)
class Target:
    """A place to run commands: kind "host" (id None), "pct" (id = VMID) or "docker" (id = name)."""

    kind: TargetKind = "host"
    id: str | None = None

    def __post_init__(self) -> None:
        target_prefix(self.kind, self.id)  # validates kind and id early, with a clear message

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> Target:
        """From a profile's `target: {kind, id}`."""
        if not data:
            return cls()
        ident = data.get("id")
        return cls(data.get("kind", "host"), None if ident is None else str(ident))

    @property
    def label(self) -> str:
        return "host" if self.kind == "host" else f"{self.kind} {self.id}"

    def wrap(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
        """The command line that runs argv with env exactly, inside this target."""
        cmd = self.command(argv, env)
        if cmd.stdin is not None:
            raise ShellError(
                f"the command for {self.label} is too long for one command line "
                f"(over {MAX_ARG_STRLEN} bytes); shorten it"
            )
        return cmd.command

    def command(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> RemoteCommand:
        return target_command(argv, env, self)

    def script(self, script: str) -> RemoteCommand:
        """A bash script run inside this target (no rc files; via stdin when too large for argv)."""
        return wrap_script(script, self.kind, self.id)


HOST = Target()


@dataclass(frozen=True)
class ContainerInfo:
    """A container found on a host; `gpus` are the NVIDIA device numbers it is given (`all_gpus` when
    its config allows every one)."""

    target: Target
    name: str
    status: str
    image: str | None = None
    gpus: tuple[int, ...] = ()
    all_gpus: bool = False


# `pct list` prints fixed columns ("%-10s %-10s %-12s %-20s": VMID, Status, Lock, Name); Lock is often
# empty and Name may be empty too, so a row's third word is a lock or a name depending on where it starts.
_PCT_NAME_COLUMN = 34
_WORD = re.compile(r"\S+")


def parse_pct_list(text: str) -> list[tuple[str, str, str]]:
    """`pct list` -> [(vmid, status, name)]; rows with an empty Lock and/or Name column keep their name."""
    name_col = _PCT_NAME_COLUMN
    rows = []
    for line in text.splitlines():
        if line.lstrip().startswith("VMID") and "Name" in line:
            name_col = line.index("Name")
            continue
        words = list(_WORD.finditer(line))
        if len(words) < 2 or not words[0].group().isdigit():
            continue
        vmid, status = words[0].group(), words[1].group()
        rest = words[2:]
        if len(rest) == 1 and rest[0].start() < name_col - 1:  # a lock ("backup", "migrate"), no name
            rest = []
        rows.append((vmid, status, rest[-1].group() if rest else ""))
    return rows


_CGROUP_NV = re.compile(r"^lxc\.cgroup2?\.devices\.allow\s*[:=]\s*c\s+195:(\d+|\*)", re.M)
_CGROUP_ALL = re.compile(r"^lxc\.cgroup2?\.devices\.allow\s*[:=]\s*(?:a\b|c\s+\*:\*)", re.M)
_DEV_NV = re.compile(r"^dev\d+\s*:\s*(?:path=)?/dev/nvidia(\d+)\b", re.M)
_MOUNT_NV = re.compile(r"^lxc\.mount\.entry\s*[:=]\s*/dev/nvidia(\d+)\s", re.M)


def parse_pct_config_gpus(text: str) -> tuple[tuple[int, ...], bool]:
    """GPU numbers a container's config gives it, and whether it allows all (`c 195:*`, `c *:*`, `a`).

    Minor 255 (nvidiactl) and 254 (nvidia-modeset) are control devices, not GPUs.
    """
    found: set[int] = set()
    all_gpus = bool(_CGROUP_ALL.search(text))
    for m in _CGROUP_NV.finditer(text):
        if m.group(1) == "*":
            all_gpus = True
        elif int(m.group(1)) < 254:
            found.add(int(m.group(1)))
    for rx in (_DEV_NV, _MOUNT_NV):
        found.update(int(m.group(1)) for m in rx.finditer(text))
    return tuple(sorted(found)), all_gpus


def parse_docker_ps(text: str) -> list[tuple[str, str, str]]:
    """`docker ps --format '{{.Names}}\\t{{.Status}}\\t{{.Image}}'` -> [(name, status, image)]."""
    rows = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0]:
            rows.append((parts[0], parts[1], parts[2]))
    return rows


_DISCOVER = r"""
if command -v pct >/dev/null 2>&1; then
  echo "@@pct"
  list=$(pct list 2>&1); printf '%s\n' "$list"
  for id in $(printf '%s\n' "$list" | awk 'NR>1 && $1 ~ /^[0-9]+$/ {print $1}'); do
    echo "@@pctconfig $id"; pct config "$id" 2>/dev/null
  done
fi
if command -v docker >/dev/null 2>&1; then
  if ! ps_out=$(docker ps --format '{{.Names}}	{{.Status}}	{{.Image}}' 2>&1); then
    echo "@@dockererror"; printf '%s\n' "$ps_out"; ps_out=
  fi
  echo "@@docker"; printf '%s\n' "$ps_out"
  ids=$(docker ps -q 2>/dev/null | grep -E '^[0-9a-f]+$')
  if [ -n "$ids" ]; then
    echo "@@dockergpus"
    docker inspect --format '{{.Name}}	{{json .HostConfig.DeviceRequests}}' $ids 2>/dev/null
  fi
fi
echo "@@end"
"""


def parse_docker_gpus(text: str) -> dict[str, tuple[tuple[int, ...], bool]]:
    """`docker inspect` name + DeviceRequests lines -> {name: (GPU numbers, all GPUs)} for `--gpus` users.

    `--gpus all` is Count -1; `--gpus 2` is the first two; `--gpus device=0,2` lists ids (UUIDs are not
    numbers and are left out).
    """
    found: dict[str, tuple[tuple[int, ...], bool]] = {}
    for line in text.splitlines():
        name, sep, raw = line.partition("\t")
        if not sep:
            continue
        try:
            requests = json.loads(raw)
        except json.JSONDecodeError:
            continue
        gpus: set[int] = set()
        all_gpus = False
        for req in requests if isinstance(requests, list) else []:
            if not isinstance(req, dict):
                continue
            caps = req.get("Capabilities") or []
            if req.get("Driver") != "nvidia" and not any("gpu" in c for c in caps if isinstance(c, list)):
                continue
            ids = req.get("DeviceIDs") or []
            count = req.get("Count") or 0
            if ids:
                gpus.update(int(i) for i in ids if isinstance(i, str) and i.isdigit())
            elif count == -1:
                all_gpus = True
            elif isinstance(count, int) and count > 0:
                gpus.update(range(count))
        if gpus or all_gpus:
            found[name.lstrip("/")] = (tuple(sorted(gpus)), all_gpus)
    return found


def parse_discovery(text: str) -> list[ContainerInfo]:
    """The output of the discovery script -> containers with the GPUs each is given."""
    sections: dict[str, list[str]] = {}
    key = ""
    for line in text.splitlines():
        if line.startswith("@@"):
            key = line[2:].strip()
            sections.setdefault(key, [])
        elif key:
            sections[key].append(line)
    found: list[ContainerInfo] = []
    for vmid, status, name in parse_pct_list("\n".join(sections.get("pct", []))):
        gpus, all_gpus = parse_pct_config_gpus("\n".join(sections.get(f"pctconfig {vmid}", [])))
        found.append(ContainerInfo(Target("pct", vmid), name, status, None, gpus, all_gpus))
    docker_gpus = parse_docker_gpus("\n".join(sections.get("dockergpus", [])))
    for name, status, image in parse_docker_ps("\n".join(sections.get("docker", []))):
        gpus, all_gpus = docker_gpus.get(name, ((), False))
        found.append(ContainerInfo(Target("docker", name), name, status, image, gpus, all_gpus))
    return found


async def discover(conn: Transport) -> list[ContainerInfo]:
    """Proxmox containers (`pct list` + `pct config`) and running Docker containers on the host."""
    result = await conn.run(HOST.script(_DISCOVER), timeout=60)
    if "@@end" not in result.stdout:
        raise RemoteError(explain_failure(conn.host.name, HOST, result, "list its containers"))
    found = parse_discovery(result.stdout)
    error = _section(result.stdout, "dockererror")
    if error and not found:  # docker is there but refused us: say why rather than "no containers"
        failed = _Output(error, "", None)
        doing = "list Docker containers"
        raise RemoteError(explain_failure(conn.host.name, Target("docker", "x"), failed, doing))
    return found


@dataclass(frozen=True)
class _Output:
    stdout: str
    stderr: str
    rc: int | None


def _section(text: str, name: str) -> str:
    """The lines after `@@name` up to the next `@@` marker line."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith("@@"):
            inside = line[2:].strip() == name
        elif inside:
            lines.append(line)
    return "\n".join(lines).strip()


class _Failed(Protocol):
    stdout: str
    stderr: str
    rc: int | None


def explain_failure(host: str, target: Target, result: _Failed, doing: str) -> str:
    """One sentence for a remote command that failed: what went wrong where, and what to do about it."""
    text = (result.stderr or result.stdout or "").strip()
    low = text.lower()
    where = f"{host} {target.label}" if target.kind != "host" else host
    cut = "the connection closed before the command finished (no exit status)"
    last = text.splitlines()[-1][:300] if text else cut if result.rc is None else f"exit status {result.rc}"

    def missing(tool: str) -> bool:
        return f"{tool}: command not found" in low or f"{tool}: not found" in low

    if target.kind == "pct" and missing("pct"):
        return (
            f"cannot {doing} on {where}: {host} has no `pct` command, so it is not a Proxmox VE host; "
            "pick the host itself or a Docker container as the target"
        )
    if target.kind == "docker" and missing("docker"):
        return f"cannot {doing} on {where}: {host} has no `docker` command; pick another target"
    if target.kind == "pct" and re.search(r"\bct \d+ not running\b", low):
        return f"cannot {doing}: container {target.id} on {host} is stopped; start it (pct start {target.id})"
    if target.kind == "pct" and "configuration file" in low and "does not exist" in low:
        return f"cannot {doing}: {host} has no container {target.id}; `pct list` there shows the ones it has"
    if target.kind == "docker" and "no such container" in low:
        return (
            f"cannot {doing}: {host} has no Docker container {target.id}; `docker ps` lists the running ones"
        )
    if target.kind == "docker" and "is not running" in low:
        name = target.id
        return f"cannot {doing}: Docker container {name} on {host} is stopped; start it (docker start {name})"
    if "docker daemon socket" in low and "permission denied" in low:
        return (
            f"cannot {doing} on {where}: this login may not use Docker (the docker socket refused it: it is "
            "not root and not in the `docker` group); add it to that group (usermod -aG docker USER, then "
            "log in again) or connect as root"
        )
    if target.kind == "pct" and ("permission check failed" in low or "must be root" in low):
        return f"cannot {doing} on {where}: this login may not use pct ({last}); connect to {host} as root"
    no_bash = ("bash: no such file or directory", 'exec: "bash": executable file not found')
    if any(sign in low for sign in no_bash) or (missing("bash") and target.kind != "host"):
        return f"cannot {doing} on {where}: bash is not installed there, and sgtui needs it"
    if "no space left on device" in low:
        return f"cannot {doing} on {where}: its disk is full ({last}); free some space and try again"
    if "read-only file system" in low:
        return f"cannot {doing} on {where}: the file system is read-only ({last}); choose a writable runs dir"
    if "permission denied" in low or "operation not permitted" in low:
        return (
            f"cannot {doing} on {where}: permission denied ({last}); log in as a user allowed to do this, "
            "or choose a runs dir that user can write"
        )
    return f"cannot {doing} on {where}: {last}"


def container_ended(host: str, target: Target, result: _Failed) -> str | None:
    """Why nothing can run in the target because its container is stopped or gone (so a run in it has
    ended with it), or None when the failure is something else."""
    low = (result.stderr or result.stdout or "").lower()
    if target.kind == "docker" and "no such container" in low:
        return f"Docker container {target.id} is gone from {host} (removed), and the run ended with it"
    if target.kind == "docker" and "is restarting" in low:
        return (
            f"Docker container {target.id} on {host} is restarting (its restart policy), and the run "
            "ended with its old processes"
        )
    if target.kind == "docker" and "is not running" in low:
        return (
            f"Docker container {target.id} on {host} was stopped, and the run ended with it "
            f"(docker start {target.id} starts the container, not the server)"
        )
    if target.kind == "pct" and re.search(r"\bct \d+ not running\b", low):
        return f"container {target.id} on {host} was stopped, and the run ended with it"
    return None


_STARTED_AT = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?Z")


async def container_restarted_since(conn: Transport, target: Target, since: float) -> str | None:
    """For a Docker target: the sentence saying the container (re)started after `since` (a run launched
    before then died with its old processes), from `docker inspect`; None when it did not or is unknown."""
    if target.kind != "docker":
        return None
    fmt = "{{.State.StartedAt}} {{.RestartCount}} {{.HostConfig.RestartPolicy.Name}}"
    result = await conn.run(shlex.join(["docker", "inspect", "--format", fmt, target.id or ""]), timeout=30)
    words = result.stdout.split()
    m = _STARTED_AT.fullmatch(words[0]) if result.rc == 0 and len(words) >= 2 else None
    if m is None:
        return None
    started = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
    if started <= since:
        return None
    policy = words[2] if len(words) > 2 and words[2] not in ("", "no") else None
    how = f"by its restart policy ({policy}; restart count {words[1]})" if policy else "again"
    return (
        f"Docker container {target.id} on {conn.host.name} was started {how} at {m.group(1)} UTC, after "
        "this run was launched; the run's processes ended with the old container"
    )


_VERSION_CODE = "import importlib.metadata as m; print('@@sglang', m.version('sglang'))"


async def sglang_version(conn: Transport, target: Target, python: str) -> str | None:
    """The SGLang version installed for `python` inside the target; None when it is not installed."""
    if not python.startswith("/"):
        raise ShellError(
            f"python must be an absolute path (got {python!r}): inside pct the PATH is reset, "
            "so name the interpreter of the SGLang environment exactly"
        )
    result = await conn.run(target.command([python, "-c", _VERSION_CODE]), timeout=60)
    for line in result.stdout.splitlines():
        if line.startswith("@@sglang "):
            return line.split(None, 1)[1].strip()
    if "PackageNotFoundError" in result.stderr:
        return None
    where = f"{conn.host.name} {target.label}" if target.kind != "host" else conn.host.name
    if result.rc in (126, 127) and python in result.stderr:
        return_why = "is not executable" if result.rc == 126 else "does not exist"
        raise RemoteError(
            f"the interpreter {shlex.quote(python)} {return_why} on {where}: set the profile's `python:` "
            "to the python of the environment where SGLang is installed"
        )
    raise RemoteError(
        explain_failure(conn.host.name, target, result, f"ask {shlex.quote(python)} for its SGLang version")
    )
