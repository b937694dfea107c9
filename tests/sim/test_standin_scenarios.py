"""The simulated SGLang server in each scenario: what it logs, which GPU memory it holds, how it ends."""

from __future__ import annotations

import asyncio
import json
import signal
import urllib.request
from dataclasses import replace

from sgtui.core.logs import classify_text
from sgtui.sim.ports import PortMap
from sgtui.sim.scenarios import get_scenario
from tests.cases import QWEN_ARGS
from tests.sim.conftest import Sim, fit_weights_gib, free_port, open_sim, wait_for

READY = "The server is fired up and ready to roll!"
SIGQUIT = "Received sigquit from a child process. It usually means the child failed."


async def test_the_a6000_launch_with_8_running_requests_becomes_ready_and_answers_http(sim: Sim) -> None:
    port = free_port()
    server = await sim.launch([*QWEN_ARGS, "--max-running-requests", "8", "--port", str(port)])
    await wait_for(lambda: READY in server.text(), what="the ready line", detail=server.text)

    text = server.text()
    assert " TP0] Load weight end." in text and " TP1] Load weight end." in text
    expected = fit_weights_gib([*QWEN_ARGS, "--max-running-requests", "8"], "0.5.9")
    assert f"mem usage={expected:.2f} GB." in text  # the weights per GPU are the fit engine's
    assert 24 < expected < 27  # and close to the spec's worked example (25.5 GiB)
    assert "max_running_requests=8" in text
    assert f"Uvicorn running on http://127.0.0.1:{port}" in text
    analysis = classify_text(text)
    assert analysis.outcome == "ready"
    assert analysis.facts["max_total_num_tokens"] > 300_000
    used = sim.used_mib()
    assert all(40_000 < mib < 49_140 for mib in used.values()), used
    own = PortMap(sim.host.state_dir).lookup(port)  # the sim's own port for the one the flags ask for
    assert own is not None
    with urllib.request.urlopen(f"http://127.0.0.1:{own}/health", timeout=5) as resp:
        assert resp.status == 200
    with urllib.request.urlopen(f"http://127.0.0.1:{own}/get_model_info", timeout=5) as resp:
        assert json.load(resp)["model_path"] == "/models/Qwen3.6-27B"
    # through the host's SSH forwarding the asked port reaches it, as on a real host
    reader, writer = await sim.conn.open_connection("127.0.0.1", port)
    writer.write(b"GET /health HTTP/1.0\r\n\r\n")
    assert (await asyncio.wait_for(reader.read(12), 5)).startswith((b"HTTP/1.0 200", b"HTTP/1.1 200"))
    writer.close()

    sim.kill(server, signal.SIGTERM)
    await wait_for(lambda: not server.alive(), timeout=5, what="exit after TERM")
    await wait_for(lambda: max(sim.used_mib().values()) < 100, timeout=5, what="memory released")
    assert "Finished server process" in server.text()


async def test_the_a6000_launch_on_0_5_9_dies_with_not_enough_memory_and_sigquit(sim: Sim) -> None:
    server = await sim.launch([*QWEN_ARGS, "--port", str(free_port())])
    await wait_for(lambda: SIGQUIT in server.text(), what="the sigquit line", detail=server.text)
    await wait_for(lambda: not server.alive(), timeout=5, what="the launcher's exit")

    text = server.text()
    assert "Max running requests is reset to 48 for speculative decoding" in text
    assert text.count("Scheduler hit an exception: Traceback (most recent call last):") == 2
    assert (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: self.server_args.mem_fraction_static=0.85"
    ) in text
    assert "KV Cache is allocated" not in text
    analysis = classify_text(text)
    assert analysis.outcome == "failed"
    assert analysis.error is not None and analysis.error.error_class == "not_enough_memory"
    await wait_for(lambda: max(sim.used_mib().values()) < 100, timeout=5, what="memory released")


