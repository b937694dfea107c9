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
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from sgtui.core.bounded import parse_json_or_none
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
            value = parse_json_or_none(line[len(MARKER) + 1 :])  # from the host: bounded, never trusted
            return value if isinstance(value, dict) else None
    return None
