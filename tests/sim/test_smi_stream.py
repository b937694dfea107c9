"""The sim answers sgtui's nvidia-smi sampling loop itself (no process per streamed host); anything else
still runs in bash. Fleets past 254 hosts get addresses in the next /24 blocks."""

from __future__ import annotations

import asyncio
import shlex

import asyncssh

from sgtui.core.shell import wrap_script
from sgtui.remote.gpu import query_gpu_command
from sgtui.sim.fleet import host_address
from sgtui.sim.host import SimHost
from sgtui.sim.smi_stream import loop_request


def test_only_the_exact_sampling_command_is_served_in_process() -> None:
    sampling = wrap_script(query_gpu_command(500)).command
    loop = loop_request(sampling)
    assert loop is not None and loop.interval == 0.5 and "memory.used" in loop.fields
    assert loop_request(wrap_script(query_gpu_command()).command) is None  # one-shot: the real fake
    piped = wrap_script(query_gpu_command(500).replace(" 2>&1", " | head -1")).command
    assert loop_request(piped) is None
    assert loop_request(shlex.join(["bash", "-c", "exec nvidia-smi -lms 500"])) is None


async def test_the_sim_streams_samples_without_a_process_and_stops_with_the_channel() -> None:
    async with SimHost("h100x8", speed=40) as host:
        async with asyncssh.connect(
            host.host, host.port, known_hosts=None, client_keys=[host.server.client_key], username="root"
        ) as conn:
            proc = await conn.create_process(wrap_script(query_gpu_command(200)).command)
            await asyncio.sleep(0.7)
            assert not host.server._procs  # no bash, no nvidia-smi process for the loop
            proc.close()
            out = await proc.stdout.read()
        lines = out.splitlines()
        assert len(lines) >= 16 and len(lines) % 8 == 0
        assert lines[0].startswith("0, GPU-") and lines[7].startswith("7, GPU-")
        await asyncio.sleep(0.1)
        assert not host.server._tasks  # the loop ended with its channel


def test_host_addresses_continue_past_254_in_the_next_blocks() -> None:
    assert [host_address(n) for n in (1, 254, 255, 500, 508, 509)] == [
        "127.0.0.1",
        "127.0.0.254",
        "127.0.1.1",
        "127.0.1.246",
        "127.0.1.254",
        "127.0.2.1",
    ]
