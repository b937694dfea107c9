"""Launch profiles: YAML files naming where SGLang runs and with which flags.

Validation collects every problem in a file at once, each with the line it comes from (read from the
YAML nodes), so a user fixes a profile in one pass instead of one error per launch attempt. The `sglang`
section is SGLang's own `--config` format, so it can be handed to SGLang unchanged.
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sgtui.core.bounded import BoundedInputError, short_repr
from sgtui.core.errors import UserError
from sgtui.core.flags import (
    FlagError,
    LaunchSpec,
    canonical_name,
    from_config_mapping,
    resolve_config_key,
    spec_from_values,
    to_argv,
    to_config_mapping,
    version_family,
)
from sgtui.core.profile_nodes import (
    MANAGED_FLAGS,
    Node,
    check_dist_init_addr,
    check_nodes,
    check_parallel_split,
    managed_flag_message,
    node_flags,
)
from sgtui.core.yamlsafe import yaml_loader

TARGET_KINDS = ("host", "pct", "docker")
REQUIRED_KEYS = ("name", "host", "python", "sglang")
OPTIONAL_KEYS = ("target", "env", "gpus", "sglang_version", "runs_dir", "nodes", "dist_init_addr")
KEY_ORDER = (
    "name",
    "host",
    "target",
    "nodes",
    "dist_init_addr",
    "python",
    "sglang_version",
    "env",
    "gpus",
    "runs_dir",
    "sglang",
)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PROFILE_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Target:
    """Where the server process lives on the host: the host itself, a Proxmox LXC, or a Docker container."""

    kind: str = "host"
    id: int | str | None = None


@dataclass
class Profile:
    name: str
    host: str
    python: str
    sglang: dict[str, Any]  # canonical dashed flag -> typed value (as flags.parse_argv gives them)
    target: Target = field(default_factory=Target)
    env: dict[str, str] = field(default_factory=dict)
    gpus: list[int] | None = None
    sglang_version: str | None = None
    source: Path | None = None
    runs_dir: str | None = None  # where on the target its runs live; None: hosts.yaml's, else the default
    # multi-node: node rank = position; `host`/`target` above are node 0's
    nodes: list[Node] | None = None
    dist_init_addr: str | None = None

    @property
    def nnodes(self) -> int:
        return len(self.nodes) if self.nodes else 1

    def node_argv(self, rank: int, dist_init_addr: str) -> list[str]:
        """Node `rank`'s `sglang.launch_server` arguments: the common flags plus its rank."""
        return [*self.argv, *node_flags(self.nnodes, rank, dist_init_addr)]

    def node_env(self, rank: int) -> dict[str, str]:
        """`env` with node `rank`'s own variables on top."""
        extra = self.nodes[rank].env if self.nodes else {}
        return {**self.env, **extra}

    @property
    def spec(self) -> LaunchSpec:
        return spec_from_values(self.sglang, self.sglang_version)

    @property
    def argv(self) -> list[str]:
        """The `sglang.launch_server` arguments (after `python -m sglang.launch_server`)."""
        return to_argv(self.sglang, self.sglang_version)


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    flag: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.flag}: {self.message}" if self.flag else f"{where}: {self.message}"


class ProfileError(UserError):
    """Every problem found in one profile, one per line as `file:line: flag: message`."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass(frozen=True)
class ProfileEntry:
    """One file of a profiles folder: the profile, or why it did not load (the others still do)."""

    path: Path
    profile: Profile | None
    error: ProfileError | None


class _Checker:
    """Walks the composed YAML so each problem can carry the line of the node it is about."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[Problem] = []

    def add(self, node: yaml.Node | None, flag: str | None, message: str) -> None:
        line = node.start_mark.line + 1 if node is not None else None
        self.problems.append(Problem(self.file, line, flag, message))


