"""The stand-in's stop is the real one's: after a TERM to its main process the simulated SGLang writes the
lines, in the order and shape, that the real 0.5.23 server wrote in the real-SGLang tier's capture
(`tests/fixtures/logs/real-0.5.23/stop-term-main.log`): the drain, its own children stopped, the
uvicorn shutdown. sgtui's graceful stop and its `stopped` state are tested on the sim: it must not drift."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from tests.cases import QWEN_ARGS
from tests.sim.conftest import Sim, free_port, wait_for

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "real-0.5.23" / "stop-term-main.log"
READY = "The server is fired up and ready to roll!"


def shutdown_shape(text: str) -> list[str]:
    """The lines from "SIGTERM received" on, without their timestamp prefix, numbers as N."""
    lines = [re.sub(r"^\[[^\]]*\] ", "", line) for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("SIGTERM received."))
    return [re.sub(r"\d+", "N", line).rstrip() for line in lines[start:] if line.strip()]


async def test_the_stand_ins_term_shutdown_has_the_real_servers_lines(sim: Sim) -> None:
    if not REAL.is_file():
        pytest.skip(f"{REAL} is absent: the real-SGLang tier commits it (tests/real_sglang capture)")
    server = await sim.launch([*QWEN_ARGS, "--max-running-requests", "8", "--port", str(free_port())])
    await wait_for(lambda: READY in server.text(), what="the ready line", detail=server.text)
    sim.kill(server, signal.SIGTERM)
    await wait_for(lambda: not server.alive(), timeout=10, what="the exit after TERM")
    assert shutdown_shape(server.text()) == shutdown_shape(REAL.read_text())


async def test_the_stand_in_with_its_port_taken_ends_its_log_and_hangs_as_the_real_server() -> None:
    from dataclasses import replace

    from sgtui.sim.scenarios import get_scenario
    from tests.sim.conftest import open_sim

    real = REAL.with_name("port-in-use.log")
    if not real.is_file():
        pytest.skip(f"{real} is absent: the real-SGLang tier commits it (tests/real_sglang capture)")
    port = free_port()
    async with open_sim(replace(get_scenario("port-in-use"), busy_ports=(port,))) as sim:
        server = await sim.launch([*QWEN_ARGS, "--max-running-requests", "8", "--port", str(port)])
        await wait_for(lambda: "Errno 98" in server.text(), what="the bind error", detail=server.text)
        await wait_for(lambda: "Waiting for application shutdown" in server.text(), what="the hang")

        def ending(text: str) -> list[str]:
            lines = [re.sub(r"^\[[^\]]*\] ", "", line) for line in text.splitlines() if line.strip()]
            return [re.sub(r"\d+", "N", line) for line in lines[-2:]]

        assert ending(server.text()) == ending(real.read_text()) and server.alive()
        sim.kill(server, signal.SIGKILL)
