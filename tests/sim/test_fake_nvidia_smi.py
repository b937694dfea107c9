"""The fake nvidia-smi prints what sgtui's samplers parse, in the real tool's shapes."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from sgtui.sim.install import install
from sgtui.sim.scenarios import get_scenario
from sgtui.sim.state import StateStore, set_holding


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    install(get_scenario("other-user"), tmp_path, speed=1.0)
    return tmp_path


def smi(state_dir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(state_dir / "bin" / "nvidia-smi"), *args],
        capture_output=True,
        text=True,
        timeout=20,
        env={**os.environ, **(env or {})},
    )


def test_query_gpu_without_header_or_units_gives_one_comma_separated_row_per_gpu(state_dir: Path) -> None:
    out = smi(
        state_dir,
        "--query-gpu=index,name,memory.used,memory.total,utilization.gpu",
        "--format=csv,noheader,nounits",
    )
    assert out.returncode == 0
    assert out.stdout.splitlines() == [
        "0, NVIDIA RTX A6000, 3, 49140, 0",
        "1, NVIDIA RTX A6000, 20483, 49140, 35",  # alice's 20 GiB process sits on GPU 1
    ]


def test_query_gpu_with_header_and_units_names_the_units_in_brackets(state_dir: Path) -> None:
    out = smi(state_dir, "--query-gpu=index,memory.used,utilization.gpu", "--format=csv")
    assert out.stdout.splitlines() == [
        "index, memory.used [MiB], utilization.gpu [%]",
        "0, 3 MiB, 0 %",
        "1, 20483 MiB, 35 %",
    ]


def test_compute_apps_lists_each_process_with_its_memory_and_gpu_uuid(state_dir: Path) -> None:
    with StateStore(state_dir).update() as state:
        set_holding(state, pid=os.getpid(), gpu=0, mib=1234, name="sglang::scheduler_TP0", release_delay=0)
    out = smi(state_dir, "--query-compute-apps=pid,process_name,used_memory,gpu_uuid", "--format=csv")
    lines = out.stdout.splitlines()
    assert lines[0] == "pid, process_name, used_gpu_memory [MiB], gpu_uuid"
    assert lines[1].startswith(f"{os.getpid()}, sglang::scheduler_TP0, 1234 MiB, GPU-")
    assert lines[2].startswith("4190001, /usr/bin/python3, 20480 MiB, GPU-")


def test_an_unknown_field_is_refused_like_the_real_tool(state_dir: Path) -> None:
    out = smi(state_dir, "--query-gpu=index,memory.bogus", "--format=csv")
    assert out.returncode == 2
    assert 'Field "memory.bogus" is not a valid field to query.' in out.stderr


def test_a_query_without_format_is_refused(state_dir: Path) -> None:
    assert smi(state_dir, "--query-gpu=index").returncode == 2


def test_id_selects_gpus_and_a_container_sees_only_its_own(state_dir: Path) -> None:
    assert smi(state_dir, "--query-gpu=index", "--format=csv,noheader", "-i", "1").stdout == "1\n"
    with StateStore(state_dir).update() as state:
        state["containers"]["129"]["gpus"] = [1]
    inside = smi(state_dir, "--query-gpu=index", "--format=csv,noheader", env={"SGTUI_SIM_CONTAINER": "129"})
    assert inside.stdout == "1\n"


def test_the_plain_table_shows_memory_and_the_process_list(state_dir: Path) -> None:
    out = smi(state_dir).stdout
    assert "NVIDIA-SMI 550.127.05" in out
    assert "20483MiB /  49140MiB" in out
    assert "4190001      C   /usr/bin/python3" in out


def test_the_loop_keeps_sampling_and_ends_quietly_when_the_reader_goes_away(state_dir: Path) -> None:
    proc = subprocess.Popen(
        [
            str(state_dir / "bin" / "nvidia-smi"),
            "--query-gpu=index,memory.used",
            "--format=csv,noheader,nounits",
            "-lms",
            "50",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(6)]
        assert [line.split(b",")[0] for line in lines] == [b"0", b"1"] * 3
        proc.stdout.close()  # the SSH channel went away
        started = time.monotonic()
        assert proc.wait(timeout=5) == 0
        assert time.monotonic() - started < 5
        assert b"Traceback" not in (proc.stderr.read() if proc.stderr else b"")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sgtuis_own_parsers_read_the_fake_output(state_dir: Path) -> None:
    from sgtui.core.nvsmi import QUERY_APPS_FIELDS, QUERY_GPU_FIELDS, parse_compute_apps, parse_query_gpu

    gpus, unreadable = parse_query_gpu(
        smi(state_dir, f"--query-gpu={QUERY_GPU_FIELDS}", "--format=csv,noheader,nounits").stdout
    )
    assert unreadable == [] and [g.index for g in gpus] == [0, 1]
    apps = parse_compute_apps(
        smi(state_dir, f"--query-compute-apps={QUERY_APPS_FIELDS}", "--format=csv,noheader,nounits").stdout
    )
    assert [(p.pid, p.name) for p in apps] == [(4190001, "/usr/bin/python3")]