def _compose(text: str, checker: _Checker) -> tuple[yaml.SafeLoader, yaml.Node | None]:
    try:
        loader = yaml_loader(text, checker.file)
    except BoundedInputError as err:
        checker.problems.append(Problem(checker.file, None, None, str(err).removeprefix(f"{checker.file}: ")))
        return yaml.SafeLoader(""), None
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else None
        what = "; ".join(x for x in (err.context, err.problem) if x)
        checker.problems.append(Problem(checker.file, line, None, f"YAML syntax error: {what}"))
        return loader, None
    except yaml.YAMLError as err:
        checker.problems.append(Problem(checker.file, None, None, f"YAML syntax error: {err}"))
        return loader, None
    return loader, node


def _construct(loader: yaml.SafeLoader, node: yaml.Node, checker: _Checker, where: str) -> tuple[bool, Any]:
    try:
        return True, loader.construct_object(node, deep=True)
    except yaml.YAMLError as err:
        checker.add(node, where, f"cannot read this value: {err}")
        return False, None


def _pairs(
    node: yaml.MappingNode, checker: _Checker, section: str | None
) -> list[tuple[yaml.Node, yaml.Node]]:
    """Key/value node pairs; duplicate keys are problems (YAML would silently keep the last)."""
    seen: dict[str, int] = {}
    pairs: list[tuple[yaml.Node, yaml.Node]] = []
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            checker.add(key_node, section, "keys must be plain names")
            continue
        key = key_node.value
        if key in seen:
            where = f"{section}.{key}" if section else key
            checker.add(key_node, where, f"given twice (first on line {seen[key]}); keep one")
            continue
        seen[key] = key_node.start_mark.line + 1
        pairs.append((key_node, value_node))
    return pairs


def parse_profile(text: str, path: str | Path = "<profile>") -> Profile:
    """A Profile from YAML text; ProfileError lists every problem found."""
    file = str(path)
    checker = _Checker(file)
    loader, root = _compose(text, checker)
    if checker.problems:
        raise ProfileError(checker.problems)
    if root is None:
        raise ProfileError(
            [Problem(file, None, None, "the file is empty; a profile needs " + ", ".join(REQUIRED_KEYS))]
        )
    if not isinstance(root, yaml.MappingNode):
        checker.add(root, None, "a profile is a mapping of keys (name, host, python, sglang, ...)")
        raise ProfileError(checker.problems)

    nodes: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for key_node, value_node in _pairs(root, checker, None):
        key = key_node.value
        if key not in REQUIRED_KEYS + OPTIONAL_KEYS:
            near = difflib.get_close_matches(key, REQUIRED_KEYS + OPTIONAL_KEYS, n=1, cutoff=0.75)
            hint = f"; did you mean {near[0]}?" if near else f"; allowed: {', '.join(KEY_ORDER)}"
            checker.add(key_node, key, f"unknown key{hint}")
            continue
        nodes[key] = (key_node, value_node)
    for key in REQUIRED_KEYS:
        if key == "host" and "nodes" in nodes:
            if "host" in nodes or "target" in nodes:
                which = "host" if "host" in nodes else "target"
                checker.add(
                    nodes[which][0], which, "a multi-node profile names host and target per node, in `nodes:`"
                )
            continue
        if key not in nodes:
            checker.add(root, key, "missing (a profile needs " + ", ".join(REQUIRED_KEYS) + ")")

    def text_value(key: str) -> str | None:
        if key not in nodes:
            return None
        _, node = nodes[key]
        ok, value = _construct(loader, node, checker, key)
        if not ok:
            return None
        if not isinstance(value, str) or not value.strip():
            checker.add(node, key, f"must be a non-empty text value, not {short_repr(value)}")
            return None
        return value

    name = text_value("name")
    host = text_value("host")
    python = text_value("python")
    if python is not None and not python.startswith("/"):
        checker.add(
            nodes["python"][1],
            "python",
            f"{short_repr(python)} is not an absolute path (e.g. /opt/sglang/bin/python)",
        )
    runs_dir = text_value("runs_dir")
    if runs_dir is not None and (not runs_dir.startswith("/") or "\x00" in runs_dir):
        checker.add(
            nodes["runs_dir"][1],
            "runs_dir",
            f"{runs_dir!r} is not an absolute path on the target (e.g. /data/me/sgtui-runs)",
        )

    version = _check_version(nodes, loader, checker)
    target = _check_target(nodes.get("target"), loader, checker)
    env = _check_env(nodes.get("env"), loader, checker)
    gpus = _check_gpus(nodes.get("gpus"), loader, checker)
    sglang = _check_sglang(nodes.get("sglang"), loader, checker, version)
    node_list = check_nodes(nodes.get("nodes"), loader, checker)
    dist_init_addr = check_dist_init_addr(nodes.get("dist_init_addr"), loader, checker, "nodes" in nodes)
    nnodes = len(node_list) if node_list else 1
    if sglang is not None and node_list:
        check_parallel_split(nnodes, sglang, checker, nodes["sglang"][0])

    if gpus is not None and sglang is not None and "gpus" in nodes:
        spec_values = {k: v for k, v in sglang.items() if k in ("--tp-size", "--pp-size")}
        needed = int(spec_values.get("--tp-size", 1)) * int(spec_values.get("--pp-size", 1)) // nnodes
        if len(gpus) < needed:
            per = " per node" if nnodes > 1 else ""
            checker.add(
                nodes["gpus"][1],
                "gpus",
                f"lists {len(gpus)} GPU(s) but tp-size x pp-size needs {needed}{per}",
            )
    if node_list:
        host, target = node_list[0].host, node_list[0].target

    if checker.problems:
        raise ProfileError(sorted(checker.problems, key=lambda p: p.line or 0))
    assert name is not None and host is not None and python is not None and sglang is not None
    return Profile(
        nodes=node_list,
        dist_init_addr=dist_init_addr,
        name=name,
        host=host,
        python=python,
        sglang=sglang,
        target=target or Target(),
        env=env or {},
        gpus=gpus,
        sglang_version=version,
        source=Path(path) if isinstance(path, Path) or file != "<profile>" else None,
        runs_dir=runs_dir,
    )