async def test_the_same_launch_with_sglang_0_5_11_writes_the_newer_wording_and_starts() -> None:
    async with open_sim() as sim:
        args = [
            *QWEN_ARGS,
            "--disable-radix-cache",
            "--max-running-requests",
            "8",
            "--port",
            str(free_port()),
        ]
        server = await sim.launch(args, python="/opt/sglang-0.5.11/venv/bin/python")
        await wait_for(lambda: READY in server.text(), what="the ready line", detail=server.text)
        text = server.text()
        assert "dtype=torch.bfloat16, avail mem" not in text  # 0.5.9 only prints dtype on Load weight end
        assert "Disabling radix cache since speculative decoding" not in text
        sim.kill(server, signal.SIGKILL)


async def test_sglang_0_5_23_words_its_memory_lines_the_new_way(sim: Sim) -> None:
    server = await sim.launch(
        [*QWEN_ARGS, "--port", str(free_port())], python="/opt/sglang-0.5.23/venv/bin/python"
    )
    await wait_for(
        lambda: READY in server.text() or SIGQUIT in server.text(), what="an end", detail=server.text
    )
    text = server.text()
    assert "Memory baseline taken. mem usage=0.99 GB" in text and "Init torch distributed ends" not in text
    if READY in text:
        assert "KV Cache is allocated. dtype: torch.bfloat16, #tokens: " in text
        assert "Capture target decode CUDA graph end. bs=[" in text
        assert classify_text(text).outcome == "ready"
    sim.kill(server, signal.SIGKILL)


async def test_0_5_11_refuses_speculative_decoding_with_the_radix_cache_before_starting_schedulers(
    sim: Sim,
) -> None:
    server = await sim.launch(
        [*QWEN_ARGS, "--port", str(free_port())], python="/opt/sglang-0.5.11/venv/bin/python"
    )
    await wait_for(
        lambda: not server.alive() and "ValueError" in server.text(),
        what="the ValueError",
        detail=server.text,
    )
    text = server.text()
    assert "is not compatible with radix cache" in text
    assert SIGQUIT not in text and "Init torch distributed" not in text


async def test_extra_buffer_on_the_rtx_pro_6000_runs_out_of_memory_and_starts_without_it() -> None:
    async with open_sim("rtx-pro-6000") as sim:
        base = [a for a in QWEN_ARGS if a not in ("--tp-size", "2")]
        base[base.index("32768")] = "65536"
        base[base.index("0.85")] = "0.9"
        failing = await sim.launch(
            [
                *base,
                "--mamba-scheduler-strategy",
                "extra_buffer",
                "--max-running-requests",
                "128",
                "--port",
                str(free_port()),
            ],
            vmid=131,
        )
        await wait_for(lambda: SIGQUIT in failing.text(), what="the sigquit line", detail=failing.text)
        assert "RuntimeError: Not enough memory." in failing.text()
        assert "[TP0]" not in failing.text()  # one GPU: no TP prefix
        await wait_for(lambda: max(sim.used_mib().values()) < 100, timeout=5, what="memory released")

        working = await sim.launch(
            [*base, "--disable-radix-cache", "--max-running-requests", "32", "--port", str(free_port())],
            vmid=131,
        )
        await wait_for(lambda: READY in working.text(), what="the ready line", detail=working.text)
        sim.kill(working, signal.SIGKILL)


async def test_a_port_held_by_another_listener_fails_at_uvicorn_bind() -> None:
    port = free_port()
    scenario = replace(get_scenario("port-in-use"), busy_ports=(port,))
    async with open_sim(scenario) as sim:
        server = await sim.launch([*QWEN_ARGS, "--max-running-requests", "8", "--port", str(port)])
        await wait_for(lambda: "Errno 98" in server.text(), what="the bind error", detail=server.text)
        await asyncio.sleep(0.5)
        # like the real 0.5.23 server: it hangs at the lifespan shutdown, alive and holding its memory
        assert server.alive() and max(sim.used_mib().values()) > 1000
        text = server.text()
        assert text.rstrip().endswith("Waiting for application shutdown.")
        assert (
            f"error while attempting to bind on address ('127.0.0.1', {port}): address already in use" in text
        )
        assert READY not in text
        error = classify_text(text).error
        assert error is not None and error.error_class == "port_in_use"
        sim.kill(server, signal.SIGTERM)
        await wait_for(lambda: not server.alive(), timeout=5, what="the exit after TERM")


