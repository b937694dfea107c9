"""The stand-in stays true to the real thing: its 0.5.23 startup log has the real SGLang 0.5.23's milestones
in the real order, and each milestone line has the real line's shape (the same words and fields; numbers,
paths, dtypes and the device's own words aside).

The real log is tests/fixtures/logs/real-0.5.23/ready.log, captured from the real server on CPU by the
real-SGLang tier (tests/real_sglang/capture.py; SOURCES.md there). The real run had no GPU, so the stand-in's
GPU-only milestones (CUDA graph capture) are the only ones it may add.
"""

from __future__ import annotations

import re
from pathlib import Path

from sgtui.core.logs import LogClassifier
from tests.sim.conftest import Sim, free_port, wait_for

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "real-0.5.23" / "ready.log"
READY = "The server is fired up and ready to roll!"
GPU_ONLY = {"cuda_graph_begin", "cuda_graph_end"}  # a CPU run captures no CUDA graph
PREFIX = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: [A-Z]{2}\d+)*\] ")


def milestones(text: str) -> list[tuple[str, str]]:
    """(kind, line) of each milestone's first appearance, in order, as sgtui's classifier sees them."""
    classifier = LogClassifier()
    seen: dict[str, str] = {}
    for line in text.splitlines(keepends=True):
        for event in classifier.feed(line):
            if event.kind not in ("phase", "progress") and event.kind not in seen:
                seen[event.kind] = line.rstrip("\n")
    return list(seen.items())


def shape(line: str) -> str:
    """A line without what differs between two runs: the time/rank prefix, numbers, paths, dtypes, the
    device's name for its memory (`available_cpu_mem` on CPU, `available_gpu_mem` on a GPU), the address."""
    text = PREFIX.sub("", line)
    text = re.sub(r"http://[\w.:]+", "URL", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "S", text)
    text = re.sub(r"/[\w./-]+", "PATH", text)
    text = re.sub(r"torch\.\w+", "DTYPE", text)
    text = re.sub(r"available_(?:cpu|gpu)_mem", "available_mem", text)
    text = re.sub(r"type=\w+", "type=ARCH", text)
    return re.sub(r"-?\d+(?:\.\d+)?", "N", text)


async def standin_log(sim: Sim) -> str:
    """The stand-in's 0.5.23 ready log: one GPU, a Llama model, the real case's pool flags."""
    args = ["--model-path", "/opt/models/Llama-3.1-8B-Instruct", "--max-total-tokens", "8192"]
    args += ["--max-running-requests", "8", "--host", "127.0.0.1", "--port", str(free_port())]
    server = await sim.launch(args, python="/opt/sglang-0.5.23/venv/bin/python")
    try:
        await wait_for(lambda: READY in server.text(), timeout=30, what="the ready line", detail=server.text)
    finally:
        import signal

        sim.kill(server, signal.SIGKILL)
    return server.text()


async def test_the_standin_s_0_5_23_milestones_are_the_real_ones_in_the_real_order(sim: Sim) -> None:
    real = [kind for kind, _ in milestones(REAL.read_text())]
    standin = [kind for kind, _ in milestones(await standin_log(sim))]
    assert "ready" in real and "load_weight_end" in real  # the fixture is a whole startup
    assert [k for k in standin if k not in GPU_ONLY] == real


async def test_each_standin_milestone_line_has_the_real_line_s_shape(sim: Sim) -> None:
    real = dict(milestones(REAL.read_text()))
    standin = dict(milestones(await standin_log(sim)))
    differ = {
        kind: (shape(standin[kind]), shape(line))
        for kind, line in real.items()
        if kind in standin and kind != "server_args" and shape(standin[kind]) != shape(line)
    }
    assert differ == {}


def requests_before_ready(text: str) -> list[str]:
    """SGLang's own warm-up requests: method and path of each access line before the ready line."""
    head = text.split(READY, 1)[0]
    return re.findall(r'"(GET|POST) (/\w+) HTTP', head)


def weight_bars(text: str) -> set[str]:
    """The names of the weight-loading tqdm bars ("... shards: N% Completed")."""
    return set(re.findall(r"([A-Z][\w -]*shards): +\d+% Completed", text))


async def test_the_standin_warms_up_with_the_real_requests_and_loads_with_the_real_bar(sim: Sim) -> None:
    """0.5.23 asks /model_info (not /get_model_info), one /generate, then /freeze_gc before ready; its
    default loader is the multi-threaded one."""
    real, standin = REAL.read_text(), await standin_log(sim)
    assert requests_before_ready(standin) == requests_before_ready(real)
    assert weight_bars(standin) == weight_bars(real) == {"Multi-thread loading shards"}


async def test_the_standin_s_server_args_are_real_0_5_23_names(sim: Sim) -> None:
    """Every key the stand-in prints in `server_args={...}` is one the real 0.5.23 prints."""
    pattern = re.compile(r"'(\w+)': ")
    real = set(pattern.findall(dict(milestones(REAL.read_text()))["server_args"]))
    standin = set(pattern.findall(dict(milestones(await standin_log(sim)))["server_args"]))
    assert standin - real == set()