def _check_version(
    nodes: Mapping[str, tuple[yaml.Node, yaml.Node]], loader: yaml.SafeLoader, checker: _Checker
) -> str | None:
    if "sglang_version" not in nodes:
        return None
    _, node = nodes["sglang_version"]
    ok, value = _construct(loader, node, checker, "sglang_version")
    if not ok or value is None:
        return None
    if isinstance(value, float):
        checker.add(
            node, "sglang_version", f"write the version in quotes (YAML reads {node.value} as a number)"
        )
        return None
    try:
        version_family(str(value))
    except UserError as err:
        checker.add(node, "sglang_version", str(err))
        return None
    return str(value)


def _check_target(
    pair: tuple[yaml.Node, yaml.Node] | None,
    loader: yaml.SafeLoader,
    checker: _Checker,
    where: str = "target",
) -> Target | None:
    if pair is None:
        return Target()
    _, node = pair
    if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
        return Target()
    if not isinstance(node, yaml.MappingNode):
        checker.add(node, where, "must be a mapping such as {kind: pct, id: 129}")
        return None
    parts: dict[str, tuple[yaml.Node, Any]] = {}
    for key_node, value_node in _pairs(node, checker, where):
        if key_node.value not in ("kind", "id"):
            checker.add(key_node, f"{where}.{key_node.value}", "unknown key; target has kind and id")
            continue
        ok, value = _construct(loader, value_node, checker, f"{where}.{key_node.value}")
        if ok:
            parts[key_node.value] = (value_node, value)
    kind_node, kind = parts.get("kind", (node, None))
    if kind not in TARGET_KINDS:
        given = "missing" if "kind" not in parts else f"{short_repr(kind)} is not a target kind"
        checker.add(kind_node, f"{where}.kind", f"{given}; use one of {', '.join(TARGET_KINDS)}")
        return None
    id_node, target_id = parts.get("id", (node, None))
    if kind == "host":
        if target_id is not None:
            checker.add(id_node, f"{where}.id", "a host target has no id; remove it or use kind pct/docker")
            return None
        return Target("host")
    if kind == "pct":
        if isinstance(target_id, str) and target_id.strip().isdigit():
            target_id = int(target_id)
        if isinstance(target_id, bool) or not isinstance(target_id, int) or target_id <= 0:
            what = "missing" if target_id is None else f"{short_repr(target_id)} is not a container number"
            checker.add(
                id_node, f"{where}.id", f"{what}; a pct target needs the LXC's numeric VMID (e.g. 129)"
            )
            return None
        return Target("pct", target_id)
    if not isinstance(target_id, (str, int)) or isinstance(target_id, bool) or not str(target_id).strip():
        what = "missing" if target_id is None else f"{short_repr(target_id)} is not a container name"
        checker.add(id_node, f"{where}.id", f"{what}; a docker target needs the container's name or id")
        return None
    return Target("docker", str(target_id))


