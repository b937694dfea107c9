"""The checks of a profile's single fields (target, env, gpus, sglang_version, the `sglang:` flags), each
problem added to the `Checker` with its line."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from sgtui.core.bounded import short_repr
from sgtui.core.errors import UserError
from sgtui.core.profiles.checker import Checker, construct, pairs
from sgtui.core.profiles.model import Target
from sgtui.core.profiles.nodes import MANAGED_FLAGS, managed_flag_message
from sgtui.core.sglang.flags import (
    FlagError,
    FlagTable,
    canonical_name,
    from_config_mapping,
    resolve_config_key,
)
from sgtui.core.sglang.versions import parse_version

TARGET_KINDS = ("host", "pct", "docker")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_version(
    nodes: Mapping[str, tuple[yaml.Node, yaml.Node]], loader: yaml.SafeLoader, checker: Checker
) -> str | None:
    if "sglang_version" not in nodes:
        return None
    _, node = nodes["sglang_version"]
    ok, value = construct(loader, node, checker, "sglang_version")
    if not ok or value is None:
        return None
    if isinstance(value, float):
        checker.add(
            node, "sglang_version", f"write the version in quotes (YAML reads {node.value} as a number)"
        )
        return None
    try:
        parse_version(str(value))
    except UserError as err:
        checker.add(node, "sglang_version", str(err))
        return None
    return str(value)


def check_target(
    pair: tuple[yaml.Node, yaml.Node] | None,
    loader: yaml.SafeLoader,
    checker: Checker,
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
    for key_node, value_node in pairs(node, checker, where):
        if key_node.value not in ("kind", "id"):
            checker.add(key_node, f"{where}.{key_node.value}", "unknown key; target has kind and id")
            continue
        ok, value = construct(loader, value_node, checker, f"{where}.{key_node.value}")
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


def check_env(
    pair: tuple[yaml.Node, yaml.Node] | None, loader: yaml.SafeLoader, checker: Checker, where: str = "env"
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
    for key_node, value_node in pairs(node, checker, where):
        name = key_node.value
        if not ENV_NAME.fullmatch(name):
            checker.add(
                key_node,
                f"{where}.{name}",
                "not a valid variable name (letters, digits, _; not starting with a digit)",
            )
            continue
        ok, value = construct(loader, value_node, checker, f"{where}.{name}")
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


def check_gpus(
    pair: tuple[yaml.Node, yaml.Node] | None, loader: yaml.SafeLoader, checker: Checker
) -> list[int] | None:
    if pair is None:
        return None
    _, node = pair
    ok, value = construct(loader, node, checker, "gpus")
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


def check_sglang(
    pair: tuple[yaml.Node, yaml.Node] | None,
    loader: yaml.SafeLoader,
    checker: Checker,
    version: FlagTable | str | None,
) -> dict[str, Any] | None:
    if pair is None:
        return None
    key_node, node = pair
    if not isinstance(node, yaml.MappingNode):
        checker.add(node, "sglang", "must be a mapping of SGLang flags (SGLang's --config format)")
        return None
    values: dict[str, Any] = {}
    first_line: dict[str, int] = {}
    for flag_node, value_node in pairs(node, checker, "sglang"):
        key = flag_node.value
        shown = "--" + key.lstrip("-")
        ok, raw = construct(loader, value_node, checker, shown)
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
