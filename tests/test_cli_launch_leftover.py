"""`sgtui launch --watch` when the server failed but lives on: SGLang 0.5.23 with its port taken logs the
bind error and hangs (the sim's stand-in does the same). The watch must not leave a live server behind
without a word: its failure line says the server is still running, and it stops it, step by step."""

from __future__ import annotations

import json
from pathlib import Path

from tests.sim.simhost_process import running_sim_host, sgtui

PROFILE = "qwen36-27b-2xa6000-mrr8.yaml"


def test_a_port_in_use_launch_says_the_server_still_runs_and_stops_it(tmp_path: Path) -> None:
    with running_sim_host(tmp_path, "--scenario", "port-in-use") as host:
        profile = host.profile(PROFILE)
        # the preflight refuses a port in use (exit 3); a forced launch, or a port taken between the preflight
        # and the bind, is what reaches SGLang's bind error
        refused = sgtui("launch", str(profile), config_dir=tmp_path, timeout=90)
        assert refused.returncode == 3 and "port: FAILED" in refused.stdout, refused.stdout + refused.stderr
        watched = sgtui(
            "launch", str(profile), "--force", "--watch", "--timeout", "60", config_dir=tmp_path, timeout=90
        )
        out = watched.stdout
        assert watched.returncode == 1, out + watched.stderr
        failed = next(line for line in out.splitlines() if "] failed: " in line)
        assert "] failed: port_in_use" in failed
        assert "the server is still running (pid " in failed and "cannot serve: stopping it" in failed
        assert "TERM to the server's main process (pid " in out and "nothing of the group left" in out
        listed = sgtui("runs", "--profile", str(profile), "--json", config_dir=tmp_path)
        [run] = json.loads(listed.stdout)
        assert run["state"] == "stopped"  # nothing of it left alive, and the listing says why it ended

        events = sgtui(
            "launch",
            str(profile),
            "--force",
            "--watch",
            "--json-events",
            "--timeout",
            "60",
            config_dir=tmp_path,
            timeout=90,
        )
        kinds = [json.loads(line) for line in events.stdout.splitlines()]
        fail = next(e for e in kinds if e["event"] == "failed")
        assert fail["error_class"] == "port_in_use" and fail["still_running"] is True
        stopped = next(e for e in kinds if e["event"] == "stopped")
        assert stopped["steps"][0][0] == "term-main"
        listed = sgtui("runs", "--profile", str(profile), "--json", config_dir=tmp_path)
        assert [r["state"] for r in json.loads(listed.stdout)] == ["stopped", "stopped"]


def test_a_watched_launch_that_someone_stops_says_stopped_not_that_the_server_exited() -> None:
    """`sgtui stop` (or the TUI) stopped the run while `launch --watch` followed it: the run reads
    STOPPED, so the watch says so, and the classifier hears no exit code of its own."""
    import io

    from sgtui.commands import launch
    from sgtui.remote.runs import RunState, RunStatus
    from tests.logpaths import FakeRun, _Record, run_watch

    class StoppedRun(FakeRun):
        async def status(self, record: object) -> RunStatus:
            if self.delivered < len(self.lines):
                return RunStatus(RunState.RUNNING)
            return RunStatus(RunState.STOPPED, 0)

    out = io.StringIO()
    lines = ["[2026-12-01 21:27:07] Load weight begin. avail mem=20.43 GB"]
    printer = launch.Printer(False, out)
    code, watch = run_watch(StoppedRun(lines, None), _Record("/runs/r/server.log"), printer, timeout=5)
    assert code == 1
    text = out.getvalue()
    assert "run fake-run was stopped" in text and "failed: stopped (log /runs/r/server.log)" in text
    assert watch.classifier.state.exit_code is None
