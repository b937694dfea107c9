"""The few things the UI does with a core Profile, in one place (the profile stays a core object)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from sgtui.ui.views import ContainerView

REPO_PROFILES = Path(__file__).resolve().parents[2] / "profiles"


def name(profile: Any) -> str:
    return str(getattr(profile, "name", "") or "unnamed")


def host(profile: Any) -> str:
    return str(getattr(profile, "host", "") or "")


def python(profile: Any) -> str:
    return str(getattr(profile, "python", "") or "python3")


def values(profile: Any) -> dict[str, Any]:
    return dict(getattr(profile, "sglang", {}) or {})


def declared_version(profile: Any) -> str | None:
    v = getattr(profile, "sglang_version", None)
    return str(v) if v else None


def gpu_count(profile: Any) -> int | None:
    """The GPUs the fit sizes for: a multi-node profile's `gpus` are per node, and TP spans the nodes."""
    gpus = getattr(profile, "gpus", None)
    return len(gpus) * int(getattr(profile, "nnodes", 1) or 1) if gpus else None


def gpu_indices(profile: Any) -> list[int]:
    gpus = getattr(profile, "gpus", None) or []
    return [g for g in gpus if isinstance(g, int)]


def _target_parts(profile: Any) -> tuple[str, str]:
    target = getattr(profile, "target", None)
    if target is None:
        return "host", ""
    if isinstance(target, dict):
        return str(target.get("kind", "host")), str(target.get("id", "") or "")
    return str(getattr(target, "kind", "host")), str(getattr(target, "id", "") or "")


def container(profile: Any) -> ContainerView | None:
    kind, ident = _target_parts(profile)
    if kind == "host":
        return None
    return ContainerView(kind, ident)


def target_label(profile: Any) -> str:
    c = container(profile)
    return c.label if c else "bare host"


def with_values(profile: Any, new_values: dict[str, Any]) -> Any:
    return dataclasses.replace(profile, sglang=dict(new_values))


def with_flag_table(profile: Any, table: Any) -> Any:
    """The profile writing its flags (argv, saved YAML) through the target's own table."""
    if dataclasses.is_dataclass(profile) and any(f.name == "flags" for f in dataclasses.fields(profile)):
        return dataclasses.replace(profile, flags=table)
    return profile


def with_target(profile: Any, host_name: str, pick: ContainerView) -> Any:
    target = getattr(profile, "target", None)
    if isinstance(target, dict) or target is None:
        new_target: Any = {"kind": pick.kind, "id": pick.id if pick.kind != "host" else None}
    else:
        new_target = dataclasses.replace(target, kind=pick.kind, id=pick.id if pick.kind != "host" else None)
    return dataclasses.replace(profile, host=host_name, target=new_target)


def renamed(profile: Any, new_name: str) -> Any:
    return dataclasses.replace(profile, name=new_name)


def find_profiles(extra_dirs: tuple[Path, ...] = ()) -> list[Path]:
    """Profiles in the config dir, any given dirs, and the examples shipped in the repo."""
    from sgtui.core.paths import profiles_dir

    seen: list[Path] = []
    for folder in (profiles_dir(), *extra_dirs, REPO_PROFILES):
        if folder.is_dir():
            for p in sorted(folder.glob("*.y*ml")):
                if p not in seen:
                    seen.append(p)
    return seen


def load(path: Path) -> Any:
    from sgtui.core.profiles import load_profile
    from sgtui.remote.flag_probe import cached_table

    return load_profile(path, flag_tables=cached_table)


def save(profile: Any, path: Path | None) -> Path:
    """Save beside where it came from unless that is the shipped examples; else into the config dir."""
    from sgtui.core.paths import profiles_dir
    from sgtui.core.profiles import save_profile

    if path is None or REPO_PROFILES in path.resolve().parents:
        path = profiles_dir() / f"{name(profile)}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    save_profile(profile, path)
    return path
