"""Which hosts sgtui can reach: aliases from ~/.ssh/config plus sgtui's own hosts.yaml.

~/.ssh/config is resolved with asyncssh's own parser (Host/Match blocks, Include, ProxyJump), so an alias
means here what it means to `ssh`. hosts.yaml (in the config dir) adds or overrides entries:

    gpu1:
      hostname: 10.0.0.5
      port: 22
      user: root
      identity_file: ~/.ssh/id_ed25519
      proxy_jump: bastion
      known_hosts: ~/.ssh/known_hosts_lab
      host_key_alias: gpu1-bmc          # look the host key up under this name (OpenSSH HostKeyAlias)
      identities_only: true             # offer only identity_file, never ~/.ssh/id_* or other agent keys
      proxy_command: ssh -W %h:%p gw    # run as OpenSSH would (%h %p %r %n %%); its stdio is the link
      runs_dir: /data/me/sgtui-runs   # default: ~/.local/state/sgtui/runs of the login user, on the target
      keep_runs: 20                   # ended runs kept per target; older ones are pruned (default 20)
    here:
      local: true            # run on this machine, no SSH
"""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sgtui.core import paths
from sgtui.core.bounded import BoundedInputError, short_repr
from sgtui.core.errors import UserError
from sgtui.core.yamlsafe import NoAliasLoader, compose_yaml

HOSTS_FILE = "hosts.yaml"
KNOWN_HOSTS_FILE = "known_hosts"
_HOST_KEYS = {
    "hostname",
    "port",
    "user",
    "identity_file",
    "proxy_jump",
    "known_hosts",
    "local",
    "host_key_alias",
    "identities_only",
    "proxy_command",
    "runs_dir",
    "keep_runs",
}


class HostsFileError(UserError):
    """hosts.yaml or ~/.ssh/config holds something sgtui cannot use."""


@dataclass(frozen=True)
class HostConfig:
    """Everything needed to open one SSH connection (or run locally when `local`)."""

    name: str
    hostname: str
    port: int = 22
    user: str | None = None
    identity_files: tuple[str, ...] = ()
    proxy_jump: str | None = None
    known_hosts: tuple[str, ...] = ()
    local: bool = False
    source: str = "hosts.yaml"
    runs_dir: str | None = None  # None: the target user's own default (see sgtui.core.runscripts)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    host_key_alias: str | None = None  # the name its key is recorded under in known_hosts
    identities_only: bool = False  # only identity_files (and those keys in the agent) are offered
    proxy_command: str | None = None  # OpenSSH ProxyCommand, %-tokens not yet expanded
    keep_runs: int | None = None  # ended runs kept per target (None: runscripts.KEEP_RUNS_DEFAULT)

    @property
    def key_name(self) -> str:
        """The name known_hosts is searched for: HostKeyAlias, else the hostname."""
        return self.host_key_alias or self.hostname


def default_ssh_config() -> Path:
    return Path(os.path.expanduser("~/.ssh/config"))


def hosts_file() -> Path:
    return paths.config_dir() / HOSTS_FILE


def sgtui_known_hosts() -> Path:
    """sgtui's own known_hosts: where accepted new host keys are written."""
    return paths.config_dir() / KNOWN_HOSTS_FILE


def load_hosts(
    ssh_config: Path | bool | None = True, hosts_yaml: Path | bool | None = True
) -> dict[str, HostConfig]:
    """All configured hosts by alias; hosts.yaml entries override ~/.ssh/config ones.

    Pass a path to read another file, or False to skip that source (tests do).
    """
    hosts: dict[str, HostConfig] = {}
    cfg = default_ssh_config() if ssh_config is True else ssh_config or None
    if cfg is not None and cfg.is_file():
        for alias in ssh_config_aliases(cfg):
            hosts[alias] = resolve_ssh_alias(alias, cfg)
    yml = hosts_file() if hosts_yaml is True else hosts_yaml or None
    if yml is not None and yml.is_file():
        hosts.update(parse_hosts_yaml(yml, base=hosts))
    return hosts


_HOST_LINE = re.compile(r"^\s*Host\s+(.+?)\s*$", re.IGNORECASE)
_INCLUDE_LINE = re.compile(r"^\s*Include\s+(.+?)\s*$", re.IGNORECASE)


