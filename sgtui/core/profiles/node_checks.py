"""The checks of a multi-node profile: the `nodes:` list, `dist_init_addr`, and the tp x pp split over
the nodes, each problem added to the `Checker` with its line."""

from __future__ import annotations

from typing import Any

import yaml

from sgtui.core.bounded import short_repr
from sgtui.core.profiles.checker import Checker, construct, pairs
from sgtui.core.profiles.checks import check_env, check_target
from sgtui.core.profiles.nodes import NODE_KEYS, Node, parse_address


def check_nodes(
    pair: tuple[yaml.Node, yaml.Node] | None, loader: yaml.SafeLoader, checker: Checker
) -> list[Node] | None:
    """The `nodes:` list, every problem added to `checker` with its line; None when absent or broken."""
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
        for key_node, value_node in pairs(item, checker, where):
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
            ok, host = construct(loader, parts["host"][1], checker, f"{where}.host")
            if ok and (not isinstance(host, str) or not host.strip()):
                checker.add(
                    parts["host"][1], f"{where}.host", f"must be a host alias, not {short_repr(host)}"
                )
                host = None
        target = check_target(parts.get("target"), loader, checker, f"{where}.target")
        env = check_env(parts.get("env"), loader, checker, f"{where}.env")
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
    pair: tuple[yaml.Node, yaml.Node] | None, loader: yaml.SafeLoader, checker: Checker, has_nodes: bool
) -> str | None:
    if pair is None:
        return None
    key_node, node = pair
    if not has_nodes:
        checker.add(
            key_node, "dist_init_addr", "only a multi-node profile (with `nodes:`) has a dist-init address"
        )
        return None
    ok, value = construct(loader, node, checker, "dist_init_addr")
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
    nnodes: int, sglang: dict[str, Any], checker: Checker, node: yaml.Node | None
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
