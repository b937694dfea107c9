"""Where a command runs on a host: the host itself, a Proxmox LXC container (`pct exec`), or a Docker
container, and how to find the containers (and the GPUs each one is given)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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


def parse_pct_list(text: str) -> list[tuple[str, str, str]]:
    """`pct list` -> [(vmid, status, name)]; the Lock column may be empty."""
    rows = []
    for line in text.splitlines():
        words = line.split()
        if len(words) < 2 or not words[0].isdigit():
            continue
        rows.append((words[0], words[1], words[-1] if len(words) >= 3 else ""))
    return rows


_CGROUP_NV = re.compile(r"^lxc\.cgroup2?\.devices\.allow\s*[:=]\s*c\s+195:(\d+|\*)", re.M)
_DEV_NV = re.compile(r"^dev\d+\s*:\s*(?:path=)?/dev/nvidia(\d+)\b", re.M)
_MOUNT_NV = re.compile(r"^lxc\.mount\.entry\s*[:=]\s*/dev/nvidia(\d+)\s", re.M)


def parse_pct_config_gpus(text: str) -> tuple[tuple[int, ...], bool]:
    """GPU numbers a container's config gives it, and whether it allows all (`c 195:*`).

    Minor 255 (nvidiactl) and 254 (nvidia-modeset) are control devices, not GPUs.
    """
    found: set[int] = set()
    all_gpus = False
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
  echo "@@docker"; docker ps --format '{{.Names}}	{{.Status}}	{{.Image}}' 2>/dev/null
fi
echo "@@end"
"""


def parse_discovery(text: str) -> list[ContainerInfo]:
    """The output of the discovery script -> containers, pct ones with their GPUs."""
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
    for name, status, image in parse_docker_ps("\n".join(sections.get("docker", []))):
        found.append(ContainerInfo(Target("docker", name), name, status, image))
    return found


async def discover(conn: Transport) -> list[ContainerInfo]:
    """Proxmox containers (`pct list` + `pct config`) and running Docker containers on the host."""
    result = await conn.run(HOST.script(_DISCOVER), timeout=60)
    if "@@end" not in result.stdout:
        raise RemoteError(f"{conn.host.name}: container discovery failed: {result.stderr.strip()[:300]}")
    return parse_discovery(result.stdout)


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
    raise RemoteError(
        f"{conn.host.name} {target.label}: cannot ask {shlex.quote(python)} for its SGLang version: "
        f"{(result.stderr or result.stdout).strip()[-300:] or f'exit {result.rc}'}"
    )
