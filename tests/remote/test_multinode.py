"""`MultiNode`: one profile, N nodes, one run id; found again, restarted and stopped on every node."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgtui.core.profiles import dump_profile, load_profile
from sgtui.remote.connection import ConnectionPool
from sgtui.remote.hosts import load_hosts
from sgtui.remote.multinode import MultiNode
from sgtui.sim.fleet import SimFleet, loopback_aliases_work
from tests.sim.simhost_process import free_port

pytestmark = pytest.mark.skipif(not loopback_aliases_work(), reason="needs 127.0.0.2 (Linux loopback)")


async def test_launch_find_again_restart_and_stop_act_on_every_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGTUI_CONFIG_DIR", str(tmp_path))
    async with SimFleet(2, speed=40) as sims:
        sims.write_config(tmp_path)
        path = tmp_path / "profiles" / "multinode-demo.yaml"
        path.write_text(path.read_text().replace("port: 30000", f"port: {free_port()}"))
        profile = load_profile(path)
        pool = ConnectionPool(load_hosts(ssh_config=False), user_known_hosts=None)
        try:
            nodes = MultiNode(profile, pool)
            addr = await nodes.dist_init_addr()
            assert addr.startswith("127.0.0.1:")  # node 0's address as hosts.yaml names it
            assert await nodes.precheck(addr) == []
            order: list[int | None] = []
            first = await nodes.launch(
                addr, dump_profile(profile), on_launched=lambda r: order.append(r.node_rank)
            )
            assert order == [0, 1] and len({r.id for r in first}) == 1

            # a restarted sgtui (a fresh MultiNode, fresh connections) finds both nodes of the run
            again = MultiNode(profile, ConnectionPool(load_hosts(ssh_config=False), user_known_hosts=None))
            try:
                found = await again.find_run(first[0].id)
                assert [(r.host, r.node_rank, r.pgid) for r in found] == [
                    (r.host, r.node_rank, r.pgid) for r in first
                ]
            finally:
                await again.pool.close()

            second = await nodes.restart(first, dump_profile(profile), grace=5, gpu_timeout=30)
            assert second[0].id != first[0].id and [r.node_rank for r in second] == [0, 1]
            statuses = [await nodes.manager_for(r).status(r) for r in first]
            assert all(s.state.value != "running" for s in statuses)
            runs = await nodes.list_runs()
            assert [[r.node_rank for r in run] for run in runs[:2]] == [[0, 1], [0, 1]]
            assert runs[0][0].id == second[0].id  # newest first

            results = await nodes.stop(second, grace=5)
            assert [r.node_rank for r, _ in results] == [1, 0]  # workers first, node 0 last
            assert all(not isinstance(res, BaseException) and res.clean for _, res in results)
            snaps = await nodes.wait_gpus_free(second, timeout=30)
            assert len(snaps) == 2
        finally:
            await pool.close()


async def test_precheck_reports_every_node_problem_at_once_one_line_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from sgtui.sim.scenarios import PROXMOX_A6000, ForeignProcess, SimGpu

    other = replace(
        PROXMOX_A6000,
        gpus=(SimGpu("NVIDIA A100-SXM4-80GB", 81920), SimGpu("NVIDIA A100-SXM4-80GB", 81920)),
        foreign=(ForeignProcess(4190001, "/usr/bin/python3", 1, 20480, "alice"),),
    )
    monkeypatch.setenv("SGTUI_CONFIG_DIR", str(tmp_path))
    async with SimFleet(2, replace(PROXMOX_A6000, per_host={2: other}), speed=40) as sims:
        sims.write_config(tmp_path)
        path = tmp_path / "profiles" / "multinode-demo.yaml"
        path.write_text(path.read_text().replace("/opt/models/Qwen3.6-27B", "/opt/models/Missing-70B"))
        pool = ConnectionPool(load_hosts(ssh_config=False), user_known_hosts=None)
        try:
            nodes = MultiNode(load_profile(path), pool)
            problems = [str(p) for p in await nodes.precheck(await nodes.dist_init_addr())]
        finally:
            await pool.close()
    assert all("\n" not in p for p in problems)
    assert sorted(p.split(":")[0] for p in problems) == [
        "node 0 (sim pct 129)",
        "node 1 (sim-2 pct 129)",
        "node 1 (sim-2 pct 129)",
        "node 1 (sim-2 pct 129)",
    ]
    text = "\n".join(problems)
    assert "node 0 (sim pct 129): the model path /opt/models/Missing-70B does not exist there" in text
    assert "node 1 (sim-2 pct 129): the model path /opt/models/Missing-70B does not exist there" in text
    assert "node 1 (sim-2 pct 129): needs 2 free GPU(s) (tp 4 / 2 nodes), has 1 free (GPU 0)" in text
    assert "GPU type NVIDIA A100-SXM4-80GB, but node 0 has NVIDIA RTX A6000" in text
