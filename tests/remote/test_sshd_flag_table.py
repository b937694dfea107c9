"""The target's own flag table over real OpenSSH, from a venv holding a real `pip install --no-deps sglang`:
the payload builds that release's parser with nothing else installed (no torch, no GPU) and the table
it prints is the one sgtui ships for the release."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sgtui.core.sglang.flags import table_for
from sgtui.remote.flag_probe import read_flag_table
from sgtui.remote.targets import Target, sglang_version
from tests.sshd import SshdServer
from tests.wheels import sglang_wheel

from .conftest import sshd_connection

pytestmark = pytest.mark.sshd
RELEASE = "0.5.22"


def _venv(root: Path, wheel: Path, *deps: str) -> Path:
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q"]
    subprocess.run([*pip, "--no-deps", "--no-index", str(wheel)], check=True, timeout=300)
    if deps:  # from the package registry, as a real install has them
        proc = subprocess.run([*pip, *deps], capture_output=True, text=True, timeout=300, check=False)
        if proc.returncode != 0:
            pytest.skip(f"cannot install {', '.join(deps)} from the package registry: {proc.stderr[-200:]}")
    return venv


@pytest.fixture(scope="session")
def sglang_wheel_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sglang_wheel(RELEASE, tmp_path_factory.mktemp("wheels"))


@pytest.fixture(scope="session")
def sglang_venv(tmp_path_factory: pytest.TempPathFactory, sglang_wheel_file: Path) -> Path:
    """SGLang with `--no-deps`, plus only the two libraries its argument dataclasses import (no torch)."""
    return _venv(tmp_path_factory.mktemp("sglang-venv"), sglang_wheel_file, "msgspec", "typing_extensions")


async def test_a_real_sglang_install_prints_the_table_sgtui_ships_for_it(
    sshd: SshdServer, sglang_venv: Path, tmp_path: Path
) -> None:
    conn = sshd_connection(sshd, tmp_path)
    python = str(sglang_venv / "bin" / "python")
    try:
        version = await sglang_version(conn, Target(), python)
        assert version == RELEASE
        result = await read_flag_table(conn, Target(), python, version, cache_root=tmp_path / "cache")
    finally:
        await conn.close()
    assert result.problem is None
    table, shipped = result.table, table_for(RELEASE)
    assert table.label == f"from the target ({RELEASE})"
    assert dict(table.defs) == dict(shipped.defs)


async def test_an_install_missing_what_the_parser_needs_is_one_line_and_the_shipped_table(
    sshd: SshdServer, sglang_wheel_file: Path, tmp_path: Path
) -> None:
    venv = _venv(tmp_path, sglang_wheel_file)
    conn = sshd_connection(sshd, tmp_path)
    try:
        result = await read_flag_table(conn, Target(), str(venv / "bin" / "python"), RELEASE, use_cache=False)
    finally:
        await conn.close()
    assert result.table.label == f"shipped {RELEASE}"
    assert result.problem is not None and "\n" not in result.problem
    assert "not installed for this interpreter: msgspec" in result.problem
