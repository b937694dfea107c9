"""Real SGLang wheels for the tests that check sgtui against SGLang itself, fetched once per test run.

`pip download --no-deps sglang==X` into a session cache (the package registry is reachable in CI); set
SGTUI_SGLANG_WHEELS to a folder that already holds them (`X/sglang-X-*.whl`, as the extractor's own
`--check` run uses) to skip the download. Without a registry and without the folder, the test skips,
saying why (CI sets SGTUI_REQUIRE_WHEELS=1 to make that a failure instead).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ENV_DIR = "SGTUI_SGLANG_WHEELS"
REQUIRE_ENV = "SGTUI_REQUIRE_WHEELS"


def sglang_wheel(version: str, cache: Path) -> Path:
    """The wheel of SGLang `version` (downloaded into `cache/version` on first use)."""
    for folder in (Path(os.environ[ENV_DIR]) / version if os.environ.get(ENV_DIR) else None, cache / version):
        if folder is not None:
            found = sorted(folder.glob(f"sglang-{version}-*.whl"))
            if found:
                return found[0]
    target = cache / version
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"sglang=={version}", "-d", str(target)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    found = sorted(target.glob(f"sglang-{version}-*.whl"))
    if proc.returncode != 0 or not found:
        why = f"cannot download the sglang=={version} wheel: {proc.stderr.strip().splitlines()[-1:]}"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(why)
        pytest.skip(why)
    return found[0]