def _check_env(
    pair: tuple[yaml.Node, yaml.Node] | None, loader: yaml.SafeLoader, checker: _Checker, where: str = "env"
) -> dict[str, str] | None:
    if pair is None:
        return {}
    _, node = pair
    if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
        return {}
    if not isinstance(node, yaml.MappingNode):
        checker.add(node, where, "must be a mapping of NAME: value")
        return None
    env: dict[str, str] = {}
    for key_node, value_node in _pairs(node, checker, where):
        name = key_node.value
        if not ENV_NAME.fullmatch(name):
            checker.add(
                key_node,
                f"{where}.{name}",
                "not a valid variable name (letters, digits, _; not starting with a digit)",
            )
            continue
        ok, value = _construct(loader, value_node, checker, f"{where}.{name}")
        if not ok:
            continue
        if isinstance(value, bool):
            value = "1" if value else "0"
        if not isinstance(value, (str, int, float)):
            checker.add(
                value_node, f"{where}.{name}", f"must be a text or number value, not {type(value).__name__}"
            )
            continue
        env[name] = str(value)
    return env


def _check_gpus(
    pair: tuple[yaml.Node, yaml.Node] | None, loader: yaml.SafeLoader, checker: _Checker
) -> list[int] | None:
    if pair is None:
        return None
    _, node = pair
    ok, value = _construct(loader, node, checker, "gpus")
    if not ok or value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list):
        checker.add(node, "gpus", "must be a list of GPU indices such as [0, 1]")
        return None
    gpus: list[int] = []
    for item in value:
        if isinstance(item, str) and item.isdigit():
            item = int(item)
        if isinstance(item, bool) or not isinstance(item, int) or item < 0:
            checker.add(node, "gpus", f"{short_repr(item)} is not a GPU index (0, 1, ...)")
            return None
        if item in gpus:
            checker.add(node, "gpus", f"GPU {item} is listed twice")
            return None
        gpus.append(item)
    return gpus


def _check_sglang(
    pair: tuple[yaml.Node, yaml.Node] | None, loader: yaml.SafeLoader, checker: _Checker, version: str | None
) -> dict[str, Any] | None:
    if pair is None:
        return None
    key_node, node = pair
    if not isinstance(node, yaml.MappingNode):
        checker.add(node, "sglang", "must be a mapping of SGLang flags (SGLang's --config format)")
        return None
    values: dict[str, Any] = {}
    first_line: dict[str, int] = {}
    for flag_node, value_node in _pairs(node, checker, "sglang"):
        key = flag_node.value
        shown = "--" + key.lstrip("-")
        ok, raw = _construct(loader, value_node, checker, shown)
        if not ok:
            continue
        try:
            resolve_config_key(key, version)
        except FlagError as err:
            checker.add(flag_node, err.flag or shown, _without_flag_prefix(str(err), err.flag or shown))
            continue
        try:
            one = from_config_mapping({key: raw}, version)
        except FlagError as err:
            checker.add(value_node, err.flag or shown, _without_flag_prefix(str(err), err.flag or shown))
            continue
        for name, value in one.items():
            if name in MANAGED_FLAGS:
                checker.add(flag_node, name, managed_flag_message(name))
                continue
            if name in first_line:
                checker.add(flag_node, shown, f"the same flag as {name} on line {first_line[name]}; keep one")
                continue
            first_line[name] = flag_node.start_mark.line + 1
            values[name] = value
        if not one:
            first_line.setdefault(canonical_name(key), flag_node.start_mark.line + 1)
    if "--model-path" not in values and not any(p.flag == "--model-path" for p in checker.problems):
        checker.add(key_node, "sglang", "model-path is missing: the model folder or Hugging Face id to serve")
    return values


