"""Ctrl-C during `sgtui launch`: a server that was started is named, with the command that stops it, and a
launch under way is finished rather than cut half-way (a multi-node run never has only some nodes started).
The server is detached: Ctrl-C stops the watching, not the server. Exit code 130."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from sgtui.commands import interrupt
from sgtui.commands.events import Printer
from tests.sim.simhost_process import free_port, running_sim_host, sgtui

PROFILE = "qwen36-27b-2xa6000-mrr8.yaml"


def _launch(profile: Path, config_dir: Path, *extra: str) -> subprocess.Popen[str]:
    """`sgtui launch` as a terminal runs it: SIGINT is Ctrl-C (not ignored, as under a `&` in a script)."""
    env = {**os.environ, "SGTUI_CONFIG_DIR": str(config_dir)}
    return subprocess.Popen(
        [sys.executable, "-m", "sgtui", "launch", str(profile), "--json-events", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_until_connecting(proc: subprocess.Popen[str]) -> None:
    """Until the child holds its SSH connection's socket besides the event loop's own socket pair (so its
    Ctrl-C handling is in place, whatever the machine's load)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        fds = Path(f"/proc/{proc.pid}/fd")
        with contextlib.suppress(OSError):
            if sum(os.readlink(fd).startswith("socket:") for fd in fds.iterdir()) >= 3:
                return
        time.sleep(0.05)
    raise AssertionError("the launch never opened its connection")


def _interrupt_after(proc: subprocess.Popen[str], event: str) -> tuple[int, list[dict[str, object]]]:
    """Ctrl-C once `event` was printed; the exit code and every event printed."""
    assert proc.stdout is not None
    events = []
    for line in proc.stdout:
        events.append(json.loads(line))
        if events[-1]["event"] == event:
            proc.send_signal(signal.SIGINT)
            break
    rest, err = proc.communicate(timeout=60)
    events += [json.loads(line) for line in rest.splitlines()]
    assert events[-1]["event"] == "interrupted", (events, err)
    return proc.returncode, events


def test_ctrl_c_while_watching_names_the_running_server_and_how_to_stop_it(tmp_path: Path) -> None:
    with running_sim_host(tmp_path) as host:
        profile = host.profile(PROFILE, server_port=free_port())
        code, events = _interrupt_after(_launch(profile, tmp_path, "--watch"), "launched")
        assert code == 130
        run = next(e["run"] for e in events if e["event"] == "launched")
        last = events[-1]
        assert last["running"] is True and last["id"] == run["id"]  # type: ignore[index]
        listed = sgtui("runs", "--profile", str(profile), "--json", config_dir=tmp_path)
        assert [r["state"] for r in json.loads(listed.stdout)] == ["running"]  # detached: it keeps running
        stop = shlex.split(str(last["command"]))
        assert stop[:2] == ["sgtui", "stop"]
        stopped = sgtui(*stop[1:], config_dir=tmp_path, timeout=90)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def test_ctrl_c_during_a_multinode_launch_starts_every_node_and_names_the_run(tmp_path: Path) -> None:
    """Ctrl-C right after the checks, while node 0 is being started: the others are started too, so the
    one stop command printed ends the whole run (node 0 alone would wait at distributed init, holding its
    GPUs)."""
    with running_sim_host(tmp_path, "--hosts", "2") as sims:
        profile = sims.profile("multinode-demo.yaml", server_port=free_port())
        code, events = _interrupt_after(_launch(profile, tmp_path, "--watch"), "checked")
        assert code == 130
        launched = [e["run"] for e in events if e["event"] == "launched"]
        assert sorted(r["node_rank"] for r in launched) == [0, 1]  # type: ignore[index]
        assert events[-1]["running"] is True and events[-1]["id"] == launched[0]["id"]  # type: ignore[index]
        listed = json.loads(sgtui("runs", "--profile", str(profile), "--json", config_dir=tmp_path).stdout)
        assert sorted((r["node_rank"], r["state"]) for r in listed) == [(0, "running"), (1, "running")]
        stopped = sgtui(*shlex.split(str(events[-1]["command"]))[1:], config_dir=tmp_path, timeout=90)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def test_ctrl_c_before_the_launch_says_nothing_was_launched(tmp_path: Path) -> None:
    """The host takes 8 s to log in (a slow network): Ctrl-C at 3 s comes while connecting."""
    with running_sim_host(tmp_path, "--latency-ms", "8000") as host:
        profile = host.profile(PROFILE, server_port=free_port())
        proc = _launch(profile, tmp_path)
        _wait_until_connecting(proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        lines = [json.loads(line) for line in out.splitlines()]
        assert proc.returncode == 130, out + err
        assert lines[-1] == {"event": "interrupted", "elapsed": lines[-1]["elapsed"], "running": False}
        assert not [e for e in lines if e["event"] == "launched"]
        listed = sgtui("runs", "--profile", str(profile), "--json", config_dir=tmp_path)
        assert json.loads(listed.stdout) == []


def test_a_launch_under_way_is_finished_when_ctrl_c_comes() -> None:
    """The detach script is let run to its end: its record comes back, with word of the interruption."""

    async def launching() -> str:
        await asyncio.sleep(0.2)
        return "record"

    async def main() -> tuple[str, bool]:
        return await interrupt.finish_launch(launching(), Printer(json_events=True, out=said))

    async def cancel_soon() -> tuple[str, bool]:
        task = asyncio.ensure_future(main())
        await asyncio.sleep(0.05)
        task.cancel()  # what asyncio.run does with the first Ctrl-C
        return await task

    said = io.StringIO()
    assert asyncio.run(cancel_soon()) == ("record", True)
    assert json.loads(said.getvalue())["event"] == "interrupting"  # said at once, not after the launch
    said = io.StringIO()
    assert asyncio.run(main()) == ("record", False) and said.getvalue() == ""
