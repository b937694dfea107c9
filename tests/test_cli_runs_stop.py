"""`sgtui runs` and `sgtui stop` against `sgtui sim-host`: a run's files are private, a record planted by
another user is foreign and `stop` refuses it (exit 2) while its victim lives, `stop` of sgtui's own run
exits 0, and two sim-hosts side by side never see each other's runs or fight over a port."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
from pathlib import Path

from tests.sim.simhost_process import running_sim_host, sgtui

PROFILE = "qwen36-27b-2xa6000-mrr8.yaml"
RUN_KEYS = [
    "id",
    "host",
    "target",
    "node_rank",
    "state",
    "pid",
    "pgid",
    "user",
    "started",
    "rc",
    "log_path",
    "argv",
]


def _launch(config_dir: Path, profile: Path, *extra: str) -> dict[str, object]:
    result = sgtui("launch", str(profile), "--json-events", *extra, config_dir=config_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0]["event"] == "preflight"  # the preflight comes first, then the launch
    event = next(e for e in events if e["event"] == "launched")
    return dict(event["run"])


def _runs(config_dir: Path, profile: Path) -> list[dict[str, object]]:
    result = sgtui("runs", "--profile", str(profile), "--json", config_dir=config_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    return list(json.loads(result.stdout))


def test_runs_are_private_foreign_records_are_refused_and_own_runs_stop(
    tmp_path: Path, other_user: tuple[str, int]
) -> None:
    victim = subprocess.Popen(["sleep", "120"], start_new_session=True)
    try:
        with running_sim_host(tmp_path) as host:
            profile = host.profile(PROFILE)
            run = _launch(tmp_path, profile)
            run_dir = Path(str(run["run_dir"]))
            assert run_dir.parent.name == "runs" and "/.local/state/sgtui/" in str(run_dir)
            assert (run_dir.stat().st_mode & 0o777, run_dir.parent.stat().st_mode & 0o777) == (0o700, 0o700)
            for f in ("command.json", "profile.yaml", "env", "server.log", "run.json"):
                assert (run_dir / f).stat().st_mode & 0o777 == 0o600, f

            # another user plants a record next to ours, pointing at their victim's session
            planted = run_dir.parent / "20990101-000000-beef00"
            planted.mkdir(mode=0o700)
            stat = Path(f"/proc/{victim.pid}/stat").read_text().rsplit(") ", 1)[1].split()
            boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
            meta = {
                "pid": victim.pid,
                "pgid": victim.pid,
                "sid": victim.pid,
                "start": int(stat[19]),
                "boot": boot,
            }
            (planted / "run.json").write_text(json.dumps(meta))
            (planted / "command.json").write_text(
                json.dumps({"argv": ["/usr/bin/sleep", "120"], "target": {"kind": "pct", "id": "129"}})
            )
            for p in (planted, planted / "run.json", planted / "command.json"):
                os.chown(p, other_user[1], -1)

            listed = _runs(tmp_path, profile)
            assert [r["id"] for r in listed] == [planted.name, run["id"]]  # newest first
            assert all(list(r) == RUN_KEYS for r in listed)
            foreign, own = listed
            assert foreign["state"] == "foreign" and own["state"] == "running"
            assert own["user"] == pwd.getpwuid(os.getuid()).pw_name and own["target"] == "pct:129"
            assert own["node_rank"] is None and own["pgid"] == run["pgid"]

            text = sgtui("runs", "--profile", str(profile), config_dir=tmp_path)
            assert f"refusing run {planted.name}: {planted} is owned by" in text.stdout

            refused = sgtui("stop", planted.name, "--profile", str(profile), "--yes", config_dir=tmp_path)
            assert refused.returncode == 2, refused.stdout + refused.stderr
            assert f"refusing to stop run {planted.name}" in refused.stderr
            assert "Traceback" not in refused.stderr
            assert victim.poll() is None

            stopped = sgtui(
                "stop",
                str(run["id"]),
                "--profile",
                str(profile),
                "--yes",
                "--grace",
                "5",
                config_dir=tmp_path,
            )
            assert stopped.returncode == 0, stopped.stdout + stopped.stderr
            assert f"process group {run['pgid']}" in stopped.stdout and "leader:" in stopped.stdout
            assert f"stopped {run['id']} (drained and ended on TERM)" in stopped.stdout
            assert "TERM to the server's main process (pid " in stopped.stdout  # each step with its time
            assert "its main process ended" in stopped.stdout and "KILL" not in stopped.stdout
            log = Path(str(run["log_path"])).read_text()
            assert "Gracefully exiting... Remaining number of requests 0" in log
            assert [r["state"] for r in _runs(tmp_path, profile)] == ["foreign", "stopped"]
            again = sgtui("stop", str(run["id"]), "--profile", str(profile), "--yes", config_dir=tmp_path)
            assert again.returncode == 0, again.stdout + again.stderr
            # an ended run: one line, no empty leader and no mismatch warning before it
            assert again.stdout == f"{run['id']} had already ended; nothing was signalled\n"
            assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


def _on_a_terminal(args: list[str], answer: str, config_dir: Path) -> subprocess.CompletedProcess[str]:
    """`sgtui ARGS` with a terminal on stdin that types `answer`."""
    import pty
    import sys

    leader, follower = pty.openpty()
    os.write(leader, f"{answer}\n".encode())
    try:
        return subprocess.run(
            [sys.executable, "-m", "sgtui", *args],
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "SGTUI_CONFIG_DIR": str(config_dir)},
        )
    finally:
        os.close(leader)
        os.close(follower)


def test_stop_asks_first_unless_yes_and_refuses_bad_input(tmp_path: Path) -> None:
    with running_sim_host(tmp_path) as host:
        profile = host.profile(PROFILE)
        run = _launch(tmp_path, profile)
        asked = sgtui("stop", str(run["id"]), "--profile", str(profile), config_dir=tmp_path)
        assert asked.returncode == 2 and "pass --yes" in asked.stderr
        assert _runs(tmp_path, profile)[0]["state"] == "running"
        for answer, code in (("n", 2), ("y", 0)):  # on a terminal it asks, and only "y" stops
            told = _on_a_terminal(
                ["stop", str(run["id"]), "--profile", str(profile), "--grace", "3"], answer, tmp_path
            )
            assert told.returncode == code, told.stdout + told.stderr
            assert "Stop it? [y/N]" in told.stdout and f"process group {run['pgid']}" in told.stdout
            state = _runs(tmp_path, profile)[0]["state"]
            assert state == ("running" if answer == "n" else "stopped")
        unknown = sgtui(
            "stop", "20990101-000000-000000", "--profile", str(profile), "--yes", config_dir=tmp_path
        )
        assert unknown.returncode == 2 and "no run 20990101-000000-000000" in unknown.stderr
        bad = sgtui("stop", "../x", "--profile", str(profile), "--yes", config_dir=tmp_path)
        assert bad.returncode == 2 and "is not one sgtui writes" in bad.stderr
        both = sgtui("runs", "--profile", str(profile), "--host", "sim", config_dir=tmp_path)
        assert both.returncode == 2 and "--profile and --host both name the place: give one" in both.stderr


def test_two_sim_hosts_side_by_side_never_see_each_other(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    with running_sim_host(a) as sim_a, running_sim_host(b) as sim_b:
        # the same profile, unchanged: both ask for port 30000, and both become ready
        for sim, cfg in ((sim_a, a), (sim_b, b)):
            watched = sgtui("launch", str(sim.profile(PROFILE)), "--watch", "--timeout", "50", config_dir=cfg)
            assert watched.returncode == 0, watched.stdout + watched.stderr
            assert "address already in use" not in watched.stdout
        runs_a, runs_b = _runs(a, sim_a.profile(PROFILE)), _runs(b, sim_b.profile(PROFILE))
        assert len(runs_a) == len(runs_b) == 1 and runs_a[0]["id"] != runs_b[0]["id"]
        assert Path(str(runs_a[0]["log_path"])).parents[1] != Path(str(runs_b[0]["log_path"])).parents[1]
        hosts = sgtui("runs", "--host", "sim", "--target", "pct:129", "--json", config_dir=b)
        assert [r["id"] for r in json.loads(hosts.stdout)] == [runs_b[0]["id"]]
        # a stop on one touches nothing of the other
        stopped = sgtui(
            "stop", str(runs_b[0]["id"]), "--host", "sim", "--target", "pct:129", "--yes", config_dir=b
        )
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert _runs(a, sim_a.profile(PROFILE))[0]["state"] == "running"


def test_runs_prune_keeps_the_newest_ended_runs_and_the_listing_stays_the_contract(tmp_path: Path) -> None:
    with running_sim_host(tmp_path) as host:
        profile = host.profile(PROFILE)
        first = _launch(tmp_path, profile)
        stop = ("--profile", str(profile), "--yes", "--grace", "3")
        assert sgtui("stop", str(first["id"]), *stop, config_dir=tmp_path).returncode == 0
        second = _launch(tmp_path, profile)
        assert sgtui("stop", str(second["id"]), *stop, config_dir=tmp_path).returncode == 0
        live = _launch(tmp_path, profile)
        bad = sgtui("runs", "--profile", str(profile), "--keep", "1", config_dir=tmp_path)
        assert bad.returncode == 2 and "--keep goes with --prune" in bad.stderr
        pruned = sgtui(
            "runs", "--profile", str(profile), "--prune", "--keep", "1", "--json", config_dir=tmp_path
        )
        assert pruned.returncode == 0, pruned.stdout + pruned.stderr
        assert f"pruned 1 ended run(s) on sim (pct 129), kept the newest 1: {first['id']}" in pruned.stderr
        listed = json.loads(pruned.stdout)  # the --json contract is unchanged: the runs left
        assert [(r["id"], r["state"]) for r in listed] == [(live["id"], "running"), (second["id"], "stopped")]
        assert not Path(str(first["run_dir"])).exists()
        sgtui("stop", str(live["id"]), *stop, config_dir=tmp_path)
