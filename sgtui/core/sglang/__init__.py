"""What SGLang is, per release: version numbers, flag tables and the release windows of its rules.

The flag names (`parse_argv`, `FLAGS`, `LaunchSpec`, ...) are importable from here; they load on first
use, so importing `sgtui.core.sglang.versions` alone does not read the flag tables.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any


def __getattr__(name: str) -> Any:
    """The flag names (`flags.__all__`), loaded on first use."""
    submodule = (Path(__file__).parent / f"{name}.py").exists()  # imported by the import system, not here
    if not name.startswith("__") and not submodule:
        flags = importlib.import_module("sgtui.core.sglang.flags")
        if name in flags.__all__:
            return getattr(flags, name)
    raise AttributeError(f"module 'sgtui.core.sglang' has no attribute {name!r}")
