"""The shipped flag tables against SGLang's own wheels, read by the extractor's `--check`: every flag the
release has is accepted, its definition matches, every flag it lacks is rejected naming the release.

The by-hand run over every release 0.4.0..0.5.23 is recorded in bench/RESULTS.md; this runs it on the
releases where flags moved, with wheels fetched once per test run (tests/wheels.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from tests.wheels import sglang_wheel

TOOL = Path(__file__).resolve().parent.parent / "tools" / "extract_sglang_flags.py"


@pytest.fixture(scope="session")
def extractor() -> Any:
    spec = importlib.util.spec_from_file_location("extract_sglang_flags", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def wheel_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sglang-wheels")


# 0.5.10: its own table; 0.5.14: the big rename; 0.5.18: deprecated aliases still there; 0.5.20: gone
@pytest.mark.parametrize("release", ["0.5.10", "0.5.14", "0.5.18", "0.5.20"])
def test_the_shipped_table_is_what_the_wheel_holds(
    release: str, extractor: Any, wheel_cache: Path, tmp_path: Path
) -> None:
    wheel = sglang_wheel(release, wheel_cache)
    rows = extractor.read_rows(extractor._unpacked(wheel, tmp_path))
    problems, summary = extractor.check_release(release, rows)
    assert problems == [], problems[:10]
    assert f"absent ones rejected naming {release}" in summary


def test_the_check_catches_a_table_that_is_wrong(extractor: Any, wheel_cache: Path, tmp_path: Path) -> None:
    """The check can fail: a wheel row sgtui does not have, and a changed definition, are both reported."""
    rows = extractor.read_rows(extractor._unpacked(sglang_wheel("0.5.18", wheel_cache), tmp_path))
    forged = [*rows, {**rows[0], "options": ["--not-in-any-release"]}]
    forged[1] = {**forged[1], "default": "something else"}
    problems, _ = extractor.check_release("0.5.18", forged)
    assert any("--not-in-any-release: in the wheel, not in the shipped table" in p for p in problems)
    assert any(p.startswith(f"{rows[1]['options'][0]}: shipped ") for p in problems)
