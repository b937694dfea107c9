"""Multi-node profiles: a `Node`, the `HOST:PORT` addresses, and the flags sgtui adds for each node.

A multi-node profile names its nodes instead of one `host`/`target`: node rank = position in the list.
SGLang's own multi-node runtime does the rest (`--nnodes N --node-rank i --dist-init-addr HOST:PORT` on
every node, the same other flags); sgtui adds those three flags itself, so they may not appear in the
`sglang:` section. `tp-size` (times `pp-size`) is the total across the nodes, as SGLang counts it, so it
must divide evenly by the number of nodes (checked in `node_checks.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgtui.core.profiles.model import Target

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


def managed_flag_message(flag: str) -> str:
    if flag == "--dist-init-addr":
        return (
            "sgtui sets --dist-init-addr itself for every node; write it as the profile's top-level "
            "`dist_init_addr:` (or leave it out: node 0's address and a free port)"
        )
    return f"sgtui sets {flag} itself from the profile's `nodes:` list; remove it here"
