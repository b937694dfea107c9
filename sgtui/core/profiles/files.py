"""Profiles as files: `dump_profile` (text that loads back equal), `save_profile` (atomic, checked
before it replaces anything), `list_profiles` (a folder, broken files listed with their errors)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from sgtui.core.atomic import write_atomic
from sgtui.core.profiles.model import Profile, ProfileEntry, ProfileError
from sgtui.core.profiles.nodes import Node
from sgtui.core.profiles.parse import load_profile, parse_profile
from sgtui.core.sglang.flags import to_config_mapping

PROFILE_SUFFIXES = (".yaml", ".yml")


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
    if profile.keep_runs is not None:
        doc["keep_runs"] = profile.keep_runs
    doc["sglang"] = to_config_mapping(profile.sglang, profile.flags or profile.sglang_version)
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
    write_atomic(path, text, follow_link=True)  # a profile linked from a dotfiles repo stays linked
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
