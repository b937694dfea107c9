"""Who holds GPU memory in the simulated host: live processes do, dead ones for a while, others always."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sgtui.sim.install import install
from sgtui.sim.scenarios import get_scenario
from sgtui.sim.state import StateStore, gpu_rows, mark_exited, set_holding, settle


@pytest.fixture
def store(tmp_path: Path) -> StateStore:
    return install(get_scenario("proxmox-a6000"), tmp_path, speed=1.0)


def _child() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])


def test_a_live_process_holds_its_memory_and_a_dead_one_frees_it_after_the_delay(store: StateStore) -> None:
    child = _child()
    try:
        with store.update() as state:
            set_holding(
                state, pid=child.pid, gpu=0, mib=24000, name="sglang::scheduler_TP0", release_delay=5.0
            )
        assert gpu_rows(store.refresh(now=1000.0))[0].used_mib == 24003
    finally:
        child.kill()
        child.wait()
    assert gpu_rows(store.refresh(now=1001.0))[0].used_mib == 24003, "seen dead at t=1001: held until 1006"
    assert gpu_rows(store.refresh(now=1005.9))[0].used_mib == 24003
    assert gpu_rows(store.refresh(now=1006.1))[0].used_mib == 3


def test_a_process_that_says_it_exited_releases_from_that_moment(store: StateStore) -> None:
    child = _child()
    try:
        with store.update() as state:
            set_holding(state, pid=child.pid, gpu=1, mib=1000, name="x", release_delay=2.0)
            mark_exited(state, {child.pid}, now=50.0)
            settle(state, now=51.0)
            assert gpu_rows(state)[1].used_mib == 1003
            settle(state, now=52.5)
            assert gpu_rows(state)[1].used_mib == 3
    finally:
        child.kill()
        child.wait()


def test_a_reused_pid_does_not_keep_the_old_processes_memory(store: StateStore) -> None:
    child = _child()
    try:
        with store.update() as state:
            set_holding(state, pid=child.pid, gpu=0, mib=500, name="x", release_delay=0.0)
            state["procs"][0]["start"] = -1  # as if the pid had been started at another time
            settle(state, now=10.0)
            assert gpu_rows(state)[0].processes == ()
    finally:
        child.kill()
        child.wait()


def test_another_users_process_is_always_there(tmp_path: Path) -> None:
    store = install(get_scenario("other-user"), tmp_path)
    rows = gpu_rows(store.refresh(now=10**10))
    assert rows[1].processes[0].pid == 4190001 and rows[1].processes[0].user == "alice"
    assert rows[1].used_mib == 20483


def test_growing_an_allocation_updates_the_same_row(store: StateStore) -> None:
    child = _child()
    try:
        with store.update() as state:
            for mib in (1000, 5000, 9000):
                set_holding(state, pid=child.pid, gpu=0, mib=mib, name="x", release_delay=0.0)
        rows = gpu_rows(store.read())
        assert [p.mib for p in rows[0].processes] == [9000]
    finally:
        child.kill()
        child.wait()
