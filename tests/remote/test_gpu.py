"""GPU sampling: one nvidia-smi stream per host, processes mapped to containers, problems named."""

from __future__ import annotations

import asyncio
import sys
import types
from pathlib import Path

import pytest

from sgtui.core.nvsmi import (
    GpuState,
    advice,
    classify_failure,
    container_from_cgroup,
    parse_compute_apps,
    parse_gpu_line,
    parse_query_gpu,
)
from sgtui.remote.connection import Connection
from sgtui.remote.gpu import GpuSampler, NvmlSampler, parse_processes
from sgtui.sim.sshserver import SimSSHServer

from .fakes import fake_gpu_host, gpu_rows


def test_a_full_row_parses_into_numbers() -> None:
    row = parse_gpu_line("1, GPU-abc, NVIDIA RTX A6000, 48000, 49140, 97")
    assert row is not None
    assert (row.index, row.uuid, row.name) == (1, "GPU-abc", "NVIDIA RTX A6000")
    assert (row.memory_used_mib.value, row.memory_total_mib.value, row.utilization_pct.value) == (
        48000,
        49140,
        97,
    )
    assert row.state is GpuState.OK


def test_not_available_fields_are_none_with_a_reason_never_zero() -> None:
    row = parse_gpu_line("0, GPU-x, Some GPU, [N/A], 81559, [Not Supported]")
    assert row is not None and row.state is GpuState.PARTIAL
    assert row.memory_used_mib.value is None and row.memory_used_mib.reason == "N/A"
    assert row.utilization_pct.value is None and row.utilization_pct.reason == "Not Supported"


def test_a_gpu_name_with_a_comma_survives() -> None:
    row = parse_gpu_line("0, GPU-x, Vendor, Model X, 10, 20, 0")
    assert row is not None and row.name == "Vendor, Model X" and row.memory_total_mib.value == 20


def test_odd_lines_are_returned_as_unreadable_not_dropped_silently() -> None:
    readings, bad = parse_query_gpu("0, GPU-a, A, 1, 2, 3\nWARNING: something odd\n")
    assert len(readings) == 1 and bad == ["WARNING: something odd"]


def test_driver_and_install_failures_are_named() -> None:
    assert classify_failure(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    ).state is (GpuState.NO_DRIVER)
    assert classify_failure("bash: nvidia-smi: command not found", 127).state is GpuState.NO_NVIDIA_SMI
    assert classify_failure("No devices were found").state is GpuState.NO_DEVICES
    assert classify_failure("0, GPU-a, A, 1, 2, 3") is None


def test_compute_apps_parse_with_units_free_memory() -> None:
    apps = parse_compute_apps("4242, /opt/venv/bin/python3, 39000, GPU-1\n17, x, [N/A], GPU-2\n")
    assert [(a.pid, a.name, a.used_mib.value, a.gpu_uuid) for a in apps] == [
        (4242, "/opt/venv/bin/python3", 39000, "GPU-1"),
        (17, "x", None, "GPU-2"),
    ]


def test_cgroups_map_to_containers() -> None:
    assert container_from_cgroup("0::/lxc/129/ns/system.slice/x.service\n") == "pct 129"
    assert container_from_cgroup("12:memory:/lxc.payload.130/\n") == "pct 130"
    assert (
        container_from_cgroup("0::/system.slice/docker-3f2a9c0b1d2e4f5a6b7c.scope\n") == "docker 3f2a9c0b1d2e"
    )
    assert container_from_cgroup("0::/docker/0123456789abcdef0123\n") == "docker 0123456789ab"
    assert container_from_cgroup("0::/user.slice/user-0.slice/session-1.scope\n") is None


def test_the_processes_report_joins_gpu_index_and_container() -> None:
    text = (
        "@@apps 0\n10, python3, 500, GPU-b\n@@gpus\n0, GPU-a\n1, GPU-b\n"
        "@@cgroup 10\n0::/lxc/129/ns/init.scope\n@@end\n"
    )
    procs, problem = parse_processes(text)
    assert problem is None
    assert [(p.pid, p.gpu_index, p.container) for p in procs] == [(10, 1, "pct 129")]
    _, problem = parse_processes("@@apps 9\nNVIDIA-SMI has failed because it couldn't communicate\n@@end\n")
    assert problem is not None and problem.state is GpuState.NO_DRIVER


async def test_the_stream_yields_one_snapshot_per_cycle(
    conn: Connection, fake_bin: Path, tmp_path: Path
) -> None:
    fake_gpu_host(fake_bin, tmp_path / "gpus", gpus=gpu_rows(8))
    sampler = GpuSampler(conn, interval_ms=50)
    snaps = []
    async for snap in sampler.stream():
        snaps.append(snap)
        if len(snaps) == 4:
            break
    assert all([g.index for g in s.gpus] == list(range(8)) for s in snaps)
    assert all(s.problem is None for s in snaps)


