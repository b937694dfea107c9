"""The target checks of a launch (`remote/preflight.py`) against the simulated host: each is one line,
read inside the container; what is missing there blocks, what merely differs warns; the fit uses the
installed release."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sgtui.core.profiles import load_profile
from sgtui.remote.connection import ConnectionPool
from sgtui.remote.hosts import load_hosts
from sgtui.remote.preflight import is_hub_id, run_gpu_indices, run_preflight
from sgtui.remote.targets import Target
from sgtui.sim.host import SimHost
from tests.sim.simhost_process import free_port


@pytest.fixture
async def sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Any, Path]]:
    monkeypatch.setenv("SGTUI_CONFIG_DIR", str(tmp_path))
    async with SimHost(speed=40) as host:
        host.write_config(tmp_path)
        pool = ConnectionPool(load_hosts(ssh_config=False), user_known_hosts=None)
        try:
            yield pool, tmp_path / "profiles"
        finally:
            await pool.close()


def _variant(folder: Path, name: str, old: str, new: str) -> Path:
    text = (
        (folder / "qwen36-27b-2xa6000-mrr8.yaml").read_text().replace("port: 30000", f"port: {free_port()}")
    )
    assert old in text
    path = folder / name
    path.write_text(text.replace(old, new))
    return path


async def _preflight(pool: Any, path: Path) -> Any:
    profile = load_profile(path)
    target = Target.from_mapping({"kind": profile.target.kind, "id": profile.target.id})
    return await run_preflight(pool.get(profile.host), target, profile)


def _check(result: Any, name: str) -> Any:
    return next(c for c in result.preflight.checks if c.name == name)


async def test_a_model_path_missing_in_the_container_blocks_and_the_fit_says_why_it_is_unknown(
    sim: tuple[Any, Path],
) -> None:
    pool, folder = sim
    path = _variant(folder, "missing.yaml", "/opt/models/Qwen3.6-27B", "/opt/models/Missing-70B")
    result = await _preflight(pool, path)
    model = _check(result, "model_path")
    assert not model.ok and model.blocking
    assert model.message == "/opt/models/Missing-70B does not exist on the target: copy the model to it"
    assert result.preflight.verdict == "unknown" and result.preflight.blocks
    assert result.preflight.why_unknown == "/opt/models/Missing-70B does not exist on the target"


async def test_a_hub_id_says_what_a_download_needs_offline_blocks_when_it_is_not_cached(
    sim: tuple[Any, Path],
) -> None:
    pool, folder = sim
    online = _variant(folder, "hub.yaml", "/opt/models/Qwen3.6-27B", "Qwen/Qwen3.6-27B")
    online.write_text(online.read_text().replace("env:\n", "env:\n  HF_TOKEN: hf_x\n", 1))
    check = _check(await _preflight(pool, online), "model_path")
    assert check.ok and "a hub id: SGLang downloads it (a token is present)" in check.message
    offline = _variant(folder, "hub-offline.yaml", "/opt/models/Qwen3.6-27B", "Qwen/Qwen3.6-27B")
    offline.write_text(offline.read_text().replace("env:\n", "env:\n  HF_HUB_OFFLINE: '1'\n", 1))
    check = _check(await _preflight(pool, offline), "model_path")
    assert not check.ok and check.blocking and "HF_HUB_OFFLINE is set" in check.message


async def test_another_installed_release_warns_and_the_fit_uses_the_installed_ones_rules(
    sim: tuple[Any, Path],
) -> None:
    """Written for 0.5.11, the interpreter holds 0.5.9: a warning naming both, and a fit by 0.5.9."""
    pool, folder = sim
    path = _variant(folder, "written-0511.yaml", 'sglang_version: "0.5.9"', 'sglang_version: "0.5.11"')
    result = await _preflight(pool, path)
    release = _check(result, "sglang_release")
    assert not release.ok and not release.blocking
    assert release.message.startswith("SGLang 0.5.9 installed, the profile was written for 0.5.11")
    assert result.report is not None and result.report.sglang_version == "0.5.9"


async def test_an_interpreter_missing_in_the_container_blocks(sim: tuple[Any, Path]) -> None:
    pool, folder = sim
    path = _variant(folder, "nopython.yaml", "/opt/sglang/venv/bin/python", "/opt/nowhere/bin/python")
    release = _check(await _preflight(pool, path), "sglang_release")
    assert not release.ok and release.blocking and "/opt/nowhere/bin/python" in release.message


def test_the_gpus_a_run_asks_for() -> None:
    """The profile's `gpus`, else CUDA_VISIBLE_DEVICES in its env, else what SGLang picks: tp x pp of this
    node from --base-gpu-id."""
    from types import SimpleNamespace

    def profile(gpus: Any = None, env: Any = None, **values: Any) -> Any:
        spec = SimpleNamespace(tp_size=values.get("tp", 1), pp_size=1, values=values.get("values", {}))
        return SimpleNamespace(gpus=gpus, env=env or {}, spec=spec, nnodes=values.get("nnodes", 1))

    assert run_gpu_indices(profile([2, 3])) == [2, 3]
    assert run_gpu_indices(profile(env={"CUDA_VISIBLE_DEVICES": "4,5"})) == [4, 5]
    assert run_gpu_indices(profile(tp=4, values={"--base-gpu-id": 2})) == [2, 3, 4, 5]
    assert run_gpu_indices(profile(tp=4, nnodes=2)) == [0, 1]
    assert is_hub_id("Qwen/Qwen3.6-27B") and not is_hub_id("/opt/models/x") and not is_hub_id("a/b/c")


async def test_only_an_own_run_on_these_gpus_or_this_port_is_named_as_the_holder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another live run of sgtui on other GPUs and another port is not blamed: the user would stop a
    working server for a process that is someone else's."""
    from types import SimpleNamespace

    from sgtui.core.preflight import Check
    from sgtui.remote import preflight
    from sgtui.remote.runs import RunManager, RunRecord, RunState, RunStatus

    def record(run_id: str, gpus: list[int], port: str) -> RunRecord:
        argv = ["/p/python", "-m", "sglang.launch_server", "--port", port]
        return RunRecord(run_id, "h", Target(), "/r", argv, {}, gpus, 1, 1, 1, "b", profile="p\x1b[31m")

    runs = [record("mine", [0, 1], "30000"), record("other", [2, 3], "30001")]

    async def list_runs(self: RunManager) -> list[RunRecord]:
        return runs

    async def status(self: RunManager, run: RunRecord) -> RunStatus:
        return RunStatus(RunState.RUNNING)

    monkeypatch.setattr(RunManager, "list_runs", list_runs)
    monkeypatch.setattr(RunManager, "status", status)
    conn = SimpleNamespace(host=SimpleNamespace(name="h", runs_dir=None, keep_runs=None))
    profile = SimpleNamespace(gpus=[0, 1], env={}, runs_dir="/r", spec=SimpleNamespace(port=30000))
    failing = [
        Check("port", False, "port 30000 is already in use (...)"),
        Check("gpus", False, "GPU 0, 1 held by others: pid 7 python"),
    ]
    said = await preflight._name_own_runs(conn, Target(), profile, failing)
    assert all(
        c.message.endswith("; sgtui's own run mine (p) is running on host: stop it first") for c in said
    )
    profile.gpus, profile.spec.port = [2], 30002  # GPU 2 is other's, port 30002 nobody of sgtui's
    failing = [
        Check("port", False, "port 30002 is already in use"),
        Check("gpus", False, "GPU 2 held by others"),
    ]
    assert [c.message for c in await preflight._name_own_runs(conn, Target(), profile, failing)] == [
        "port 30002 is already in use",
        "GPU 2 held by others; sgtui's own run other (p) is running on host: stop it first",
    ]
    failing = [Check("gpus", False, "GPU 7 asked for, the host has 4")]  # not a holder's failure at all
    assert await preflight._name_own_runs(conn, Target(), profile, failing) == failing
