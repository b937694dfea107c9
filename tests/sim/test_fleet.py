"""The simulated fleet: K hosts, each its own GPUs and state on its own address; nodes meet over TCP."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import asyncssh
import pytest
import yaml

from sgtui.core.profiles import load_profile
from sgtui.sim.fleet import SimFleet, loopback_aliases_work
from sgtui.sim.state import set_holding

pytestmark = pytest.mark.skipif(not loopback_aliases_work(), reason="needs 127.0.0.2 (Linux loopback)")

PY = "/opt/sglang-0.5.11/venv/bin/python"
FLAGS = (
    "-m sglang.launch_server --model-path /opt/models/Qwen3.6-27B --tp-size 4 --context-length 8192 "
    "--disable-radix-cache --max-running-requests 8 --disable-cuda-graph --nnodes 2 --port {port} "
    "--dist-init-addr {addr} --node-rank {rank}"
)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


async def start_node(fleet: SimFleet, name: str, rank: int, addr: str, log: Path) -> None:
    host = fleet[name]
    async with asyncssh.connect(
        host.host, host.port, known_hosts=None, client_keys=[host.server.client_key], username="root"
    ) as conn:
        cmd = f"{PY} {FLAGS.format(port=free_port(), addr=addr, rank=rank)}"
        await conn.run(
            f"setsid nohup pct exec 129 -- env CUDA_VISIBLE_DEVICES=0,1 {cmd} > {log} 2>&1 < /dev/null &",
            check=True,
        )


async def wait_for(log: Path, needle: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and needle in log.read_text(errors="replace"):
            return True
        await asyncio.sleep(0.1)
    return False


async def test_each_host_has_its_own_address_gpus_and_state(tmp_path: Path) -> None:
    async with SimFleet(3, speed=40) as fleet:
        assert [(h.name, h.host) for h in fleet] == [
            ("sim", "127.0.0.1"),
            ("sim-2", "127.0.0.2"),
            ("sim-3", "127.0.0.3"),
        ]
        with fleet["sim-2"].store.update() as state:
            set_holding(state, pid=1, gpu=0, mib=20000, name="x", release_delay=0.0, util=0)
        assert fleet["sim-2"].gpu_memory()[0] > 19000
        assert fleet["sim"].gpu_memory()[0] < 100 and fleet["sim-3"].gpu_memory()[0] < 100

        written = fleet.write_config(tmp_path)
        hosts = yaml.safe_load(written.hosts_file.read_text())
        assert [(n, hosts[n]["hostname"]) for n in ("sim", "sim-2", "sim-3")] == [
            ("sim", "127.0.0.1"),
            ("sim-2", "127.0.0.2"),
            ("sim-3", "127.0.0.3"),
        ]
        demo = load_profile(tmp_path / "profiles" / "multinode-demo.yaml")
        assert [n.host for n in demo.nodes or []] == ["sim", "sim-2"] and demo.spec.tp_size == 4


async def test_node_0_waits_in_distributed_init_until_the_other_node_arrives(tmp_path: Path) -> None:
    async with SimFleet(2, speed=40) as fleet:
        addr = f"127.0.0.1:{free_port()}"
        head, worker = tmp_path / "n0.log", tmp_path / "n1.log"
        await start_node(fleet, "sim", 0, addr, head)
        assert await wait_for(head, "Init torch distributed begin.", 20)
        await asyncio.sleep(1.5)  # 60 simulated seconds: no node 1, no progress
        assert "Load weight begin" not in head.read_text()
        await start_node(fleet, "sim-2", 1, addr, worker)
        assert await wait_for(head, "The server is fired up and ready to roll!", 60)
        assert await wait_for(worker, "TP2] max_total_num_tokens=", 30)
        text = worker.read_text()
        assert "TP2] Init torch distributed begin." in text and "TP0]" not in text
        assert "Uvicorn" not in text  # a worker node serves no API


async def test_a_wrong_dist_init_address_keeps_the_worker_waiting(tmp_path: Path) -> None:
    async with SimFleet(2, speed=40) as fleet:
        port = free_port()
        head, worker = tmp_path / "n0.log", tmp_path / "n1.log"
        await start_node(fleet, "sim", 0, f"127.0.0.1:{port}", head)
        await start_node(fleet, "sim-2", 1, f"127.0.0.9:{port}", worker)  # nobody listens there
        assert await wait_for(worker, "Init torch distributed begin.", 20)
        await asyncio.sleep(1.5)
        assert "Load weight begin" not in worker.read_text() and "Load weight begin" not in head.read_text()