def _without_flag_prefix(message: str, flag: str) -> str:
    """FlagError texts start with the flag; the Problem already shows it in its own column."""
    if message.startswith(f"unknown flag {flag}: "):
        return "unknown flag: " + message.removeprefix(f"unknown flag {flag}: ")
    for prefix in (f"{flag}: ", f"{flag} "):
        if message.startswith(prefix):
            return message.removeprefix(prefix)
    return message


# --- files ---------------------------------------------------------------------------------------------


def load_profile(path: str | Path) -> Profile:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise ProfileError([Problem(str(path), None, None, f"cannot read the profile: {reason}")]) from None
    profile = parse_profile(text, path)
    profile.source = path
    return profile


class _ProfileDumper(yaml.SafeDumper):
    """Short scalar lists inline (`gpus: [0, 1]`), everything else block style."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = all(isinstance(x, (int, float, str, bool)) for x in data) and len(data) <= 16
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_ProfileDumper.add_representer(list, _represent_list)


def dump_profile(profile: Profile) -> str:
    """YAML text that `parse_profile` reads back to an equal Profile."""
    doc: dict[str, Any] = {"name": profile.name}
    if profile.nodes:
        doc["nodes"] = [_node_doc(n) for n in profile.nodes]
        if profile.dist_init_addr is not None:
            doc["dist_init_addr"] = profile.dist_init_addr
    else:
        doc["host"] = profile.host
        if profile.target.kind != "host":
            doc["target"] = {"kind": profile.target.kind, "id": profile.target.id}
    doc["python"] = profile.python
    if profile.sglang_version is not None:
        doc["sglang_version"] = profile.sglang_version
    if profile.env:
        doc["env"] = dict(profile.env)
    if profile.gpus is not None:
        doc["gpus"] = list(profile.gpus)
    if profile.runs_dir is not None:
        doc["runs_dir"] = profile.runs_dir
    doc["sglang"] = to_config_mapping(profile.sglang, profile.sglang_version)
    return yaml.dump(doc, Dumper=_ProfileDumper, sort_keys=False, allow_unicode=True, width=110)


def _node_doc(node: Node) -> dict[str, Any]:
    doc: dict[str, Any] = {"host": node.host}
    if node.target.kind != "host":
        doc["target"] = {"kind": node.target.kind, "id": node.target.id}
    if node.env:
        doc["env"] = dict(node.env)
    return doc


def save_profile(profile: Profile, path: str | Path) -> Path:
    """Write atomically: a temp file beside the target, fsync, rename. The old file stays intact until the
    new one is complete, and the text is checked to load back before it replaces anything."""
    path = Path(path)
    text = dump_profile(profile)
    parse_profile(text, path)  # never replace a good file with one sgtui itself cannot read
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    profile.source = path
    return path


def list_profiles(directory: str | Path) -> list[ProfileEntry]:
    """Every *.yaml / *.yml in `directory`, sorted by file name; a broken file is listed with its error."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    entries: list[ProfileEntry] = []
    for path in sorted(p for p in directory.iterdir() if p.suffix in PROFILE_SUFFIXES and p.is_file()):
        try:
            entries.append(ProfileEntry(path, load_profile(path), None))
        except ProfileError as err:
            entries.append(ProfileEntry(path, None, err))
    return entries


__all__ = [
    "Node",
    "Problem",
    "Profile",
    "ProfileEntry",
    "ProfileError",
    "Target",
    "dump_profile",
    "list_profiles",
    "load_profile",
    "parse_profile",
    "save_profile",
]
