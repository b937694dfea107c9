"""Starting the app from the command line: which profile to open, and running it to the end."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from sgtui.core.errors import UserError

BLANK_PYTHON = "/usr/bin/python3"


def open_profile(path: Path | None, host: str | None = None) -> tuple[Any, Path | None]:
    """The profile to start with: the one named, else the first saved one, else an empty one to fill in."""
    from sgtui.core.paths import profiles_dir
    from sgtui.core.profiles import Profile
    from sgtui.ui.profile_ops import load

    if path is not None:
        if not path.is_file():
            raise UserError(f"{path}: no such profile file; give the path of a profile YAML")
        profile = load(path)
    else:
        found = sorted(profiles_dir().glob("*.y*ml")) if profiles_dir().is_dir() else []
        path = found[0] if found else None
        profile = load(path) if path else Profile("new", host or "", BLANK_PYTHON, {})
    if host:
        profile = dataclasses.replace(profile, host=host)
    return profile, path


def run_app(backend: Any, profile: Any, path: Path | None, **options: Any) -> int:
    from sgtui.ui.app import SgtuiApp

    app = SgtuiApp(backend, profile, path, **options)
    app.run()
    return app.return_code or 0
