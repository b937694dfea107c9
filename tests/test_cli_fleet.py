"""`sgtui fleet` against a small simulated fleet: the DESIGN.md object per host per sample, `--once` exit
codes (1 naming a host that did not answer), streaming, the table, and bad input."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
import yaml

from sgtui.sim.fleet import SimFleet, loopback_aliases_work

pytestmark = pytest.mark.skipif(not loopback_aliases_work(), reason="needs 127.0.0.2 (Linux loopback)")

HOST_KEYS = {"host", "state", "age_s", "error", "gpus", "runs"}
GPU_KEYS = {"index", "name", "used_mib", "total_mib", "util"}


async def sgtui(config: Path, *args: str) -> tuple[int, str, str]:
    """The CLI in its own process (the sim keeps serving on this loop meanwhile)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sgtui",
        "fleet",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "SGTUI_CONFIG_DIR": str(config)},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def add_dead_host(config: Path, name: str = "dead") -> None:
    """A host entry whose address answers nothing (a closed port): connecting fails at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    hosts_file = config / "hosts.yaml"
    hosts = yaml.safe_load(hosts_file.read_text())
    hosts[name] = {"hostname": "127.0.0.1", "port": port, "user": "root"}
    hosts_file.write_text(yaml.safe_dump(hosts, sort_keys=False))


async def test_once_json_is_one_contract_object_per_host_with_every_gpu(tmp_path: Path) -> None:
    """The keys are DESIGN.md's, exactly: scripts read them."""
    async with SimFleet(3, "h100x8", speed=40) as sims:
        sims.write_config(tmp_path)
        rc, out, err = await sgtui(tmp_path, "--once", "--json")
    assert rc == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["host"] for r in rows) == ["sim", "sim-2", "sim-3"]
    for row in rows:
        assert set(row) == HOST_KEYS
        assert row["state"] == "up" and row["error"] is None and row["runs"] == []
        assert isinstance(row["age_s"], float) and row["age_s"] < 30
        assert [g["index"] for g in row["gpus"]] == list(range(8))
        for gpu in row["gpus"]:
            assert set(gpu) == GPU_KEYS
            assert gpu["name"] == "NVIDIA H100 80GB HBM3" and gpu["total_mib"] == 81559
            assert isinstance(gpu["used_mib"], int) and isinstance(gpu["util"], int)


async def test_once_exits_1_naming_the_host_that_did_not_answer(tmp_path: Path) -> None:
    """The others still answer, and the dead one gets its object with its state and reason."""
    async with SimFleet(2, "h100x8", speed=40) as sims:
        sims.write_config(tmp_path)
        add_dead_host(tmp_path)
        rc, out, err = await sgtui(tmp_path, "--once", "--json", "--connect-timeout", "5")
    assert rc == 1
    assert "1 of 3 hosts did not answer: dead (" in err and "sim" not in err.split("answer:")[1]
    rows = {r["host"]: r for r in map(json.loads, out.splitlines())}
    assert set(rows) == {"sim", "sim-2", "dead"}
    assert rows["dead"]["state"] == "unreachable" and rows["dead"]["error"] and rows["dead"]["gpus"] == []
    assert rows["sim"]["state"] == "up" and len(rows["sim-2"]["gpus"]) == 8


async def test_streaming_json_gives_an_object_per_named_host_per_sample(tmp_path: Path) -> None:
    """Only the hosts named; each reports again every interval; SIGTERM ends it cleanly."""
    async with SimFleet(3, "h100x8", speed=40) as sims:
        sims.write_config(tmp_path)
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "sgtui", "fleet", "--json", "--interval", "0.3"),
            *("--host", "sim", "sim-3"),
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "SGTUI_CONFIG_DIR": str(tmp_path)},
        )
        assert proc.stdout is not None
        rows: list[dict[str, object]] = []
        counts = {"sim": 0, "sim-2": 0, "sim-3": 0}
        try:
            while min(counts["sim"], counts["sim-3"]) < 3:  # however long the start takes on a busy box
                line = await asyncio.wait_for(proc.stdout.readline(), 60)
                assert line, "sgtui fleet ended early"
                rows.append(json.loads(line))
                counts[str(rows[-1]["host"])] += 1
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode in (0, 130)
    assert counts["sim-2"] == 0
    assert all(set(r) == HOST_KEYS and len(r["gpus"]) == 8 for r in rows)  # type: ignore[arg-type]
    ages = [r["age_s"] for r in rows]
    assert all(isinstance(a, float) and a < 1.0 for a in ages)  # each line is a fresh sample