async def test_a_server_that_ignores_term_only_stops_on_kill() -> None:
    async with open_sim("ignore-term") as sim:
        server = await sim.launch([*QWEN_ARGS, "--max-running-requests", "8", "--port", str(free_port())])
        await wait_for(lambda: READY in server.text(), what="the ready line", detail=server.text)
        sim.kill(server, signal.SIGTERM)
        await asyncio.sleep(0.6)
        assert server.alive()
        assert sim.used_mib()[0] > 40_000
        sim.kill(server, signal.SIGKILL)
        await wait_for(lambda: not server.alive(), timeout=5, what="exit after KILL")
        await wait_for(lambda: max(sim.used_mib().values()) < 100, timeout=5, what="memory released")


async def test_gpu_memory_of_a_killed_server_is_released_only_after_the_scenario_delay() -> None:
    scenario = replace(get_scenario("slow-release"), release_delay_s=60.0)  # 1.5 s at the test speed
    async with open_sim(scenario) as sim:
        server = await sim.launch([*QWEN_ARGS, "--max-running-requests", "8", "--port", str(free_port())])
        await wait_for(lambda: READY in server.text(), what="the ready line", detail=server.text)
        sim.kill(server, signal.SIGKILL)
        await wait_for(lambda: not server.alive(), timeout=5, what="exit after KILL")
        held = sim.used_mib()
        assert min(held.values()) > 40_000, "memory should still be held right after the kill"
        apps = await sim.run("nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits")
        assert len(str(apps.stdout).splitlines()) == 2
        await wait_for(lambda: max(sim.used_mib().values()) < 100, timeout=6, what="memory released")


async def test_another_users_process_shows_in_nvidia_smi_and_unbalances_a_tp_launch() -> None:
    async with open_sim("other-user") as sim:
        query = "pid,process_name,used_memory,gpu_uuid"
        apps = await sim.run(f"nvidia-smi --query-compute-apps={query} --format=csv,noheader,nounits")
        rows = [line.split(", ") for line in str(apps.stdout).splitlines()]
        assert [r[:3] for r in rows] == [["4190001", "/usr/bin/python3", "20480"]]
        assert rows[0][3].startswith("GPU-") and rows[0][3].endswith("000001")

        server = await sim.launch([*QWEN_ARGS, "--max-running-requests", "8", "--port", str(free_port())])
        await wait_for(lambda: SIGQUIT in server.text(), what="the sigquit line", detail=server.text)
        assert "RuntimeError: The memory capacity is unbalanced." in server.text()
        error = classify_text(server.text()).error
        assert error is not None and error.error_class == "memory_unbalanced"


async def test_unknown_flags_get_sglang_s_usage_error_and_exit_code_2(sim: Sim) -> None:
    result = await sim.run(
        "pct exec 129 -- /opt/sglang/venv/bin/python -m sglang.launch_server "
        "--model-path /models/Qwen3.6-27B --no-such-flag 3"
    )
    assert result.exit_status == 2
    assert "launch_server.py: error:" in str(result.stdout) and "--no-such-flag" in str(result.stdout)


async def test_a_model_outside_the_catalogue_fails_to_load_its_config(sim: Sim) -> None:
    server = await sim.launch(["--model-path", "/models/Nope-1B", "--port", str(free_port())])
    await wait_for(
        lambda: not server.alive() and "OSError" in server.text(), what="the OSError", detail=server.text
    )
    assert "Can't load the configuration of '/models/Nope-1B'" in server.text()


async def test_gpu_memory_rises_step_by_step_while_the_weights_load() -> None:
    async with open_sim(speed=8) as sim:
        server = await sim.launch([*QWEN_ARGS, "--max-running-requests", "8", "--port", str(free_port())])
        samples: list[int] = []

        def sample_until_ready() -> bool:
            samples.append(sim.used_mib()[0])
            return READY in server.text()

        await wait_for(sample_until_ready, timeout=30, what="the ready line", detail=server.text)
        sim.kill(server, signal.SIGKILL)
    assert samples == sorted(samples), "memory only grows during a healthy start"
    loading = {s for s in samples if 1_000 < s < 26_000}
    assert len(loading) >= 3, (
        f"expected several intermediate values while loading, got {sorted(set(samples))}"
    )
