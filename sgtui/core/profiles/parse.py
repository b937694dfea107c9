"""Launch profiles from YAML: `parse_profile` (text) and `load_profile` (a file).

Validation collects every problem in a file at once, each with the line it comes from (read from the
YAML nodes), so a user fixes a profile in one pass instead of one error per launch attempt. The `sglang`
section is SGLang's own `--config` format, so it can be handed to SGLang unchanged.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from sgtui.core.bounded import short_repr
from sgtui.core.errors import read_utf8
from sgtui.core.profiles.checker import Checker, compose, construct, pairs
from sgtui.core.profiles.checks import check_env, check_gpus, check_sglang, check_target, check_version
from sgtui.core.profiles.model import Problem, Profile, ProfileError, Target
from sgtui.core.profiles.node_checks import check_dist_init_addr, check_nodes, check_parallel_split
from sgtui.core.sglang.flags import FlagTable

REQUIRED_KEYS = ("name", "host", "python", "sglang")
OPTIONAL_KEYS = (
    "target",
    "env",
    "gpus",
    "sglang_version",
    "runs_dir",
    "keep_runs",
    "nodes",
    "dist_init_addr",
)
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
    "keep_runs",
    "sglang",
)

# (host, target, python, sglang_version) -> the target's own flag table, when one was read before
FlagTableLookup = Callable[[str, Any, str, str], "FlagTable | None"]


def parse_profile(
    text: str, path: str | Path = "<profile>", *, flag_tables: FlagTableLookup | None = None
) -> Profile:
    """A Profile from YAML text; ProfileError lists every problem found.

    `flag_tables` (e.g. `remote.flag_probe.cached_table`) supplies the target's own flag table, so a flag
    only that SGLang has (a dev build) is checked against it rather than against the shipped table."""
    file = str(path)
    checker = Checker(file)
    loader, root = compose(text, checker)
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
    for key_node, value_node in pairs(root, checker, None):
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
        ok, value = construct(loader, node, checker, key)
        if not ok:
            return None
        if not isinstance(value, str) or not value.strip():
            checker.add(node, key, f"must be a non-empty text value, not {short_repr(value)}")
            return None
        control = next((c for c in value if ord(c) < 32 or 127 <= ord(c) < 160), None)
        if control is not None:  # printed in tables and on the terminal: an escape would be obeyed there
            checker.add(node, key, f"{short_repr(value)} holds a control character ({control!r}); remove it")
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

    keep_runs = None
    if "keep_runs" in nodes:  # ended runs kept per target (remote/run_prune.py)
        ok, keep = construct(loader, nodes["keep_runs"][1], checker, "keep_runs")
        if ok and (isinstance(keep, bool) or not isinstance(keep, int) or not 1 <= keep <= 100_000):
            checker.add(
                nodes["keep_runs"][1],
                "keep_runs",
                f"must be a whole number from 1 to 100000, not {short_repr(keep)}",
            )
        elif ok:
            keep_runs = keep

    version = check_version(nodes, loader, checker)
    target = check_target(nodes.get("target"), loader, checker)
    env = check_env(nodes.get("env"), loader, checker)
    gpus = check_gpus(nodes.get("gpus"), loader, checker)
    flags = None
    if flag_tables is not None and host and python and version and not checker.problems:
        flags = flag_tables(host, target or Target(), python, version)
    sglang = check_sglang(nodes.get("sglang"), loader, checker, flags or version)
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
        flags=flags,
        runs_dir=runs_dir,
        keep_runs=keep_runs,
    )


def load_profile(path: str | Path, *, flag_tables: FlagTableLookup | None = None) -> Profile:
    path = Path(path)
    try:
        text = read_utf8(path)
    except (OSError, UnicodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise ProfileError([Problem(str(path), None, None, f"cannot read the profile: {reason}")]) from None
    profile = parse_profile(text, path, flag_tables=flag_tables)
    profile.source = path
    return profile