def ssh_config_aliases(path: Path, _seen: set[Path] | None = None) -> list[str]:
    """Concrete aliases named by `Host` lines (patterns with * ? ! are not hosts one can pick)."""
    seen = _seen if _seen is not None else set()
    path = path.resolve()
    if path in seen or not path.is_file():
        return []
    seen.add(path)
    aliases: list[str] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if m := _INCLUDE_LINE.match(line):
            for pattern in m.group(1).split():
                expanded = Path(os.path.expanduser(pattern))
                if not expanded.is_absolute():
                    expanded = Path(os.path.expanduser("~/.ssh")) / expanded
                for inc in sorted(expanded.parent.glob(expanded.name)):
                    aliases += [a for a in ssh_config_aliases(inc, seen) if a not in aliases]
        elif m := _HOST_LINE.match(line):
            for word in m.group(1).split():
                if not any(c in word for c in "*?!") and word not in aliases:
                    aliases.append(word)
    return aliases


def resolve_ssh_alias(alias: str, config_path: Path) -> HostConfig:
    """An alias as `ssh` would resolve it, using asyncssh's config parser."""
    from asyncssh.config import SSHClientConfig

    try:
        cfg = SSHClientConfig.load(None, [config_path], False, False, False, getpass.getuser(), (), alias, ())
    except Exception as exc:  # asyncssh raises ConfigParseError (a ValueError) with file and line
        raise HostsFileError(f"{config_path}: {exc}") from None
    idents = cfg.get("IdentityFile") or ()
    known = cfg.get("UserKnownHostsFile") or ()
    jump = cfg.get("ProxyJump")
    proxy = cfg.get("ProxyCommand")
    alias_key = cfg.get("HostKeyAlias")
    return HostConfig(
        name=alias,
        hostname=str(cfg.get("Hostname") or alias),
        port=int(cfg.get("Port") or 22),  # type: ignore[call-overload]
        user=str(cfg.get("User")) if cfg.get("User") else None,
        identity_files=tuple(os.path.expanduser(str(i)) for i in idents),  # type: ignore[union-attr]
        proxy_jump=None if not jump or str(jump).lower() == "none" else str(jump),
        known_hosts=tuple(os.path.expanduser(str(k)) for k in known),  # type: ignore[union-attr]
        source=str(config_path),
        host_key_alias=str(alias_key) if alias_key else None,
        identities_only=bool(cfg.get("IdentitiesOnly")),
        # asyncssh has already expanded its %-tokens; "none" turns it off, as in OpenSSH
        proxy_command=None if not proxy or str(proxy).lower() == "none" else _literal_percent(str(proxy)),
    )


def _literal_percent(command: str) -> str:
    """A command whose tokens were expanded already: keep its % signs literal for expand_proxy_command."""
    return command.replace("%", "%%")


_TOKEN = re.compile(r"%(.)")


def expand_proxy_command(host: HostConfig, local_user: str | None = None) -> str:
    """ProxyCommand with OpenSSH's tokens: %h hostname, %p port, %r remote user, %n the name as given,
    %% a percent sign. An unknown token is an error (as in ssh), naming the host entry."""
    command = host.proxy_command or ""
    user = host.user or local_user or getpass.getuser()
    values = {"h": host.hostname, "p": str(host.port), "r": user, "n": host.name, "%": "%"}

    def one(m: re.Match[str]) -> str:
        if m.group(1) not in values:
            raise HostsFileError(
                f"{host.source}: host {host.name!r}: proxy_command uses %{m.group(1)}, which sgtui does not "
                "expand; use %h, %p, %r, %n or %%"
            )
        return values[m.group(1)]

    return _TOKEN.sub(one, command)


