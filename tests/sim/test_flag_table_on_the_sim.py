"""The target's own flag table, read from the simulated host: its SGLang has a flag no shipped release has,
so the table sgtui uses must be the one the target printed, not the shipped one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sgtui.core.sglang.flags import FlagError, parse_argv, table_for, to_argv
from sgtui.remote.connection import Connection
from sgtui.remote.flag_probe import cache_path, read_flag_table
from sgtui.remote.targets import Target, sglang_version
from sgtui.sim.host import SimHost
from sgtui.ui.catalogue import flag_catalogue, parse_flag_text
from tests.sim.test_runs_on_the_sim import connect

PYTHON = "/opt/sglang/venv/bin/python"
LXC = Target("pct", "129")


@pytest.fixture
async def sim(tmp_path: Path) -> AsyncIterator[Connection]:
    async with SimHost("proxmox-a6000", speed=40) as host:
        conn = await connect(host, tmp_path)
        try:
            yield conn
        finally:
            await conn.close()


async def test_the_table_comes_from_the_target_and_the_form_and_argv_follow_it(
    sim: Connection, tmp_path: Path
) -> None:
    version = await sglang_version(sim, LXC, PYTHON)
    assert version == "0.5.9"
    result = await read_flag_table(sim, LXC, PYTHON, version, cache_root=tmp_path)
    assert result.problem is None and not result.cached
    table = result.table
    assert (table.source, table.version, table.label) == ("target", "0.5.9", "from the target (0.5.9)")
    assert set(table.defs) - set(table_for("0.5.9").defs) == {"--sim-log-note"}
    # validation follows the target: shipped 0.5.9 rejects the sim-only flag, the target's table accepts it
    with pytest.raises(FlagError, match=r"unknown flag --sim-log-note: not a flag of SGLang 0\.5\.9"):
        parse_argv(["--sim-log-note", "hello"], "0.5.9")
    assert parse_argv(["--sim-log-note", "hello", "--tp-size", "2"], table).values == {
        "--sim-log-note": "hello",
        "--tp-size": 2,
    }
    assert to_argv({"--sim-log-note": "hello"}, table) == ["--sim-log-note", "hello"]
    # the form offers it, with SGLang's help, and types its value through the target's table
    catalogue = flag_catalogue(table)
    assert catalogue["--sim-log-note"].known and "simulator only" in catalogue["--sim-log-note"].help
    assert "--sim-log-note" not in flag_catalogue("0.5.9")
    assert parse_flag_text(catalogue["--tp-size"], "4", table) == 4
    # and the flags 0.5.9 lacks stay rejected with the release named
    with pytest.raises(FlagError, match=r"SGLang 0\.5\.9 has no --attn-dp-size \(added in 0\.5\.22\)"):
        parse_argv(["--attn-dp-size", "2"], table)


async def test_the_table_is_cached_per_host_target_interpreter_and_version(
    sim: Connection, tmp_path: Path
) -> None:
    first = await read_flag_table(sim, LXC, PYTHON, "0.5.9", cache_root=tmp_path)
    path = cache_path("sim", LXC, PYTHON, "0.5.9", tmp_path)
    assert path.is_file() and (path.stat().st_mode & 0o077) == 0
    again = await read_flag_table(sim, LXC, PYTHON, "0.5.9", cache_root=tmp_path)
    assert again.cached and set(again.table.defs) == set(first.table.defs)
    assert cache_path("sim", LXC, PYTHON, "0.5.11", tmp_path) != path
    assert cache_path("sim", Target(), PYTHON, "0.5.9", tmp_path) != path


async def test_a_failed_read_is_one_line_and_the_shipped_table_is_used(
    sim: Connection, tmp_path: Path
) -> None:
    result = await read_flag_table(sim, LXC, "/opt/none/bin/python", "0.5.11", cache_root=tmp_path)
    assert result.table.label == "shipped 0.5.11"
    assert result.problem is not None and "\n" not in result.problem
    assert result.problem.startswith("could not read SGLang's flags from /opt/none/bin/python on sim pct 129")
    assert result.problem.endswith("using the shipped 0.5.11 table")
    dev = await read_flag_table(sim, LXC, "/opt/none/bin/python", "0.5.24.dev3", cache_root=tmp_path)
    assert dev.table.label == "nearest older 0.5.23 (offline)"
