"""`sgtui stop` of a run whose run dir on the target was removed while its server runs: the target's
listing no longer has it, so the stop finds the record this machine kept at launch (remote/run_store.py),
says so, and goes through the same checks (pid, process start time, boot id, sgtui's runner) before it
signals anything. Against `sgtui sim-host`, as the other stop tests."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sgtui.remote.run_records import RunRecord
from sgtui.remote.run_store import RunStore
from sgtui.remote.targets import Target
from tests.sim.simhost_process import SimHostProcess, free_port, running_sim_host, sgtui
from tests.test_cli_runs_stop import PROFILE, RUN_KEYS, _launch, _runs

TARGET = Target("pct", "129")  # the demo profile's target


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimHostProcess, Path, Path]]:
    """One sim-host for the module: (the host, the demo profile, the config dir)."""
    config = tmp_path_factory.mktemp("stoprec")
    with running_sim_host(config) as host:
        yield host, host.profile(PROFILE), config


def _group_alive(pgid: int) -> list[int]:
    """Processes of group `pgid` that are not zombies."""
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(") ", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] not in "ZX":
                alive.append(int(entry.name))
    return alive


def _runs_dir(profile: Path, config: Path) -> str:
    listed = sgtui("runs", "--profile", str(profile), config_dir=config)
    found = re.search(r" in (/\S+?)(?:,|$)", listed.stdout.splitlines()[0])
    assert found, listed.stdout + listed.stderr
    return found.group(1)


def test_a_run_whose_run_dir_was_removed_is_listed_and_stopped_from_the_local_record(
    sim: tuple[SimHostProcess, Path, Path],
) -> None:
    """Before, the run vanished from `sgtui runs` and `sgtui stop` said "no run": a server sgtui started
    could no longer be stopped through sgtui."""
    _, profile, config = sim
    run = _launch(config, profile)
    pgid = int(str(run["pgid"]))
    kept = config / "state" / "runs"
    (record_file,) = kept.glob(f"{run['id']}~*.json")
    assert (kept.stat().st_mode & 0o777, record_file.stat().st_mode & 0o777) == (0o700, 0o600)
    shutil.rmtree(str(run["run_dir"]))

    listed = sgtui("runs", "--profile", str(profile), "--json", config_dir=config)
    rows = [r for r in json.loads(listed.stdout) if r["id"] == run["id"]]
    assert [(list(r), r["state"], r["pgid"]) for r in rows] == [(RUN_KEYS, "running", pgid)]
    assert f"its run dir {run['run_dir']} was removed" in listed.stderr
    assert f"listed from this machine's record ({record_file})" in listed.stderr

    stopped = sgtui(
        "stop", str(run["id"]), "--profile", str(profile), "--yes", "--grace", "5", config_dir=config
    )
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert f"its run dir {run['run_dir']} was removed; using the record this machine kept" in stopped.stdout
    assert str(record_file) in stopped.stdout
    assert f"process group {pgid}" in stopped.stdout and f"stopped {run['id']}" in stopped.stdout
    assert _group_alive(pgid) == []
    # seen ended: the local record ages out, and the listing no longer shows it
    assert json.loads(record_file.read_text())["ended_at"] is not None
    assert run["id"] not in [r["id"] for r in _runs(config, profile)]


def test_a_local_record_whose_pid_now_belongs_to_another_process_is_refused(
    sim: tuple[SimHostProcess, Path, Path], session_leader: subprocess.Popen[bytes]
) -> None:
    """The local record is only a lead: the target checks the pid's start time before any signal, so a
    record naming a pid another process got since signals nothing (the run has ended: exit 0, as for any
    ended run). With the right start time too, a process that is not sgtui's runner for that run dir's
    log is refused (exit 2): a local file cannot aim the stop at someone else's process."""
    _, profile, config = sim
    runs_dir = _runs_dir(profile, config)
    start = int(Path(f"/proc/{session_leader.pid}/stat").read_text().rsplit(") ", 1)[1].split()[19])
    store = RunStore(config / "state" / "runs")
    for run_id, recorded_start, code, said in (
        (
            "20261201-000000-0c0ffe",
            start - 1,
            0,
            "of run 20261201-000000-0c0ffe now belongs to another process, so the run itself has ended; "
            "nothing was signalled",
        ),
        ("20261201-000000-0c0ff0", start, 2, "was removed, and process group "),
    ):
        store.remember(
            RunRecord(
                id=run_id,
                host="sim",
                target=TARGET,
                run_dir=f"{runs_dir}/{run_id}",
                argv=["/usr/bin/sleep", "60"],
                env={},
                gpus=[],
                pid=session_leader.pid,
                pgid=session_leader.pid,
                start=recorded_start,
                boot=Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
            )
        )
        told = sgtui("stop", run_id, "--profile", str(profile), "--yes", config_dir=config)
        assert told.returncode == code, told.stdout + told.stderr
        assert "using the record this machine kept" in told.stdout
        assert code == 0 or f"refusing run {run_id}: " in told.stderr
        assert said in told.stdout + told.stderr
        assert "Traceback" not in told.stderr
        assert session_leader.poll() is None and _group_alive(session_leader.pid) == [session_leader.pid]


