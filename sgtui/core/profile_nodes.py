"""Multi-node profiles: the `nodes:` list and `dist_init_addr`, checked with the rest of the profile.

A multi-node profile names its nodes instead of one `host`/`target`: node rank = position in the list.
SGLang's own multi-node runtime does the rest (`--nnodes N --node-rank i --dist-init-addr HOST:PORT` on
every node, the same other flags); sgtui adds those three flags itself, so they may not appear in the
`sglang:` section. `tp-size` (times `pp-size`) is the total across the nodes, as SGLang counts it, so it
must divide evenly by the number of nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from sgtui.core.bounded import short_repr

if TYPE_CHECKING:
    from sgtui.core.profiles import Target, _Checker

NODE_KEYS = ("host", "target", "env")
# sgtui writes these from `nodes:` / `dist_init_addr:`; a profile that sets them would launch every node
# with the same rank.
MANAGED_FLAGS = ("--nnodes", "--node-rank", "--dist-init-addr")


@dataclass(frozen=True)
class Node:
    """One node of a multi-node profile: where it runs, and variables for it alone (added to `env`)."""

    host: str
    target: Target
    env: dict[str, str] = field(default_factory=dict)


def parse_address(text: str) -> tuple[str, int] | None:
    """`HOST:PORT` or `[V6]:PORT` -> (host, port), None when it is not one."""
    host, sep, port = text.strip().rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        return None
    if any(c.isspace() for c in host) or "/" in host:
        return None
    return host, int(port)


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def node_flags(nnodes: int, rank: int, dist_init_addr: str) -> list[str]:
    """The flags sgtui adds for node `rank`."""
    return ["--nnodes", str(nnodes), "--node-rank", str(rank), "--dist-init-addr", dist_init_addr]


def check_nodes(
    pair: tuple[yaml.Node, yaml.Node] | None, loader: yaml.SafeLoader, checker: _Checker
) -> list[Node] | None:
    """The `nodes:` list, every problem added to `checker` with its line; None when absent or broken."""
    from sgtui.core.profiles import _check_env, _check_target, _construct, _pairs

    if pair is None:
        return None
    _, node = pair
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        checker.add(
            node, "nodes", "must be a list of nodes, each {host: ALIAS, target: {kind: ..., id: ...}}"
        )
        return None
    nodes: list[Node] = []
    broken = False
    for rank, item in enumerate(node.value):
        where = f"nodes[{rank}]"
        if not isinstance(item, yaml.MappingNode):
            checker.add(item, where, "must be a mapping such as {host: gpu-2, target: {kind: pct, id: 129}}")
            broken = True
            continue
        parts: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in _pairs(item, checker, where):
            if key_node.value not in NODE_KEYS:
                checker.add(
                    key_node, f"{where}.{key_node.value}", "unknown key; a node has host, target, env"
                )
                broken = True
                continue
            parts[key_node.value] = (key_node, value_node)
        host: Any = None
        if "host" not in parts:
            checker.add(item, f"{where}.host", "missing: the ssh alias of this node")
        else:
            ok, host = _construct(loader, parts["host"][1], checker, f"{where}.host")
            if ok and (not isinstance(host, str) or not host.strip()):
                checker.add(
                    parts["host"][1], f"{where}.host", f"must be a host alias, not {short_repr(host)}"
                )
                host = None
        target = _check_target(parts.get("target"), loader, checker, f"{where}.target")
        env = _check_env(parts.get("env"), loader, checker, f"{where}.env")
        if not isinstance(host, str) or not host.strip() or target is None or env is None:
            broken = True
            continue
        nodes.append(Node(host.strip(), target, env))
    seen: dict[tuple[str, str, object], int] = {}
    for rank, one in enumerate(nodes):
        key = (one.host, one.target.kind, one.target.id)
        if key in seen:
            checker.add(
                node.value[rank],
                f"nodes[{rank}]",
                f"the same host and target as nodes[{seen[key]}]; each node is its own machine or container",
            )
            broken = True
        seen.setdefault(key, rank)
    return None if broken else nodes


def check_dist_init_addr(
    pair: tuple[yaml.Node, yaml.Node] | None, loader: yaml.SafeLoader, checker: _Checker, has_nodes: bool
) -> str | None:
    from sgtui.core.profiles import _construct

    if pair is None:
        return None
    key_node, node = pair
    if not has_nodes:
        checker.add(
            key_node, "dist_init_addr", "only a multi-node profile (with `nodes:`) has a dist-init address"
        )
        return None
    ok, value = _construct(loader, node, checker, "dist_init_addr")
    if not ok:
        return None
    if not isinstance(value, str) or parse_address(value) is None:
        checker.add(
            node,
            "dist_init_addr",
            f"{short_repr(value)} is not HOST:PORT (e.g. 10.0.0.1:5000); leave it out to use node 0's "
            "address and a free port",
        )
        return None
    return value.strip()


def check_parallel_split(
    nnodes: int, sglang: dict[str, Any], checker: _Checker, node: yaml.Node | None
) -> None:
    """tp-size x pp-size is the total over the nodes; each node runs an equal share."""
    tp = int(sglang.get("--tp-size", 1) or 1)
    pp = int(sglang.get("--pp-size", 1) or 1)
    if nnodes > 1 and (tp * pp) % nnodes:
        checker.add(
            node,
            "--tp-size",
            f"tp-size {tp} x pp-size {pp} = {tp * pp} GPUs cannot be split evenly over {nnodes} nodes "
            "(tp-size is the total across nodes, as SGLang counts it)",
        )


def managed_flag_message(flag: str) -> str:
    if flag == "--dist-init-addr":
        return (
            "sgtui sets --dist-init-addr itself for every node; write it as the profile's top-level "
            "`dist_init_addr:` (or leave it out: node 0's address and a free port)"
        )
    return f"sgtui sets {flag} itself from the profile's `nodes:` list; remove it here"
