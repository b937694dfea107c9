"""A profile's flags are checked against the target's own table when one was read before (a dev build's
own flags), else against the shipped table for its sglang_version."""

from __future__ import annotations

from typing import Any

import pytest

from sgtui.core.profiles import ProfileError, dump_profile, parse_profile
from sgtui.core.sglang.flags import FlagTable, table_for, table_from_rows

PROFILE = """\
name: dev
host: gpu1
python: /opt/sglang/bin/python
sglang_version: "0.5.24.dev3"
sglang:
  model-path: /models/m
  new-in-dev: 3
"""


def dev_table() -> FlagTable:
    rows = [{"options": list(d.options), "kind": d.kind} for d in table_for("0.5.23").defs.values()]
    return table_from_rows(
        [*rows, {"options": ["--new-in-dev"], "dest": "new_in_dev", "kind": "int"}], "0.5.24.dev3"
    )


def test_without_the_targets_table_a_dev_only_flag_is_a_problem_naming_the_version() -> None:
    with pytest.raises(ProfileError) as info:
        parse_profile(PROFILE)
    assert "not a flag of SGLang 0.5.24.dev3" in str(info.value)


def test_the_targets_table_accepts_it_types_it_and_writes_it_back() -> None:
    asked: list[tuple[Any, ...]] = []

    def lookup(host: str, target: Any, python: str, version: str) -> FlagTable:
        asked.append((host, target.kind, python, version))
        return dev_table()

    profile = parse_profile(PROFILE, flag_tables=lookup)
    assert asked == [("gpu1", "host", "/opt/sglang/bin/python", "0.5.24.dev3")]
    assert profile.sglang["--new-in-dev"] == 3
    assert profile.argv == ["--model-path", "/models/m", "--new-in-dev", "3"]
    assert "new-in-dev: 3" in dump_profile(profile)


def test_no_table_read_yet_means_the_shipped_one() -> None:
    with pytest.raises(ProfileError):
        parse_profile(PROFILE, flag_tables=lambda *_: None)
