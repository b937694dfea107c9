"""The real SGLang 0.5.23 on CPU, launched by `sgtui launch --watch` over OpenSSH as a bare host: it reaches
ready, answers /health and /generate, and `sgtui stop` leaves nothing of it behind; a restart (stop, wait,
fresh log) reaches ready again on the same port.

One launch and its restart serve all the tests (module scope: a start costs 20-45 s and ~4 GB here); each test
states one thing about it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.real_sglang.conftest import real_host_at
from tests.real_sglang.harness import RealEnv
from tests.real_sglang.realhost import Launch, RealHost, free_port, http, port_is_free, run_pids

pytestmark = pytest.mark.real_sglang


@dataclass
class Observed:
    """What one launch -> /health -> /generate -> stop showed."""

    host: RealHost
    profile: Path
    port: int
    launch: Launch
    health: tuple[int, str] | None = None
    generate: tuple[int, str] | None = None
    stop_rc: int | None = None
    stop_out: str = ""
    left_after_stop: list[int] = field(default_factory=list)
    port_free_after_stop: bool | None = None
    runs_after_stop: list[dict[str, Any]] = field(default_factory=list)
    first_log_after_stop: str = ""
    restart: Launch | None = None  # the same profile launched again once the first run was gone
    restart_health: int | None = None
    restart_stop_rc: int | None = None


@pytest.fixture(scope="module")
def observed(real_env: RealEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    for host in real_host_at(tmp_path_factory.mktemp("ready"), real_env):
        port = free_port()
        profile = host.profile("tiny-ready", port)
        seen = Observed(host, profile, port, host.launch(profile))
        if seen.launch.rc == 0:
            seen.health = http(port, "/health")
            seen.generate = http(
                port,
                "/generate",
                {"text": "Hello, world!", "sampling_params": {"max_new_tokens": 8, "temperature": 0}},
            )
            stop = host.stop(profile, seen.launch.run_id)
            seen.stop_rc, seen.stop_out = stop.returncode, stop.stdout + stop.stderr
            seen.left_after_stop = run_pids(seen.launch.run_id)
            seen.port_free_after_stop = port_is_free(port)
            seen.runs_after_stop = host.runs(profile)
            # `r`'s semantics from the CLI: stop (above), wait until nothing of it is left and the port is
            # free, launch again into a fresh log
            host.wait_gone(seen.launch.run_id)
            seen.first_log_after_stop = seen.launch.log
            deadline = time.monotonic() + 30
            while not port_is_free(port) and time.monotonic() < deadline:
                time.sleep(0.2)
            seen.restart = host.launch(profile)
            if seen.restart.rc == 0:
                seen.restart_health = http(port, "/health")[0]
                seen.restart_stop_rc = host.stop(profile, seen.restart.run_id).returncode
        yield seen


def test_the_real_server_reaches_ready_through_every_startup_milestone(observed: Observed) -> None:
    launch = observed.launch
    assert launch.rc == 0, launch.stdout[-3000:] + launch.stderr[-2000:]
    kinds = launch.kinds()
    for kind in ("server_args", "load_weight_end", "kv_cache_allocated", "uvicorn_running"):
        assert kind in kinds, kinds
    assert kinds.index("load_weight_end") < kinds.index("kv_cache_allocated") < kinds.index("uvicorn_running")
    assert launch.events[-1]["event"] == "ready", launch.events[-1]
    assert "The server is fired up and ready to roll!" in launch.log


def test_0_5_23_is_started_with_sglang_serve(observed: Observed) -> None:
    """Item 8: the release's preferred form; its log has no module-form deprecation warning."""
    argv = observed.launch.run["argv"]
    assert argv[:2] == [str(observed.host.env.root / "bin" / "sglang"), "serve"], argv
    assert "'python -m sglang.launch_server' is still supported" not in observed.launch.log


def test_the_ready_server_answers_health_and_one_generate(observed: Observed) -> None:
    assert observed.health is not None and observed.health[0] == 200
    assert observed.generate is not None and observed.generate[0] == 200
    answer = json.loads(observed.generate[1])
    assert answer["meta_info"]["completion_tokens"] >= 1, answer


def test_stop_leaves_no_process_of_the_run_and_frees_the_port(observed: Observed) -> None:
    assert observed.stop_rc == 0, observed.stop_out
    assert observed.left_after_stop == [], observed.stop_out
    assert observed.port_free_after_stop is True


def test_a_stopped_run_reads_stopped(observed: Observed) -> None:
    """Issue 16 item 2: after `sgtui stop`, `sgtui runs` says `stopped` (not `dead` without an exit code)."""
    assert observed.stop_rc == 0
    row = next(r for r in observed.runs_after_stop if r["id"] == observed.launch.run_id)
    assert row["state"] == "stopped", row


def test_the_stop_is_graceful_sglang_drains_instead_of_logging_a_crash(observed: Observed) -> None:
    """Issue 16 item 3: TERM to the whole group makes SGLang log "Subprocess scheduler_0 ... crashed";
    TERM to the main process alone drains ("Gracefully exiting") and stops the children itself."""
    assert observed.stop_rc == 0
    log = observed.launch.log
    assert "crashed with exit code" not in log, log[-2000:]


def test_a_restart_stops_waits_and_reaches_ready_again_in_a_fresh_log(observed: Observed) -> None:
    """Stop the ready run, wait until it is gone, launch the same profile on the same port: a new run id,
    a new log, ready again, and the first log left as it was."""
    first, second = observed.launch, observed.restart
    assert second is not None, observed.stop_out
    assert second.rc == 0, second.stdout[-3000:]
    assert second.run_id != first.run_id
    assert second.run["log_path"] != first.run["log_path"]
    assert first.log == observed.first_log_after_stop
    assert observed.restart_health == 200
    assert observed.restart_stop_rc == 0