async def test_a_single_gpu_host_is_not_a_cycle_behind(
    conn: Connection, fake_bin: Path, tmp_path: Path
) -> None:
    state = fake_gpu_host(fake_bin, tmp_path / "gpus", gpus=gpu_rows(1, used=111))
    sampler = GpuSampler(conn, interval_ms=100)
    seen = []
    async for snap in sampler.stream():
        seen.append(snap)
        if len(seen) == 1:
            (state / "gpus.csv").write_text(gpu_rows(1, used=222))
        if any(s.gpus[0].memory_used_mib.value == 222 for s in seen):
            break
    assert len(seen) <= 4


async def test_a_missing_driver_is_a_named_state_in_stream_and_query(
    conn: Connection, fake_bin: Path, tmp_path: Path
) -> None:
    fake_gpu_host(fake_bin, tmp_path / "gpus", fail="")
    sampler = GpuSampler(conn, interval_ms=50, problem_retry_s=0.05)
    snap = await asyncio.wait_for(anext(sampler.stream()), 5)
    assert snap.gpus == [] and snap.problem is not None and snap.problem.state is GpuState.NO_DRIVER
    q = await sampler.query()
    assert q.problem is not None and q.problem.state is GpuState.NO_DRIVER


@pytest.mark.parametrize(
    ("message", "state"),
    [
        (
            "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.127",
            "no driver",
        ),
        ("Failed to initialize NVML: Unknown Error", "no driver"),
        ("NVIDIA-SMI couldn't find libnvidia-ml.so library in your system.", "no driver"),
        ("No devices were found", "no devices"),
    ],
)
async def test_driver_failures_are_named_states_in_stream_and_query_never_zeros(
    conn: Connection, fake_bin: Path, tmp_path: Path, message: str, state: str
) -> None:
    fake_gpu_host(fake_bin, tmp_path / "gpus", fail=message + "\n")
    sampler = GpuSampler(conn, interval_ms=50, problem_retry_s=0.05)
    snap = await asyncio.wait_for(anext(sampler.stream()), 5)
    query = await sampler.query()
    for got in (snap, query):
        assert got.gpus == [] and got.problem is not None and got.problem.state.value == state
        assert message.splitlines()[0] in got.problem.detail


def test_a_version_mismatch_is_explained() -> None:
    problem = classify_failure("Failed to initialize NVML: Driver/library version mismatch")
    assert problem is not None and "upgrade without a reboot" in advice(problem)


async def test_empty_output_is_unreadable_and_says_so(
    conn: Connection, fake_bin: Path, tmp_path: Path
) -> None:
    fake_gpu_host(fake_bin, tmp_path / "gpus", gpus="")
    query = await GpuSampler(conn).query()
    assert query.problem is not None and query.problem.state is GpuState.UNREADABLE
    assert query.problem.detail == "nvidia-smi printed nothing (exit 0)"


async def test_one_lost_gpu_does_not_hide_the_readable_ones(
    conn: Connection, fake_bin: Path, tmp_path: Path
) -> None:
    lost = "Unable to determine the device handle for GPU0000:41:00.0: Unknown Error"
    fake_gpu_host(fake_bin, tmp_path / "gpus", gpus=gpu_rows(1) + lost + "\n")
    query = await GpuSampler(conn).query()
    assert query.problem is None and [g.index for g in query.gpus] == [0]
    assert query.unreadable == [lost]


def test_values_with_units_still_parse_and_nonsense_does_not() -> None:
    row = parse_gpu_line("0, GPU-x, A6000, 1024 MiB, 49140 MiB, 35 %")
    assert row is not None and row.state is GpuState.OK
    assert (row.memory_used_mib.value, row.utilization_pct.value) == (1024, 35)
    assert parse_gpu_line("0, GPU-x, A6000, lots, 49140, 1").memory_used_mib.value is None  # type: ignore[union-attr]


async def test_no_nvidia_smi_at_all_is_named(conn: Connection) -> None:
    q = await GpuSampler(conn).query()
    assert q.problem is not None and q.problem.state is GpuState.NO_NVIDIA_SMI