async def test_the_table_has_a_free_gpus_column(tmp_path: Path) -> None:
    async with SimFleet(2, "h100x8", speed=40) as sims:
        sims.write_config(tmp_path)
        rc, out, _err = await sgtui(tmp_path, "--once")
    assert rc == 0
    header, *rows = [line for line in out.splitlines() if line.strip()]
    assert header.split()[:6] == ["HOST", "STATE", "AGE", "GPUS", "FREE", "MEMORY"]
    assert [r.split()[:2] for r in rows] == [["sim", "up"], ["sim-2", "up"]]
    assert all(r.split()[3:5] == ["0/8", "8"] for r in rows)


async def test_an_unknown_host_is_a_one_line_error_with_exit_2(tmp_path: Path) -> None:
    async with SimFleet(1, "h100x8", speed=40) as sims:
        sims.write_config(tmp_path)
        rc, out, err = await sgtui(tmp_path, "--once", "--host", "nosuch")
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "--host nosuch: no such host" in err and "known: sim" in err


def test_the_printed_line_is_the_contract_object() -> None:
    """The printer encodes a host's parts once and reuses them; the line must still equal the object."""
    from sgtui.commands.fleet_output import Printer, host_json
    from sgtui.core.nvsmi import parse_gpu_line
    from sgtui.remote.connection import ConnState
    from sgtui.remote.fleet import GpuSummary, HostView
    from sgtui.remote.fleet_runs import RunRow
    from sgtui.remote.gpu import GpuSnapshot

    reading = parse_gpu_line('0, GPU-1, NVIDIA "A6000", 1024, 49140, [N/A]')
    assert reading is not None
    summary = GpuSummary.from_snapshot(GpuSnapshot("h\n1", [reading]))
    view = HostView(
        'h"1', "a", ConnState.UP, gpus=summary, gpus_at=10.0, run_rows=(RunRow("r1", "running", None, 2.5),)
    )
    printer = Printer(open(os.devnull, "w"), json_lines=True)  # noqa: SIM115
    for _ in range(2):  # the second line comes from the cached parts
        assert json.loads(printer.line(view, now=12.34)) == host_json(view, now=12.34)
    obj = host_json(view, now=12.34)
    assert obj["gpus"] == [
        {"index": 0, "name": 'NVIDIA "A6000"', "used_mib": 1024, "total_mib": 49140, "util": None}
    ]
    assert obj["age_s"] == 2.3 and obj["runs"] == [
        {"id": "r1", "state": "running", "health": None, "gen_tokens_per_s": 2.5}
    ]


def test_a_launched_run_is_reported_with_its_state_and_health() -> None:
    """A run in the sim's container (found through `discover`) shows as running with the health probe's
    word; its throughput is null until the server logs a batch (never 0)."""
    import tempfile
    import time

    from tests.sim.simhost_process import free_port, running_sim_host
    from tests.sim.simhost_process import sgtui as sgtui_sync

    with tempfile.TemporaryDirectory() as tmp, running_sim_host(Path(tmp)) as host:
        config = Path(tmp)
        profile = host.profile("qwen36-27b-2xa6000-mrr8.yaml", server_port=free_port())
        launched = sgtui_sync("launch", str(profile), "--json-events", config_dir=config)
        assert launched.returncode == 0, launched.stdout + launched.stderr
        events = [json.loads(line) for line in launched.stdout.splitlines()]
        run_id = next(e for e in events if e["event"] == "launched")["run"]["id"]
        deadline, row = time.monotonic() + 60, None
        while time.monotonic() < deadline:
            once = sgtui_sync("fleet", "--once", "--json", config_dir=config)
            assert once.returncode == 0, once.stderr
            (host_row,) = [json.loads(line) for line in once.stdout.splitlines()]
            row = next((r for r in host_row["runs"] if r["id"] == run_id), None)
            if row is not None and row["health"] == "ready":
                break
            time.sleep(1.0)
        assert row is not None and row["state"] == "running" and row["health"] == "ready", row
        assert row["gen_tokens_per_s"] is None or row["gen_tokens_per_s"] > 0
        sgtui_sync("stop", run_id, "--profile", str(profile), "--yes", config_dir=config)