def test_a_damaged_local_record_is_one_line_naming_the_file(sim: tuple[SimHostProcess, Path, Path]) -> None:
    _, profile, config = sim
    run_id = "20261201-000001-badbad"
    store = RunStore(config / "state" / "runs")
    record = RunRecord(run_id, "sim", TARGET, f"/x/runs/{run_id}", ["/bin/true"], {}, [], 4242, 4242, 1, "")
    path = store.remember(record)
    path.write_text('{"sgtui_run_record": 1, "record": {"pid": ')
    told = sgtui("stop", run_id, "--profile", str(profile), "--yes", config_dir=config)
    assert told.returncode == 2, told.stdout + told.stderr
    (line,) = told.stderr.splitlines()
    assert line.startswith(f"sgtui stop: {path}: ") and "move it aside or delete it" in line
    assert path.exists()
    os.unlink(path)


@pytest.mark.skipif(
    not __import__("sgtui.sim.fleet", fromlist=["x"]).loopback_aliases_work(),
    reason="needs 127.0.0.2 (Linux routes all of 127/8 to loopback; elsewhere add an alias)",
)
def test_a_multinode_stop_takes_a_node_whose_run_dir_was_removed_from_the_local_record(
    tmp_path: Path,
) -> None:
    """Each node's record is kept at launch too: a worker whose run dir is gone is still stopped (with
    the others, workers first) instead of being "no record of this run there (nothing to stop)"."""
    with running_sim_host(tmp_path, "--hosts", "2") as sims:
        profile = sims.profile("multinode-demo.yaml", server_port=free_port())
        launched = sgtui("launch", str(profile), "--json-events", config_dir=tmp_path, timeout=120)
        assert launched.returncode == 0, launched.stdout + launched.stderr
        runs = [e["run"] for e in map(json.loads, launched.stdout.splitlines()) if e["event"] == "launched"]
        worker = next(r for r in runs if r["node_rank"] == 1)
        shutil.rmtree(worker["run_dir"])
        stopped = sgtui(
            "stop", worker["id"], "--profile", str(profile), "--yes", "--grace", "5", config_dir=tmp_path
        )
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        runs_dir, _ = worker["run_dir"].rsplit("/", 1)
        assert (
            f"node 1 sim-2 (pct 129): not in the listing of {runs_dir}: its run dir {worker['run_dir']} was "
            "removed; using the record this machine kept" in stopped.stdout
        )
        assert any(line.startswith("node 1 (sim-2): stopped") for line in stopped.stdout.splitlines())
        assert [_group_alive(int(r["pgid"])) for r in runs] == [[], []]
