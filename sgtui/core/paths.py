"""Where sgtui keeps its files: the XDG dirs via platformdirs, or SGTUI_CONFIG_DIR for tests and sim hosts."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "SGTUI_CONFIG_DIR"


def config_dir() -> Path:
    """sgtui's config dir (hosts.yaml, known_hosts additions, profiles, keys.yaml)."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override).expanduser()
    import platformdirs  # deferred: keeps `sgtui fit` imports minimal

    return Path(platformdirs.user_config_dir("sgtui", appauthor=False))


def state_dir() -> Path:
    """Local state (which runs this jump box launched, UI settings); under the config dir when overridden."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override).expanduser() / "state"
    import platformdirs

    return Path(platformdirs.user_state_dir("sgtui", appauthor=False))


def profiles_dir() -> Path:
    return config_dir() / "profiles"


def cache_dir() -> Path:
    """Things sgtui can rebuild (flag tables read from targets); under the config dir when overridden."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override).expanduser() / "cache"
    import platformdirs

    return Path(platformdirs.user_cache_dir("sgtui", appauthor=False))