async def test_processes_are_listed_with_their_gpu(conn: Connection, fake_bin: Path, tmp_path: Path) -> None:
    holder = await asyncio.create_subprocess_exec("sleep", "30")
    holding = f"{holder.pid}, python3, 1234, GPU-0001\n"
    fake_gpu_host(fake_bin, tmp_path / "gpus", gpus=gpu_rows(2), apps=holding)
    try:
        procs = await GpuSampler(conn).processes()
        assert [(p.pid, p.gpu_index, p.used_mib.value) for p in procs] == [(holder.pid, 1, 1234)]
    finally:
        holder.kill()
        await holder.wait()


def test_local_nvml_without_a_driver_is_a_named_state() -> None:
    snap = NvmlSampler().query_sync()
    if snap.problem is None:  # a machine with a GPU: then readings are real
        assert snap.gpus
    else:
        assert snap.problem.state in (GpuState.NO_DRIVER, GpuState.NO_DEVICES)


async def test_chatter_before_the_rows_is_kept_aside_not_taken_for_a_failure(
    conn: Connection, fake_bin: Path, tmp_path: Path
) -> None:
    fake_gpu_host(fake_bin, tmp_path / "gpus", gpus="Welcome to the lab host!\n" + gpu_rows(2))
    snaps = []
    async for snap in GpuSampler(conn, interval_ms=50).stream():
        snaps.append(snap)
        if len(snaps) == 3:
            break
    assert all(s.problem is None and len(s.gpus) == 2 for s in snaps)
    assert "Welcome to the lab host!" in snaps[0].unreadable


async def test_sampling_resumes_by_itself_after_the_connection_drops(
    sim_server: SimSSHServer, conn: Connection, fake_bin: Path, tmp_path: Path
) -> None:
    fake_gpu_host(fake_bin, tmp_path / "gpus", gpus=gpu_rows(2))
    stream = GpuSampler(conn, interval_ms=50).stream()
    try:
        assert (await asyncio.wait_for(anext(stream), 5)).problem is None
        await sim_server.abort_connections()
        states = []
        while len(states) < 40:
            snap = await asyncio.wait_for(anext(stream), 5)
            states.append(snap.problem.state if snap.problem else None)
            if GpuState.UNREACHABLE in states and states[-1] is None:
                break
        assert GpuState.UNREACHABLE in states, "the drop is visible as a named state"
        assert states[-1] is None and sim_server.connection_count() == 1
    finally:
        await stream.aclose()


def test_nvml_readings_map_values_and_name_unsupported_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    class NVMLError(Exception):
        pass

    def utilization(handle: int) -> object:
        if handle == 1:
            raise NVMLError("Not Supported")
        return types.SimpleNamespace(gpu=42)

    fake = types.SimpleNamespace(
        NVMLError=NVMLError,
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(used=2 * 2**30, total=80 * 2**30),
        nvmlDeviceGetUtilizationRates=utilization,
        nvmlDeviceGetName=lambda h: "NVIDIA H200",
        nvmlDeviceGetUUID=lambda h: f"GPU-{h}",
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    snap = NvmlSampler().query_sync()
    assert snap.problem is None
    first, second = snap.gpus
    assert (first.memory_used_mib.value, first.memory_total_mib.value, first.utilization_pct.value) == (
        2048,
        81920,
        42,
    )
    assert second.state is GpuState.PARTIAL and second.utilization_pct.reason == "Not Supported"


def test_a_gpu_nvml_cannot_open_is_named_and_the_others_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    class NVMLError(Exception):
        pass

    def handle(i: int) -> int:
        if i == 0:
            raise NVMLError("GPU is lost")
        return i

    fake = types.SimpleNamespace(
        NVMLError=NVMLError,
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=handle,
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(used=0, total=80 * 2**30),
        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=0),
        nvmlDeviceGetName=lambda h: "NVIDIA H200",
        nvmlDeviceGetUUID=lambda h: f"GPU-{h}",
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    snap = NvmlSampler().query_sync()
    assert [g.index for g in snap.gpus] == [1] and snap.unreadable == ["GPU 0: GPU is lost"]
    fake.nvmlDeviceGetCount = lambda: 1
    lost = NvmlSampler().query_sync()
    assert lost.gpus == [] and lost.problem is not None and lost.problem.state is GpuState.UNREADABLE


def test_each_holder_carries_the_user_that_owns_it() -> None:
    """The preflight names who holds a GPU: the owner of /proc/PID, None when it could not be read."""
    text = (
        "@@apps 0\n10, python3, 500, GPU-b\n11, python3, 400, GPU-a\n@@gpus\n0, GPU-a\n1, GPU-b\n"
        "@@user 10 alice\n@@cgroup 10\n@@user 11 \n@@cgroup 11\n@@end\n"
    )
    procs, problem = parse_processes(text)
    assert problem is None
    assert [(p.pid, p.user) for p in procs] == [(10, "alice"), (11, None)]