def parse_hosts_yaml(path: Path, base: Mapping[str, HostConfig] | None = None) -> dict[str, HostConfig]:
    """Parse hosts.yaml; every problem is reported at once with its line."""
    try:
        text = path.read_text(encoding="utf-8")
        node = compose_yaml(text, str(path))
        data = yaml.load(text, Loader=NoAliasLoader)
    except (OSError, UnicodeDecodeError) as exc:
        raise HostsFileError(f"{path}: cannot read: {exc}") from None
    except BoundedInputError as exc:
        raise HostsFileError(str(exc)) from None
    except yaml.YAMLError as exc:
        raise HostsFileError(f"{path}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise HostsFileError(f"{path}: expected a mapping of host name -> settings")
    lines = _key_lines(node)
    problems: list[str] = []
    hosts: dict[str, HostConfig] = {}
    for name, entry in data.items():
        where = f"{path}:{lines.get(str(name), '?')}: host {short_repr(name)}"
        if entry is None:
            entry = {}
        if not isinstance(entry, dict):
            problems.append(f"{where}: expected a mapping (hostname, port, user, ...)")
            continue
        unknown = sorted(set(map(str, entry)) - _HOST_KEYS)
        if unknown:
            problems.append(
                f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_HOST_KEYS))}"
            )
        port = entry.get("port")
        if port is not None and (not isinstance(port, int) or not 0 < port < 65536):
            problems.append(f"{where}: port must be a number 1-65535, got {short_repr(port)}")
            port = None
        runs_dir = entry.get("runs_dir")
        if runs_dir is not None and (
            not isinstance(runs_dir, str) or not runs_dir.startswith("/") or "\x00" in runs_dir
        ):
            problems.append(
                f"{where}: runs_dir must be an absolute path on the target (e.g. /data/me/sgtui-runs), "
                f"got {runs_dir!r}"
            )
            runs_dir = None
        keep = entry.get("keep_runs")
        if keep is not None and (
            isinstance(keep, bool) or not isinstance(keep, int) or not 1 <= keep <= 100_000
        ):
            problems.append(
                f"{where}: keep_runs must be a whole number from 1 to 100000, got {short_repr(keep)}"
            )
            keep = None
        prior = (base or {}).get(str(name))
        ident = entry.get("identity_file")
        idents = (ident,) if isinstance(ident, str) else tuple(ident or ())
        known = entry.get("known_hosts")
        knowns = (known,) if isinstance(known, str) else tuple(known or ())
        for key in ("host_key_alias", "proxy_command"):
            if entry.get(key) is not None and not isinstance(entry[key], str):
                problems.append(f"{where}: {key} must be a string, got {entry[key]!r}")
        only = entry.get("identities_only")
        if only is not None and not isinstance(only, bool):
            problems.append(f"{where}: identities_only must be true or false, got {only!r}")
        hosts[str(name)] = HostConfig(
            name=str(name),
            hostname=str(entry.get("hostname") or (prior.hostname if prior else name)),
            port=int(port) if port is not None else (prior.port if prior else 22),
            user=str(entry["user"]) if entry.get("user") else (prior.user if prior else None),
            identity_files=tuple(os.path.expanduser(str(i)) for i in idents)
            or (prior.identity_files if prior else ()),
            proxy_jump=str(entry["proxy_jump"])
            if entry.get("proxy_jump")
            else (prior.proxy_jump if prior else None),
            known_hosts=tuple(os.path.expanduser(str(k)) for k in knowns)
            + (prior.known_hosts if prior else ()),
            local=bool(entry.get("local", False)),
            source=str(path),
            host_key_alias=str(entry["host_key_alias"])
            if isinstance(entry.get("host_key_alias"), str)
            else (prior.host_key_alias if prior else None),
            identities_only=only if isinstance(only, bool) else bool(prior and prior.identities_only),
            proxy_command=str(entry["proxy_command"])
            if isinstance(entry.get("proxy_command"), str)
            else (prior.proxy_command if prior else None),
            runs_dir=runs_dir or (prior.runs_dir if prior else None),
            keep_runs=keep or (prior.keep_runs if prior else None),
        )
    if problems:
        raise HostsFileError("; ".join(problems))
    return hosts


def _key_lines(node: yaml.Node | None) -> dict[str, int]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): k.start_mark.line + 1 for k, _ in node.value}


def parse_jump(spec: str) -> tuple[str | None, str, int | None]:
    """`[user@]host[:port]` (the first hop of a ProxyJump list) -> (user, host, port)."""
    first = spec.split(",")[0].strip()
    user, _, rest = first.rpartition("@")
    host, port = rest, None
    if rest.startswith("["):
        host, _, tail = rest[1:].partition("]")
        port = int(tail[1:]) if tail.startswith(":") and tail[1:].isdigit() else None
    elif rest.count(":") == 1:
        host, _, p = rest.partition(":")
        port = int(p) if p.isdigit() else None
    return (user or None), host, port
