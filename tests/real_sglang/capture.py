"""Capture the real SGLang 0.5.23 logs of each case into a folder (the committed fixtures in
tests/fixtures/logs/real-0.5.23/ were made with it; their SOURCES.md names the command and the cases):

    .venv/bin/python -m tests.real_sglang.capture OUT_DIR [CASE ...]

Each case starts the server straight from a shell (no sgtui in between: these are SGLang's own bytes, stdout
and stderr into one file as sgtui's run script writes them), in its own process group, with
HF_HUB_OFFLINE=1, and ends it: a ready server after one /generate (by TERM to the group, or to the main pid,
as the case says), a hanging one after it said what it says, by KILL to the group. One case at a time.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.real_sglang.harness import RealEnv, build_env
from tests.real_sglang.realhost import free_port, http, port_is_free

READY = "The server is fired up and ready to roll!"


@dataclass
class Case:
    name: str
    what: str
    flags: Callable[[RealEnv, int], list[str]]
    env: Callable[[RealEnv], dict[str, str]]
    form: str = "serve"  # "serve": ENV/bin/sglang serve; "module": ENV/bin/python -m sglang.launch_server
    stop: str = "group"  # after ready: "group" (TERM to the process group) or "main" (TERM to the main pid)
    hold_port: bool = False
    no_network: bool = False
    hang_after: str | None = None  # a line after which the server hangs: KILL it then
    notes: list[str] = field(default_factory=list)


def cpu(env: RealEnv, port: int, model: str | None = None) -> list[str]:
    return [
        "--model-path",
        model or str(env.model_dir),
        "--device",
        "cpu",
        "--max-total-tokens",
        "8192",
        "--max-running-requests",
        "8",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]


CASES = [
    Case(
        "ready",
        "ready, one /generate, then TERM to the process group (sgtui's stop before issue 16)",
        cpu,
        lambda e: e.server_env(),
    ),
    Case(
        "ready-module-form",
        "ready with `python -m sglang.launch_server` (0.5.23 warns: use `sglang serve`), "
        "one /generate, then TERM to the main pid only (graceful)",
        cpu,
        lambda e: e.server_env(),
        form="module",
        stop="main",
    ),
    Case(
        "stop-term-main",
        "ready, one /generate, then TERM to the main pid only: SGLang drains and stops its children",
        cpu,
        lambda e: e.server_env(),
        stop="main",
    ),
    Case(
        "no-accelerator",
        "no --device cpu and no SGLANG_USE_CPU_ENGINE (the stub on LD_LIBRARY_PATH): SGLang looks for a GPU",
        lambda e, p: [a for a in cpu(e, p) if a not in ("--device", "cpu")],
        lambda e: e.server_env(cpu_engine=False),
    ),
    Case(
        "cpu-engine-no-stub",
        "SGLANG_USE_CPU_ENGINE=1 --device cpu without the stub libcuda.so.1: the "
        "CUDA-only sglang-kernel wheel cannot load",
        cpu,
        lambda e: e.server_env(stub=False),
    ),
    Case(
        "port-in-use",
        "the port is already bound by another process: SGLang logs the bind error and "
        "hangs at 'Waiting for application shutdown'",
        cpu,
        lambda e: e.server_env(),
        hold_port=True,
        hang_after="Waiting for application shutdown",
    ),
    Case(
        "model-folder-missing",
        "--model-path /models/does-not-exist (an absolute folder that is not there)",
        lambda e, p: cpu(e, p, "/models/does-not-exist"),
        lambda e: e.server_env(),
    ),
    Case(
        "hub-id-offline",
        "--model-path sgtui-test/no-such-model (a hub id) with HF_HUB_OFFLINE=1",
        lambda e, p: cpu(e, p, "sgtui-test/no-such-model"),
        lambda e: e.server_env(),
    ),
    Case(
        "hub-id-no-network",
        "--model-path sgtui-test/no-such-model in a network namespace of its own "
        "(`unshare -n`, loopback up), HF_HUB_OFFLINE unset for this case only so the hub is tried",
        lambda e, p: cpu(e, p, "sgtui-test/no-such-model"),
        lambda e: {k: v for k, v in e.server_env().items() if k != "HF_HUB_OFFLINE"},
        no_network=True,
    ),
    Case(
        "mem-fraction-too-small",
        "--mem-fraction-static 0.0001",
        lambda e, p: [*cpu(e, p), "--mem-fraction-static", "0.0001"],
        lambda e: e.server_env(),
    ),
]


def command(env: RealEnv, case: Case, port: int) -> list[str]:
    head = (
        [str(env.root / "bin" / "sglang"), "serve"]
        if case.form == "serve"
        else [str(env.python), "-m", "sglang.launch_server"]
    )
    argv = [*head, *case.flags(env, port)]
    if case.no_network:
        script = 'ip link set lo up && exec "$@"'
        argv = ["unshare", "-n", "--", "sh", "-c", script, "sh", *argv]
    return argv


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_port_free(port: int, timeout: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if port_is_free(port):
            return time.monotonic() - t0
        time.sleep(0.05)
    return None


def run_case(env: RealEnv, case: Case, out: Path, timeout: float = 240) -> dict[str, object]:
    port = free_port()
    holder = None
    if case.hold_port:
        holder = socket.socket()
        holder.bind(("127.0.0.1", port))
        holder.listen(1)
    argv = command(env, case, port)
    log_path = out / f"{case.name}.log"
    full_env = {**{k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}, **case.env(env)}
    result: dict[str, object] = {"case": case.name, "what": case.what, "argv": argv, "env": case.env(env)}
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=full_env,
            start_new_session=True,
            cwd="/tmp",
        )
    try:
        while time.monotonic() - t0 < timeout:
            text = log_path.read_text(errors="replace")
            if READY in text:
                result["ready_s"] = round(time.monotonic() - t0, 1)
                result["generate"] = http(
                    port,
                    "/generate",
                    {"text": "Hello, world!", "sampling_params": {"max_new_tokens": 8, "temperature": 0}},
                )[0]
                time.sleep(1)
                t1 = time.monotonic()
                if case.stop == "main":
                    os.kill(proc.pid, signal.SIGTERM)
                else:
                    os.killpg(proc.pid, signal.SIGTERM)
                freed = wait_port_free(port, 60)
                result["stop"] = case.stop
                result["port_free_after_s"] = None if freed is None else round(freed, 2)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(60)
                while group_alive(proc.pid) and time.monotonic() - t1 < 60:
                    time.sleep(0.05)
                result["group_gone_after_s"] = round(time.monotonic() - t1, 2)
                break
            if case.hang_after and case.hang_after in text:
                time.sleep(5)
                result["hung"] = proc.poll() is None
                break
            if proc.poll() is not None and not group_alive(proc.pid):
                break
            time.sleep(0.2)
        else:
            result["timeout"] = True
    finally:
        if group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        while group_alive(proc.pid):
            time.sleep(0.05)
        if holder is not None:
            holder.close()
    result["rc"] = proc.returncode
    result["seconds"] = round(time.monotonic() - t0, 1)
    return result


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    wanted = argv[1:]
    env, _ = build_env()
    results = []
    for case in CASES:
        if wanted and case.name not in wanted:
            continue
        print(f"== {case.name}", flush=True)
        results.append(run_case(env, case, out))
        print(json.dumps(results[-1]), flush=True)
    manifest = out / "capture.json"
    old = json.loads(manifest.read_text()) if manifest.is_file() else []
    names = {r["case"] for r in results}
    manifest.write_text(json.dumps([r for r in old if r["case"] not in names] + results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
